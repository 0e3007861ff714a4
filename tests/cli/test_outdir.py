"""`tjc render --output-dir`: nothing written or deleted outside DIR, not written by tjc or
written for another input set, pruning of TrainJobs that left the inputs, a manifest that is
the same bytes in every checkout (and older manifests with absolute paths), --dry-run, --check,
concurrent renders, file modes."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from compiler.cli.main import main
from compiler.cli.outdir import HEADER, MANIFEST

JOB = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: {name}
  namespace: {namespace}
spec:
  runtimeRef:
    name: torch-distributed
  trainer:
    numNodes: 1
"""


def _jobs(folder: Path, *names: str, namespace: str = "team") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / f"j-{re.sub('[^a-z0-9-]', '_', name)}.yaml").write_text(
            JOB.format(name=json.dumps(name), namespace=json.dumps(namespace)))
    return folder


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["render", "-q", "--no-default-policies", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def test_writes_one_marked_file_per_trainjob_and_prunes_the_ones_removed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    jobs, out = _jobs(tmp_path / "jobs", "a", "b"), tmp_path / "out"
    code, stdout, err = run([str(jobs), "--output-dir", str(out)], capsys)
    assert (code, stdout) == (0, ""), err
    assert _files(out) == {MANIFEST, "team/a.yaml", "team/b.yaml"}
    text = (out / "team" / "a.yaml").read_text()
    assert text.startswith(HEADER)
    assert [d["kind"] for d in yaml.safe_load_all(text) if d] == ["JobSet"]
    (jobs / "j-b.yaml").unlink()
    code, stdout, _ = run([str(jobs), "--output-dir", str(out), "--dry-run"], capsys)
    assert code == 0
    assert stdout.splitlines() == [f"would write {out.resolve()}/team/a.yaml",
                                   f"would delete {out.resolve()}/team/b.yaml"]
    assert "team/b.yaml" in _files(out), "a dry run changes nothing"
    assert run([str(jobs), "--output-dir", str(out)], capsys)[0] == 0
    assert _files(out) == {MANIFEST, "team/a.yaml"}


def test_pruning_spares_other_inputs_edited_files_and_json_by_hash(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first, second = _jobs(tmp_path / "one", "a", "b"), _jobs(tmp_path / "two", "c")
    out = tmp_path / "out"
    assert run([str(first), "--output-dir", str(out)], capsys)[0] == 0
    assert run([str(second), "--output-dir", str(out)], capsys)[0] == 0
    assert _files(out) == {MANIFEST, "team/a.yaml", "team/b.yaml", "team/c.yaml"}, \
        "a render of other inputs does not prune the first one's files"
    edited = out / "team" / "b.yaml"
    edited.write_text("kind: Mine\n")
    (first / "j-b.yaml").unlink()
    code, _, err = run([str(first), "--output-dir", str(out)], capsys)
    assert code == 1 and "no longer carries tjc's marker; not deleted [TJC-OUTPUT-EXISTS]" in err
    assert edited.read_text() == "kind: Mine\n"
    assert run([str(second), "-o", "json", "--output-dir", str(out)], capsys)[0] == 0
    assert (out / "team" / "c.json").exists() and not (out / "team" / "c.yaml").exists()
    (second / "j-c.yaml").unlink()
    assert run([str(second), "-o", "json", "--output-dir", str(out)], capsys)[0] == 0
    assert not (out / "team" / "c.json").exists(), "the recorded hash marks a JSON file"


@pytest.mark.parametrize("entry", ["../outside.txt", "/etc/hostname", "team/../../outside.txt",
                                   "team/user.yaml", "team/sub/x.yaml", "a\0b/c.yaml"])
def test_a_forged_manifest_entry_is_never_deleted(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], entry: str) -> None:
    jobs, out = _jobs(tmp_path / "jobs", "a"), tmp_path / "out"
    assert run([str(jobs), "--output-dir", str(out)], capsys)[0] == 0
    (tmp_path / "outside.txt").write_text("keep\n")
    (out / "team" / "user.yaml").write_text("kind: Mine\n")
    manifest = json.loads((out / MANIFEST).read_text())
    manifest["files"][entry] = dict(manifest["files"]["team/a.yaml"])
    (out / MANIFEST).write_text(json.dumps(manifest))
    code, _, err = run([str(jobs), "--output-dir", str(out)], capsys)
    assert code == 1 and "[TJC-OUTPUT-" in err
    assert all(line.startswith(f"{out.resolve()}/{MANIFEST}:1:1: error: ")
               for line in err.splitlines())
    assert (tmp_path / "outside.txt").read_text() == "keep\n"
    assert (out / "team" / "user.yaml").read_text() == "kind: Mine\n"


def test_names_that_are_paths_write_nothing_even_without_validation(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    jobs, out = tmp_path / "jobs", tmp_path / "out"
    _jobs(jobs, "../../escape", "x/y", ".hidden")
    _jobs(jobs / "ns", "ok", namespace="../up")
    code, _, err = run([str(jobs), "--no-validate", "--output-dir", str(out)], capsys)
    assert code == 1
    assert err.count("[TJC-OUTPUT-PATH]") == 4
    assert _files(out) == {MANIFEST}
    assert {f for f in _files(tmp_path) if not f.startswith("jobs/")} == {f"out/{MANIFEST}"}


def test_symlinks_leading_out_are_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    jobs, out, elsewhere = _jobs(tmp_path / "jobs", "a"), tmp_path / "out", tmp_path / "else"
    elsewhere.mkdir()
    out.mkdir()
    (out / "team").symlink_to(elsewhere)
    code, _, err = run([str(jobs), "--output-dir", str(out)], capsys)
    assert code == 1 and "is a symlink or not a folder; not written [TJC-OUTPUT-PATH]" in err
    assert not list(elsewhere.iterdir())
    (out / "team").unlink()
    (out / "team").mkdir()
    (out / "team" / "a.yaml").symlink_to(elsewhere / "target.yaml")
    code, _, err = run([str(jobs), "--output-dir", str(out)], capsys)
    assert code == 1 and "resolves outside the output folder" in err
    assert not list(elsewhere.iterdir())


def test_two_trainjobs_with_one_name_are_an_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    jobs = _jobs(tmp_path / "jobs", "a")
    (jobs / "z-copy.yaml").write_text((jobs / "j-a.yaml").read_text())
    code, _, err = run([str(jobs), "--output-dir", str(tmp_path / "out")], capsys)
    assert code == 1 and "a second TrainJob team/a in this run" in err
    assert f"{jobs / 'z-copy.yaml'}:4:9: error:" in err


def test_files_get_the_umasks_mode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    jobs = _jobs(tmp_path / "jobs", "a")
    old = os.umask(0o027)
    try:
        assert run([str(jobs), "--output-dir", str(tmp_path / "out")], capsys)[0] == 0
    finally:
        os.umask(old)
    assert (tmp_path / "out" / "team" / "a.yaml").stat().st_mode & 0o777 == 0o640


def test_a_file_as_dir_or_a_bad_manifest_is_a_usage_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    jobs, plain = _jobs(tmp_path / "jobs", "a"), tmp_path / "plain"
    plain.write_text("x")
    code, _, err = run([str(jobs), "--output-dir", str(plain)], capsys)
    assert (code, err) == (2, f"tjc: --output-dir {plain} is not a folder\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / MANIFEST).write_text("not json {")
    code, _, err = run([str(jobs), "--output-dir", str(out)], capsys)
    assert code == 2 and len(err.splitlines()) == 1 and "is not a tjc render manifest" in err
    (out / MANIFEST).write_text('{"version": 3, "files": {}}')
    code, _, err = run([str(jobs), "--output-dir", str(out)], capsys)
    assert code == 2 and err.endswith("is not a tjc render manifest of version 1 or 2; remove "
                                      "it (and the files tjc wrote) to start afresh\n")
    (out / MANIFEST).unlink()
    (out / MANIFEST).mkdir()
    code, _, err = run([str(jobs), "--output-dir", str(out)], capsys)
    assert code == 2 and len(err.splitlines()) == 1 and "cannot read" in err
    code, _, err = run([str(jobs), "--dry-run"], capsys)
    assert (code, err) == (2, "tjc: --dry-run needs --output-dir\n")


def test_concurrent_renders_keep_every_manifest_entry(tmp_path: Path) -> None:
    out = tmp_path / "out"
    folders = [_jobs(tmp_path / f"jobs{i}", *(f"j{i}-{k}" for k in range(5))) for i in range(4)]
    procs = [subprocess.Popen([sys.executable, "-m", "compiler", "render", "-q",
                               "--no-default-policies", str(folder), "--output-dir", str(out)])
             for folder in folders]
    assert [p.wait(timeout=300) for p in procs] == [0, 0, 0, 0]
    recorded = json.loads((out / MANIFEST).read_text())["files"]
    assert sorted(recorded) == sorted(f"team/j{i}-{k}.yaml" for i in range(4) for k in range(5))


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                    "-c", "init.defaultBranch=main", *args], check=True, capture_output=True)


def test_a_repository_cloned_twice_records_the_same_manifest_and_prunes_in_either(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The manifest held absolute input paths, so another checkout of the repository (CI, a
    colleague's clone) wrote other bytes and pruned nothing: the JobSet stayed."""
    origin = tmp_path / "origin"
    _jobs(origin / "jobs", "a", "b")
    _git(origin, "init", "-q")
    assert run([str(origin / "jobs"), "--output-dir", str(origin / "rendered")], capsys)[0] == 0
    _git(origin, "add", "-A")
    _git(origin, "commit", "-qm", "render")
    committed = (origin / "rendered" / MANIFEST).read_bytes()
    assert json.loads(committed)["files"]["team/a.yaml"]["inputs"] == ["jobs"]
    clones = [tmp_path / "ci" / "one", tmp_path / "laptop" / "deeper" / "two"]
    for clone in clones:
        _git(tmp_path, "clone", "-q", str(origin), str(clone))
        code, _, err = run([str(clone / "jobs"), "--output-dir", str(clone / "rendered")],
                           capsys)
        assert code == 0, err
        assert (clone / "rendered" / MANIFEST).read_bytes() == committed
    second = clones[1]
    (second / "jobs" / "j-b.yaml").unlink()
    monkeypatch.chdir(second / "jobs")  # how the paths are spelled does not matter
    assert run([".", "--output-dir", "../rendered"], capsys)[0] == 0
    assert _files(second / "rendered") == {MANIFEST, "team/a.yaml"}
    assert _files(clones[0] / "rendered") == {MANIFEST, "team/a.yaml", "team/b.yaml"}


def test_outside_a_repository_paths_are_relative_to_dirs_parent(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    here = tmp_path.resolve() / "here"
    _jobs(here / "jobs", "a")
    assert run([str(here / "jobs"), "--output-dir", str(here / "out")], capsys)[0] == 0
    recorded = json.loads((here / "out" / MANIFEST).read_text())
    assert recorded["files"]["team/a.yaml"]["inputs"] == ["jobs"]
    copy = here.parent / "copy"
    shutil.copytree(here, copy)
    (copy / "jobs" / "j-a.yaml").unlink()
    code, stdout, _ = run([str(copy / "jobs"), "--output-dir", str(copy / "out"), "--dry-run"],
                          capsys)
    assert (code, stdout) == (0, f"would delete {copy}/out/team/a.yaml\n")


@pytest.mark.parametrize("checkout", ["/ci/checkout", "HERE"])
def test_an_older_manifest_with_absolute_paths_is_taken_over(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], checkout: str) -> None:
    """A version 1 manifest, as an older tjc wrote it in another checkout or in this one: its
    entries for this run's paths there are this run's (pruned here); another input set's are
    left alone, made relative when they lie in this checkout."""
    here = tmp_path.resolve()
    checkout = str(here) if checkout == "HERE" else checkout
    jobs, out = _jobs(here / "jobs", "a", "b"), here / "out"
    _jobs(here / "other", "c")
    sums = {}
    for folder in (jobs, here / "other"):
        assert run([str(folder), "--output-dir", str(out)], capsys)[0] == 0
    for rel, entry in json.loads((out / MANIFEST).read_text())["files"].items():
        sums[rel] = entry["sha256"]
    owners = {"team/a.yaml": "jobs", "team/b.yaml": "jobs", "team/c.yaml": "other"}
    old = {rel: {"sha256": sums[rel], "inputs": json.dumps([f"{checkout}/{owners[rel]}"])}
           for rel in owners}
    (out / MANIFEST).write_text(json.dumps({"version": 1, "files": old}))
    (jobs / "j-b.yaml").unlink()
    assert run([str(jobs), "--output-dir", str(out)], capsys)[0] == 0
    assert _files(out) == {MANIFEST, "team/a.yaml", "team/c.yaml"}
    recorded = json.loads((out / MANIFEST).read_text())
    assert recorded["version"] == 2
    other = ["other"] if checkout == str(here) else [f"{checkout}/other"]
    assert {rel: e["inputs"] for rel, e in recorded["files"].items()} == {
        "team/a.yaml": ["jobs"], "team/c.yaml": other}
    taken_over = checkout != str(here)  # an owner that names no input set here
    code, _, err = run([str(here / "other" / "j-c.yaml"), "--output-dir", str(out)], capsys)
    assert (code == 0) == taken_over and ("[TJC-OUTPUT-OWNED]" in err) != taken_over


def test_a_file_of_another_input_set_is_neither_overwritten_nor_pruned(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two renders with different inputs into one DIR: the second overwrote the first's file
    (taking it over in the manifest) and pruned it once it left the second's inputs."""
    here = tmp_path.resolve()
    team_a, team_b = _jobs(here / "team-a", "x", "a"), _jobs(here / "team-b", "x", "b")
    x_b = (team_b / "j-x.yaml").read_text().replace("numNodes: 1", "numNodes: 2")
    (team_b / "j-x.yaml").write_text(x_b)
    out = here / "out"
    assert run([f"{team_a}/", "--output-dir", str(out)], capsys)[0] == 0
    before = {f: (out / f).read_bytes() for f in _files(out)}
    code, _, err = run([str(team_b), "--output-dir", str(out)], capsys)
    assert code == 1
    assert err == f"{team_b}/j-x.yaml:4:9: error: {out}/team/x.yaml is written by the " \
        "render of team-a, not of team-b; not overwritten (render team-a again first if the " \
        "TrainJob moved, or give each input set its own --output-dir) [TJC-OUTPUT-OWNED]\n"
    assert (out / "team" / "x.yaml").read_bytes() == before["team/x.yaml"]
    recorded = json.loads((out / MANIFEST).read_text())["files"]
    assert {rel: e["inputs"] for rel, e in recorded.items()} == {
        "team/a.yaml": ["team-a"], "team/b.yaml": ["team-b"], "team/x.yaml": ["team-a"]}
    (team_b / "j-x.yaml").unlink()
    assert run([str(team_b), "--output-dir", str(out)], capsys)[0] == 0
    assert (out / "team" / "x.yaml").read_bytes() == before["team/x.yaml"], "not pruned"
    code, _, err = run([str(team_b), str(team_a / "j-a.yaml"), "--output-dir", str(out)], capsys)
    assert code == 1 and err.count("[TJC-OUTPUT-OWNED]") == 2
    assert "a.yaml is written by the render of team-a, not of team-a/j-a.yaml team-b;" in err
    assert "b.yaml is written by the render of team-b, not of team-a/j-a.yaml team-b;" in err
    assert {f: (out / f).read_bytes() for f in ("team/a.yaml", "team/x.yaml")} == \
        {f: before[f] for f in ("team/a.yaml", "team/x.yaml")}
    (team_b / "j-x.yaml").write_text(x_b)  # the TrainJob moves: team-a's render prunes it first
    (team_a / "j-x.yaml").unlink()
    assert run([str(team_a), "--output-dir", str(out)], capsys)[0] == 0
    assert run([str(team_b), "--output-dir", str(out)], capsys)[0] == 0
    rendered = run([str(team_b / "j-x.yaml")], capsys)[1]
    assert (out / "team" / "x.yaml").read_text() == HEADER + rendered


def _check(jobs: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    return run([str(jobs), "--output-dir", str(out), "--check"], capsys)


def _snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {f: ((root / f).read_bytes(), (root / f).stat().st_mtime_ns) for f in _files(root)}


def test_check_passes_only_when_the_committed_output_is_current(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    jobs, out = _jobs(tmp_path / "jobs", "a", "b"), tmp_path.resolve() / "out"
    code, stdout, err = _check(jobs, out, capsys)
    assert code == 1 and not out.exists(), "nothing is written, not even DIR"
    assert stdout.splitlines() == [f"would create {out}/team/a.yaml",
                                   f"would create {out}/team/b.yaml",
                                   f"would create {out}/{MANIFEST}"]
    assert err == f"{out}/{MANIFEST}:1:1: error: 3 file(s) in {out} are not what this render " \
        "writes; render again without --check and commit the result [TJC-OUTPUT-STALE]\n"
    assert run([str(jobs), "--output-dir", str(out)], capsys)[0] == 0
    current = _snapshot(out)
    assert _check(jobs, out, capsys) == (0, "", "")
    (jobs / "j-a.yaml").write_text((jobs / "j-a.yaml").read_text().replace(
        "numNodes: 1", "numNodes: 2"))
    code, stdout, _ = _check(jobs, out, capsys)
    assert code == 1 and stdout.splitlines() == [f"would change {out}/team/a.yaml",
                                                 f"would change {out}/{MANIFEST}"]
    assert _snapshot(out) == current
    assert run([str(jobs), "--output-dir", str(out)], capsys)[0] == 0
    (out / "team" / "b.yaml").unlink()
    code, stdout, _ = _check(jobs, out, capsys)
    assert (code, stdout) == (1, f"would create {out}/team/b.yaml\n")
    assert not (out / "team" / "b.yaml").exists()
    assert run([str(jobs), "--output-dir", str(out)], capsys)[0] == 0
    (jobs / "j-b.yaml").unlink()
    code, stdout, _ = _check(jobs, out, capsys)
    assert code == 1 and stdout.splitlines() == [f"would delete {out}/team/b.yaml",
                                                 f"would change {out}/{MANIFEST}"]
    assert (out / "team" / "b.yaml").exists()


def test_check_wants_the_manifest_current_too(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    jobs, out = _jobs(tmp_path / "jobs", "a"), tmp_path.resolve() / "out"
    assert run([str(jobs), "--output-dir", str(out)], capsys)[0] == 0
    manifest = out / MANIFEST
    manifest.write_text(json.dumps(json.loads(manifest.read_text())))  # same data, other bytes
    code, stdout, _ = _check(jobs, out, capsys)
    assert (code, stdout) == (1, f"would change {manifest}\n")
    assert run([str(jobs), "--output-dir", str(out)], capsys)[0] == 0
    assert _check(jobs, out, capsys)[0] == 0
    (out / "team" / "a.yaml").write_text("kind: Mine\n")
    code, stdout, err = _check(jobs, out, capsys)
    assert code == 1 and "not overwritten [TJC-OUTPUT-EXISTS]" in err
    assert (out / "team" / "a.yaml").read_text() == "kind: Mine\n"


@pytest.mark.parametrize(("args", "message"), [
    (["--check"], "--check needs --output-dir"),
    (["--check", "--passthrough"], "--check needs --output-dir"),
    (["--check", "--dry-run", "--output-dir", "OUT"],
     "--check already writes nothing; leave out --dry-run"),
    (["--check", "--mpi-ssh-key", "generate", "--output-dir", "OUT"],
     "--check with --mpi-ssh-key generate never matches (new keys every run); use "
     "--mpi-ssh-key FILE"),
])
def test_check_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                            args: list[str], message: str) -> None:
    jobs = _jobs(tmp_path / "jobs", "a")
    code, stdout, err = run([str(jobs), *(str(tmp_path / a) if a == "OUT" else a
                                          for a in args)], capsys)
    assert (code, stdout, err) == (2, "", f"tjc: {message}\n")
    assert not (tmp_path / "OUT").exists()


def test_check_is_in_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["render", "--help"])
    assert "tjc render examples/ --output-dir rendered/ --check" in capsys.readouterr().out
