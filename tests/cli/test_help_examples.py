"""Every example in a command's `--help` runs as written, from the repository's top folder
against its examples/: the test reads the examples out of each verb's epilog and runs each
command line in bash, in a copy of the repository's examples/ and policies/ made a git
repository (a `main` branch and an `origin/main`). Examples that need a cluster or a training
interpreter (`tjc controller`, `tjc run --local`) are parsed, not run; one that needs a tool
that is not installed (kustomize, helm, kpt) is skipped, named in the skip reason."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from compiler.cli.main import VERBS, build_parser

pytestmark = pytest.mark.slow  # about forty runs of tjc, kustomize, helm and kpt

ROOT = Path(__file__).resolve().parents[2]
TJC_BIN = Path(sys.executable).parent
PARSED_ONLY = ("tjc controller", "tjc webhook", "tjc run ")  # a cluster; the interpreters
EXIT_1_MEANS_DIFFERENT = ("tjc diff",)  # exit 1: the two sides render differently
TOOLS = ("kustomize", "helm", "kpt", "kubectl")


def epilog(verb: str | None) -> str:
    parser = build_parser(verb)
    if verb is None:
        return parser.epilog or ""
    sub = next(a for a in parser._actions if a.dest == "verb")
    text: str | None = sub.choices[verb].epilog  # type: ignore[index]
    return text or ""


def examples(text: str) -> list[str]:
    """The command lines of the `examples...:` section: a line indented by two spaces starts
    one (a trailing backslash continues it); what follows two or more spaces, and lines
    indented further, describe it."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if re.match(r"examples\b.*:$", ln))
    found: list[str] = []
    joining = False
    for line in lines[start + 1:]:
        if not line.strip() or not line.startswith("  "):
            break
        if joining:
            found[-1] += " " + line.strip()
        elif re.match(r"  \S", line):
            found.append(line[2:])
        else:
            continue
        joining = found[-1].endswith("\\")
        if joining:
            found[-1] = found[-1][:-1].rstrip()
    return [re.split(r"\s{2,}", command.strip())[0] for command in found]


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A git repository with the repository's examples/ and policies/, and the environment:
    this checkout's tjc, and the pinned GitOps tools when they are built."""
    work = tmp_path_factory.mktemp("help-examples")
    for folder in ("examples", "policies"):
        shutil.copytree(ROOT / folder, work / folder)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", str(work)]
    for argv in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "examples"],
                 ["update-ref", "refs/remotes/origin/main", "HEAD"]):
        subprocess.run([*git, *argv], check=True, capture_output=True)
    tools = subprocess.run([str(ROOT / "e2e" / "tools" / "build.sh"), "--print-dir"],
                           capture_output=True, text=True, check=False).stdout.strip()
    path = [str(TJC_BIN), *([tools] if tools else []), os.environ.get("PATH", "")]
    python_path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    home = work / "home"  # where the completion examples install their scripts
    for folder in (".config/fish/completions", ".local/share/bash-completion/completions"):
        (home / folder).mkdir(parents=True)
    env = {**os.environ, "PATH": os.pathsep.join(path), "PYTHONPATH": python_path,
           "NO_COLOR": "1", "HOME": str(home)}
    return work, env


def _missing_tool(command: str, env: dict[str, str]) -> str | None:
    words: list[str] = re.findall(r"(?:^|\|\s*)(\w+)", command)
    return next((w for w in words
                 if w in TOOLS and shutil.which(w, path=env["PATH"]) is None), None)


@pytest.mark.parametrize("verb", [None, *VERBS], ids=["tjc", *VERBS])
def test_help_examples_run_as_written(verb: str | None,
                                      sandbox: tuple[Path, dict[str, str]]) -> None:
    work, env = sandbox
    failed, skipped = [], []
    commands = examples(epilog(verb))
    assert commands, "a verb's help ends with examples"
    for command in commands:
        if command.startswith(PARSED_ONLY):
            build_parser(shlex.split(command)[1]).parse_args(shlex.split(command)[1:])
            continue
        tool = _missing_tool(command, env)
        if tool is not None:
            skipped.append(f"{command} ({tool} not installed)")
            continue
        done = subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True,
                              text=True, timeout=300, check=False)
        allowed = (0, 1) if command.startswith(EXIT_1_MEANS_DIFFERENT) else (0,)
        if done.returncode not in allowed or "Traceback" in done.stderr:
            failed.append(f"{command}: exit {done.returncode}: {done.stderr[-600:]}")
    assert not failed, "\n".join(failed)
    if skipped:
        pytest.skip("; ".join(skipped))
