"""`tjc render`: print (or write) every object produced for every TrainJob found."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from compiler.cli import (
    collect,
    console,
    exclude_opt,
    fieldopts,
    jobs,
    namespace_opt,
    outdir,
    passthrough_cmd,
    policy_opts,
    release_opt,
    runtimes_opt,
)
from compiler.cli.filepipeline import FilePipeline, serve
from compiler.common.diagnostics import Diagnostic, Location, error, has_errors
from compiler.common.errors import InputError
from compiler.common.records import dataclass
from compiler.core.context import CompileOptions, SSHKeySource
from compiler.io import emit
from compiler.io.loader import Document, SourceFiles
from compiler.pipeline.names import Met, Names
from compiler.pipeline.session import JobResult, Session
from compiler.render.pipeline import render_source

HELP = "render TrainJobs into the JobSet (and side objects) Kubeflow Trainer creates"
EPILOG = """\
Stderr gets one line per diagnostic, then a summary line (not with -q); the warnings and
notices about the built-in runtimes (upstream's files) are only counted there unless
--show-builtin or -v. Folder walks leave out hidden entries, node_modules, what .gitignore
files ignore, and --exclude GLOB.

examples (run from the repository's top folder):
  tjc render examples/                          every TrainJob below a folder
  tjc render examples/custom-runtime/ -o json   with a runtime of your own, as JSON
  tjc render examples/ --output-dir rendered/   one file per TrainJob: rendered/<ns>/<name>.yaml
  tjc render examples/ --output-dir rendered/ --dry-run   what that would write and delete
  tjc render examples/ --output-dir rendered/ --check     in CI: exit 1 unless the committed
                                                          rendered/ is what the render writes
  tjc render examples/mlx-mnist.yaml --mpi-ssh-key generate   also the MPI SSH Secret (new keys)
  tjc render examples/gitops/base/ --namespace ml-team   as kubectl apply -n ml-team places them
  tjc render examples/ --policy examples/policies/team.cue   enforce your own CUE packs too
  tjc render examples/custom-runtime/resnet.yaml --runtimes examples/custom-runtime/
                                                resolve with runtimes another app owns
                                                (used, never rendered or printed)
  tjc render examples/ --exclude 'torchtune-*' --show-builtin   leave files out; list every
                                                finding in the built-in runtimes
  kustomize build examples/gitops/base | tjc render --passthrough -   everything, rendered
  helm template my-app examples/helm-chart/ --post-renderer tjc --post-renderer-args render \\
      --post-renderer-args --passthrough --post-renderer-args -
  tjc render examples/ --trainer-version v2.2.1   what a Kubeflow Trainer v2.2.1 cluster makes
                                                (pin it in the repository's .tjc.yaml)
  tjc render -j 4 examples/ --output-dir rendered/   in 4 processes (same output as -j 1)
"""


def register(verbs: Any) -> None:
    """Add the `render` verb to the parser."""
    parser = verbs.add_parser("render", help=HELP, description=HELP[0].upper() + HELP[1:] + ".",
                              epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="YAML/JSON file, folder (searched recursively) or - for stdin")
    parser.add_argument("-o", "--output", choices=("yaml", "json"), default="yaml",
                        help="output format (default: yaml; json prints a v1 List)")
    parser.add_argument("--output-dir", metavar="DIR",
                        help="write one file per TrainJob below DIR instead of stdout, and "
                        "delete the files it wrote there for TrainJobs no longer in the inputs")
    parser.add_argument("--dry-run", action="store_true",
                        help="with --output-dir: write nothing, list the files that would be "
                        "written and deleted")
    parser.add_argument("--check", action="store_true",
                        help="with --output-dir: write nothing; exit 1, listing each file that "
                        "would be created, changed or deleted (the manifest too), unless DIR "
                        "already holds exactly what the render writes")
    runtimes_opt.add_argument(parser)
    exclude_opt.add_argument(parser)
    parser.add_argument("--no-builtin-runtimes", action="store_true",
                        help="do not load the built-in ClusterTrainingRuntimes")
    parser.add_argument("--no-validate", action="store_true",
                        help="skip the checks of tjc validate and compile what the cluster "
                        "would reject too (as the controller does when its webhook is bypassed)")
    parser.add_argument("--mpi-ssh-key", metavar="generate|FILE",
                        help="emit the MPI SSH Secret: new ECDSA P-521 keys per TrainJob "
                        "(generate), or the key pair of this PEM P-521 private key file; "
                        "without it no private key is ever printed")
    parser.add_argument("--name-hash", action="store_true",
                        help="name each TrainJob's objects <name>-<hash of what an existing "
                        "JobSet cannot change>: a changed TrainJob gets a new JobSet, which "
                        "GitOps tools create while pruning the old one, instead of an update "
                        "the JobSet webhook refuses (README: Changing a TrainJob)")
    parser.add_argument("-q", "--quiet", action="store_true", help="do not print notices")
    parser.add_argument("--show-builtin", "-v", "--verbose", action="store_true",
                        help="print the warnings and notices about the built-in runtimes one "
                        "by one (upstream's files, which you cannot change; by default the "
                        "summary line counts them)")
    console.add_color_argument(parser)
    fieldopts.add_argument(parser)
    namespace_opt.add_arguments(parser)
    jobs.add_argument(parser)
    passthrough_cmd.add_arguments(parser)
    policy_opts.add_arguments(parser)
    release_opt.add_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Load, render and print one TrainJob at a time; exit 1 if any input had errors."""
    problem = passthrough_cmd.misused(args)
    if problem:
        print(f"tjc render: error: {problem}", file=sys.stderr)
        return 2
    problem = _misused(args)
    if problem:
        raise InputError(error("TJC-USAGE", problem))
    args.versions = release_opt.resolve(args)
    if args.passthrough:
        return passthrough_cmd.run(args, _ssh_keys(args.mpi_ssh_key))
    sources = SourceFiles(args.paths, args.exclude)
    with jobs.Workers(jobs.workers(args.jobs, sources), _worker, (args, sources)) as workers:
        pipeline = Pipeline(args, sources)
        collect.started()
        return _run(args, pipeline, workers)


def _run(args: argparse.Namespace, pipeline: Pipeline, workers: jobs.Workers) -> int:
    writer = _writer(args)
    with contextlib.ExitStack() as stack:
        if writer is not None:
            stack.callback(writer.release)
        errors = _render(args, pipeline, workers, writer)
    sys.stdout.flush()
    return 1 if errors else 0


@dataclass
class Job:
    """One TrainJob rendered, as much of it as the output needs (a worker sends it back)."""

    diagnostics: list[Diagnostic]
    names: tuple[str, str]
    has_objects: bool
    text: str
    where: tuple[str, int, tuple[str | int, ...]]
    met: Met | None = None  # for the parent's `Names`


Event = Job | list[Diagnostic]


class Pipeline(FilePipeline[tuple[list[Event], list[Diagnostic]]]):
    """What a process needs to render the files of the inputs (`FilePipeline`), with the
    compile options of the run (no policies with `--no-validate`)."""

    def __init__(self, args: argparse.Namespace, sources: SourceFiles,
                 runtime_files: SourceFiles | None = None) -> None:
        super().__init__(args, sources, runtime_files, policies=not args.no_validate)
        self.options = CompileOptions(ssh_keys=_ssh_keys(args.mpi_ssh_key),
                                      name_hash=args.name_hash,
                                      trainer_version=self.versions.release.version)

    def new_session(self) -> Session:
        return Session(self.table, policies=self.checker, fields=self.args.field_validation,
                       release=self.versions.release, jobset=self.versions.jobset)

    def task(self, indices: list[int]) -> tuple[list[Event], list[Diagnostic]]:
        """The events of these files in order, and the policy errors first met there."""
        events = [self._event(item) for i in indices
                  for item in render_source(self.sources[i], self.session, self.options,
                                            self.args.placement,
                                            validate=not self.args.no_validate)]
        return events, self.new_policy_errors()

    def _event(self, item: JobResult | Diagnostic) -> Event:
        if isinstance(item, Diagnostic):
            return [item]
        tj = item.trainjob
        return Job(item.diagnostics, outdir.job_names(tj.data), bool(item.objects),
                   _text(self.args, item.objects), (tj.source.name, tj.index, tuple(tj.base)),
                   Names.key(tj))


def _worker(payload: tuple[argparse.Namespace, SourceFiles]
            ) -> Callable[[frozenset[str]], jobs.Task]:
    """A worker's setup before the parent's first pass: everything but the input runtimes."""
    args, sources = payload
    return serve(Pipeline(args, sources, sources.subset(set())))


def _text(args: argparse.Namespace, objects: list[dict[str, Any]]) -> str:
    """A TrainJob's objects as its output file, or as its part of stdout."""
    if not objects:
        return ""
    if args.output_dir:
        return emit.json_list(objects) if args.output == "json" else emit.yaml_stream(objects)
    if args.output == "json":
        return ",\n".join(emit.nested_json(obj, 2) for obj in objects)
    return emit.yaml_stream(objects)


def _render(args: argparse.Namespace, pipeline: Pipeline, workers: jobs.Workers,
            writer: outdir.DirWriter | None) -> bool:
    """Render every TrainJob to stdout or DIR; True when anything had errors."""
    out = _Output(args, pipeline, writer)
    stderr = out.stderr
    out.emit([pipeline.notes])
    policy_errors = list(pipeline.checker.policies.errors) if pipeline.checker else []
    for events, new in workers.ordered(pipeline.plan()):
        out.emit(events)
        policy_errors += [d for d in new if d not in policy_errors]
    if pipeline.checker is not None and policy_errors:
        stderr.add(policy_errors)
        out.errors = True
    if writer is not None:
        closing = _finish(writer)
        stderr.add(closing)
        out.errors = out.errors or has_errors(closing)
    elif args.output == "json":
        sys.stdout.write(out.json_end())
    sys.stdout.flush()
    stderr.finish(out.rendered, out.trainjobs)
    return out.errors


class _Output:
    """Prints (or writes) each event as it comes, in input order."""

    def __init__(self, args: argparse.Namespace, pipeline: Pipeline,
                 writer: outdir.DirWriter | None) -> None:
        self.args, self.pipeline, self.writer = args, pipeline, writer
        self.errors = False
        self.items = 0
        self.names = Names()
        self.rendered = self.trainjobs = 0
        self.stderr = console.StderrReport(
            sys.stderr, quiet=args.quiet, show_builtin=args.show_builtin,
            colour=console.colour_on(args.color, sys.stderr))

    def emit(self, events: list[Event]) -> None:
        checker = self.pipeline.checker
        for event in events:
            found = event.diagnostics if isinstance(event, Job) else event
            found = checker.once(found) if checker is not None else list(found)
            if isinstance(event, Job):
                found += self._job(event)
            self.errors = self.errors or has_errors(found)
            self.stderr.add(found)

    def _job(self, job: Job) -> list[Diagnostic]:
        found = self._write(job)
        self.trainjobs += 1
        self.rendered += job.has_objects and not has_errors(found)
        return found

    def _write(self, job: Job) -> list[Diagnostic]:
        if self.writer is not None:  # it refuses a second TrainJob of one file itself
            found = self.writer.write(*job.names, job.has_objects, job.text)
            return [d.at(self._locate(job, ("metadata", "name"))) for d in found]
        again = self.names.meet([job.met], lambda _: self._locate(job, ("metadata", "name"))) \
            if job.met is not None else []
        if again:  # a second TrainJob of one namespace and name, as validate says: no objects
            return again
        if job.text and self.args.output == "json":
            sys.stdout.write((",\n" if self.items else JSON_HEAD) + job.text)
            self.items += 1
        else:
            sys.stdout.write(job.text)
        return []

    def _locate(self, job: Job, path: tuple[str, ...]) -> Location:
        sources = self.pipeline.sources
        source = sources[sources.index(job.where[0])]
        return Document({}, source, job.where[1], job.where[2]).locate(path)

    def json_end(self) -> str:
        """The end of the v1 List on stdout (all of it when it has no items)."""
        return JSON_TAIL if self.items else emit.json_list([])


JSON_HEAD = '{\n  "apiVersion": "v1",\n  "items": [\n'
JSON_TAIL = '\n  ],\n  "kind": "List"\n}\n'


def _ssh_keys(choice: str | None) -> SSHKeySource | None:
    if choice is None:
        return None
    from compiler.io import sshkeys  # only now: key handling needs the cryptography package

    return sshkeys.generated() if choice == "generate" else sshkeys.from_file(choice)


def _writer(args: argparse.Namespace) -> outdir.DirWriter | None:
    if not args.output_dir:
        return None
    return outdir.DirWriter(Path(args.output_dir), args.output, args.paths,
                            dry_run=args.dry_run, check=args.check,
                            private=bool(args.mpi_ssh_key))


def _misused(args: argparse.Namespace) -> str | None:
    """Why --dry-run or --check cannot be used as given, or None."""
    for flag, given in (("--dry-run", args.dry_run), ("--check", args.check)):
        if given and not args.output_dir:
            return f"{flag} needs --output-dir"
    if args.dry_run and args.check:
        return "--check already writes nothing; leave out --dry-run"
    if args.check and args.mpi_ssh_key == "generate":
        return "--check with --mpi-ssh-key generate never matches (new keys every run); " \
            "use --mpi-ssh-key FILE"
    return None


def _finish(writer: outdir.DirWriter) -> list[Diagnostic]:
    """Prune and record; on a dry run, list what would be written and deleted; with --check,
    what would be created, changed or deleted, and an error when anything would."""
    found = writer.close()
    if writer.check:
        for verb, rel in writer.plan.stale:
            sys.stdout.write(f"would {verb} {writer.root / rel}\n")
        if writer.plan.stale:
            found.append(error("TJC-OUTPUT-STALE", f"{len(writer.plan.stale)} file(s) in "
                               f"{writer.root} are not what this render writes; render "
                               "again without --check and commit the result").at(writer.where))
    elif writer.dry_run:
        for rel in writer.plan.written:
            sys.stdout.write(f"would write {writer.root / rel}\n")
        for rel in writer.plan.deleted:
            sys.stdout.write(f"would delete {writer.root / rel}\n")
    return found
