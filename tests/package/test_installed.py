"""The package as users install it: the wheel `make wheel` builds, in a fresh venv outside the
checkout, with the CUE evaluator inside it and the built-in packs' test cases.

The wheel is built once per source state (cached under ~/.cache/tjc-wheel, keyed by a hash of
everything that goes into it); pip's and Go's caches make a rebuild cheap.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.wheel  # builds the wheel into a fresh venv

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("TJC_WHEEL_CACHE", Path.home() / ".cache" / "tjc-wheel"))
INPUTS = ("compiler", "cuebridge", "yamlext", "setup.py", "pyproject.toml", "MANIFEST.in",
          "README.md")
PRIVILEGED = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata:
  name: privileged-runtime
  labels: {trainer.kubeflow.org/framework: torch}
spec:
  mlPolicy: {numNodes: 1, torch: {}}
  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            metadata:
              labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}
            spec:
              template:
                spec:
                  containers:
                    - name: node
                      image: ghcr.io/acme/trainer:1.0
                      securityContext: {privileged: true, runAsNonRoot: true}
"""


def _source_hash() -> str:
    digest = hashlib.sha256()
    files: list[Path] = []
    for name in INPUTS:
        path = ROOT / name
        files += [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    for path in sorted(files):
        rel = path.relative_to(ROOT).as_posix()
        if "__pycache__" in rel or "/_native/" in rel or rel.endswith(".pyc"):
            continue
        digest.update(rel.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


@pytest.fixture(scope="module")
def wheel() -> Path:
    """The platform wheel of the current sources (sdist, then the wheel from it)."""
    out = CACHE / _source_hash()
    for old in CACHE.glob("*"):  # only the wheel of the current sources is kept
        if old != out and old.is_dir():
            shutil.rmtree(old, ignore_errors=True)
    found = sorted(out.glob("*.whl"))
    if not found:
        env = {**os.environ, "TJC_REQUIRE_CUE": "1", "PIP_CONSTRAINT": ""}
        subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
                       env=env, check=True, capture_output=True, timeout=1200)
        found = sorted(out.glob("*.whl"))
    return found[-1]


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv outside the checkout with the wheel installed; its bin folder."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "-c",
                    str(ROOT / "constraints.txt"), str(wheel)], check=True, timeout=900)
    return venv / "bin"


def _tjc(bin_dir: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TJC_LIBCUE", "PYTHONPATH")}
    return subprocess.run([str(bin_dir / "tjc"), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def test_wheel_is_a_platform_wheel_with_the_engine(wheel: Path) -> None:
    assert wheel.name.endswith("-cp311-abi3-linux_x86_64.whl"), wheel.name
    names = zipfile.ZipFile(wheel).namelist()
    assert "compiler/_native/libtjccue.so" in names
    assert "compiler/_native/_fastyaml.abi3.so" in names
    cases = {p.name for p in (ROOT / "policies" / "testdata").glob("*.yaml")}
    assert cases and {f"compiler/policies/testdata/{c}" for c in cases} <= set(names)


def test_installed_loader_takes_the_native_fast_path(installed: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TJC_PURE_YAML")}
    code = "from compiler.io import fastload; print(fastload.available(), fastload.__file__)"
    run = subprocess.run([str(installed / "python"), "-c", code], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=60, check=True)
    available, where = run.stdout.split()
    assert available == "True" and str(installed.parent) in where, run.stdout


def test_installed_validate_applies_the_default_packs(installed: Path, tmp_path: Path) -> None:
    (tmp_path / "runtime.yaml").write_text(PRIVILEGED)
    run = _tjc(installed, tmp_path, "validate", "runtime.yaml")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "runtime.yaml:21:53: error:" in run.stdout and "[security.privileged]" in run.stdout
    clean = _tjc(installed, tmp_path, "validate", "--no-default-policies", "runtime.yaml")
    assert clean.returncode == 0, clean.stdout + clean.stderr


def test_installed_policies_test_runs_the_packaged_cases(installed: Path,
                                                         tmp_path: Path) -> None:
    cases = len(list((ROOT / "policies" / "testdata").glob("*.yaml")))
    run = _tjc(installed, tmp_path, "policies", "test")
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.splitlines()[-1] == f"{cases}/{cases} cases passed"


def test_installed_without_engine_fails_closed(installed: Path, tmp_path: Path) -> None:
    (tmp_path / "runtime.yaml").write_text(PRIVILEGED)
    lib = next((installed.parent / "lib").glob(
        "python3*/site-packages/compiler/_native/libtjccue.so"))
    hidden = lib.with_name("hidden.so")
    lib.rename(hidden)
    try:
        run = _tjc(installed, tmp_path, "validate", "runtime.yaml")
        skipped = _tjc(installed, tmp_path, "validate", "--no-default-policies", "runtime.yaml")
    finally:
        hidden.rename(lib)
    assert run.returncode == 2 and run.stdout == ""
    assert len(run.stderr.splitlines()) == 1 and "CUE evaluator" in run.stderr
    assert skipped.returncode == 0, skipped.stdout + skipped.stderr
