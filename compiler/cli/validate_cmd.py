"""`tjc validate`: report everything the cluster would reject, and upstream's surprises."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from compiler.builtin import builtin_runtimes
from compiler.cli import policy_opts
from compiler.diagnostics import Severity
from compiler.loader import parse_source, read_sources
from compiler.resolve import RUNTIME_KINDS

HELP = "check TrainJobs and runtimes offline: schema, CEL rules, webhook rules, quirks"
EPILOG = """\
exit codes: 0 clean (warnings allowed), 1 errors (or warnings with --strict), 2 usage error or
unreadable input.

examples:
  tjc validate jobs/ runtimes/                  every document below two folders
  tjc validate job.yaml --format sarif > tjc.sarif
  tjc validate job.yaml --against old/job.yaml  also check immutable fields (a GitOps diff)
  tjc validate --strict jobs/                   fail on warnings too
  tjc validate jobs/a.yaml --runtimes runtimes/  resolve runtimeRefs with your runtimes
  tjc validate jobs/ --policy team-policies/ --policy-values limits.yaml
  tjc validate jobs/ --skip images.tag          all built-in packs but one rule
"""


def register(verbs: Any) -> None:
    """Add the `validate` verb to the parser."""
    parser = verbs.add_parser("validate", help=HELP, description=HELP[0].upper() + HELP[1:] + ".",
                              epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="YAML/JSON file, folder (searched recursively) or - for stdin")
    parser.add_argument("--format", choices=("text", "json", "sarif"), default="text",
                        help="output format (default: text)")
    parser.add_argument("--strict", action="store_true", help="exit 1 on warnings too")
    parser.add_argument("--against", action="append", default=[], metavar="OLD",
                        help="previous version of the inputs (file or folder), to check "
                        "transition rules such as immutable fields; may be repeated")
    parser.add_argument("--runtimes", action="append", default=[], metavar="PATH",
                        help="more runtime documents to resolve runtimeRefs with (not "
                        "themselves reported); may be repeated")
    parser.add_argument("--no-builtin-runtimes", action="store_true",
                        help="do not load the built-in ClusterTrainingRuntimes")
    parser.add_argument("-q", "--quiet", action="store_true", help="do not report notices")
    policy_opts.add_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Validate, print the report on stdout, return the exit code."""
    from compiler.validate import report
    from compiler.validation import validate_stream

    sources = read_sources(args.paths)
    previous = read_sources(args.against) if args.against else []
    builtin = [] if args.no_builtin_runtimes else list(builtin_runtimes())
    if args.runtimes:
        builtin += [doc for source in read_sources(args.runtimes)
                    for doc in parse_source(source)[0]
                    if doc.data.get("kind") in RUNTIME_KINDS]
    checker = policy_opts.build(args)
    diagnostics = [d for d in validate_stream(sources, builtin, previous, checker)
                   if not (args.quiet and d.severity is Severity.NOTICE)]
    if checker is not None:
        diagnostics += checker.policies.errors
    sys.stdout.write(report.RENDERERS[args.format](diagnostics))
    failing = {Severity.ERROR, Severity.WARNING} if args.strict else {Severity.ERROR}
    return 1 if any(d.severity in failing for d in diagnostics) else 0
