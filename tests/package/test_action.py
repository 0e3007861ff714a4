"""The CI action (action.yml at the top of the repository): its command lines are valid `tjc`
invocations with the inputs' defaults, its validate step writes a SARIF report and the exit
code, and the report it writes is the one it uploads; its install step installs the release
wheel of the action's version (as from the package index, here a local wheelhouse), with no Go
on PATH, and the installed `tjc` fails the job on a privileged runtime."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from compiler.cli import validate_cmd
from compiler.cli.main import build_parser
from tests.package.conftest import PRIVILEGED, clean_env, installed_from_the_release_wheel

ROOT = Path(__file__).resolve().parents[2]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
INPUT = re.compile(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}")


def _defaults() -> dict[str, str]:
    return {name: str(spec.get("default", "")) for name, spec in ACTION["inputs"].items()}


def _env(step: dict[str, Any]) -> dict[str, str]:
    """The step's env with each `${{ inputs.X }}` given X's default."""
    return {k: INPUT.sub(lambda m: _defaults()[m[1]], str(v))
            for k, v in step.get("env", {}).items()}


def _tjc_lines(step: dict[str, Any]) -> list[list[str]]:
    """The step's `tjc` command lines as argv, its env expanded, redirections left out."""
    env = _env(step)
    found = []
    for line in str(step.get("run", "")).splitlines():
        if not line.strip().startswith("tjc "):
            continue
        line = re.sub(r"\$(\w+)", lambda m: env[m[1]], line.split(">")[0])
        found.append(shlex.split(line))
    return found


def test_every_tjc_command_line_parses_as_tjc_validate() -> None:
    steps = ACTION["runs"]["steps"]
    commands = [argv for step in steps for argv in _tjc_lines(step)]
    assert commands and all(argv[:2] == ["tjc", "validate"] for argv in commands)
    for argv in commands:
        args = build_parser(argv[1]).parse_args(argv[1:])
        assert args.func is validate_cmd.run
    assert commands[0][-2:] == ["-o", "sarif"]


def test_the_validate_step_writes_sarif_and_the_exit_code_and_uploads_that_file(
        tmp_path: Path) -> None:
    steps = ACTION["runs"]["steps"]
    step = next(s for s in steps if s.get("id") == "validate")
    work = tmp_path / "repo"
    shutil.copytree(ROOT / "examples", work)
    outputs = tmp_path / "outputs"
    env = {**os.environ, **_env(step), "GITHUB_OUTPUT": str(outputs),
           "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=work, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert outputs.read_text() == "exit-code=0\n"
    report = json.loads((work / _defaults()["sarif-file"]).read_text())
    assert report["version"] == "2.1.0" and report["runs"][0]["tool"]["driver"]["name"] == "tjc"
    upload = next(s for s in steps if str(s.get("uses", "")).startswith(
        "github/codeql-action/upload-sarif@"))
    assert upload["with"]["sarif_file"] == "${{ inputs.sarif-file }}"
    last = steps[-1]
    assert last["run"] == 'exit "$TJC_EXIT"'
    assert last["env"]["TJC_EXIT"] == "${{ steps.validate.outputs.exit-code }}"


def _step(name: str) -> dict[str, Any]:
    return next(s for s in ACTION["runs"]["steps"] if s.get("name") == name)


@pytest.mark.wheel  # installs the wheel
@pytest.mark.slow
def test_the_install_step_installs_the_wheel_and_validate_fails_the_job_without_go(
        wheelhouse: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=clean_env())
    no_go = f"{venv / 'bin'}:/usr/bin:/bin"
    assert shutil.which("go", path=no_go) is None
    env = clean_env(PATH=no_go, GITHUB_ACTION_PATH=str(ROOT), PIP_NO_INDEX="1",
                    PIP_FIND_LINKS=str(wheelhouse), PIP_CONSTRAINT="",
                    PIP_DISABLE_PIP_VERSION_CHECK="1")
    install = _step("Install tjc")
    done = subprocess.run(["bash", "-e", "-c", install["run"]], cwd=tmp_path,
                          env={**env, **_env(install)}, capture_output=True, text=True,
                          timeout=900, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert installed_from_the_release_wheel(next(venv.glob("lib/python3*/site-packages")))
    work = tmp_path / "repo"
    work.mkdir()
    (work / "runtime.yaml").write_text(PRIVILEGED)
    step = _step("tjc validate")
    outputs = tmp_path / "outputs"
    done = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=work,
                          env={**env, **_env(step), "GITHUB_OUTPUT": str(outputs)},
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert outputs.read_text() == "exit-code=1\n"
    assert "::error file=runtime.yaml,line=21" in done.stdout, done.stdout
