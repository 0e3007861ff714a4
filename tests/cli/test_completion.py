"""`tjc completion bash|zsh|fish`: the scripts complete verbs, options and their values in
the real shells (bash always; zsh and fish where installed)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from compiler.cli.main import VERBS, main


def _script(shell: str, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["completion", shell]) == 0
    return capsys.readouterr().out


def _bash_complete(script: Path, words: list[str], cwd: Path) -> list[str]:
    """What bash offers for the last word of `words` (the command line being typed)."""
    line = " ".join(f"'{w}'" for w in words)
    program = (f"source {script}\nCOMP_WORDS=({line})\nCOMP_CWORD={len(words) - 1}\n"
               "_tjc\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n")
    done = subprocess.run(["bash", "--norc", "--noprofile", "-c", program], cwd=cwd,
                          capture_output=True, text=True, timeout=30, check=True)
    return sorted(filter(None, done.stdout.splitlines()))


def test_bash_completes_verbs_options_values_and_files(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "tjc.bash"
    script.write_text(_script("bash", capsys))
    (tmp_path / "job.yaml").write_text("")
    assert _bash_complete(script, ["tjc", ""], tmp_path) == sorted(
        [*VERBS, "--help", "--version"])
    assert _bash_complete(script, ["tjc", "va"], tmp_path) == ["validate"]
    assert _bash_complete(script, ["tjc", "validate", "-o", ""], tmp_path) == [
        "github", "json", "junit", "policyreport", "sarif", "text"]
    assert _bash_complete(script, ["tjc", "validate", "--ex"], tmp_path) == ["--exclude"]
    assert "--format" not in _bash_complete(script, ["tjc", "validate", "--"], tmp_path)
    assert _bash_complete(script, ["tjc", "render", "--color", "a"], tmp_path) == [
        "always", "auto"]
    assert _bash_complete(script, ["tjc", "runtimes", ""], tmp_path) == ["list", "show"]
    assert _bash_complete(script, ["tjc", "policies", "t"], tmp_path) == ["test"]
    assert _bash_complete(script, ["tjc", "render", "jo"], tmp_path) == ["job.yaml"]
    assert _bash_complete(script, ["tjc", "completion", ""], tmp_path) == [
        "bash", "fish", "zsh"]


def test_fish_script_is_complete_commands(capsys: pytest.CaptureFixture[str],
                                          tmp_path: Path) -> None:
    script = _script("fish", capsys)
    lines = [ln for ln in script.splitlines() if not ln.startswith("#")]
    assert all(ln.startswith("complete -c tjc ") for ln in lines)
    assert ("complete -c tjc -n '__fish_seen_subcommand_from validate' -s o -x -a "
            "'text json sarif github junit policyreport'") in lines
    for verb in VERBS:
        assert any(ln.startswith(f"complete -c tjc -n __fish_use_subcommand -a {verb} -d ")
                   for ln in lines)
    if shutil.which("fish") is None:
        return
    path = tmp_path / "tjc.fish"
    path.write_text(script)
    done = subprocess.run(["fish", "--no-config", "-c", f"source {path}; complete -C 'tjc va'"],
                          capture_output=True, text=True, timeout=30, check=True)
    assert done.stdout.startswith("validate")


def test_zsh_script_runs_the_bash_function(capsys: pytest.CaptureFixture[str],
                                           tmp_path: Path) -> None:
    script = _script("zsh", capsys)
    assert "bashcompinit" in script and "complete -o default -o filenames -F _tjc tjc" in script
    if shutil.which("zsh") is None:
        return
    path = tmp_path / "tjc.zsh"
    path.write_text(script)
    subprocess.run(["zsh", "-f", "-c", f"source {path}"], capture_output=True, timeout=30,
                   check=True)
