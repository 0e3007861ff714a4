"""The `tjc-validate` pre-commit hook, run for real through `pre-commit try-repo`: pre-commit
installs the package from this repository (building the CUE evaluator into it), splits a long
file list into batches, and the hook must still give what `tjc validate` gives on all files."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.wheel  # pre-commit installs the package

ROOT = Path(__file__).resolve().parents[2]
LONG = "d" * 200  # long paths: pre-commit's 128 KiB command line then needs several batches
JOBS = 700
JOB = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: job-{i}
  namespace: default
spec:
  runtimeRef:
    name: team-torch
  trainer:
    image: ghcr.io/acme/train:1.0
    resourcesPerNode: {{requests: {{cpu: "1"}}}}
"""
RUNTIME = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata:
  name: {name}
  labels: {{trainer.kubeflow.org/framework: torch}}
spec:
  mlPolicy: {{numNodes: 1, torch: {{}}}}
  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            metadata:
              labels: {{trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
            spec:
              template:
                spec:
                  containers:
                    - name: node
                      image: ghcr.io/acme/trainer:1.0
                      securityContext: {{privileged: {privileged}, runAsNonRoot: true}}
"""
NOT_KUBERNETES = {
    "kustomization.yaml": "resources:\n  - runtimes/team.yaml\n",
    ".github/workflows/ci.yaml": "on: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n",
    "chart/templates/job.yaml": "metadata:\n  name: {{ .Values.name }}\n"
                                "  labels: {{- include \"labels\" . | nindent 4 }}\n",
}


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def _repo(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    (work / "runtimes").mkdir(parents=True)
    (work / "jobs" / LONG).mkdir(parents=True)
    _git(work, "init", "-q")
    (work / "runtimes" / "team.yaml").write_text(RUNTIME.format(name="team-torch",
                                                                privileged="false"))
    for i in range(JOBS):
        (work / "jobs" / LONG / f"job-{i:04d}.yaml").write_text(JOB.format(i=i))
    for name, text in NOT_KUBERNETES.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    _git(work, "add", ".")
    return work


def _hook(work: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache"),
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com"}
    env.pop("TJC_LIBCUE", None)
    return subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(ROOT),
                           "tjc-validate", "--verbose", "--all-files"], cwd=work, env=env,
                          capture_output=True, text=True, timeout=1800)


def _tjc(work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "compiler", "validate", *args], cwd=work,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.skipif(shutil.which("git") is None, reason="pre-commit needs git")
def test_hook_in_batches_agrees_with_validate_and_fails_a_privileged_runtime(
        tmp_path: Path) -> None:
    work = _repo(tmp_path)
    good = _hook(work, tmp_path)
    assert good.returncode == 0, good.stdout[-3000:] + good.stderr[-3000:]
    summaries = re.findall(r"^(\d+) errors, (\d+) warnings, (\d+) notices$", good.stdout,
                           re.MULTILINE)
    assert len(summaries) >= 2, "pre-commit did not split the files into batches"
    assert "not found" not in good.stdout and "TJC-RUNTIME" not in good.stdout
    # the workflow file is no Kubernetes object; kustomization.yaml and the chart's template
    # are the GitOps tools' own files
    for rule in ("TJC-INPUT-NOT-KUBERNETES", "TJC-INPUT-TOOL-FILE"):
        assert f"[{rule}]" in good.stdout
    files = subprocess.run(["git", "ls-files"], cwd=work, capture_output=True, text=True,
                           check=True).stdout.split()
    whole = _tjc(work, *files)
    assert whole.returncode == 0, whole.stdout[-3000:]
    notices = sum(int(n) for _, _, n in summaries)
    assert whole.stdout.splitlines()[-1] == f"0 errors, 0 warnings, {notices} notices"

    (work / "runtimes" / "privileged.yaml").write_text(RUNTIME.format(
        name="privileged-runtime", privileged="true"))
    _git(work, "add", ".")
    bad = _hook(work, tmp_path)
    assert bad.returncode == 1, bad.stdout[-3000:] + bad.stderr[-3000:]
    assert "runtimes/privileged.yaml:21:53: error: ClusterTrainingRuntime privileged-runtime: " \
           in bad.stdout and "[security.privileged]" in bad.stdout
