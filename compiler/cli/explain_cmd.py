"""`tjc explain`: the active plugins and, for every field a plugin or the TrainJob set, who set
it and from which input line."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from compiler.common.diagnostics import Diagnostic, Severity, one_line, refused
from compiler.io.builtin import builtin_runtimes
from compiler.io.loader import Document, Source, parse_source, read_sources

HELP = "explain which plugin or input set each field of a TrainJob's output"
EPILOG = """\
examples:
  tjc explain examples/jax-mnist.yaml
  tjc explain job.yaml --runtime my-runtime.yaml
  tjc explain job.yaml --graph dot | dot -Tsvg > plugins.svg
"""


def register(verbs: Any) -> None:
    """Add the `explain` verb to the parser."""
    parser = verbs.add_parser("explain", help=HELP, description=HELP[0].upper() + HELP[1:] + ".",
                              epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trainjob", metavar="TRAINJOB_FILE",
                        help="a file with one TrainJob (or - for stdin)")
    parser.add_argument("--runtime", action="append", default=[], metavar="FILE",
                        help="runtime documents to resolve the runtimeRef with (the built-in "
                        "runtimes are used otherwise); may be repeated")
    parser.add_argument("--graph", choices=("dot",), help="print the plugin graph instead")
    parser.set_defaults(func=run)


def _documents(paths: list[str]) -> tuple[list[Source], list[Document], list[Diagnostic]]:
    sources = read_sources(paths)
    docs: list[Document] = []
    problems: list[Diagnostic] = []
    for source in sources:
        found, bad = parse_source(source)
        docs.extend(found)
        problems.extend(bad)
    return sources, docs, problems


def _refusals(trainjob: Document, sources: list[Source], builtin: list[Document]
              ) -> list[Diagnostic]:
    """What `tjc validate` says of the TrainJob (and its runtime), as render checks it."""
    from compiler.io.inputs import runtime_table
    from compiler.validate.documents import Validator

    table, notes = runtime_table(sources, builtin)
    return [*notes, *Validator(table).check_trainjob(trainjob)[0]]


def run(args: argparse.Namespace) -> int:
    """Explain the first TrainJob of the file, once it passes validation."""
    from compiler.explain.explainer import Explainer, find_runtime

    sources, docs, problems = _documents([args.trainjob, *args.runtime])
    for problem in problems:
        print(problem.text(), file=sys.stderr)
    trainjob = next((d for d in docs if d.source is sources[0]
                     and d.data.get("kind") == "TrainJob"), None)
    if trainjob is None and problems:
        return 1
    if trainjob is None:
        print(one_line(f"tjc: {args.trainjob} holds no TrainJob"), file=sys.stderr)
        return 2
    builtin = list(builtin_runtimes())
    found = _refusals(trainjob, sources, builtin)
    for diag in found:
        if diag.severity is not Severity.NOTICE:
            print(diag.text(), file=sys.stderr)
    if refused(found):
        return 1
    runtime = find_runtime(trainjob, [*docs, *builtin])
    if isinstance(runtime, Diagnostic):
        print(runtime.text(), file=sys.stderr)
        return 1
    explainer = Explainer(trainjob, runtime)
    sys.stdout.write(explainer.dot() if args.graph == "dot" else explainer.text())
    return 0 if explainer.result.ok and not problems else 1
