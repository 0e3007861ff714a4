"""Install the Flux plugin's script templates from the pinned Kubeflow Trainer Go modules.

Upstream's Flux plugin fills three templates (`broker.toml`, `init.sh`, `entrypoint.sh`,
embedded in `pkg/runtime/framework/plugins/flux/templates/` of github.com/kubeflow/trainer/v2)
into the `<name>-flux-entrypoint` ConfigMap. tjc emits the same bytes, so it reads the same
files; they are not kept in this repository but taken from the Go module proxy, at the
versions named here, when the package is built (setup.py, into `compiler/_native/flux/`) or by
`make setup` (into `build/flux/` of a checkout). The newest release's go into that folder,
every other served release with a Flux plugin (v2.2 and later)'s into `releases/<v2_2_1>/` of
it (`compiler.kube.releases` reads them; the release lists must agree, a test checks).

    python -m schemas.fluxtemplates DEST_DIR
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

MODULE = "github.com/kubeflow/trainer/v2"
VERSION = "v2.3.0"
OLDER = ("v2.2.0", "v2.2.1")  # the other served releases with a Flux plugin
SOURCE = "pkg/runtime/framework/plugins/flux/templates"
NAMES = ("broker.toml", "entrypoint.sh", "init.sh")


def install(go: str, dest: Path) -> None:
    """Download the modules (Go's module cache keeps them) and copy the templates to `dest`
    (the newest release's) and `dest/releases/<key>/` (each older one's)."""
    _install(go, VERSION, dest)
    for version in OLDER:
        _install(go, version, dest / "releases" / version.replace(".", "_"))


def _install(go: str, version: str, dest: Path) -> None:
    out = subprocess.run([go, "mod", "download", "-json", f"{MODULE}@{version}"],
                         capture_output=True, text=True, check=False, env=_env())
    info = json.loads(out.stdout or "{}")
    if out.returncode != 0 or "Dir" not in info:
        raise RuntimeError(f"go mod download {MODULE}@{version} failed: "
                           f"{info.get('Error') or out.stderr.strip()}")
    source = Path(info["Dir"]) / SOURCE
    dest.mkdir(parents=True, exist_ok=True)
    for name in NAMES:
        shutil.copyfile(source / name, dest / name)


def _env() -> dict[str, str]:
    import os

    env = dict(os.environ)
    env["GOFLAGS"] = "-mod=mod"
    env.setdefault("GO111MODULE", "on")
    return env


def main(argv: list[str]) -> int:
    """CLI: install into the folder given."""
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    go = shutil.which("go")
    if go is None:
        print("fluxtemplates: go not found", file=sys.stderr)
        return 1
    try:
        install(go, Path(argv[0]).resolve())
    except (RuntimeError, OSError) as exc:
        print(f"fluxtemplates: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
