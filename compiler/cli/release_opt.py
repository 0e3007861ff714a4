"""`--trainer-version` and `--jobset-version`, and the repository's pin of both: which Kubeflow
Trainer release render, validate, explain, diff, krm and the Argo CD plugin reproduce, and which
JobSet release the cluster runs.

A repository pins its release once, in `.tjc.yaml` at its root (the nearest one at or above the
working folder, up to the folder holding `.git`):

    trainerVersion: v2.2.1     # one of compiler.core.release.SERVED
    jobsetVersion: v0.11.1     # optional; default: the Trainer release's own JobSet

Every command run in the repository reads it (pre-commit and CI run `tjc validate` there, kustomize
runs `tjc krm` there, Argo CD runs the plugin in its checkout), so every path agrees; the flags
override it. A version that is not served, a key that is not known or a file that does not parse
is a usage error (exit 2) naming the file. Edge code: reads files.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from compiler.common.diagnostics import error
from compiler.common.errors import InputError
from compiler.common.records import dataclass
from compiler.core.release import SERVED, Release, UnservedRelease, release_of
from compiler.io.loader import Source, parse_source, read_source
from compiler.kube import jobsetapi
from compiler.kube.releases import DEFAULT

CONFIG = ".tjc.yaml"
KEYS = ("trainerVersion", "jobsetVersion")


@dataclass(frozen=True)
class Versions:
    """The Trainer release and the JobSet version a command reproduces, and where the pin was
    read (None: flags or defaults)."""

    release: Release
    jobset: str
    config: Path | None = None


def add_arguments(parser: argparse.ArgumentParser, jobset: bool = True) -> None:
    """Add --trainer-version (and --jobset-version)."""
    parser.add_argument("--trainer-version", metavar="vX.Y.Z",
                        help=f"the Kubeflow Trainer release to reproduce: {', '.join(SERVED)} "
                        f"(default: {CONFIG}'s trainerVersion, else {DEFAULT})")
    if jobset:
        parser.add_argument("--jobset-version", metavar="vX.Y.Z",
                            help="the JobSet release the cluster runs: warn where a runtime or "
                            "JobSet uses a field it does not know (default: the Trainer "
                            "release's own)")


def resolve(args: argparse.Namespace, start: Path | None = None) -> Versions:
    """The versions of a command: the flags, else the repository's `.tjc.yaml`, else the
    defaults; InputError (exit 2) for an unserved release or an unusable config file."""
    pinned = read_config(start)
    path = pinned[2] if pinned is not None else None
    trainer = getattr(args, "trainer_version", None) or (pinned[0] if pinned else None)
    try:
        release = release_of(trainer or DEFAULT)
    except UnservedRelease as exc:
        where = f"{path}: trainerVersion: " if path is not None and \
            not getattr(args, "trainer_version", None) else ""
        raise InputError(error("TJC-USAGE", f"{where}{exc}")) from None
    jobset = getattr(args, "jobset_version", None) or (pinned[1] if pinned else None)
    if jobset is not None and not jobsetapi.known(jobset):
        where = f"{path}: jobsetVersion: " if path is not None and \
            not getattr(args, "jobset_version", None) else ""
        raise InputError(error("TJC-USAGE", f"{where}JobSet {jobset} is not known: tjc holds "
                               f"the API of JobSet {', '.join(jobsetapi.versions())} (those "
                               "the served Kubeflow Trainer releases are built with)"))
    return Versions(release, jobset or release.jobset, path)


def find_config(start: Path | None = None) -> Path | None:
    """The nearest `.tjc.yaml` at or above `start` (default: the working folder), not above
    the repository root."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / CONFIG).is_file():
            return folder / CONFIG
        if (folder / ".git").exists():
            return None
    return None


def read_config(start: Path | None = None) -> tuple[str | None, str | None, Path] | None:
    """(trainerVersion, jobsetVersion, file) of the repository's `.tjc.yaml`, or None."""
    path = find_config(start)
    if path is None:
        return None
    source: Source = read_source(str(path))
    docs, problems = parse_source(source)
    if problems:
        raise InputError(error("TJC-USAGE", f"{path}: {problems[0].message}"))
    data = docs[0].data if docs else {}
    if not isinstance(data, dict):
        raise InputError(error("TJC-USAGE", f"{path}: expected a mapping of {', '.join(KEYS)}"))
    unknown = sorted(str(key) for key in data if key not in KEYS)
    if unknown:
        raise InputError(error("TJC-USAGE", f"{path}: unknown key {unknown[0]!r}; expected "
                               f"{', '.join(KEYS)}"))
    found: list[str | None] = []
    for key in KEYS:
        value = data.get(key)
        if value is not None and not isinstance(value, str):
            raise InputError(error("TJC-USAGE", f"{path}: {key} must be a string such as "
                                   "v2.2.1"))
        found.append(value)
    return found[0], found[1], path
