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
from compiler.cli import passthrough_cmd, policy_opts
from compiler.context import CompileOptions, SSHKeySource
from compiler.diagnostics import Diagnostic, Severity, error, has_errors
from compiler.loader import read_sources
from compiler.render import JobResult, render_stream

HELP = "render TrainJobs into the JobSet (and side objects) Kubeflow Trainer creates"
EPILOG = """\
examples:
  tjc render examples/                          every TrainJob below a folder
  tjc render job.yaml my-runtime.yaml -o json   with a runtime of your own, as JSON
  tjc render jobs/ --output-dir rendered/       one file per TrainJob: rendered/<ns>/<name>.yaml
  tjc render mpi-job.yaml --mpi-ssh-key generate  also emit the MPI SSH Secret (new keys)
  tjc render jobs/ --policy team-policies/       enforce your own CUE packs too
  kustomize build overlays/prod | tjc render --passthrough -   everything, TrainJobs rendered
  helm template my-app chart/ --post-renderer tjc --post-renderer-args render \
      --post-renderer-args --passthrough --post-renderer-args -
  kubectl get trainjob mnist -o yaml | tjc render -
"""
MANIFEST = ".tjc-render-manifest"


def register(verbs: Any) -> None:
    """Add the `render` verb to the parser."""
    parser = verbs.add_parser("render", help=HELP, description=HELP[0].upper() + HELP[1:] + ".",
                              epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="YAML/JSON file, folder (searched recursively) or - for stdin")
    parser.add_argument("-o", "--output", choices=("yaml", "json"), default="yaml",
                        help="output format (default: yaml; json prints a v1 List)")
    parser.add_argument("--output-dir", metavar="DIR",
                        help="write one file per TrainJob below DIR instead of stdout")
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
    writer = DirWriter(Path(args.output_dir), args.output) if args.output_dir else None
    objects: list[dict[str, Any]] = []
    errors = False
    checker = None if args.no_validate else policy_opts.build(args)
    for item in render_stream(sources, builtin, options, validate=not args.no_validate,
                              policies=checker):
        diagnostics = [item] if isinstance(item, Diagnostic) else item.diagnostics
        if isinstance(item, JobResult) and writer is not None:
            diagnostics += writer.write(item)
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
        writer.close()
    elif args.output == "json":
        sys.stdout.write(emit.json_list(objects))
    sys.stdout.flush()
    return 1 if errors else 0


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


class DirWriter:
    """Writes `<ns>/<name>.<fmt>` per TrainJob below a folder; replaces only files it wrote
    before (listed in the folder's manifest), never a file the user wrote."""

    def __init__(self, out_dir: Path, fmt: str) -> None:
        self.out_dir, self.fmt = out_dir, fmt
        out_dir.mkdir(parents=True, exist_ok=True)
        self.manifest = out_dir / MANIFEST
        self.owned = set(self.manifest.read_text().split()) if self.manifest.exists() else set()

    def write(self, job: JobResult) -> list[Diagnostic]:
        """Write one TrainJob's objects, or say why not."""
        if not job.objects:
            return []
        rel = f"{job.name}.{self.fmt}"
        target = self.out_dir / rel
        if target.exists() and rel not in self.owned:
            return [error("TJC-OUTPUT-EXISTS", f"{target} exists and was not written by tjc "
                          "render; not overwritten")]
        text = emit.json_list(job.objects) if self.fmt == "json" else \
            emit.yaml_stream(job.objects)
        _atomic_write(target, text)
        self.owned.add(rel)
        return []

    def close(self) -> None:
        """Record which files this command owns."""
        _atomic_write(self.manifest, "".join(f"{name}\n" for name in sorted(self.owned)))


def _atomic_write(target: Path, text: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tjc-")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, target)
