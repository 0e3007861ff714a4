"""`tjc argocd discover|generate`: the commands of the Argo CD config management plugin
(deploy/argocd/plugin.yaml), run by Argo CD's cmp-server in the application's folder.

`discover` claims an application only when its manifests hold a Trainer kind: `kustomize
build` of the folder where there is a kustomization (offline, bounded in time and size; when
the build fails, the folder's own files decide), none for a Helm chart (Argo CD's own), else
the folder's YAML/JSON files as `tjc render` reads them. It prints one line when it claims,
nothing otherwise, and exits 0 either way (Argo CD: exit 0 and output = match).

`generate` is `kustomize build . | tjc render --passthrough -` (or `tjc render --passthrough .`)
with the Application's TJC_ARGS checked by `compiler.gitops.argocd` and the platform's policy
settings from the sidecar's environment. No shell is involved in either.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from compiler.cli import kustomize_build, passthrough_cmd, release_opt
from compiler.common.diagnostics import error, one_line
from compiler.common.errors import InputError
from compiler.gitops import argocd
from compiler.io import toolfiles
from compiler.io.loader import Document, Source, expand_paths, iter_source, read_bytes, read_sources

DISCOVER_TIMEOUT = 20.0  # seconds for kustomize build; Argo CD's whole request has 60 by default

_ALLOWED = "\n".join(f"  {option}" for option in argocd.ALLOWED)
HELP = "the Argo CD config management plugin's commands (deploy/argocd/plugin.yaml)"
EPILOG = f"""\
generate reads the Application's plugin env TJC_ARGS ({argocd.APP_ARGS_ENV}), split on blanks;
only these options are allowed, anything else fails the sync naming the refused word:
{_ALLOWED}
The policies come from the plugin sidecar's own environment, which an Application cannot set:
  TJC_POLICY         folders of CUE packs, ':'-separated (as --policy)
  TJC_POLICY_VALUES  the packs' settings and exemptions (as --policy-values)
  TJC_SKIP           rule ids or packs not applied, comma-separated (as --skip)

examples:
  tjc argocd discover examples/gitops/overlays/prod   what it would claim the folder for
  ARGOCD_ENV_TJC_ARGS=--keep-trainjobs tjc argocd generate examples/gitops/overlays/prod
"""


def register(verbs: Any) -> None:
    """Add the `argocd` verb and its two sub-commands."""
    parser = verbs.add_parser("argocd", help=HELP, description=HELP[0].upper() + HELP[1:] + ".",
                              epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="action", metavar="ACTION", parser_class=type(parser))
    sub.required = True
    for name, text, func in (
            ("discover", "print a line when the plugin should render the folder", discover),
            ("generate", "print the folder's manifests with every TrainJob rendered",
             generate)):
        cmd = sub.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".")
        cmd.add_argument("path", nargs="?", default=".", metavar="PATH",
                         help="the application's folder (default: the current one, where "
                         "Argo CD runs the command)")
        cmd.set_defaults(func=func)


# --- discover -------------------------------------------------------------------------------

def discover(args: argparse.Namespace) -> int:
    """Print the first Trainer kind of the folder's manifests, if any; always exit 0."""
    found = claim(Path(args.path))
    if found:
        print(one_line(found))
    return 0


def claim(folder: Path) -> str | None:
    """What the plugin claims the folder for (`Kind ns/name (where)`), or None."""
    if kustomize_build.has_kustomization(folder):
        built = kustomize_build.build(folder, offline=True, timeout=DISCOVER_TIMEOUT)
        if built.text is not None:
            return _first(_with_group([Source("kustomize build", built.text)]))
        print(one_line(f"tjc argocd discover: kustomize build: {built.problem}; the folder's "
                       "own files decide"), file=sys.stderr)
    elif (folder / "Chart.yaml").is_file():
        return None  # a Helm chart: Argo CD's Helm renders it, tjc has no hook there
    return _first(_files(folder))


def _with_group(sources: Iterable[Source]) -> Iterator[Source]:
    return (s for s in sources if argocd.TRAINER_GROUP in s.text)


def _files(folder: Path) -> Iterator[Source]:
    """The folder's input files as `tjc render` finds them that may hold a Trainer kind
    (unreadable ones, and kustomize and Helm files, left out)."""
    for path in expand_paths([str(folder)]):
        try:
            name, raw = read_bytes(path)
        except InputError:
            continue
        if argocd.TRAINER_BYTES not in raw:
            continue
        try:
            source = Source(name, raw.decode("utf-8-sig"))
        except UnicodeDecodeError:
            continue
        if toolfiles.skipped(source) is None:
            yield source


def _first(sources: Iterable[Source]) -> str | None:
    for source in sources:
        found = argocd.first_claim(d for d in iter_source(source) if isinstance(d, Document))
        if found:
            return f"{found} ({source.name})"
    return None


# --- generate -------------------------------------------------------------------------------

def generate(args: argparse.Namespace) -> int:
    """Render the folder as the Application and the platform ask; exit as `tjc render`."""
    try:
        options = argocd.app_options(os.environ.get(argocd.APP_ARGS_ENV, ""))
    except argocd.RefusedArgument as exc:
        raise InputError(error("TJC-ARGOCD-ARGS", str(exc))) from None
    render = render_options(options, dict(os.environ), args.path)
    folder = Path(args.path)
    render.versions = release_opt.resolve(render, folder)  # the repository's .tjc.yaml too
    if not kustomize_build.has_kustomization(folder):
        return passthrough_cmd.run(render, None, read_sources([args.path]))
    built = kustomize_build.build(folder)
    if built.text is None:
        raise InputError(error("TJC-ARGOCD-KUSTOMIZE",
                               f"kustomize build {args.path}: {built.problem}"))
    return passthrough_cmd.run(render, None, [Source(f"kustomize build {args.path}",
                                                     built.text)])


def render_options(options: argocd.AppOptions, environ: dict[str, str], path: str
                   ) -> argparse.Namespace:
    """The `tjc render --passthrough` options of a generate: the Application's allowed
    options, then the platform's policy settings. (Settings that come from Argo CD's build
    environment, such as the destination namespace ARGOCD_APP_NAMESPACE, go here too.)"""
    from compiler.cli.main import build_parser

    where = environ.get("ARGOCD_APP_NAMESPACE")  # Argo CD's build environment, not the app's
    argv = ["render", "--passthrough", "--quiet", *options.render_arguments(),
            *([f"--default-namespace={where}"] if where else []),
            *argocd.platform_arguments(environ), "--", path]
    parsed: argparse.Namespace = build_parser("render").parse_args(argv)
    return parsed
