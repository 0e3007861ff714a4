"""`tjc diff` for pull requests: a TrainJob with errors shows as an error, the Markdown comment
stays under GitHub's 65,536 characters and names the full report (`--report FILE`), and
`--kustomize` falls back to `kubectl kustomize` when there is no standalone kustomize."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from compiler.cli.main import main
from compiler.gitops.diffing import COMMENT_LIMIT

JOB = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: {name}
  namespace: team-a
spec:
  runtimeRef:
    name: torch-distributed
  trainer:
    numNodes: {nodes}
    image: registry.example/train:1.{name_len}
    env:
    - name: RUN
      value: "{name}"
"""


def _jobs(folder: Path, count: int, nodes: int | str = 2) -> Path:
    folder.mkdir()
    for i in range(count):
        name = f"job-{i:03d}"
        (folder / f"{name}.yaml").write_text(
            JOB.format(name=name, nodes=nodes, name_len=len(name)))
    return folder


def _diff(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["diff", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_trainjob_with_errors_is_an_error_not_an_empty_addition(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old, new = _jobs(tmp_path / "old", 0), _jobs(tmp_path / "new", 1, nodes='"two"')
    code, out, err = _diff([str(old), str(new), "-o", "markdown"], capsys)
    assert code == 2 and "spec.trainer.numNodes: expected an integer" in err
    assert "Added" not in out
    assert out.startswith("**tjc diff**: 0 changed, 0 added, 0 removed TrainJob(s); 1 with "
                          "errors (not rendered)\n")
    assert "<summary>:x: Error: TrainJob <code>team-a/job-000</code> does not render" in out
    assert f"{new}/job-000.yaml:10:15: error: TrainJob team-a/job-000: " \
        "spec.trainer.numNodes: expected an integer, got string [TJC-SCHEMA-TYPE]" in out
    code, out, _ = _diff([str(old), str(new)], capsys)
    assert out.startswith("# error TrainJob team-a/job-000 does not render\n")


def test_markdown_stays_under_a_comment_and_names_the_full_report(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old, new = _jobs(tmp_path / "old", 0), _jobs(tmp_path / "new", 60)
    report = tmp_path / "full.md"
    code, out, _ = _diff([str(old), str(new), "-o", "markdown", "--report", str(report)],
                         capsys)
    full = report.read_text()
    assert code == 1 and len(full) > COMMENT_LIMIT  # 60 new JobSets do not fit
    assert len(out) <= COMMENT_LIMIT
    assert out.startswith("**tjc diff**: 0 changed, 60 added, 0 removed TrainJob(s)\n")
    shown = out.count("<summary>Added: ")
    assert 0 < shown < 60 and full.count("<summary>Added: ") == 60
    assert out.rstrip().endswith(
        f"**{60 - shown} more TrainJob(s) not shown**: this comment stays under 65,536 "
        f"characters; the full report is in `{report}`.")
    assert full.startswith(out.split("\n**", 2)[0].rstrip("\n"))  # the same sections, in order
    code, out, _ = _diff([str(old), str(new), "-o", "markdown"], capsys)
    assert len(out) <= COMMENT_LIMIT and "run `tjc diff` with `--report FILE`" in out


def test_kustomize_falls_back_to_kubectl_kustomize(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A PATH with a kubectl (a stand-in that prints the folder's one file, as `kubectl
    kustomize DIR` prints the build) and no kustomize."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    kubectl = bin_dir / "kubectl"
    kubectl.write_text('#!/bin/sh\n[ "$1" = kustomize ] || exit 3\ncat "$2"/job-000.yaml\n')
    kubectl.chmod(kubectl.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    old, new = _jobs(tmp_path / "old", 1), _jobs(tmp_path / "new", 1, nodes=3)
    for side in (old, new):
        (side / "kustomization.yaml").write_text("resources: [job-000.yaml]\n")
    code, out, err = _diff(["--kustomize", str(old), str(new)], capsys)
    assert (code, err) == (1, "")
    assert out.startswith(f"# changed TrainJob team-a/job-000\n--- {old}/team-a/job-000\n")
    assert "+        completions: 3" in out
