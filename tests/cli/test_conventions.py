"""The conventions of the tools around tjc: one output flag, JUnit XML, colour with NO_COLOR,
quiet built-in runtime findings, a summary line on render, one diagnostic per problem."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from compiler.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
BAD = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: Bad_Name
  namespace: default
spec:
  runtimeRef:
    name: torch-distributed
  trainer:
    resourcesPerNode:
      limits:
        memory: 4GB
"""


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def bad(tmp_path: Path) -> Path:
    path = tmp_path / "bad.yaml"
    path.write_text(BAD)
    return path


def test_validate_and_diff_take_dash_o_and_keep_the_old_spellings_hidden(
        capsys: pytest.CaptureFixture[str]) -> None:
    job = str(EXAMPLES / "jax-mnist.yaml")
    code, new, err = run(["validate", job, "-o", "json", "--no-default-policies"], capsys)
    assert code == 0 and err == ""
    code, old, err = run(["validate", job, "--format", "json", "--no-default-policies"], capsys)
    assert code == 0 and old == new
    assert err == "tjc validate: note: --format is deprecated; use -o/--output\n"
    code, out, err = run(["diff", job, job, "-f", "markdown"], capsys)
    assert code == 0 and out.startswith("**tjc diff**")
    assert err == "tjc diff: note: -f is deprecated; use -o/--output\n"
    for verb in ("validate", "diff"):
        with pytest.raises(SystemExit):
            main([verb, "--help"])
        text = capsys.readouterr().out
        assert "-o {" in text and "--format" not in text


def test_validate_junit_has_a_case_per_file_and_a_failure_per_error(
        bad: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = EXAMPLES / "jax-mnist.yaml"
    code, out, _ = run(["validate", str(good), str(bad), "-o", "junit",
                        "--no-default-policies"], capsys)
    assert code == 1 and out.startswith('<?xml version="1.0" encoding="UTF-8"?>\n')
    suite = ET.fromstring(out.split("\n", 1)[1]).find("testsuite")
    assert suite is not None and suite.get("failures") == "1"
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert list(cases)[:2] == [str(good), str(bad)]
    assert cases[str(good)].find("failure") is None
    failures = cases[str(bad)].findall("failure")
    assert [f.get("type") for f in failures] == ["TJC-CEL-NAME-FORMAT", "TJC-SCHEMA-QUANTITY"]
    assert failures[1].text is not None and failures[1].text.startswith(f"{bad}:12:17: error:")


def test_one_diagnostic_per_problem(bad: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The name (a CEL rule and the ObjectMeta check) and `4GB` (the schema's raw pattern and
    the quantity check) are each said once, in the words that say most."""
    code, out, _ = run(["validate", str(bad), "--no-default-policies"], capsys)
    assert code == 1
    assert [line.rsplit("[", 1)[1] for line in out.splitlines()[:-1]] == [
        "TJC-CEL-NAME-FORMAT]", "TJC-SCHEMA-QUANTITY]"]
    assert out.splitlines()[-1] == "2 errors, 0 warnings, 0 notices"
    code, _, err = run(["render", str(bad), "--no-default-policies"], capsys)
    assert code == 1 and err.count("error:") == 2 and "does not match ^" not in err


def test_render_summarises_the_builtin_runtime_findings_and_ends_with_a_summary(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["render", str(EXAMPLES)], capsys)
    assert code == 0 and "<builtin>/" not in err
    *lines, summary = err.splitlines()
    assert all(": notice: " in line for line in lines)
    assert summary == (f"12 of 12 TrainJobs rendered: 0 errors, 0 warnings, {len(lines)} "
                       "notices (30 more in the built-in runtimes, which you cannot change: "
                       "--show-builtin lists them)")
    for flag in ("--show-builtin", "-v"):
        code, _, err = run(["render", str(EXAMPLES), flag], capsys)
        assert code == 0 and err.count("<builtin>/") == 30
        assert err.splitlines()[-1] == ("12 of 12 TrainJobs rendered: 0 errors, 30 warnings, "
                                        f"{len(lines)} notices")
    code, _, err = run(["render", str(EXAMPLES), "-q"], capsys)
    assert code == 0 and err == ""


@pytest.mark.parametrize(("choice", "no_color", "tty", "coloured"), [
    ("auto", None, True, True), ("auto", "1", True, False), ("auto", None, False, False),
    ("always", "1", False, True), ("never", None, True, False)])
def test_colour_on_a_terminal_unless_no_color(
        bad: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        choice: str, no_color: str | None, tty: bool, coloured: bool) -> None:
    if no_color is None:
        monkeypatch.delenv("NO_COLOR", raising=False)
    else:
        monkeypatch.setenv("NO_COLOR", no_color)
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.setattr("sys.stdout.isatty", lambda: tty, raising=False)
    monkeypatch.setattr("sys.stderr.isatty", lambda: tty, raising=False)
    for verb in ("validate", "render"):
        _, out, err = run([verb, str(bad), "--no-default-policies", "--color", choice], capsys)
        first = (out if verb == "validate" else err).splitlines()[0]
        assert first.startswith(f"{bad}:4:9: ")
        assert ("\033[1;31merror\033[0m: " in first) is coloured, first
        assert ("\033" in first) is coloured


def test_render_runtimes_resolves_without_rendering_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A GitOps application whose runtimes another application owns: `--runtimes` resolves
    the runtimeRef; the runtime is neither rendered nor passed through."""
    job = tmp_path / "resnet.yaml"
    job.write_text((EXAMPLES / "custom-runtime" / "resnet.yaml").read_text())
    runtime = str(EXAMPLES / "custom-runtime" / "runtime.yaml")
    code, _, err = run(["render", str(job), "-q"], capsys)
    assert code == 1 and "[TJC-WEBHOOK-RUNTIME-NOT-FOUND]" in err
    code, out, err = run(["render", str(job), "-q", "--runtimes", runtime], capsys)
    assert (code, err) == (0, "")
    assert [d.split("\n", 1)[0] for d in out.split("kind: ")[1:]] == ["PodGroup", "JobSet"]
    code, out, err = run(["render", "--passthrough", str(job), "-q", "--runtimes", runtime],
                         capsys)
    assert (code, err) == (0, "")
    assert "kind: TrainingRuntime" not in out and "kind: JobSet" in out


def test_validate_and_render_exclude_globs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "app"
    (folder / "node_modules" / "pkg").mkdir(parents=True)
    (folder / "node_modules" / "pkg" / "bad.yaml").write_text(BAD)
    (folder / "drafts").mkdir()
    (folder / "drafts" / "bad.yaml").write_text(BAD)
    (folder / "jax.yaml").write_text((EXAMPLES / "jax-mnist.yaml").read_text())
    code, out, _ = run(["validate", str(folder), "--no-default-policies"], capsys)
    assert code == 1 and "node_modules" not in out and "drafts/bad.yaml" in out
    for verb in ("validate", "render"):
        code, _, err = run([verb, str(folder), "--no-default-policies", "-q",
                            "--exclude", "drafts"], capsys)
        assert (code, err) == (0, "")
