"""The `tjc-validate` pre-commit hook, run for real through `pre-commit try-repo`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GOOD = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: good
  namespace: default
spec:
  runtimeRef:
    name: torch-distributed
"""


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.mark.skipif(shutil.which("git") is None, reason="pre-commit needs git")
def test_hook_passes_good_and_fails_bad_manifests(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    _git(work, "init", "-q")
    (work / "good.yaml").write_text(GOOD)
    (work / "bad.yaml").write_text(GOOD.replace("name: good", "name: Bad_Name"))
    _git(work, "add", ".")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache"),
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com"}
    cmd = [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "tjc-validate",
           "--verbose", "--files"]
    good = subprocess.run([*cmd, "good.yaml"], cwd=work, env=env, capture_output=True,
                          text=True, timeout=900)
    assert good.returncode == 0, good.stdout + good.stderr
    bad = subprocess.run([*cmd, "bad.yaml"], cwd=work, env=env, capture_output=True,
                         text=True, timeout=900)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "bad.yaml:4:9: error:" in bad.stdout and "RFC 1035" in bad.stdout
