"""Hostile pack folders: a FIFO named like a pack is no pack (it would block the read for
ever), and a case file that is not UTF-8 is one line naming the file, exit 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
JOB = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: a}
spec: {runtimeRef: {name: torch-distributed}, trainer: {}}
"""


def _tjc(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "compiler", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)


def test_a_fifo_in_a_pack_folder_is_passed_over(tmp_path: Path) -> None:
    packs = tmp_path / "packs"
    packs.mkdir()
    os.mkfifo(packs / "f.cue")
    (tmp_path / "job.yaml").write_text(JOB)
    run = _tjc("validate", "-q", str(tmp_path / "job.yaml"), "--policy", str(packs))
    assert run.returncode == 0, run.stdout + run.stderr


def test_a_case_file_that_is_not_utf8_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "testdata").mkdir()
    bad = tmp_path / "testdata" / "x.yaml"
    bad.write_bytes(b"\xff\xfe# rule: a\n")
    run = _tjc("policies", "test", str(tmp_path))
    assert run.returncode == 2 and run.stdout == "", run.stdout + run.stderr
    assert run.stderr.strip().splitlines() == [f"tjc: {bad}: not UTF-8 text (invalid start "
                                               "byte)"]
