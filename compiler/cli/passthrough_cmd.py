"""`tjc render --passthrough`: the transformer mode on a stream (see `compiler.gitops.passthrough`).

For pipes (`kustomize build . | tjc render --passthrough -`) and as a Helm post-renderer:
every input resource is printed in input order, each TrainJob replaced by its objects (with
`--keep-trainjobs`, followed by them). Exit 1 when an input has errors, as `tjc render`.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from compiler.cli import policy_opts, runtimes_opt
from compiler.common.diagnostics import Diagnostic, Severity, has_errors
from compiler.core.context import CompileOptions, SSHKeySource
from compiler.gitops.passthrough import PassOptions, transform
from compiler.io import emit
from compiler.io.builtin import builtin_runtimes
from compiler.io.loader import Source, SourceFiles, read_sources
from compiler.io.placement import in_namespace


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add --passthrough and --keep-trainjobs to `tjc render`."""
    group = parser.add_argument_group("transformer mode (pipes, Helm post-renderer)")
    group.add_argument("--passthrough", action="store_true",
                       help="print every input resource in input order, each TrainJob "
                       "replaced by its objects (for kustomize build | tjc, helm "
                       "--post-renderer)")
    group.add_argument("--keep-trainjobs", action="store_true",
                       help="with --passthrough: keep each TrainJob, followed by its objects")


def misused(args: argparse.Namespace) -> str | None:
    """Why the transformer flags cannot be used as given, or None."""
    if args.keep_trainjobs and not args.passthrough:
        return "--keep-trainjobs needs --passthrough"
    if args.passthrough and args.output_dir:
        return "--passthrough prints a stream; it cannot be combined with --output-dir"
    return None


def run(args: argparse.Namespace, ssh_keys: SSHKeySource | None,
        sources: list[Source] | None = None) -> int:
    """Transform the inputs (`sources`, else the files of the PATHs) and print them; exit 1
    if any input had errors."""
    sources = read_sources(args.paths, args.exclude) if sources is None else sources
    checker = None if args.no_validate else policy_opts.build(args)
    versions = args.versions
    version = versions.release.version
    opts = PassOptions(keep_trainjobs=args.keep_trainjobs, validate=not args.no_validate,
                       compile=CompileOptions(ssh_keys=ssh_keys, name_hash=args.name_hash,
                                              trainer_version=version),
                       policies=checker, fields=args.field_validation, placement=args.placement,
                       jobset=versions.jobset)
    builtin = [] if args.no_builtin_runtimes else list(builtin_runtimes(version))
    extra, unreadable = runtimes_opt.extra_runtimes(args, SourceFiles([]))
    builtin += [in_namespace(doc, args.placement) for doc in extra]
    errors = has_errors(unreadable)
    _report(unreadable, quiet=args.quiet)
    objects: list[dict[str, Any]] = []
    for item in transform(sources, builtin, opts):
        if item.obj is not None and args.output == "json":
            objects.append(item.obj)
        elif item.obj is not None:
            sys.stdout.write("---\n" + emit.to_yaml(item.obj))
        errors = errors or has_errors(item.diagnostics)
        _report(item.diagnostics, quiet=args.quiet)
    if checker is not None and checker.policies.errors:
        _report(checker.policies.errors, quiet=args.quiet)
        errors = True
    if args.output == "json":
        sys.stdout.write(emit.json_list(objects))
    sys.stdout.flush()
    return 1 if errors else 0


def _report(diagnostics: list[Diagnostic], *, quiet: bool) -> None:
    for diag in diagnostics:
        if not (quiet and diag.severity is Severity.NOTICE):
            print(diag.text(), file=sys.stderr)
