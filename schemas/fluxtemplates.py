"""Install the Flux plugin's script templates from the pinned Kubeflow Trainer Go module.

Upstream's Flux plugin fills three templates (`broker.toml`, `init.sh`, `entrypoint.sh`,
embedded in `pkg/runtime/framework/plugins/flux/templates/` of github.com/kubeflow/trainer/v2)
into the `<name>-flux-entrypoint` ConfigMap. tjc emits the same bytes, so it reads the same
files; they are not kept in this repository but taken from the Go module proxy, at the version
pinned here, when the package is built (setup.py, into `compiler/_native/flux/`) or by
`make setup` (into `build/flux/` of a checkout).

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
SOURCE = "pkg/runtime/framework/plugins/flux/templates"
NAMES = ("broker.toml", "entrypoint.sh", "init.sh")


def install(go: str, dest: Path) -> None:
    """Download the module (Go's module cache keeps it) and copy the templates to `dest`."""
    out = subprocess.run([go, "mod", "download", "-json", f"{MODULE}@{VERSION}"],
                         capture_output=True, text=True, check=False, env=_env())
    info = json.loads(out.stdout or "{}")
    if out.returncode != 0 or "Dir" not in info:
        raise RuntimeError(f"go mod download {MODULE}@{VERSION} failed: "
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
