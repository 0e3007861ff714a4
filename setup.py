"""Build step of the package: the CUE evaluator goes inside it.

Everything else about the package is in pyproject.toml. Building a wheel (from the sdist, by
`pip install .`, `pip install git+URL` or pre-commit's install) compiles `cuebridge/` (the pinned
cuelang.org/go modules) with Go into `compiler/_native/libtjccue.so`, where the policy engine
finds it through importlib.resources. The wheel is then a platform wheel (cp310-abi3-linux_x86_64
and the like). Without Go the package is built without the evaluator (a warning says so) and
every command that would apply policies exits 2 with the install hint; TJC_REQUIRE_CUE=1 makes
a missing Go a build error instead (`make wheels` sets it). An editable install (`make setup`)
skips this step: the checkout's build/cue/libtjccue.so is used there.

The loader's native fast path (`yamlext/fastyaml.c`, linked with libyaml) and the emitter's
(`yamlext/fastemit.c`) become the extension module `compiler._native._fastyaml`, built for
the stable ABI of Python 3.10 and later, so the wheel is tagged cp310-abi3-<platform>. It is
optional: without a C compiler or libyaml's headers the package is built without it (a
warning says so), loads YAML with PyYAML alone and writes it with the Python emitter, the
same values a little slower. An editable install skips it too
(`make setup` builds build/yaml/ instead).

The release wheels (`make wheels`, packaging/wheels/build.sh) are built from the sdist with
the C toolchain and target given by the environment: CC and LDSHARED for the extension, CC,
CGO_ENABLED and GOARCH for Go; TJC_LIBYAML_SRC names an unpacked libyaml source tree whose
files are compiled into the extension (which is then required), and TJC_WHEEL_PLATFORM the
platform tag (e.g. manylinux_2_17_x86_64.manylinux2014_x86_64).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Distribution, Extension, setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_ext import build_ext
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


class BuildFastYaml(build_ext):
    """build_ext for the fast path: libyaml compiled in from TJC_LIBYAML_SRC, or linked in
    statically from the system where it can be."""

    def build_extensions(self) -> None:
        if getattr(self, "editable_mode", False):
            return
        source = os.environ.get("TJC_LIBYAML_SRC")
        for extension in self.extensions:
            if source:
                _bundle_libyaml(extension, Path(source))
                continue
            static = _static_libyaml()
            extension.extra_objects = [static] if static else []
            extension.libraries = [] if static else ["yaml"]
        super().build_extensions()


def _bundle_libyaml(extension: Extension, source: Path) -> None:
    """libyaml's own sources into the extension, its symbols hidden; no longer optional."""
    files = sorted((source / "src").glob("*.c"))
    version = (source / "include" / "yaml.h").is_file() and _libyaml_version(source)
    if not files or not version:
        raise SystemExit(f"error: TJC_LIBYAML_SRC={source}: no libyaml source tree there")
    major, minor, patch = version.split(".")
    extension.sources = [*extension.sources, *(str(f) for f in files)]
    extension.include_dirs = [str(source / "include"), str(source / "src")]
    extension.define_macros = [*extension.define_macros, ("YAML_DECLARE_STATIC", None),
                               ("YAML_VERSION_MAJOR", major), ("YAML_VERSION_MINOR", minor),
                               ("YAML_VERSION_PATCH", patch),
                               ("YAML_VERSION_STRING", f'"{version}"')]
    extension.extra_compile_args = ["-fvisibility=hidden"]
    extension.extra_link_args = ["-s"]
    extension.optional = False


def _libyaml_version(source: Path) -> str:
    """The version in libyaml's configure.ac (YAML_MAJOR/MINOR/PATCH), as "0.2.5"."""
    text = (source / "configure.ac").read_text(encoding="utf-8")
    parts = [re.search(rf"m4_define\(\[YAML_{name}\], (\d+)\)", text)
             for name in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(m.group(1) for m in parts if m) if all(parts) else ""


def _static_libyaml() -> str | None:
    try:
        found = subprocess.run(["cc", "-print-file-name=libyaml.a"], capture_output=True,
                               text=True, check=False).stdout.strip()
    except OSError:
        return None
    return found if os.path.isabs(found) and Path(found).is_file() else None


FAST_YAML = Extension("compiler._native._fastyaml",
                      ["yamlext/fastyaml.c", "yamlext/fastemit.c"],
                      define_macros=[("Py_LIMITED_API", "0x030A0000")], py_limited_api=True,
                      optional=True)


class PlatformWheel(bdist_wheel):
    """A wheel for Python 3.10 and later on this platform, or the one TJC_WHEEL_PLATFORM
    names (the libraries are native, the extension uses the stable ABI, the code is Python)."""

    def finalize_options(self) -> None:
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self) -> tuple[str, str, str]:
        _, _, platform = super().get_tag()
        return "cp310", "abi3", os.environ.get("TJC_WHEEL_PLATFORM") or platform


class NativeDistribution(Distribution):
    """A distribution that holds native code (installs into platlib)."""

    def has_ext_modules(self) -> bool:
        return True


setup(distclass=NativeDistribution, ext_modules=[FAST_YAML],
      cmdclass={"build_py": BuildWithCue, "build_ext": BuildFastYaml,
                "bdist_wheel": PlatformWheel})
