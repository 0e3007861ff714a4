"""The release wheels as the package tests use them: `make wheels` (packaging/wheels/build.sh,
cached in ~/.cache/tjc-wheels), a fresh venv of a given Python with one installed, and a local
wheelhouse (the x86_64 wheel and its dependencies) that pip installs from with no index, as
from the package index."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "packaging" / "wheels" / "build.sh"
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


def build_wheels(root: Path = ROOT, **env: str) -> Path:
    """Run `root`'s build script (the release wheels of its sources); the folder they are in."""
    done = subprocess.run(["bash", str(root / "packaging" / "wheels" / "build.sh")],
                          env={**os.environ, "PYTHON": sys.executable, **env},
                          capture_output=True, text=True, timeout=2400, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return Path(done.stdout.splitlines()[-1])


@pytest.fixture(scope="session")
def release() -> Path:
    """The folder of the release wheels and sdist of the current sources."""
    return build_wheels()


@pytest.fixture(scope="session")
def x86_wheel(release: Path) -> Path:
    return next(release.glob("*-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"))


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without what points into the checkout (its library, its sources)."""
    drop = ("TJC_LIBCUE", "PYTHONPATH", "TJC_PURE_YAML", "VIRTUAL_ENV")
    return {**{k: v for k, v in os.environ.items() if k not in drop}, **extra}


def fresh_venv(python: str, where: Path, *requirements: str) -> Path:
    """A new venv of `python` in `where` with `requirements` installed; its bin folder."""
    subprocess.run([python, "-m", "venv", str(where)], check=True, env=clean_env(),
                   capture_output=True, timeout=300)
    bin_dir = where / "bin"
    done = subprocess.run([str(bin_dir / "python"), "-m", "pip", "install", "-q",
                           "--disable-pip-version-check", *requirements], env=clean_env(),
                          capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return bin_dir


@pytest.fixture(scope="session")
def wheelhouse(x86_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the x86_64 wheel (not the sdist) and, for this Python, the wheels of
    its dependencies and of setuptools (which builds a hook repository): with PIP_NO_INDEX and
    PIP_FIND_LINKS at it, pip finds the package only as the wheel, as from the index."""
    house = tmp_path_factory.mktemp("wheelhouse")
    shutil.copy(x86_wheel, house)
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check",
                    "--only-binary=:all:", "-d", str(house), str(x86_wheel), "setuptools",
                    "wheel"], check=True, env=clean_env(PIP_CONSTRAINT=""), timeout=900)
    return house


def installed_from_the_release_wheel(site_packages: Path) -> bool:
    """Whether the trainjob-compiler in `site_packages` was installed from the x86_64 release
    wheel (a build from source would be tagged linux_x86_64) with the CUE evaluator inside."""
    wheel = next(site_packages.glob("trainjob_compiler-*.dist-info")) / "WHEEL"
    tags = wheel.read_text().splitlines()
    library = site_packages / "compiler" / "_native" / "libtjccue.so"
    return "Tag: cp310-abi3-manylinux_2_17_x86_64" in tags and library.stat().st_size > 0
