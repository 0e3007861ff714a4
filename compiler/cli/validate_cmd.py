"""`tjc validate`: report everything the cluster would reject, and upstream's surprises."""

from __future__ import annotations

import argparse
import dataclasses
import os
import shlex
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from compiler.cli import (
    collect,
    console,
    exclude_opt,
    fieldopts,
    jobs,
    namespace_opt,
    outputopt,
    policy_opts,
    release_opt,
    runtimes_opt,
)
from compiler.cli.filepipeline import FilePipeline, serve
from compiler.common.diagnostics import Diagnostic, Severity
from compiler.io.loader import SourceFiles, read_sources
from compiler.validate.locations import Context

if TYPE_CHECKING:
    from compiler.cli import report_out
    from compiler.pipeline.names import Met
    from compiler.pipeline.session import Session
    from compiler.policy.check import PolicyChecker

BUILTIN_PREFIX = "<builtin>/"
# what a pipeline imports (only when it is built: a forked -j worker inherits these)
PRELOAD = ("compiler.io.builtin", "compiler.io.inputs", "compiler.validate.documents")

HELP = "check TrainJobs and runtimes offline: schema, CEL rules, webhook rules, quirks"
EPILOG = """\
exit codes: 0 clean (warnings allowed), 1 errors (or warnings with --strict; warnings that come
only from the built-in runtimes themselves, upstream's files, are reported but do not fail
--strict), 2 usage error, unreadable input, or policies that cannot be applied (no CUE
evaluator: pass --no-default-policies to validate without them).

Folder walks leave out hidden entries, node_modules, what .gitignore files ignore, and
--exclude GLOB. -o junit writes JUnit XML: one test case per input file, a failure per error.
-o policyreport writes PolicyReports (ClusterPolicyReport for ClusterTrainingRuntimes): per
object and rule, pass, fail, warn, or skip (exempted), ready for kubectl apply.

examples (run from the repository's top folder):
  tjc validate examples/custom-runtime/ examples/gitops/base/   every document of two folders
  tjc validate examples/jax-mnist.yaml -o sarif > tjc.sarif
  tjc validate examples/jax-mnist.yaml --against examples/jax-mnist.yaml
                                                also check immutable fields against OLD
  tjc validate --strict examples/               fail on warnings too
  tjc validate examples/custom-runtime/resnet.yaml --runtimes examples/custom-runtime/
                                                resolve runtimeRefs with your runtimes
  tjc validate examples/custom-runtime/resnet.yaml --repo-runtimes
                                                ... with every runtime in the git repository
  tjc validate examples/ -o github              GitHub Actions annotations
  tjc validate examples/ -o junit > tjc-junit.xml   JUnit XML for CI test reports
  tjc validate examples/ -o policyreport > reports.yaml   PolicyReports per namespace
  tjc validate examples/ --exclude helm-chart   leave a folder out of the walk
  tjc validate examples/gitops/base/ --namespace ml-team   as applied into ml-team (apply -n)
  tjc validate examples/ --policy examples/policies/team.cue \\
      --policy-values examples/policies/values.cue   your own pack, and the packs' settings
  tjc validate examples/ --skip images.tag      all built-in packs but one rule
  tjc validate -j 4 examples/                   in 4 processes (same report as -j 1)
  tjc validate examples/ --trainer-version v2.2.1   as a Kubeflow Trainer v2.2.1 cluster admits
                                                (or pin it once: .tjc.yaml trainerVersion)
  tjc validate examples/ --jobset-version v0.10.1   warn where JobSet v0.10.1 drops a field
"""


