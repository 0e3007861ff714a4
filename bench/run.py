"""`make bench`: the performance targets, as ratios measured side by side in one run.

The inputs are a generated repository (`bench.corpus`: TrainJobs with their own image tags,
env, resources and runtimePatches over the built-in runtimes and the repository's own, 5%
invalid), one file per TrainJob. On a shared machine absolute times drift by tens of percent
over seconds, so every comparison runs as interleaved pairs (A then B, then B then A, ...)
and reports the median of the per-pair ratios:

- policies: `tjc validate` and `tjc render` with the built-in packs against
  `--no-default-policies` (target: at most 1.5x), and `tjc validate` with the pss pack at
  restricted in every namespace (`--pss-level restricted`; no target: every JobSet of the
  corpus breaks that level, so this measures the findings too);
- user packs: `tjc validate` with packs a platform team writes, against
  `--no-default-policies` (target: at most 1.5x, as the built-in packs): the built-in packs
  with every message changed (no longer the shipped files), the ten rules of
  `bench/packs/team.cue`, and both together;
- kubeconform: `tjc validate` with the built-in packs against kubeconform v0.7.0 (pinned,
  built by bench/kubeconform.sh) on the same files with schemas made from the CRDs (target:
  1x, DESIGN's), and for scale `tjc validate --no-default-policies` against it and `tjc
  validate` against kubeconform checking the TrainJobs and the JobSets they compile to (what
  validate checks too);
- floor: `tjc render` in process against libyaml load + dump of the same documents (target:
  1x); and, for scale, against libyaml loading the inputs and dumping render's outputs;
- start-up: `tjc validate` of one file (built-in packs on) against kubeconform on that file,
  and its median wall time (target: 100 ms), with a bare `python -c pass` for scale;
- workers: `tjc validate` and `tjc render` with `-j 2` against `-j 1` (target: below 1x, the
  second core used);
- memory: peak RSS of `tjc render` and `tjc validate` (`-j 1`) on 1,000, 10,000 and 100,000
  TrainJobs, one file each (target: 100,000 within 1.5x of 1,000).

The repositories are generated once and kept under ~/.cache/tjc-bench/corpus/ (by generator
version, size and seed; 100,000 files take minutes to write).

Prints a table and the machine's load; `--json FILE` also writes the figures. `--only
startup` (or policies, kubeconform, floor, memory; comma-separated) measures just those.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from bench import corpus, kubeconform
from compiler.io import emit
from compiler.io.builtin import builtin_runtimes
from compiler.io.loader import Source
from compiler.pipeline.session import JobResult
from compiler.render.pipeline import render_stream

Run = Callable[[], object]
TJC = [sys.executable, "-m", "compiler"]
ROOT = Path(__file__).resolve().parent.parent


def command(argv: list[str]) -> Run:
    """A command whose output and exit code do not matter (invalid documents exit 1)."""
    def run() -> None:
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return run


def timed(fn: Run) -> float:
    """Wall time of one call."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def paired(a: Run, b: Run, pairs: int) -> dict[str, Any]:
    """Median of a/b over interleaved pairs (the order alternates), with the range and the
    median times."""
    ratios, times_a, times_b = [], [], []
    for i in range(pairs):
        if i % 2:
            tb, ta = timed(b), timed(a)
        else:
            ta, tb = timed(a), timed(b)
        ratios.append(ta / tb)
        times_a.append(ta)
        times_b.append(tb)
    return {"ratio": statistics.median(ratios), "min": min(ratios), "max": max(ratios),
            "a_seconds": statistics.median(times_a), "b_seconds": statistics.median(times_b),
            "pairs": pairs}


def in_process_render(text: str) -> tuple[Run, Run]:
    """Render (load, check, compile, emit) of a stream in process, and the libyaml floor."""
    runtimes = builtin_runtimes()

    def render() -> None:
        for item in render_stream([Source("bench.yaml", text)], runtimes):
            if isinstance(item, JobResult):
                emit.yaml_stream(item.objects)

    def floor() -> None:
        yaml.dump_all(list(yaml.load_all(text, Loader=yaml.CSafeLoader)),
                      Dumper=yaml.CSafeDumper)
    return render, floor


def output_floor(text: str) -> Run:
    """libyaml loading the inputs and dumping what render writes for them (the objects
    rendered once beforehand): what any YAML-in, YAML-out tool of these outputs does."""
    objects = [obj for item in render_stream([Source("bench.yaml", text)], builtin_runtimes())
               if isinstance(item, JobResult) for obj in item.objects]

    def floor() -> None:
        list(yaml.load_all(text, Loader=yaml.CSafeLoader))
        yaml.dump_all(objects, Dumper=yaml.CSafeDumper)
    return floor


PEAK_RSS = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=False, "
            "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")


