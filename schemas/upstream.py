"""The pinned upstream modules, from the Go module proxy: where their files are on this machine.

The CRDs the schemas are generated from (`schemas.generate`) and the runtimes `runtimes/`
copies come from Kubeflow Trainer v2.3.0 and JobSet v0.12.0, the versions `schemas/gotypes/
go.mod` pins. `module_dir(module)` downloads a module at its pinned version (Go's module cache
keeps it, so later calls are quick) and returns the folder it is in. Needs Go.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from pathlib import Path

GOMOD_DIR = Path(__file__).resolve().parent / "gotypes"
TRAINER = "github.com/kubeflow/trainer/v2"
JOBSET = "sigs.k8s.io/jobset"


class UpstreamError(RuntimeError):
    """A pinned module cannot be downloaded (no Go, no proxy, unknown module)."""


@functools.cache
def module_dir(module: str) -> Path:
    """The folder of `module` at the version `schemas/gotypes/go.mod` requires."""
    go = shutil.which("go")
    if go is None:
        raise UpstreamError("go not found; the pinned upstream modules need Go")
    env = {**os.environ, "GOFLAGS": "-mod=readonly", "GO111MODULE": "on"}
    out = subprocess.run([go, "mod", "download", "-json", module], cwd=GOMOD_DIR, env=env,
                         capture_output=True, text=True, check=False)
    try:
        info = json.loads(out.stdout or "{}")
    except ValueError:
        info = {}
    if out.returncode != 0 or "Dir" not in info:
        raise UpstreamError(f"go mod download {module} failed: "
                            f"{info.get('Error') or out.stderr.strip()}")
    return Path(info["Dir"])


@functools.cache
def pinned_dir(module: str, version: str, checksum: str) -> Path:
    """The folder of `module` at `version`, a module not in `schemas/gotypes/go.mod` (its
    requirements would move the pinned ones): downloaded by version and checked against
    `checksum` (go.sum's `h1:` hash of the module's files)."""
    go = shutil.which("go")
    if go is None:
        raise UpstreamError("go not found; the pinned upstream modules need Go")
    env = {**os.environ, "GOFLAGS": "-mod=readonly", "GO111MODULE": "on"}
    out = subprocess.run([go, "mod", "download", "-json", f"{module}@{version}"],
                         cwd=GOMOD_DIR, env=env, capture_output=True, text=True, check=False)
    try:
        info = json.loads(out.stdout or "{}")
    except ValueError:
        info = {}
    if out.returncode != 0 or "Dir" not in info:
        raise UpstreamError(f"go mod download {module}@{version} failed: "
                            f"{info.get('Error') or out.stderr.strip()}")
    if info.get("Sum") != checksum:
        raise UpstreamError(f"{module}@{version}: checksum {info.get('Sum')}, pinned {checksum}")
    return Path(info["Dir"])


def version(module: str) -> str:
    """The version `schemas/gotypes/go.mod` pins `module` at."""
    for line in (GOMOD_DIR / "go.mod").read_text(encoding="utf-8").splitlines():
        words = line.split()
        if words and words[0] in (module, "require") and module in words:
            return words[words.index(module) + 1]
    raise UpstreamError(f"{module} is not pinned in schemas/gotypes/go.mod")
