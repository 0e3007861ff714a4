"""Folders and files below the run folder, and nowhere else.

`open_dir` walks from the run folder down a list of plain names, creating each missing folder
(0700) and opening each one relative to its parent without following a symbolic link; a name
that is empty, `.`, `..` or holds a `/` is refused, so no name leads outside. `write_file`
creates a file in such a folder the same way: whatever stood at its name is removed first (a
link is removed, never followed), the file is created 0600 with O_EXCL and O_NOFOLLOW, then
given its mode, from which set-uid, set-gid and sticky bits are always dropped. Called by
`compiler.localrun.volumes` and `compiler.localrun.shims`; knows nothing of pods.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

DIR_MODE = 0o700
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafePath(ValueError):
    """A name that would leave its folder, or a folder that is a link; the message says which."""


def check_name(name: str, what: str) -> str:
    """`name` when it is one plain file name; UnsafePath otherwise."""
    if name in ("", ".", "..") or "/" in name or "\0" in name:
        raise UnsafePath(f"{what} {name!r} is not a plain file name inside its folder")
    return name


def split_relative(path: str, what: str) -> list[str]:
    """The names of a relative path (empty and `.` parts dropped); UnsafePath when it is
    absolute, has a `..` element or names no file."""
    if path.startswith("/"):
        raise UnsafePath(f"{what} {path!r} is absolute; expected a path inside its folder")
    names = [part for part in path.split("/") if part not in ("", ".")]
    if not names:
        raise UnsafePath(f"{what} {path!r} names no file inside its folder")
    return [check_name(part, what) for part in names]


@contextlib.contextmanager
def open_dir(root: Path, names: Sequence[str]) -> Iterator[int]:
    """A descriptor of `root/names...`, each folder created if missing; closed on exit."""
    top = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fd = _walk(top, [check_name(name, "folder") for name in names])
    finally:
        os.close(top)
    try:
        yield fd
    finally:
        os.close(fd)


def _walk(folder: int, names: Sequence[str]) -> int:
    """A new descriptor of `folder/names...` (`folder` stays open)."""
    current = os.dup(folder)
    try:
        for name in names:
            child = _child(current, name)
            os.close(current)
            current = child
    except BaseException:
        os.close(current)
        raise
    return current


def _child(parent: int, name: str) -> int:
    """Open the folder `name` of `parent`, creating it 0700 when missing, never a link."""
    created = True
    try:
        os.mkdir(name, DIR_MODE, dir_fd=parent)
    except FileExistsError:
        created = False
    try:
        child = os.open(name, _DIR_FLAGS, dir_fd=parent)
    except OSError as exc:  # ELOOP: a link stands there; ENOTDIR: a file
        raise UnsafePath(f"{name!r} is not a folder below the run folder (a link or a file "
                         "stands there)") from exc
    if created:  # a set-gid parent would have passed its bit on
        os.fchmod(child, DIR_MODE)
    return child


def write_file(folder: int, names: Sequence[str], content: bytes, mode: int) -> None:
    """Write `content` to `names` (a relative path, already split) below the open `folder`,
    with `mode` less its special bits; missing folders on the way are created 0700."""
    file_name = check_name(names[-1], "file")
    parent = _walk(folder, [check_name(name, "folder") for name in names[:-1]])
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(file_name, dir_fd=parent)  # a link is removed, not followed
        fd = os.open(file_name, _FILE_FLAGS, 0o600, dir_fd=parent)
    except IsADirectoryError as exc:
        raise UnsafePath(f"a folder stands where file {file_name!r} goes") from exc
    finally:
        os.close(parent)
    try:
        view = memoryview(content)
        while view:
            view = view[os.write(fd, view):]
        os.fchmod(fd, mode & 0o777)  # never set-uid, set-gid or sticky
    finally:
        os.close(fd)
