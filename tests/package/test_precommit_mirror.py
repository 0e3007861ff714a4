"""The pre-commit mirror (packaging/pre-commit-mirror/, the template of the hook repository
that depends on the wheel): its hook and pin agree with the package, and through the real
`pre-commit`, with no Go on PATH and the wheel served from a local wheelhouse with no index (as
the package index would serve it), the hook fails a commit with a privileged runtime and lets a
clean one through."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from compiler.version import __version__
from tests.package.conftest import (
    PRIVILEGED,
    ROOT,
    clean_env,
    installed_from_the_release_wheel,
)

MIRROR = ROOT / "packaging" / "pre-commit-mirror"
NO_GO_PATH = "/usr/bin:/bin"
CLEAN = PRIVILEGED.replace("privileged-runtime", "team-runtime").replace(
    "privileged: true", "privileged: false")


def test_the_mirror_hook_is_the_repository_hook_and_pins_this_version() -> None:
    assert yaml.safe_load((MIRROR / ".pre-commit-hooks.yaml").read_text()) == \
        yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    project = tomllib.loads((MIRROR / "pyproject.toml").read_text())["project"]
    assert project["version"] == __version__
    assert project["dependencies"] == [f"trainjob-compiler=={__version__}"]


def _git(cwd: Path, *args: str, env: dict[str, str] | None = None,
         check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=1800, check=check)


def _mirror_repo(tmp_path: Path) -> tuple[Path, str]:
    """The template as a repository of its own, committed; its path and the commit."""
    repo = tmp_path / "mirror"
    shutil.copytree(MIRROR, repo)
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "mirror")
    return repo, _git(repo, "rev-parse", "HEAD").stdout.strip()


@pytest.mark.wheel  # pre-commit installs the wheel
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="pre-commit needs git")
def test_the_mirror_hook_installs_the_wheel_and_gates_commits_without_go(
        wheelhouse: Path, tmp_path: Path) -> None:
    assert shutil.which("go", path=NO_GO_PATH) is None and shutil.which("git", path=NO_GO_PATH)
    mirror, rev = _mirror_repo(tmp_path)
    work = tmp_path / "work"
    (work / "runtimes").mkdir(parents=True)
    _git(work, "init", "-q")
    (work / ".pre-commit-config.yaml").write_text(yaml.safe_dump({"repos": [
        {"repo": str(mirror), "rev": rev, "hooks": [{"id": "tjc-validate"}]}]}))
    env = clean_env(PATH=NO_GO_PATH, PRE_COMMIT_HOME=str(tmp_path / "cache"),
                    PIP_NO_INDEX="1", PIP_FIND_LINKS=str(wheelhouse),
                    PIP_ONLY_BINARY="trainjob-compiler", PIP_CONSTRAINT="",
                    GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
                    GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    subprocess.run([sys.executable, "-m", "pre_commit", "install"], cwd=work, env=env,
                   check=True, capture_output=True, timeout=120)

    (work / "runtimes" / "team.yaml").write_text(CLEAN)
    _git(work, "add", ".", env=env)
    clean = _git(work, "commit", "-m", "a clean runtime", env=env, check=False)
    assert clean.returncode == 0, clean.stdout[-3000:] + clean.stderr[-3000:]
    assert re.search(r"^tjc validate .*\.Passed$", clean.stderr, re.MULTILINE), clean.stderr

    (work / "runtimes" / "privileged.yaml").write_text(PRIVILEGED)
    _git(work, "add", ".", env=env)
    bad = _git(work, "commit", "-m", "a privileged runtime", env=env, check=False)
    assert bad.returncode == 1, bad.stdout[-3000:] + bad.stderr[-3000:]
    assert re.search(r"^tjc validate .*\.Failed$", bad.stderr, re.MULTILINE), bad.stderr
    assert "runtimes/privileged.yaml:21:53: error:" in bad.stderr
    assert "[security.privileged]" in bad.stderr
    log = _git(work, "log", "--format=%s", env=env).stdout.split("\n")
    assert log[0] == "a clean runtime"
    [site] = (tmp_path / "cache").glob("repo*/py_env-*/lib/python3*/site-packages")
    assert installed_from_the_release_wheel(site)
