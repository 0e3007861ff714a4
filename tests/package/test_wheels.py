"""The release wheels of `make wheels` (packaging/wheels/build.sh): one manylinux2014 abi3
wheel for x86_64 and one for aarch64, each with the CUE evaluator, the loader's fast path and
upstream's Flux templates inside, built for that platform; `auditwheel show` (the pinned dev
dependency) puts each at manylinux_2_17 with nothing outside the policy linked; and the sdist
they come from still builds a wheel from source with Go. The aarch64 wheel also runs: under
qemu-user, with Debian's arm64 CPython 3.11 (packaging/wheels/aarch64-python.sh)."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.package.conftest import PRIVILEGED, ROOT, clean_env

pytestmark = pytest.mark.wheel  # builds the wheels

ARCHES = {"x86_64": 0x3E, "aarch64": 0xB7}  # ELF e_machine of each platform
NATIVE = ("compiler/_native/libtjccue.so", "compiler/_native/_fastyaml.abi3.so")
FLUX = ("broker.toml", "entrypoint.sh", "init.sh")
# manylinux2014's system libraries (PEP 599) this package may link
SYSTEM_LIBRARIES = {"libc.so.6", "libpthread.so.0", "libresolv.so.2", "libm.so.6",
                    "libdl.so.2", "librt.so.1"}


def _wheel(release: Path, arch: str) -> Path:
    found = sorted(release.glob(f"*-manylinux_2_17_{arch}.manylinux2014_{arch}.whl"))
    assert len(found) == 1, sorted(p.name for p in release.iterdir())
    return found[0]


def test_make_wheels_gives_one_abi3_wheel_per_platform_and_the_sdist(release: Path) -> None:
    names = sorted(p.name for p in release.iterdir() if not p.name.startswith("."))
    assert names == ["trainjob_compiler-0.1.0-cp310-abi3-manylinux_2_17_aarch64."
                     "manylinux2014_aarch64.whl",
                     "trainjob_compiler-0.1.0-cp310-abi3-manylinux_2_17_x86_64."
                     "manylinux2014_x86_64.whl",
                     "trainjob_compiler-0.1.0.tar.gz"]


@pytest.mark.parametrize("arch", ARCHES)
def test_each_wheel_holds_the_engine_fast_path_and_templates_for_its_platform(
        release: Path, arch: str) -> None:
    with zipfile.ZipFile(_wheel(release, arch)) as wheel:
        names = set(wheel.namelist())
        assert {*NATIVE, *(f"compiler/_native/flux/{n}" for n in FLUX)} <= names
        for native in NATIVE:
            header = wheel.read(native)[:20]
            assert header[:4] == b"\x7fELF", native
            assert int.from_bytes(header[18:20], "little") == ARCHES[arch], native
        metadata = wheel.read("trainjob_compiler-0.1.0.dist-info/WHEEL").decode()
    assert f"Tag: cp310-abi3-manylinux_2_17_{arch}\n" in metadata
    assert f"Tag: cp310-abi3-manylinux2014_{arch}\n" in metadata
    assert "Root-Is-Purelib: false" in metadata
    cases = {p.name for p in (ROOT / "policies" / "testdata").glob("*.yaml")}
    assert cases and {f"compiler/policies/testdata/{c}" for c in cases} <= names


@pytest.mark.parametrize("arch", ARCHES)
def test_auditwheel_puts_each_wheel_at_manylinux_2_17(release: Path, arch: str) -> None:
    shown = subprocess.run([sys.executable, "-m", "auditwheel", "show", "--json",
                            str(_wheel(release, arch))],
                           capture_output=True, text=True, timeout=300, check=True).stdout
    report = json.loads(shown)
    assert report["overall_tag"] == report["sym_tag"] == f"manylinux_2_17_{arch}", report
    assert report["external_libs"] == {}, report  # nothing to graft: all inside the policy
    assert report["versioned_symbols"].keys() <= SYSTEM_LIBRARIES, report
    glibc = [tuple(map(int, v.removeprefix("GLIBC_").split(".")[:2]))
             for versions in report["versioned_symbols"].values() for v in versions]
    assert glibc and max(glibc) <= (2, 17), report


@pytest.mark.slow
def test_the_sdist_builds_a_wheel_with_the_engine_from_source(release: Path,
                                                              tmp_path: Path) -> None:
    """As pip builds it where no wheel fits: the host's C compiler and Go, no zig."""
    sdist = next(release.glob("*.tar.gz"))
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                           "--disable-pip-version-check", "-w", str(tmp_path), str(sdist)],
                          env=clean_env(PIP_CONSTRAINT="", TJC_REQUIRE_CUE="1"),
                          capture_output=True, text=True, timeout=1800, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    wheel = next(tmp_path.glob("*.whl"))
    assert wheel.name.endswith("-cp310-abi3-linux_x86_64.whl"), wheel.name
    assert "compiler/_native/libtjccue.so" in zipfile.ZipFile(wheel).namelist()


@pytest.mark.slow
def test_the_aarch64_wheel_runs_under_qemu_and_denies_a_privileged_runtime(
        release: Path, tmp_path: Path) -> None:
    """Installed for Debian's arm64 CPython 3.11 (glibc 2.36: pip's platforms up to 2.36),
    the dependencies' aarch64 wheels as pip picks them; cold caches (HOME is new), so the CUE
    evaluator's own process is started, under qemu too."""
    script = ROOT / "packaging" / "wheels" / "aarch64-python.sh"
    made = subprocess.run(["bash", str(script), str(release.parents[1] / "aarch64")],
                          capture_output=True, text=True, timeout=1200, check=False)
    assert made.returncode == 0, made.stderr[-3000:]
    python = made.stdout.splitlines()[-1]
    platforms = [f"--platform=manylinux_2_{n}_aarch64" for n in range(17, 37)]
    wheel = _wheel(release, "aarch64")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                    "--target", str(tmp_path / "site"), "--only-binary=:all:", *platforms,
                    "--python-version=3.11", "--implementation=cp", str(wheel)],
                   env=clean_env(PIP_CONSTRAINT=""), check=True, timeout=900)
    (tmp_path / "runtime.yaml").write_text(PRIVILEGED)
    env = clean_env(PYTHONPATH=str(tmp_path / "site"), HOME=str(tmp_path),
                    XDG_CACHE_HOME=str(tmp_path / "cache"))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([python, *args], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=600, check=False)

    probe = run("-c", "import platform; from compiler.io import emit, fastload; "
                      "print(platform.machine(), fastload.available(), emit._NATIVE is not None)")
    assert probe.stdout.split() == ["aarch64", "True", "True"], probe.stdout + probe.stderr
    version = run("-m", "compiler", "--version")
    assert version.returncode == 0 and version.stdout == "tjc 0.1.0\n", version.stderr
    denied = run("-m", "compiler", "validate", "runtime.yaml")
    assert denied.returncode == 1, denied.stdout + denied.stderr
    assert "runtime.yaml:21:53: error:" in denied.stdout
    assert "[security.privileged]" in denied.stdout
