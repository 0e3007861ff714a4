"""The pinned upstream modules, from the Go module proxy: where their files are on this machine.

The CRDs the schemas are generated from (`schemas.generate`) and the runtimes `runtimes/`
copies come from Kubeflow Trainer v2.3.0 and JobSet v0.12.0, the versions `schemas/gotypes/
go.mod` pins. `module_dir(module)` downloads a module at its pinned version (Go's module cache
keeps it, so later calls are quick) and returns the folder it is in. Every other served
Trainer release is pinned, with that release's own JobSet and Kubernetes modules, by
`schemas/gotypes/releases/<release>.mod`: `module_dir(module, release)` and `versions(release)`
read those, and `go_facts(release)` runs `schemas/gotypes` on them. Needs Go.
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
APIMACHINERY = "k8s.io/apimachinery"
# The build tag `schemas/gotypes` needs for a release whose Go API differs (patch_v2_1.go).
GO_TAGS = {"v2.1.0": "trainer_v2_1"}


class UpstreamError(RuntimeError):
    """A pinned module cannot be downloaded (no Go, no proxy, unknown module)."""


def _go() -> str:
    go = shutil.which("go")
    if go is None:
        raise UpstreamError("go not found; the pinned upstream modules need Go")
    return go


def _modfile(release: str | None) -> list[str]:
    """The `-modfile` flag of an older release (none for go.mod's own)."""
    if release is None:
        return []
    path = GOMOD_DIR / "releases" / f"{release}.mod"
    if not path.is_file():
        raise UpstreamError(f"Kubeflow Trainer {release} is not pinned: no {path.name} in "
                            "schemas/gotypes/releases/")
    return [f"-modfile={path}"]


def _env() -> dict[str, str]:
    return {**os.environ, "GOFLAGS": "-mod=readonly", "GO111MODULE": "on"}


def _download(*args: str) -> dict[str, object]:
    """`go mod download -json ARGS` in `schemas/gotypes/`: the module's JSON record (with
    its `Dir`), or `UpstreamError` with Go's reason."""
    out = subprocess.run([_go(), "mod", "download", "-json", *args], cwd=GOMOD_DIR,
                         env=_env(), capture_output=True, text=True, check=False)
    try:
        info = json.loads(out.stdout or "{}")
    except ValueError:
        info = {}
    if out.returncode != 0 or "Dir" not in info:
        raise UpstreamError(f"go mod download {args[-1]} failed: "
                            f"{info.get('Error') or out.stderr.strip()}")
    return dict(info)


@functools.cache
def module_dir(module: str, release: str | None = None) -> Path:
    """The folder of `module` at the version `schemas/gotypes/go.mod` requires (or, for an
    older Trainer `release`, `schemas/gotypes/releases/<release>.mod`)."""
    return Path(str(_download(*_modfile(release), module)["Dir"]))


@functools.cache
def pinned_dir(module: str, version: str, checksum: str) -> Path:
    """The folder of `module` at `version`, a module not in `schemas/gotypes/go.mod` (its
    requirements would move the pinned ones): downloaded by version and checked against
    `checksum` (go.sum's `h1:` hash of the module's files)."""
    info = _download(f"{module}@{version}")
    if info.get("Sum") != checksum:
        raise UpstreamError(f"{module}@{version}: checksum {info.get('Sum')}, pinned {checksum}")
    return Path(str(info["Dir"]))


def version(module: str) -> str:
    """The version `schemas/gotypes/go.mod` pins `module` at."""
    for line in (GOMOD_DIR / "go.mod").read_text(encoding="utf-8").splitlines():
        words = line.split()
        if words and words[0] in (module, "require") and module in words:
            return words[words.index(module) + 1]
    raise UpstreamError(f"{module} is not pinned in schemas/gotypes/go.mod")


def versions(release: str | None = None) -> dict[str, str]:
    """Module -> version of Trainer, JobSet and k8s.io/apimachinery as go.mod (or an older
    release's `.mod` file) selects them."""
    out = subprocess.run([_go(), "list", *_modfile(release), "-m", "-f", "{{.Path}} {{.Version}}",
                          TRAINER, JOBSET, APIMACHINERY], cwd=GOMOD_DIR, env=_env(),
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise UpstreamError(f"go list -m failed: {out.stderr.strip()}")
    return dict(line.split() for line in out.stdout.splitlines() if line.strip())


def go_facts(release: str | None = None) -> str:
    """The Go encoding facts of a release's types (`schemas/gotypes -json`), as JSON text."""
    tags = [f"-tags={GO_TAGS[release]}"] if release in GO_TAGS else []
    env = {**_env(), "CGO_ENABLED": "0"}
    out = subprocess.run([_go(), "run", "-trimpath", *_modfile(release), *tags, ".", "-json"],
                         cwd=GOMOD_DIR, env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise UpstreamError(f"schemas/gotypes failed for {release or 'go.mod'}: "
                            f"{out.stderr.strip()[-500:]}")
    return out.stdout
