"""`tjc explain`: the active plugins and, for every field a plugin or the TrainJob set, who set
it and from which input line."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from compiler.builtin import builtin_runtimes
from compiler.diagnostics import Diagnostic
from compiler.errors import InputError
from compiler.loader import Document, parse_source, read_sources

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


def _documents(paths: list[str]) -> list[Document]:
    docs: list[Document] = []
    for source in read_sources(paths):
        found, problems = parse_source(source)
        if problems:
            raise InputError(problems[0])
        docs.extend(found)
    return docs


def run(args: argparse.Namespace) -> int:
    """Explain the first TrainJob of the file."""
    from compiler.explain import Explainer, find_runtime

    docs = _documents([args.trainjob])
    trainjob = next((d for d in docs if d.data.get("kind") == "TrainJob"), None)
    if trainjob is None:
        print(f"tjc: {args.trainjob} holds no TrainJob", file=sys.stderr)
        return 2
    runtime = find_runtime(trainjob, [*docs, *_documents(args.runtime), *builtin_runtimes()])
    if isinstance(runtime, Diagnostic):
        print(runtime.text(), file=sys.stderr)
        return 1
    explainer = Explainer(trainjob, runtime)
    sys.stdout.write(explainer.dot() if args.graph == "dot" else explainer.text())
    return 0 if explainer.result.ok else 1
