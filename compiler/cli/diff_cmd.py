"""`tjc diff OLD NEW`: render two trees (folders, or two git revisions, either optionally built
by kustomize; see `compiler.cli.diff_sources`) and diff per TrainJob; `tjc diff --trainer-version
A --to-trainer-version B PATH...`: render the same inputs under two Kubeflow Trainer releases,
the upgrade preview (`compiler.gitops.upgrade`).

Exit codes: 0 the rendered objects are the same, 1 they differ, 2 an error (an input that
cannot be read, a TrainJob or runtime with errors, a git revision that does not exist).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from compiler.cli import diff_sources, outputopt, release_opt
from compiler.common.diagnostics import (
    Diagnostic,
    Severity,
    error,
    has_errors,
)
from compiler.common.errors import InputError
from compiler.core.context import CompileOptions
from compiler.gitops import diffing
from compiler.io.builtin import builtin_runtimes
from compiler.io.loader import Source, read_sources
from compiler.render.pipeline import render_stream

HELP = "render two versions of the inputs and show, per TrainJob, how its objects differ"
EPILOG = """\
exit codes: 0 same objects, 1 different, 2 error (printed on stderr; a TrainJob of NEW that does
not render is shown with its errors).
With -o markdown the output stays under a pull-request comment's 65,536 characters: what does
not fit is counted in a note that points at --report FILE, the whole report.
--kustomize runs `kustomize build`, or `kubectl kustomize` when only kubectl is on PATH.
A line starting with ! after a change marks what an existing JobSet refuses to take in place
(JobSet's webhook), and how it syncs instead.

examples (run from the repository's top folder):
  tjc diff examples/gitops/overlays/dev examples/gitops/overlays/prod --kustomize
                                                two folders, each built by kustomize
  tjc diff --git main HEAD examples/            a folder in two revisions of the repository
  tjc diff --git origin/main HEAD examples/ -o markdown --report diff.md > comment.md
                                                a pull-request comment, the full report beside
  tjc diff --git --kustomize main HEAD examples/gitops/overlays/prod   an overlay, by kustomize
  tjc diff --name-hash examples/jax-mnist.yaml examples/jax-psum.yaml
                                                as tjc render --name-hash renders them
  tjc diff --trainer-version v2.2.1 --to-trainer-version v2.3.0 examples/
                                                what upgrading Kubeflow Trainer does to each
                                                TrainJob, and which gate causes each change
  tjc diff --to-trainer-version v2.3.0 examples/ -o markdown > upgrade.md
                                                from the repository's .tjc.yaml pin, for a PR
"""


def register(verbs: Any) -> None:
    """Add the `diff` verb to the parser."""
    parser = verbs.add_parser("diff", help=HELP, description=HELP[0].upper() + HELP[1:] + ".",
                              epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old", metavar="OLD", help="folder or file (with --git: a revision; "
                        "with --to-trainer-version: the first PATH)")
    parser.add_argument("new", metavar="NEW", nargs="?",
                        help="folder or file (with --git: a revision)")
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="with --git: the paths to render in both revisions (default: .); "
                        "with --to-trainer-version: more paths")
    parser.add_argument("--git", action="store_true",
                        help="OLD and NEW are git revisions of the repository of this folder")
    parser.add_argument("--kustomize", action="store_true",
                        help="render `kustomize build` of each side (OLD/NEW, or with --git "
                        "each PATH) instead of the YAML files (kustomize from PATH)")
    outputopt.add_argument(parser, ("text", "markdown"), "text", "unified diffs (text) or a "
                           "pull-request comment (markdown)", dest="format",
                           old=("-f", "--format"))
    parser.add_argument("--report", metavar="FILE",
                        help="also write the whole report to FILE: with -o markdown, stdout "
                        "stays under a pull-request comment's 65,536 characters and names "
                        "FILE for what it leaves out (upload it as a CI artifact)")
    parser.add_argument("-U", "--context", type=int, default=3, metavar="N",
                        help="lines of context around each change (default: 3)")
    parser.add_argument("--no-builtin-runtimes", action="store_true",
                        help="do not load the built-in ClusterTrainingRuntimes")
    parser.add_argument("--name-hash", action="store_true",
                        help="render both sides as tjc render --name-hash does")
    release_opt.add_arguments(parser, jobset=False)
    parser.add_argument("--to-trainer-version", metavar="vX.Y.Z",
                        help="the upgrade preview: render the PATHs under --trainer-version "
                        "(or the repository's pin) and under this release, and report per "
                        "TrainJob what changes, what stops being valid, and which gate "
                        "causes it")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Render both sides, print the differences; 0 same, 1 different, 2 error."""
    if args.to_trainer_version:
        return _upgrade(args)
    if args.new is None:
        print("tjc diff: error: give OLD and NEW (or --to-trainer-version with PATHs)",
              file=sys.stderr)
        return 2
    if args.context < 0:
        print("tjc diff: error: --context must be 0 or more", file=sys.stderr)
        return 2
    if args.paths and not args.git:
        print("tjc diff: error: extra paths need --git (without it, OLD and NEW are the "
              "two paths)", file=sys.stderr)
        return 2
    try:
        old, new = (_sources(args, side) for side in (args.old, args.new))
    except InputError as exc:
        print(f"tjc diff: {exc.diagnostic.message}", file=sys.stderr)
        return 2
    version = release_opt.resolve(args).release.version
    builtin = () if args.no_builtin_runtimes else builtin_runtimes(version)
    options = CompileOptions(name_hash=args.name_hash, trainer_version=version)
    old_texts, old_diags, _ = diffing.rendered(render_stream(old, builtin, options))
    new_texts, new_diags, failed = diffing.rendered(render_stream(new, builtin, options))
    _report(old_diags + new_diags)
    diffs = diffing.compare(old_texts, new_texts, (args.old, args.new), args.context, failed)
    if args.report:
        _write_report(args.report, _formatted(args, diffs, limit=None))
    sys.stdout.write(_formatted(args, diffs, limit=diffing.COMMENT_LIMIT))
    if has_errors(old_diags + new_diags):
        return 2
    return 1 if diffs else 0


def _upgrade(args: argparse.Namespace) -> int:
    """The upgrade preview of the PATHs; 0 nothing changes, 1 something does, 2 error."""
    from compiler.gitops import upgrade

    if args.git or args.kustomize or args.name_hash:
        print("tjc diff: error: --to-trainer-version renders the PATHs as they are: no --git, "
              "--kustomize or --name-hash", file=sys.stderr)
        return 2
    old = release_opt.resolve(args).release
    new = release_opt.resolve(argparse.Namespace(trainer_version=args.to_trainer_version)
                              ).release
    paths = [p for p in (args.old, args.new, *args.paths) if p is not None]
    try:
        sources = read_sources(paths)
    except InputError as exc:
        print(f"tjc diff: {exc.diagnostic.message}", file=sys.stderr)
        return 2
    sides = [upgrade.Side(release, () if args.no_builtin_runtimes else
                          builtin_runtimes(release.version)) for release in (old, new)]
    found = upgrade.preview(sources, *sides)
    text = upgrade.as_markdown(found) if args.format == "markdown" else upgrade.as_text(found)
    if args.report:
        _write_report(args.report, upgrade.as_text(found) if args.format != "markdown"
                      else upgrade.as_markdown(found, limit=sys.maxsize))
    sys.stdout.write(text)
    return 1 if found.jobs else 0


def _formatted(args: argparse.Namespace, diffs: list[diffing.JobDiff], limit: int | None
               ) -> str:
    """The report in the chosen format; a Markdown one capped at `limit` characters."""
    if args.format != "markdown":
        return diffing.as_text(diffs)
    if limit is None:
        return diffing.as_markdown(diffs, limit=sys.maxsize)
    return diffing.as_markdown(diffs, limit=limit, report=args.report)


def _write_report(path: str, text: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as out:
            out.write(text)
    except OSError as exc:
        raise InputError(error("TJC-DIFF-REPORT", f"cannot write the report {path}: "
                               f"{exc.strerror or exc}")) from None


def _report(diagnostics: list[Diagnostic]) -> None:
    for diag in diagnostics:
        if diag.severity is not Severity.NOTICE:
            print(diag.text(), file=sys.stderr)


def _sources(args: argparse.Namespace, side: str) -> list[Source]:
    return diff_sources.sources(side, args.paths, git=args.git, kustomize=args.kustomize)
