"""Build step of the package: the CUE evaluator goes inside it.

Everything else about the package is in pyproject.toml. Building a wheel (from the sdist, by
`pip install .`, `pip install git+URL` or pre-commit's install) compiles `cuebridge/` (the pinned
cuelang.org/go modules) with Go into `compiler/_native/libtjccue.so`, where the policy engine
finds it through importlib.resources. The wheel is then a platform wheel (py3-none-linux_x86_64
and the like). Without Go the package is built without the evaluator (a warning says so) and
every command that would apply policies exits 2 with the install hint; TJC_REQUIRE_CUE=1 makes
a missing Go a build error instead (`make wheel` sets it). An editable install (`make setup`)
skips this step: the checkout's build/cue/libtjccue.so is used there.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
BRIDGE = ROOT / "cuebridge"
LIBRARY = "libtjccue.so"


def _go() -> str | None:
    found = shutil.which("go")
    if found is None and Path("/usr/local/go/bin/go").is_file():
        found = "/usr/local/go/bin/go"
    return found


class BuildWithCue(build_py):
    """build_py, then the CUE evaluator into the built package."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        go = _go()
        target = (Path(self.build_lib) / "compiler" / "_native" / LIBRARY).resolve()
        if go is None or not (BRIDGE / "go.mod").is_file():
            message = "Go is not installed (or cuebridge/ is missing): the package is built " \
                      "without the CUE evaluator and cannot apply policies"
            if os.environ.get("TJC_REQUIRE_CUE") == "1":
                raise SystemExit(f"error: {message}")
            print(f"warning: {message}", file=sys.stderr)
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([go, "build", "-mod=readonly", "-trimpath", "-buildmode=c-shared",
                        "-ldflags=-s -w",
                        "-o", str(target), "."], cwd=BRIDGE, check=True)
        target.with_suffix(".h").unlink(missing_ok=True)
        _flux_templates(go, target.parent / "flux")


def _flux_templates(go: str, dest: Path) -> None:
    """Upstream's Flux script templates, from the pinned Go module, into the package."""
    spec = importlib.util.spec_from_file_location("fluxtemplates",
                                                  ROOT / "schemas" / "fluxtemplates.py")
    if spec is None or spec.loader is None:
        raise SystemExit("error: schemas/fluxtemplates.py is missing")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.install(go, dest)


class PlatformWheel(bdist_wheel):
    """A wheel for any Python 3 on this platform (the library is native, the code is not)."""

    def finalize_options(self) -> None:
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self) -> tuple[str, str, str]:
        _, _, platform = super().get_tag()
        return "py3", "none", platform


class NativeDistribution(Distribution):
    """A distribution that holds native code (installs into platlib)."""

    def has_ext_modules(self) -> bool:
        return True


setup(distclass=NativeDistribution,
      cmdclass={"build_py": BuildWithCue, "bdist_wheel": PlatformWheel})
