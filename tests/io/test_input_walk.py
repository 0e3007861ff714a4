"""Which files a folder argument stands for: .yaml/.yml/.json files below it in sorted order,
not hidden ones nor those below hidden or symlinked folders; symlinked files count."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from compiler.io.loader import SourceFiles, expand_paths


def _tree(top: Path) -> None:
    for name in ("b.yaml", "a.yml", "c.json", "notes.txt", ".hidden.yaml", "sub/z.yaml",
                 "sub/deeper/y.yaml", ".git/x.yaml", "sub/.cache/w.yaml"):
        (top / name).parent.mkdir(parents=True, exist_ok=True)
        (top / name).write_text("kind: X\n")
    (top / "folder.yaml").mkdir()  # a folder with an input's name is no input
    elsewhere = top.parent / f"{top.name}-elsewhere"
    (elsewhere / "linked").mkdir(parents=True)
    (elsewhere / "linked" / "v.yaml").write_text("kind: X\n")
    (elsewhere / "target.yaml").write_text("kind: X\n")
    os.symlink(elsewhere / "linked", top / "linked-folder")  # not followed
    os.symlink(elsewhere / "target.yaml", top / "link.yaml")  # a file: read
    os.symlink(top / "missing.yaml", top / "broken.yaml")  # nothing to read


EXPECTED = ["a.yml", "b.yaml", "c.json", "link.yaml", "sub/deeper/y.yaml", "sub/z.yaml"]


def test_a_folder_stands_for_its_input_files(tmp_path: Path) -> None:
    _tree(tmp_path / "in")
    top = str(tmp_path / "in")
    assert list(expand_paths([top])) == [f"{top}/{name}" for name in EXPECTED]
    assert list(expand_paths([top + "/"])) == [f"{top}/{name}" for name in EXPECTED]


def test_the_working_folder_names_its_files_without_a_prefix(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _tree(tmp_path / "in")
    monkeypatch.chdir(tmp_path / "in")
    assert list(SourceFiles(["."]).names) == EXPECTED
    assert list(expand_paths(["sub"])) == ["sub/deeper/y.yaml", "sub/z.yaml"]


def test_a_path_that_is_no_folder_is_taken_as_a_file(tmp_path: Path) -> None:
    _tree(tmp_path / "in")
    assert list(expand_paths([str(tmp_path / "in" / "no-such-folder")])) == \
        [str(tmp_path / "in" / "no-such-folder")]  # reported when it is read
    assert list(expand_paths([str(tmp_path / "in" / "b.yaml")])) == [
        str(tmp_path / "in" / "b.yaml")]
