"""Which files a folder argument stands for: .yaml/.yml/.json files below it in sorted order,
not hidden ones nor those below hidden or symlinked folders; symlinked files count."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.io.loader import PathList, SourceFiles, expand_paths


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


def _files(top: Path, names: list[str]) -> None:
    for name in names:
        (top / name).parent.mkdir(parents=True, exist_ok=True)
        (top / name).write_text("kind: X\n")


def test_node_modules_and_what_gitignore_ignores_are_not_walked(tmp_path: Path) -> None:
    """A repository (`.git`) whose root .gitignore anchors a folder and ignores a suffix, a
    nested .gitignore that takes one file back; the walk starts below the root."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".gitignore").write_text("# generated\n/app/out/\n*.tmp.yaml\n")
    _files(repo, ["app/job.yaml", "app/out/rendered.yaml", "app/x.tmp.yaml",
                  "app/node_modules/pkg/deploy.yaml", "app/web/node_modules/a.yaml",
                  "app/keep/keep.tmp.yaml", "app/keep/other.tmp.yaml", "app/cache/c.json",
                  "app/sub/out/kept.yaml"])
    (repo / "app" / "keep" / ".gitignore").write_text("!keep.tmp.yaml\n")
    (repo / "app" / ".gitignore").write_text("cache/\n")
    top = str(repo / "app")
    assert [p.removeprefix(top + "/") for p in expand_paths([top])] == [
        "job.yaml", "keep/keep.tmp.yaml", "sub/out/kept.yaml"]
    # a file named on the command line is read whatever .gitignore says
    assert list(expand_paths([f"{top}/x.tmp.yaml"])) == [f"{top}/x.tmp.yaml"]


def test_exclude_globs_match_a_name_or_the_path_below_the_folder(tmp_path: Path) -> None:
    _files(tmp_path, ["jobs/a.yaml", "jobs/a.values.yaml", "jobs/charts/c/t.yaml",
                      "jobs/deep/charts/d.yaml"])
    top = str(tmp_path / "jobs")
    walked = list(expand_paths([top], ["*.values.yaml", "charts/*"]))
    assert [p.removeprefix(top + "/") for p in walked] == ["a.yaml", "deep/charts/d.yaml"]
    walked = list(expand_paths([top], ["charts"]))
    assert [p.removeprefix(top + "/") for p in walked] == ["a.values.yaml", "a.yaml"]
    assert len(SourceFiles([top], ["*.values.yaml"])) == 3


NAMES = ["a", "a-b", "a.b", "a b", "ab", "a_", "A", "é", "a0", "z", "a~"]


@settings(max_examples=40, deadline=None, database=None, derandomize=True)
@given(st.lists(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4), min_size=1,
                max_size=12))
def test_files_come_in_the_order_of_their_paths_as_strings(parts: list[list[str]]) -> None:
    """The walk lists one folder at a time, yet gives the order `sorted` gives the paths:
    a folder's name sorts with the "/" after it (`a/x` before `a-b`, as `/` > `-`)."""
    with tempfile.TemporaryDirectory() as tmp:
        wrote: set[str] = set()
        for names in parts:
            *folders, last = names
            path = Path(tmp, *folders, last + ".yaml")
            if any(Path(tmp, *folders[:i]).is_file() for i in range(1, len(folders) + 1)) \
                    or path.is_dir():
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("kind: X\n")
            wrote.add(str(path))
        here = os.getcwd()
        try:
            for top in (tmp, "."):
                os.chdir(tmp)
                got = list(expand_paths([top]))
                want = sorted(str(Path(p).relative_to(tmp)) if top == "." else p
                              for p in wrote)
                assert got == want
                assert list(SourceFiles([top]).names) == want
        finally:
            os.chdir(here)


def test_many_paths_in_little_memory() -> None:
    """`PathList` holds 3,000 paths as one string and their ends, and gives each back."""
    paths = [f"jobs/team-{i % 7}/run-{i:06d}.yaml" for i in range(3000)]
    held = PathList(iter(paths))
    assert len(held) == 3000 and list(held) == paths and held[-1] == paths[-1]
    assert held[10:13] == paths[10:13]
