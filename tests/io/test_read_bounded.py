"""Reading an input file: all of it, at its own size, and never more than the size bound.

A regular file is read at the size it has; a pipe (no size) in chunks; a file over the bound
is refused with TJC-INPUT-TOO-LARGE whichever way it is read.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from compiler.common.errors import InputError
from compiler.io import loader
from compiler.io.loader import read_source


def test_a_regular_file_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text("kind: TrainJob\n" * 1000)
    assert read_source(str(path)).text == "kind: TrainJob\n" * 1000
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    assert read_source(str(empty)).text == ""


def _fifo(tmp_path: Path, data: bytes) -> str:
    path = str(tmp_path / "pipe.yaml")
    os.mkfifo(path)

    def write() -> None:
        with open(path, "wb") as handle:
            handle.write(data)

    threading.Thread(target=write, daemon=True).start()
    return path


def test_a_pipe_is_read_in_chunks_to_its_end(tmp_path: Path) -> None:
    data = b"a: " + b"x" * (3 * loader._CHUNK + 17) + b"\n"
    assert read_source(_fifo(tmp_path, data)).text == data.decode()


def test_a_pipe_over_the_bound_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    monkeypatch.setattr(loader, "MAX_BYTES", 2 * loader._CHUNK)
    with pytest.raises(InputError) as caught:
        read_source(_fifo(tmp_path, b"#" * (2 * loader._CHUNK + 1)))
    assert caught.value.diagnostic.rule == "TJC-INPUT-TOO-LARGE"


def test_a_file_over_the_bound_is_refused_and_one_at_it_is_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loader, "MAX_BYTES", 1000)
    at, over = tmp_path / "at.yaml", tmp_path / "over.yaml"
    at.write_bytes(b"#" * 1000)
    over.write_bytes(b"#" * 1001)
    assert len(read_source(str(at)).text) == 1000
    with pytest.raises(InputError) as caught:
        read_source(str(over))
    assert caught.value.diagnostic.rule == "TJC-INPUT-TOO-LARGE"
    assert "over.yaml is larger than" in caught.value.diagnostic.message


def test_a_short_read_is_not_the_end_of_a_file(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A read may give fewer bytes than asked for before the end (a network file system):
    reading goes on until one gives none."""
    path = tmp_path / "job.yaml"
    path.write_text("kind: TrainJob\n" * 100)
    real = os.read
    monkeypatch.setattr(os, "read", lambda fd, size: real(fd, min(size, 7)))
    assert read_source(str(path)).text == "kind: TrainJob\n" * 100


@pytest.mark.parametrize("make", ["folder", "missing", "no-permission"])
def test_what_cannot_be_read_is_named_with_why(tmp_path: Path, make: str) -> None:
    path = tmp_path / "x.yaml"
    if make == "folder":
        path.mkdir()
    elif make == "no-permission":
        path.write_text("a: 1\n")
        path.chmod(0)
        if os.access(path, os.R_OK):  # (as root every file is readable)
            pytest.skip("this user can read every file")
    with pytest.raises(InputError) as caught:
        read_source(str(path))
    reason = {"folder": "Is a directory", "missing": "No such file or directory",
              "no-permission": "Permission denied"}[make]
    assert caught.value.diagnostic.message == f"cannot read {path}: {reason}"
    assert caught.value.diagnostic.rule == "TJC-INPUT-UNREADABLE"
