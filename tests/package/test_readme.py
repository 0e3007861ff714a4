"""README states what is true: the Go it asks for builds every go.mod of the repository, the
pre-commit example pins a revision that exists (or a placeholder that says what to put), and
every verb and every option of `tjc` is documented."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml

from compiler.cli.completion_cmd import verbs

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def test_the_go_readme_asks_for_builds_every_go_mod() -> None:
    asked = re.findall(r"\bGo (\d+\.\d+) or later", README)
    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files", "*go.mod"],
                             capture_output=True, text=True, check=True).stdout.split()
    needed = max(_version(m) for path in tracked
                 for m in re.findall(r"^go (\d+\.\d+)", (ROOT / path).read_text(), re.M))
    assert asked and all(_version(a) >= needed[:2] for a in asked), (asked, needed)


def test_the_pre_commit_example_pins_a_revision_that_exists() -> None:
    block = README.split("# .pre-commit-config.yaml\n", 1)[1].split("```", 1)[0]
    rev = str(yaml.safe_load(block)["repos"][0]["rev"])
    if re.fullmatch(r"[A-Z][A-Z_]*", rev):  # a placeholder the text explains
        assert f"rev: {rev}" in README and "full SHA" in README
        return
    found = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet",
                            f"{rev}^{{commit}}"], capture_output=True, check=False)
    assert found.returncode == 0, f"rev {rev} is no tag or commit of this repository"


def test_every_verb_and_option_is_documented() -> None:
    missing = [f"tjc {v.name}" for v in verbs() if f"tjc {v.name}" not in README]
    missing += [f"tjc {v.name} {opt}" for v in verbs() for opt in v.options
                if opt not in ("-h", "--help") and not re.search(
                    rf"(?<![\w-]){re.escape(opt)}(?![\w-])", README)]
    assert not missing
