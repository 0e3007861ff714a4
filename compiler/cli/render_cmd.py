"""`tjc render`: print (or write) every object produced for every TrainJob found."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from compiler import emit
from compiler.builtin import builtin_runtimes
from compiler.cli import outdir, passthrough_cmd, policy_opts
from compiler.context import CompileOptions, SSHKeySource
from compiler.diagnostics import Diagnostic, Severity, error, has_errors
from compiler.errors import InputError
from compiler.loader import Document, Source, read_sources
from compiler.render import JobResult, render_stream

if TYPE_CHECKING:
    from compiler.policy.check import PolicyChecker

HELP = "render TrainJobs into the JobSet (and side objects) Kubeflow Trainer creates"
EPILOG = """\
examples:
  tjc render examples/                          every TrainJob below a folder
  tjc render job.yaml my-runtime.yaml -o json   with a runtime of your own, as JSON
  tjc render jobs/ --output-dir rendered/       one file per TrainJob: rendered/<ns>/<name>.yaml
  tjc render jobs/ --output-dir rendered/ --dry-run   what that would write and delete
  tjc render mpi-job.yaml --mpi-ssh-key generate  also emit the MPI SSH Secret (new keys)
  tjc render jobs/ --policy team-policies/       enforce your own CUE packs too
  kustomize build overlays/prod | tjc render --passthrough -   everything, TrainJobs rendered
  helm template my-app chart/ --post-renderer tjc --post-renderer-args render \
      --post-renderer-args --passthrough --post-renderer-args -
  kubectl get trainjob mnist -o yaml | tjc render -
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
    parser.add_argument("--no-builtin-runtimes", action="store_true",
                        help="do not load the built-in ClusterTrainingRuntimes")
    parser.add_argument("--no-validate", action="store_true",
                        help="skip the checks of tjc validate and compile what the cluster "
                        "would reject too (as the controller does when its webhook is bypassed)")
    parser.add_argument("--mpi-ssh-key", metavar="generate|FILE",
                        help="emit the MPI SSH Secret: new ECDSA P-521 keys per TrainJob "
                        "(generate), or the key pair of this PEM P-521 private key file; "
                        "without it no private key is ever printed")
    parser.add_argument("-q", "--quiet", action="store_true", help="do not print notices")
    passthrough_cmd.add_arguments(parser)
    policy_opts.add_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Load, render and print one TrainJob at a time; exit 1 if any input had errors."""
    problem = passthrough_cmd.misused(args)
    if problem:
        print(f"tjc render: error: {problem}", file=sys.stderr)
        return 2
    if args.passthrough:
        return passthrough_cmd.run(args, _ssh_keys(args.mpi_ssh_key))
    sources = read_sources(args.paths)
    builtin = () if args.no_builtin_runtimes else builtin_runtimes()
    options = CompileOptions(ssh_keys=_ssh_keys(args.mpi_ssh_key))
    objects: list[dict[str, Any]] = []
    errors = False
    checker = None if args.no_validate else policy_opts.build(args)
    writer = _writer(args)
    with contextlib.ExitStack() as stack:
        if writer is not None:
            stack.callback(writer.release)
        errors = _render(args, sources, builtin, options, checker, writer, objects)
    sys.stdout.flush()
    return 1 if errors else 0


def _render(args: argparse.Namespace, sources: list[Source], builtin: Sequence[Document],
            options: CompileOptions, checker: PolicyChecker | None,
            writer: outdir.DirWriter | None, objects: list[dict[str, Any]]) -> bool:
    """Render every TrainJob to stdout or DIR; True when anything had errors."""
    errors = False
    for item in render_stream(sources, builtin, options, validate=not args.no_validate,
                              policies=checker):
        diagnostics = [item] if isinstance(item, Diagnostic) else item.diagnostics
        if isinstance(item, JobResult) and writer is not None:
            diagnostics += _write(writer, item, args.output)
        elif isinstance(item, JobResult) and args.output == "json":
            objects.extend(item.objects)
        elif isinstance(item, JobResult):
            sys.stdout.write(emit.yaml_stream(item.objects))
        errors = errors or has_errors(diagnostics)
        report(diagnostics, quiet=args.quiet)
    if checker is not None and checker.policies.errors:
        report(checker.policies.errors, quiet=args.quiet)
        errors = True
    if writer is not None:
        closing = _finish(writer)
        report(closing, quiet=args.quiet)
        errors = errors or has_errors(closing)
    elif args.output == "json":
        sys.stdout.write(emit.json_list(objects))
    return errors


def _ssh_keys(choice: str | None) -> SSHKeySource | None:
    if choice is None:
        return None
    from compiler import sshkeys  # only now: key handling needs the cryptography package

    return sshkeys.generated() if choice == "generate" else sshkeys.from_file(choice)


def report(diagnostics: list[Diagnostic], *, quiet: bool) -> None:
    """One line per diagnostic on stderr."""
    for diag in diagnostics:
        if quiet and diag.severity is Severity.NOTICE and diag.suppression is None:
            continue
        print(diag.text(), file=sys.stderr)


def _writer(args: argparse.Namespace) -> outdir.DirWriter | None:
    if args.dry_run and not args.output_dir:
        raise InputError(error("TJC-USAGE", "--dry-run needs --output-dir"))
    if not args.output_dir:
        return None
    return outdir.DirWriter(Path(args.output_dir), args.output, outdir.inputs_key(args.paths),
                            dry_run=args.dry_run)


def _write(writer: outdir.DirWriter, job: JobResult, fmt: str) -> list[Diagnostic]:
    """Write one TrainJob's file; a refusal is located at the TrainJob's name."""
    text = "" if not job.objects else \
        emit.json_list(job.objects) if fmt == "json" else emit.yaml_stream(job.objects)
    found = writer.write(*outdir.job_names(job.trainjob.data), job.objects, text)
    return [d.at(job.trainjob.locate(("metadata", "name"))) for d in found]


def _finish(writer: outdir.DirWriter) -> list[Diagnostic]:
    """Prune and record; on a dry run, list what would be written and deleted."""
    found = writer.close()
    if writer.dry_run:
        for rel in writer.plan.written:
            sys.stdout.write(f"would write {writer.root / rel}\n")
        for rel in writer.plan.deleted:
            sys.stdout.write(f"would delete {writer.root / rel}\n")
    return found
