"""The long fuzz campaign behind `make fuzz`: run the fuzz strategies until N documents were
fed to tjc, keep going past findings, and report the count and every distinct finding.

    python -m tests.fuzz.campaign --documents 1000000 [--seed S] [--jobs N]

Each family of `tests.fuzz.strategies` gets its share of the budget; hypothesis drives the
generation (not derandomized: every campaign explores anew unless --seed is given). A finding
is a broken promise of `tests.fuzz.harness.problems`; the first case of each distinct finding
is written to `build/fuzz/findings/` so it can become a regression test. Exit 1 when anything
was found.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, seed, settings
from hypothesis.errors import HypothesisException

from tests.fuzz import strategies as fs
from tests.fuzz.harness import REPO, Case, Worker, problems

# Streams of several documents per run: most of a run's cost is fixed (runtimes, policies).
FAMILIES = {"token-soup": lambda: fs.cases_for(fs.single(fs.soup_stream(25))),
            "deep-nesting": lambda: fs.cases_for(fs.single(fs.deep_text())),
            "malformed-objects": lambda: fs.cases_for(fs.single(fs.objects_text(25))),
            "mutated-golden": lambda: fs.cases_for(fs.mutated_golden()),
            "differential": fs.differential_cases}
SHARE = {"token-soup": 0.3, "deep-nesting": 0.02, "malformed-objects": 0.3,
         "mutated-golden": 0.3, "differential": 0.08}
CHUNK = 200
OUT = REPO / "build" / "fuzz" / "findings"


class Tally:
    """Documents and runs so far, and the findings by kind."""

    def __init__(self) -> None:
        self.documents = 0
        self.runs = 0
        self.findings: Counter[str] = Counter()
        self.examples: dict[str, Case] = {}

    def as_json(self) -> dict[str, Any]:
        """What a part sends the parent."""
        return {"documents": self.documents, "runs": self.runs,
                "findings": dict(self.findings),
                "examples": {k: case.__dict__ for k, case in self.examples.items()}}

    def merge(self, part: dict[str, Any]) -> None:
        """Add a part's tally."""
        self.documents += part["documents"]
        self.runs += part["runs"]
        self.findings.update(part["findings"])
        for key, case in part["examples"].items():
            self.examples.setdefault(key, Case(**case))

    def record(self, case: Case, found: list[str]) -> None:
        """Count one run and file its findings under a key without the variable parts."""
        self.documents += case.documents
        self.runs += 1
        for finding in found:
            key = re.sub(r"'[^']*'|\"[^\"]*\"|\d+", "_", finding.splitlines()[-1])[:160]
            self.findings[key] += 1
            self.examples.setdefault(key, case)


def _family(name: str, budget: int, worker: Worker, tally: Tally, rng: int | None) -> None:
    """Run one family until its share of documents is done."""
    done = {"documents": 0}

    @settings(max_examples=CHUNK, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck))
    @given(case=FAMILIES[name]())
    def run(case: Case) -> None:
        if done["documents"] >= budget:
            return
        before = tally.documents // 2000
        tally.record(case, problems(case, worker.run(case)))
        done["documents"] += case.documents
        if tally.documents // 2000 != before:
            print(f"    {tally.documents} documents, {tally.runs} runs, "
                  f"{len(tally.findings)} findings", flush=True)

    chunk = 0
    while done["documents"] < budget:
        chunk += 1
        try:
            (run if rng is None else seed(rng * 100_003 + chunk)(run))()
        except HypothesisException:
            continue
        except Exception as exc:  # a generator bug must not end the campaign unreported
            key = f"generator error: {type(exc).__name__}: {str(exc)[:120]}"
            tally.findings[key] += 1
            tally.examples.setdefault(key, Case(name, [traceback.format_exc(limit=-4)]))


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    """Run the campaign; print the count and the findings."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="campaigns run side by side, each with its share of documents "
                        "and its own seed (default: one per core)")
    parser.add_argument("--tally", help=argparse.SUPPRESS)  # a part's result, for the parent
    args = parser.parse_args(argv)
    start = time.monotonic()
    signal.signal(signal.SIGTERM, _interrupt)
    tally = _parts(args) if args.jobs > 1 else _campaign(args.documents, args.seed)
    if args.tally:
        Path(args.tally).write_text(json.dumps(tally.as_json(), ensure_ascii=True))
        return 0
    _report(tally, time.monotonic() - start)
    return 1 if tally.findings else 0


def _campaign(documents: int, rng: int | None) -> Tally:
    """Every family in this process, each with its share of `documents`."""
    tally, start = Tally(), time.monotonic()
    worker = Worker()
    try:
        for name, share in SHARE.items():
            _family(name, int(documents * share) + 1, worker, tally, rng)
            print(f"  {name}: {tally.documents} documents so far, "
                  f"{time.monotonic() - start:.0f} s", flush=True)
    except KeyboardInterrupt:
        print("  interrupted: the count below is what ran", flush=True)
    finally:
        worker.close()
    return tally


def _parts(args: argparse.Namespace) -> Tally:
    """`args.jobs` campaigns in child processes (seeds apart), their tallies merged."""
    base = args.seed if args.seed is not None else random.randrange(1 << 30)
    with tempfile.TemporaryDirectory(prefix="tjc-fuzz-parts-") as tmp:
        files = [Path(tmp, f"part-{i}.json") for i in range(args.jobs)]
        procs = [subprocess.Popen([sys.executable, "-m", "tests.fuzz.campaign", "--jobs", "1",
                                   "--documents", str(-(-args.documents // args.jobs)),
                                   "--seed", str(base + i * 7919), "--tally", str(path)],
                                  cwd=REPO) for i, path in enumerate(files)]
        try:
            for proc in procs:
                proc.wait()
        except KeyboardInterrupt:
            for proc in procs:
                proc.send_signal(signal.SIGTERM)
            for proc in procs:
                proc.wait()
        tally = Tally()
        for path in files:
            if path.exists():
                tally.merge(json.loads(path.read_text()))
            else:
                tally.findings["a campaign part ended without its tally"] += 1
    return tally


def _report(tally: Tally, seconds: float) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    print(f"fuzz campaign: {tally.documents} documents in {tally.runs} runs of tjc, "
          f"{seconds:.0f} s, {len(tally.findings)} distinct findings")
    for i, (key, count) in enumerate(tally.findings.most_common()):
        case = tally.examples[key]
        path = OUT / f"finding-{i}.json"
        record: dict[str, Any] = {"finding": key, "count": count, **case.__dict__}
        path.write_text(json.dumps(record, indent=2, ensure_ascii=True))
        print(f"  {count:6d}  {key}  (e.g. {path.relative_to(REPO)})")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