def register(verbs: Any) -> None:
    """Add the `validate` verb to the parser."""
    parser = verbs.add_parser("validate", help=HELP, description=HELP[0].upper() + HELP[1:] + ".",
                              epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="YAML/JSON file, folder (searched recursively) or - for stdin")
    outputopt.add_argument(parser, ("text", "json", "sarif", "github", "junit", "policyreport"),
                           "text", "output format (default: text; github: GitHub Actions "
                           "annotations; junit: JUnit XML, one test case per input file; "
                           "policyreport: wgpolicyk8s.io/v1alpha2 PolicyReports, one per "
                           "namespace)", dest="format", old=("--format",))
    parser.add_argument("--strict", action="store_true", help="exit 1 on warnings too")
    parser.add_argument("--against", action="append", default=[], metavar="OLD",
                        help="previous version of the inputs (file or folder), to check "
                        "transition rules such as immutable fields; may be repeated")
    runtimes_opt.add_argument(parser)
    exclude_opt.add_argument(parser)
    parser.add_argument("--repo-runtimes", action="store_true",
                        help="also resolve runtimeRefs with every runtime in the git "
                        "repository of the working folder (what the pre-commit hook does)")
    parser.add_argument("--no-builtin-runtimes", action="store_true",
                        help="do not load the built-in ClusterTrainingRuntimes")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="do not report notices (exemptions used are still reported)")
    console.add_color_argument(parser)
    fieldopts.add_argument(parser)
    namespace_opt.add_arguments(parser)
    jobs.add_argument(parser)
    policy_opts.add_arguments(parser)
    release_opt.add_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Validate, print the report on stdout as it comes, return the exit code."""
    args.versions = release_opt.resolve(args)
    sources = SourceFiles(args.paths, args.exclude)
    # a worker cannot read stdin again: `--against -` or `--runtimes -` stay in one process
    stdin = "-" in (*args.against, *args.runtimes)
    processes = 1 if stdin else jobs.workers(args.jobs, sources)
    with jobs.Workers(processes, _worker, (args, sources), PRELOAD) as workers:
        pipeline = Pipeline(args, sources)
        collect.started()
        return _report(args, pipeline, workers)


def _report(args: argparse.Namespace, pipeline: Pipeline, workers: jobs.Workers) -> int:
    from compiler.cli import report_out
    from compiler.pipeline.names import Names, locate_in

    context = _context(args, pipeline.checker)
    out = report_out.Report(args.format, sys.stdout, context, strict=args.strict,
                            files=pipeline.sources.names,
                            colour=console.colour_on(args.color, sys.stdout),
                            whole=_policy_reports(args, pipeline))
    for d in pipeline.notes:
        _add(args, out, d)
    policy_errors = list(pipeline.checker.policies.errors) if pipeline.checker else []
    names, locate = Names(), locate_in(pipeline.sources)
    for found, new, met in workers.ordered(pipeline.plan()):
        for d in pipeline.checker.once(found) if pipeline.checker else found:
            _add(args, out, d)
        for d in names.meet(met, locate):
            out.add(d)
        policy_errors += [d for d in new if d not in policy_errors]
    for d in policy_errors:
        out.add(d)
    out.finish(dataclasses.replace(context, exit_code=out.exit_code))
    return out.exit_code


def _policy_reports(args: argparse.Namespace, pipeline: Pipeline
                    ) -> Callable[[list[Diagnostic]], str] | None:
    """`-o policyreport`'s writer, over the run's inputs and policy set."""
    if args.format != "policyreport":
        return None
    from compiler.cli import policyreport_out

    policies = pipeline.checker.policies if pipeline.checker else None
    return lambda found: policyreport_out.render(found, pipeline.sources, args.placement,
                                                 policies)


def _add(args: argparse.Namespace, out: report_out.Report, d: Diagnostic) -> None:
    if not (args.quiet and d.severity is Severity.NOTICE and d.suppression is None):
        out.add(d)


class Pipeline(FilePipeline[tuple[list[Diagnostic], list[Diagnostic], list["Met"]]]):
    """What a process needs to validate the files of the inputs (`FilePipeline`), with the
    previous versions `--against` names."""

    def __init__(self, args: argparse.Namespace, sources: SourceFiles,
                 runtime_files: SourceFiles | None = None) -> None:
        super().__init__(args, sources, runtime_files)
        self._sent: set[Diagnostic] = set()

    def read_more(self) -> None:
        """The previous versions `--against` names."""
        from compiler.validate.documents import previous_versions

        previous = read_sources(self.args.against) if self.args.against else []
        self.old, problems = previous_versions(previous, self.args.placement)
        self.notes += problems

    def new_session(self) -> Session:
        from compiler.pipeline.session import Session

        return Session(self.table, self.old, self.checker, self.args.field_validation,
                       self.versions.release, self.versions.jobset)

    def _first(self, d: Diagnostic) -> bool:
        """Whether this process meets this policy diagnostic for the first time. A runtime's
        violation comes again with every JobSet made from it; the report keeps its first
        (`PolicyChecker.once`), and this process's runs come in input order, so a repeat
        goes no further (from a worker, it would only be pickled to be dropped)."""
        if d in self._sent:
            return False
        self._sent.add(d)
        return True

    def task(self, indices: list[int]
             ) -> tuple[list[Diagnostic], list[Diagnostic], list[Met]]:
        """The diagnostics of these files in order, the policy errors first met there, and
        the TrainJobs met (for the parent's `Names`)."""
        from compiler.validate.documents import validate_source

        met: list[Met] = []
        found = [d for i in indices
                 for d in validate_source(self.session, self.sources[i], self.args.placement,
                                          met)
                 if d.subject != "policy" or self._first(d)]
        return found, self.new_policy_errors(), met


def _worker(payload: tuple[argparse.Namespace, SourceFiles]
            ) -> Callable[[frozenset[str]], jobs.Task]:
    """A worker's setup before the parent's first pass: everything but the input runtimes."""
    args, sources = payload
    return serve(Pipeline(args, sources, sources.subset(set())))


def exit_code(diagnostics: list[Diagnostic], *, strict: bool) -> int:
    """1 on errors; with `strict` also on warnings, but not on those that come only from the
    built-in runtimes themselves (upstream's files, which the user cannot change)."""
    if any(d.severity is Severity.ERROR for d in diagnostics):
        return 1
    return 1 if strict and any(d.severity is Severity.WARNING and not _only_builtin(d)
                               for d in diagnostics) else 0


def _only_builtin(d: Diagnostic) -> bool:
    return bool(d.locations) and all(loc.file.startswith(BUILTIN_PREFIX)
                                     for loc in d.locations)


def _context(args: argparse.Namespace, checker: PolicyChecker | None) -> Context:
    from compiler.io.builtin import builtin_uris

    rules = {r.id: r.message for r in checker.policies.rules()} if checker else {}
    top = None
    if args.format in ("sarif", "github"):
        from compiler.cli import repo  # runs git: only the formats that name the repository

        top = repo.root()
    return Context(rules, 0, shlex.join(["tjc", *sys.argv[1:]]), os.getcwd(),
                   str(top) if top else None, builtin_uris(args.versions.release.version))