def peak_rss_mib(argv: list[str]) -> float:
    """Peak RSS of a command, measured from a small parent so ours does not count."""
    out = subprocess.run([sys.executable, "-c", PEAK_RSS, *argv], check=True,
                         capture_output=True, text=True).stdout
    return int(out) / 1024


def memory(sizes: list[int]) -> dict[str, Any]:
    """Peak RSS of render and validate in one process per repository size, and the largest
    over the smallest."""
    out: dict[str, Any] = {}
    for n in sizes:
        tree = str(corpus.cached_tree(n))
        out[str(n)] = {verb: peak_rss_mib([*TJC, verb, "-q", "-j", "1", tree])
                       for verb in ("render", "validate")}
    first, last = out[str(sizes[0])], out[str(sizes[-1])]
    out["ratio"] = {verb: last[verb] / first[verb] for verb in ("render", "validate")}
    return out


GROUPS = ("policies", "userpacks", "workers", "kubeconform", "floor", "startup", "memory")


def user_packs(tmp: Path) -> dict[str, Path]:
    """Folders of user packs: the built-in packs with their messages changed, the team
    pack, and both."""
    from compiler.policy.packs import BUILTIN_DIR

    edited, both = tmp / "edited", tmp / "both"
    for folder in (edited, both):
        folder.mkdir()
        for pack in sorted(BUILTIN_DIR.glob("*.cue")):
            text = pack.read_text().replace('message:   "', 'message:   "[team] ')
            (folder / pack.name).write_text(text)
    team = ROOT / "bench" / "packs" / "team.cue"
    (both / team.name).write_text(team.read_text())
    return {"edited": edited, "team": team.parent, "both": both}


def measure(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """Every figure of the table (of the groups in `args.only`)."""
    tree = str(corpus.cached_tree(args.n))
    files = sorted(Path(tree).rglob("*.yaml"))
    one = str(files[-1])
    kc, schemas = kubeconform.binary(), kubeconform.write_schemas(tmp / "schemas")
    # An installed package has its bytecode; a checkout run with PYTHONDONTWRITEBYTECODE
    # would compile every module on every start.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "compiler")],
                   check=True, stdout=subprocess.DEVNULL)
    validate, render = [*TJC, "validate", "-q", tree], [*TJC, "render", "-q", tree]
    off = "--no-default-policies"
    figures: dict[str, Any] = {"trainjobs": args.n, "files": len(files)}
    command(validate)()  # warm the file cache and the pack cache (and the start-up cache)
    if "policies" in args.only:
        figures["validate_policies"] = paired(command(validate), command([*validate, off]),
                                              args.pairs)
        figures["render_policies"] = paired(command(render), command([*render, off]),
                                            args.pairs)
        figures["validate_pss_restricted"] = paired(
            command([*validate, "--pss-level", "restricted"]), command([*validate, off]),
            args.pairs)
    if "userpacks" in args.only:
        for name, folder in user_packs(tmp).items():
            mine = [*validate, off, "--policy", str(folder)]
            command(mine)()  # (loads the packs into the pack cache)
            figures[f"userpacks_{name}"] = paired(command(mine), command([*validate, off]),
                                                  args.pairs)
    if "workers" in args.only:
        for verb, argv in (("validate", validate), ("render", render)):
            figures[f"{verb}_workers"] = paired(command([*argv, "-j", "2"]),
                                                command([*argv, "-j", "1"]), args.pairs)
    if "kubeconform" in args.only:
        schema_only = command(kubeconform.command(kc, schemas, tree))
        figures["validate_packs_vs_kubeconform"] = paired(command(validate), schema_only,
                                                          args.pairs)
        figures["validate_vs_kubeconform"] = paired(command([*validate, off]), schema_only,
                                                    args.pairs)
        jobsets = tmp / "jobsets"  # what validate also checks: the JobSets it compiles
        command([*render, off, "--output-dir", str(jobsets)])()
        figures["validate_packs_vs_kubeconform_jobsets"] = paired(
            command(validate), command(kubeconform.command(kc, schemas, tree, str(jobsets))),
            args.pairs)
    if "floor" in args.only:
        text = "".join(corpus.stream(args.n))
        render_run, input_floor = in_process_render(text)
        figures["render_vs_libyaml"] = paired(render_run, input_floor, args.pairs)
        figures["render_vs_libyaml_output"] = paired(render_run, output_floor(text),
                                                     args.pairs)
    if "startup" in args.only:
        start = command([*TJC, "validate", "-q", one])
        figures["startup_vs_kubeconform"] = paired(
            start, command(kubeconform.command(kc, schemas, one)), args.startup_pairs)
        figures["startup_vs_python"] = paired(start, command([sys.executable, "-c", "pass"]),
                                              args.startup_pairs)
    if "memory" in args.only:
        figures["memory"] = memory(args.memory)
    return figures


