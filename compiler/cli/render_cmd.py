"""`tjc render`: print (or write) every object produced for every TrainJob found."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from compiler import emit
from compiler.builtin import builtin_runtimes
from compiler.diagnostics import Diagnostic, Severity, error, has_errors
from compiler.loader import load_paths
from compiler.render import JobResult, render_documents

HELP = "render TrainJobs into the JobSet (and side objects) Kubeflow Trainer creates"
EPILOG = """\
examples:
  tjc render examples/                          every TrainJob below a folder
  tjc render job.yaml my-runtime.yaml -o json   with a runtime of your own, as JSON
  tjc render jobs/ --output-dir rendered/       one file per TrainJob: rendered/<ns>/<name>.yaml
  kubectl get trainjob mnist -o yaml | tjc render -
"""
MANIFEST = ".tjc-render-manifest"


def register(verbs: Any) -> None:
    """Add the `render` verb to the parser."""
    parser = verbs.add_parser("render", help=HELP, description=HELP.capitalize() + ".",
                              epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="YAML/JSON file, folder (searched recursively) or - for stdin")
    parser.add_argument("-o", "--output", choices=("yaml", "json"), default="yaml",
                        help="output format (default: yaml; json prints a v1 List)")
    parser.add_argument("--output-dir", metavar="DIR",
                        help="write one file per TrainJob below DIR instead of stdout")
    parser.add_argument("--no-builtin-runtimes", action="store_true",
                        help="do not load the built-in ClusterTrainingRuntimes")
    parser.add_argument("-q", "--quiet", action="store_true", help="do not print notices")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Load, render, print; exit 1 if any input had errors."""
    docs, problems = load_paths(args.paths)
    builtin = () if args.no_builtin_runtimes else builtin_runtimes()
    result = render_documents(docs, builtin)
    diagnostics = problems + result.diagnostics
    for job in result.jobs:
        diagnostics.extend(job.diagnostics)
    if args.output_dir:
        diagnostics.extend(write_files(Path(args.output_dir), result.jobs, args.output))
    else:
        objects = [obj for job in result.jobs for obj in job.objects]
        text = emit.json_list(objects) if args.output == "json" else emit.yaml_stream(objects)
        sys.stdout.write(text)
        sys.stdout.flush()
    report(diagnostics, quiet=args.quiet)
    return 1 if has_errors(diagnostics) else 0


def report(diagnostics: list[Diagnostic], *, quiet: bool) -> None:
    """One line per diagnostic on stderr."""
    for diag in diagnostics:
        if quiet and diag.severity is Severity.NOTICE:
            continue
        print(diag.text(), file=sys.stderr)


def write_files(out_dir: Path, jobs: list[JobResult], fmt: str) -> list[Diagnostic]:
    """Write `<ns>/<name>.<fmt>` per TrainJob; only files this command wrote are replaced."""
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest_path = out_dir / MANIFEST
    owned = set(manifest_path.read_text().split()) if manifest_path.exists() else set()
    problems: list[Diagnostic] = []
    for job in jobs:
        if not job.objects:
            continue
        rel = f"{job.name}.{fmt}"
        target = out_dir / rel
        if target.exists() and rel not in owned:
            problems.append(error("TJC-OUTPUT-EXISTS", f"{target} exists and was not written "
                                  "by tjc render; not overwritten"))
            continue
        text = emit.json_list(job.objects) if fmt == "json" else emit.yaml_stream(job.objects)
        _atomic_write(target, text)
        owned.add(rel)
    _atomic_write(manifest_path, "".join(f"{name}\n" for name in sorted(owned)))
    return problems


def _atomic_write(target: Path, text: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tjc-")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, target)
