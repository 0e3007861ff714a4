"""The git repository around the working folder: its root (for repository-relative report
URIs) and its runtimes (`tjc validate --repo-runtimes`, which the pre-commit hook uses so that
a TrainJob finds its runtime whichever batch of files pre-commit hands over).

Edge code: runs `git` and reads files; a folder outside any repository has no root and no
runtimes.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from compiler.common.errors import InputError
from compiler.core.resolve import RUNTIME_KINDS
from compiler.io.loader import SUFFIXES, Document, Source, parse_source, read_source


def root(start: Path | None = None) -> Path | None:
    """The nearest folder at or above `start` (default: the working folder) holding `.git`."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return None


def tracked_files() -> list[str]:
    """The YAML and JSON files git tracks (or would add) in the whole repository of the
    working folder, as paths relative to the working folder."""
    top = root()
    if top is None:
        return []
    try:
        done = subprocess.run(["git", "-C", str(top), "ls-files", "-z", "--cached", "--others",
                               "--exclude-standard", "--", *(f"*{s}" for s in SUFFIXES)],
                              capture_output=True, check=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return []
    names = [p for p in done.stdout.decode("utf-8", "replace").split("\0") if p]
    paths = (os.path.relpath(top / name) for name in sorted(set(names)))
    return [p for p in paths if os.path.isfile(p)]


def runtimes(skip: set[str]) -> list[Document]:
    """Every runtime document of the repository's tracked files, but those in `skip` (real
    paths of the inputs, which report their own runtimes)."""
    found: list[Document] = []
    for path in tracked_files():
        if os.path.realpath(path) in skip:
            continue
        try:
            source: Source = read_source(path)
        except InputError:  # an unreadable file is not this lookup's business
            continue
        if "TrainingRuntime" in source.text:
            found += [d for d in parse_source(source)[0] if d.data.get("kind") in RUNTIME_KINDS]
    return found