ROWS = [  # (label, figure, key, target or None)
    ("tjc validate, built-in packs / --no-default-policies", "validate_policies", "ratio", 1.5),
    ("tjc render, built-in packs / --no-default-policies", "render_policies", "ratio", 1.5),
    ("tjc validate, built-in packs, --pss-level restricted / --no-default-policies",
     "validate_pss_restricted", "ratio", None),
    ("tjc validate, built-in packs edited / --no-default-policies", "userpacks_edited",
     "ratio", 1.5),
    ("tjc validate, a team's 10 rules / --no-default-policies", "userpacks_team", "ratio",
     1.5),
    ("tjc validate, both / --no-default-policies", "userpacks_both", "ratio", None),
    ("tjc validate -j 2 / -j 1", "validate_workers", "ratio", 0.99),
    ("tjc render -j 2 / -j 1", "render_workers", "ratio", 0.99),
    ("tjc validate / kubeconform", "validate_packs_vs_kubeconform", "ratio", 1.0),
    ("tjc validate --no-default-policies / kubeconform", "validate_vs_kubeconform", "ratio",
     None),
    ("tjc validate / kubeconform on the TrainJobs and the JobSets they compile to",
     "validate_packs_vs_kubeconform_jobsets", "ratio", None),
    ("tjc render in process / libyaml load + dump", "render_vs_libyaml", "ratio", 1.0),
    ("tjc render in process / libyaml load of the inputs + dump of the outputs",
     "render_vs_libyaml_output", "ratio", None),
    ("one file: tjc validate / kubeconform", "startup_vs_kubeconform", "ratio", None),
    ("one file: tjc validate, median seconds", "startup_vs_python", "a_seconds", 0.100),
    ("one file: python -c pass, median seconds", "startup_vs_python", "b_seconds", None),
]


def table(figures: dict[str, Any]) -> str:
    """The figures as a Markdown table with the targets."""
    lines = ["| measure | figure | target | met |", "|---|---|---|---|"]
    for label, name, key, target in ROWS:
        if name not in figures:
            continue
        fig = figures[name]
        value = fig[key]
        spread = f" ({fig['min']:.2f} to {fig['max']:.2f})" if key == "ratio" else ""
        shown = f"{value:.2f}x{spread}" if key == "ratio" else f"{value * 1000:.0f} ms"
        goal = "" if target is None else (f"<= {target}x" if key == "ratio"
                                          else f"<= {target * 1000:.0f} ms")
        met = "" if target is None else ("yes" if value <= target else "no")
        lines.append(f"| {label} | {shown} | {goal} | {met} |")
    mem = figures.get("memory")
    if mem is None:
        return "\n".join(lines)
    sizes = [k for k in mem if k != "ratio"]
    for verb in ("render", "validate"):
        per = ", ".join(f"{int(k):,}: {mem[k][verb]:.0f} MiB" for k in sizes)
        ok = "yes" if mem["ratio"][verb] <= 1.5 else "no"
        lines.append(f"| peak RSS of tjc {verb} ({per}) | {mem['ratio'][verb]:.2f}x "
                     f"largest/smallest | <= 1.5x | {ok} |")
    return "\n".join(lines)


def _groups(text: str) -> list[str]:
    groups = [g.strip() for g in text.split(",") if g.strip()]
    unknown = [g for g in groups if g not in GROUPS]
    if unknown or not groups:
        raise argparse.ArgumentTypeError(f"unknown group {', '.join(unknown) or text!r}; "
                                         f"expected some of {', '.join(GROUPS)}")
    return groups


def main(argv: list[str] | None = None) -> int:
    """Run every comparison and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=10_000, help="TrainJobs (default 10000)")
    parser.add_argument("--pairs", type=int, default=5, help="pairs per ratio (default 5)")
    parser.add_argument("--startup-pairs", type=int, default=11,
                        help="pairs for the one-file start-up figures (default 11)")
    parser.add_argument("--only", type=_groups, default=list(GROUPS),
                        help=f"measure only these groups, comma-separated ({', '.join(GROUPS)};"
                        " default: all)")
    parser.add_argument("--memory", type=lambda s: [int(x) for x in s.split(",")],
                        default=[1_000, 10_000, 100_000],
                        help="stream sizes for peak memory (default 1000,10000,100000)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        figures = measure(args, Path(tmp))
    figures["machine"] = {"cpus": os.cpu_count(), "load_before": load_before,
                          "load_after": os.getloadavg()}
    print(table(figures))
    print(f"\n{args.n:,} TrainJobs in {figures['files']:,} files; {os.cpu_count()} CPUs; load "
          f"average {load_before[0]:.1f} before, {figures['machine']['load_after'][0]:.1f} "
          "after; ratios are medians of interleaved pairs (range in brackets)")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
