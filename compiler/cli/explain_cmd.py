"""`tjc explain`: the active plugins and, for every field a plugin or the TrainJob set, who set
it and from which input line."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from compiler.cli import release_opt
from compiler.common.diagnostics import Diagnostic, Severity, one_line, refused
from compiler.core.release import Release
from compiler.io import toolfiles
from compiler.io.builtin import builtin_runtimes
from compiler.io.loader import Document, Source, parse_source, read_sources

HELP = "explain which plugin or input set each field of a TrainJob's output"
EPILOG = """\
Every TrainJob of the inputs is explained in input order, each beginning with its line
`TrainJob NAMESPACE/NAME (FILE:LINE:COL) with ...` (a blank line between two). Runtimes among
the inputs resolve runtimeRefs as --runtime files do.

exit codes: 0 explained, 1 a TrainJob has errors (printed on stderr; the others are still
explained), 2 usage error, unreadable input, or inputs that hold no TrainJob.

examples:
  tjc explain examples/jax-mnist.yaml
  tjc explain examples/                        every TrainJob below a folder
  tjc explain examples/custom-runtime/resnet.yaml --runtime examples/custom-runtime/runtime.yaml
  tjc explain examples/jax-mnist.yaml --graph dot > plugins.dot
  tjc explain examples/torchtune-llama3.2-1b-lora.yaml --trainer-version v2.2.1
                                               as that release builds it
"""


def register(verbs: Any) -> None:
    """Add the `explain` verb to the parser."""
    parser = verbs.add_parser("explain", help=HELP, description=HELP[0].upper() + HELP[1:] + ".",
                              epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="a file with TrainJobs, a folder (searched recursively) or - for "
                        "stdin")
    parser.add_argument("--runtime", action="append", default=[], metavar="FILE",
                        help="runtime documents to resolve the runtimeRef with (the built-in "
                        "runtimes are used otherwise); may be repeated")
    parser.add_argument("--graph", choices=("dot",), help="print the plugin graph instead")
    release_opt.add_arguments(parser, jobset=False)
    parser.set_defaults(func=run)


def _documents(sources: list[Source]) -> tuple[list[Source], list[Document],
                                               list[Diagnostic]]:
    docs: list[Document] = []
    problems: list[Diagnostic] = []
    for source in sources:
        if toolfiles.skipped(source) is not None:  # a Helm template, a kustomization: no input
            continue
        found, bad = parse_source(source)
        docs.extend(found)
        problems.extend(bad)
    return sources, docs, problems


def run(args: argparse.Namespace) -> int:
    """Explain every TrainJob of the inputs that passes validation."""
    from compiler.io.inputs import runtime_table
    from compiler.pipeline.session import Session

    given = read_sources(args.paths)
    sources, docs, problems = _documents([*given, *read_sources(args.runtime)])
    for problem in problems:
        print(problem.text(), file=sys.stderr)
    mine = {id(source) for source in given}
    trainjobs = [d for d in docs if id(d.source) in mine and d.data.get("kind") == "TrainJob"]
    if not trainjobs:
        if problems:
            return 1
        print(one_line(f"tjc: {' '.join(args.paths)} holds no TrainJob"), file=sys.stderr)
        return 2
    release = release_opt.resolve(args).release
    builtin = list(builtin_runtimes(release.version))
    table, notes = runtime_table(sources, builtin)
    session = Session(table, release=release)
    failed = bool(problems)
    for i, trainjob in enumerate(trainjobs):
        if i:
            sys.stdout.write("\n")
        found = [*(notes if i == 0 else []), *session.admit(trainjob)[0]]
        failed = not _explain(args, trainjob, [*docs, *builtin], found, release) or failed
    return 1 if failed else 0


def _explain(args: argparse.Namespace, trainjob: Document, documents: list[Document],
             found: list[Diagnostic], release: Release) -> bool:
    """Explain one TrainJob once it passes validation; False when it has errors."""
    from compiler.explain.explainer import Explainer, find_runtime

    for diag in found:
        if diag.severity is not Severity.NOTICE:
            print(diag.text(), file=sys.stderr)
    if refused(found):
        return False
    runtime = find_runtime(trainjob, documents)
    if isinstance(runtime, Diagnostic):
        print(runtime.text(), file=sys.stderr)
        return False
    explainer = Explainer(trainjob, runtime, release=release)
    sys.stdout.write(explainer.dot() if args.graph == "dot" else explainer.text())
    return explainer.result.ok
