"""The image's build context, simulated (no container engine is needed): the repository's
files that .dockerignore admits, copied as the Dockerfile's wheel stage COPYs them, are enough
for that stage's RUN to build the wheel `make wheels` builds, with the CUE evaluator, the
loader's fast path and upstream's Flux templates inside, where the next stage takes it."""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.package.conftest import ROOT

WORKDIR = "/src"


def _pattern(text: str) -> re.Pattern[str]:
    """A .dockerignore pattern (Go's filepath.Match with `**`) as a regular expression."""
    text = text.strip("/")
    out = ""
    i = 0
    while i < len(text):
        if text.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif text.startswith("**", i):
            out, i = out + ".*", i + 2
        elif text[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif text[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(text[i]), i + 1
    return re.compile(out + r"\Z")


def _ignored(rules: list[tuple[bool, re.Pattern[str]]], path: str) -> bool:
    """Docker's rule: the last pattern matching the path or a parent folder of it decides."""
    parts = path.split("/")
    prefixes = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
    ignored = False
    for negated, pattern in rules:
        if any(pattern.match(p) for p in prefixes):
            ignored = not negated
    return ignored


def context_files() -> list[str]:
    """The repository's files in the build context, by .dockerignore."""
    rules = []
    for line in (ROOT / ".dockerignore").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            rules.append((line.startswith("!"), _pattern(line.lstrip("!"))))
    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True,
                             text=True, check=True).stdout.split()
    return [path for path in tracked if not _ignored(rules, path)]


def wheel_stage() -> list[str]:
    """The instructions of the Dockerfile's wheel stage, continuation lines joined."""
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    start = lines.index(next(ln for ln in lines if re.fullmatch(r"FROM \S+ AS wheel", ln)))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("FROM "))
    return lines[start + 1:end]


def _copy(files: list[str], sources: list[str], dest: str, context: Path) -> None:
    """COPY sources dest: a folder's files under dest, a file into dest (a folder)."""
    target = context / dest.replace(WORKDIR, "").lstrip("/")
    for source in sources:
        folder = source.rstrip("/")
        for path in files:
            if path.startswith(f"{folder}/"):
                into = target / path[len(folder) + 1:]
            elif fnmatch.fnmatchcase(path, source):
                into = target / Path(path).name
            else:
                continue
            into.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / path, into, follow_symlinks=False)


def test_the_context_holds_what_the_wheel_stage_copies() -> None:
    files = set(context_files())
    for step in wheel_stage():
        if step.startswith("COPY ") and "--from" not in step:
            for source in step.split()[1:-1]:
                folder = source.rstrip("/")
                assert any(f == source or f.startswith(f"{folder}/") for f in files), source
    assert {"setup.py", "MANIFEST.in", "yamlext/fastyaml.c", "cuebridge/go.mod",
            "packaging/wheels/build.sh", "schemas/fluxtemplates.py"} <= files


@pytest.mark.wheel  # builds the wheel
@pytest.mark.slow
def test_the_wheel_stage_builds_the_make_wheels_wheel_from_the_context(
        release: Path, x86_wheel: Path, tmp_path: Path) -> None:
    steps = wheel_stage()
    assert f"WORKDIR {WORKDIR}" in steps
    context, files = tmp_path / "src", context_files()
    for step in steps:
        if step.startswith("COPY ") and "--from" not in step:
            *sources, dest = step.split()[1:]
            _copy(files, sources, dest, context)
    # the tools and libyaml's source from the suite's cache; the wheel is built anew
    cache = tmp_path / "cache"
    cache.mkdir()
    for shared in ("tools", "src"):
        (cache / shared).symlink_to(release.parents[1] / shared)
    env = {"TJC_WHEELS_CACHE": str(cache), "PYTHON": sys.executable}
    for step in (s for s in steps if s.startswith("RUN ")):
        done = subprocess.run(["bash", "-e", "-c", step[4:]], cwd=context,
                              env={**os.environ, **env}, capture_output=True,
                              text=True, timeout=2400, check=False)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    taken = re.search(r"^COPY --from=wheel (\S+) \S+$", (ROOT / "Dockerfile").read_text(), re.M)
    assert taken is not None
    [built] = (context / taken[1].replace(WORKDIR, "").strip("/")).glob("*.whl")
    assert built.name == x86_wheel.name
    names = zipfile.ZipFile(built).namelist()
    assert sorted(names) == sorted(zipfile.ZipFile(x86_wheel).namelist())
    assert {"compiler/_native/libtjccue.so", "compiler/_native/_fastyaml.abi3.so",
            "compiler/_native/flux/entrypoint.sh"} <= set(names)
