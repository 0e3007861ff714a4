"""`--runtimes PATH` (and validate's `--repo-runtimes`): runtime documents that TrainJobs are
resolved against without being themselves reported or rendered, as a GitOps application
whose runtimes another application owns needs. Used by `tjc validate` and `tjc render`.

Reads files (and, for `--repo-runtimes`, runs git through `compiler.cli.repo`).
"""

from __future__ import annotations

import argparse
import os

from compiler.common.diagnostics import Diagnostic, Severity
from compiler.core.resolve import RUNTIME_KINDS
from compiler.io.loader import Document, SourceFiles, parse_source, read_sources


def add_argument(parser: argparse.ArgumentParser) -> None:
    """Add `--runtimes PATH` (repeatable)."""
    parser.add_argument("--runtimes", action="append", default=[], metavar="PATH",
                        help="more runtime documents to resolve runtimeRefs with (not "
                        "themselves reported or rendered); may be repeated")


def extra_runtimes(args: argparse.Namespace, sources: SourceFiles
                   ) -> tuple[list[Document], list[Diagnostic]]:
    """The runtimes of --runtimes and --repo-runtimes, read in full on every run (a
    pre-commit batch too), without the input files, which report their own; and the errors
    of --runtimes documents that do not parse (a runtime a TrainJob needs may be among them)."""
    extra: list[Document] = []
    unreadable: list[Diagnostic] = []
    repo_runtimes = getattr(args, "repo_runtimes", False)
    if not (args.runtimes or repo_runtimes):
        return extra, unreadable
    inputs = {os.path.realpath(n) for n in sources.names}
    for source in read_sources(args.runtimes):
        if os.path.realpath(source.name) in inputs:
            continue
        docs, problems = parse_source(source)
        extra += [doc for doc in docs if doc.data.get("kind") in RUNTIME_KINDS]
        unreadable += [d for d in problems if d.severity is Severity.ERROR]
    if repo_runtimes:
        from compiler.cli import repo

        seen = inputs | {os.path.realpath(d.source.name) for d in extra}
        extra += repo.runtimes(seen)
    return extra, unreadable
