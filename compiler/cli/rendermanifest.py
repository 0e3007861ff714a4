"""The manifest of `tjc render --output-dir DIR`: `DIR/.tjc-render-manifest`, and the input
sets it records.

An input set is the identity of a render: the input paths given on the command line, each
resolved (symlinks followed) and made relative to the repository root, without repeats,
sorted (`-` for stdin stays `-`). The repository root is the nearest folder at or above DIR
holding `.git` (the top level of DIR's git work tree), else DIR's parent. So the same
repository checked out in two places gives the same input sets and the same manifest bytes.

Manifests of version 1 (older tjc) recorded absolute paths. Such an input set is read as
this run's when its paths are this run's relative paths below one folder (the root of the
checkout that wrote it); else, when its paths lie below this root, as the relative set they
are here; else it stays as it was, a legacy owner that `DirWriter` lets this run take over
but never prunes for it.

Called by `compiler.cli.outdir` only: it reads and formats the manifest, and never writes,
deletes or trusts a rendered file.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
from pathlib import Path
from typing import Any

from compiler.cli import repo
from compiler.common.diagnostics import error
from compiler.common.errors import InputError
from compiler.common.records import dataclass

MANIFEST = ".tjc-render-manifest"
VERSION = 2

InputSet = tuple[str, ...]


@dataclass
class Entry:
    """One manifest record: what tjc wrote at a path, and the input set that wrote it."""

    sha256: str = ""
    inputs: InputSet = ()

    @property
    def legacy(self) -> bool:
        """Recorded by an older tjc with absolute paths that name no input set here."""
        return any(os.path.isabs(p) for p in self.inputs)


@dataclass
class Recorded:
    """The manifest as read: its entries, and its bytes (None when there is none)."""

    entries: dict[str, Entry]
    raw: bytes | None


def repository_root(out_dir: Path) -> Path:
    """The folder input paths are recorded relative to (see the module docstring)."""
    real = Path(os.path.realpath(out_dir))
    return repo.root(real) or real.parent


def input_set(paths: list[str], root: Path) -> InputSet:
    """The input set of a run given these command-line paths."""
    return tuple(sorted({p if p == "-" else os.path.relpath(os.path.realpath(p), root)
                         for p in paths}))


def describe(inputs: InputSet) -> str:
    """An input set as a reader types it: its paths, quoted where needed."""
    return " ".join(shlex.quote(p) for p in inputs) or "(no inputs)"


def read(path: Path, root: Path, mine: InputSet) -> Recorded:
    """The manifest at `path`, older input sets taken over as the module docstring says; one
    that cannot be read or parsed is an error."""
    if not os.path.lexists(path):
        return Recorded({}, None)
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            raise OSError(0, "not a regular file")
        with open(path, "rb") as handle:
            raw = handle.read(64 << 20)
        data = json.loads(raw)
        version, sets = data["version"], _Sets(root, mine)
        if version not in (1, VERSION) or isinstance(version, bool):
            raise ValueError(f"version {version!r}")
        entries = {str(rel): _entry(e, version, sets) for rel, e in data["files"].items()}
    except OSError as exc:
        raise InputError(error("TJC-OUTPUT-MANIFEST", f"cannot read {path}: "
                               f"{exc.strerror or exc}")) from exc
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InputError(error("TJC-OUTPUT-MANIFEST", f"{path} is not a tjc render manifest "
                               f"of version 1 or {VERSION}; remove it (and the files tjc "
                               "wrote) to start afresh")) from exc
    return Recorded(entries, raw)


def text(entries: dict[str, Entry]) -> str:
    """The manifest's bytes for these entries: canonical, so a render that changes nothing
    leaves it as it was."""
    files = {rel: {"sha256": e.sha256, "inputs": list(e.inputs)}
             for rel, e in sorted(entries.items())}
    return json.dumps({"version": VERSION, "files": files}, indent=1, sort_keys=True) + "\n"


class _Sets:
    """The input sets of one manifest as this tjc records them, each worked out once (many
    entries share one, and an older tjc's may be long)."""

    def __init__(self, root: Path, mine: InputSet) -> None:
        self.root, self.mine = root, mine
        self.seen: dict[InputSet, InputSet] = {}

    def get(self, inputs: list[str]) -> InputSet:
        key = tuple(sorted(set(inputs)))
        if key not in self.seen:
            self.seen[key] = _adopt(key, self.mine, self.root)
        return self.seen[key]


def _entry(data: Any, version: Any, sets: _Sets) -> Entry:
    """One record; raises ValueError (or TypeError, KeyError) when it is not one."""
    inputs = data["inputs"]
    if version == 1:  # a JSON list of absolute paths, as text
        inputs = json.loads(inputs)
    if not isinstance(inputs, list) or not all(isinstance(p, str) for p in inputs):
        raise ValueError("inputs is not a list of paths")
    return Entry(str(data.get("sha256", "")), sets.get(inputs))


def _adopt(inputs: InputSet, mine: InputSet, root: Path) -> InputSet:
    """An input set as this tjc records it: relative sets as they are, an older tjc's
    absolute one as the module docstring says."""
    if not any(os.path.isabs(p) for p in inputs):
        return inputs
    top = str(root)
    if all(p == "-" or os.path.commonpath([p, top]) == top for p in inputs):
        return tuple(sorted(p if p == "-" else os.path.relpath(p, top) for p in inputs))
    return mine if _same_layout(inputs, mine) else inputs


def _same_layout(absolute: InputSet, mine: InputSet) -> bool:
    """`absolute` is `mine` below one folder (a checkout elsewhere)."""
    if len(absolute) != len(mine) or ("-" in absolute) != ("-" in mine):
        return False
    anchor = next((p for p in mine if p != "-" and not p.startswith("..")), None)
    if anchor is None:
        return False
    wanted = set(absolute)
    for old in absolute:
        if anchor == ".":
            prefix = old
        elif old.endswith("/" + anchor):
            prefix = old[:-len(anchor) - 1] or "/"
        else:
            continue
        if {p if p == "-" else os.path.normpath(os.path.join(prefix, p)) for p in mine} == wanted:
            return True
    return False
