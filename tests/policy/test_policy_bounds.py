"""The CUE evaluator is bounded: a values file or pack that needs too much memory or time is
one located line and exit 2 (no Go crash report, no hang), and the next CUE work still runs.

The command-line cases run `tjc` in a subprocess with a timeout of their own (a hang fails
the test instead of stalling the suite) and an address-space cap (an unbounded evaluator
fails fast instead of filling the machine's memory); the limits are made small through
TJC_CUE_MEMORY and TJC_CUE_TIMEOUT to keep them quick.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
JOB = str(ROOT / "examples" / "jax-mnist.yaml")
SAFETY_CAP = 6 << 30  # bytes of address space for the whole command, evaluator included
HANG = 60  # seconds after which a command counts as hung

# A string doubled 34 times: 16 GiB.
DOUBLING = 'a0: "x"\n' + "".join(f"a{i}: a{i - 1} + a{i - 1}\n" for i in range(1, 35))

RULE = """\
rules: "{id}": {{
\tseverity:  "deny"
\tappliesTo: ["TrainJob"]
\tmessage:   "{message}"
\tviolations: [{violations}]
}}
"""
# 3000 x 3000 pairs: in the pack itself (found when the pack loads), or with a bound read
# from the input (found when a TrainJob is evaluated).
SLOW_PACKS = {
    "loading": "package grid\n\nimport \"list\"\n\ninput: _\n\n"
               "_n: list.Range(0, 3000, 1)\n_pairs: [for a in _n for b in _n if a*b < 0 {a}]\n"
               + RULE.format(id="grid.pairs", message="never",
                             violations="for x in _pairs {path: [\"spec\"]}"),
    "evaluating": "package grid\n\nimport \"list\"\n\ninput: _\n\n"
                  "_k: len(input.object.metadata.name)\n_n: list.Range(0, 3000, 1)\n"
                  + RULE.format(id="grid.pairs", message="never",
                                violations="for a in _n for b in _n if a*b == -_k "
                                           "{path: [\"spec\"]}"),
}
TEAM = "package team\n\ninput: _\n\n" + RULE.format(
    id="team.label", message="every TrainJob needs a team label",
    violations="if input.object.metadata.labels.team == _|_ {path: [\"metadata\", \"labels\"]}")


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (SAFETY_CAP, SAFETY_CAP))


def tjc(args: list[str], **limits: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run `tjc` with the evaluator's limits set by `limits` (memory=, timeout=)."""
    env = {**os.environ, **{f"TJC_CUE_{k.upper()}": v for k, v in limits.items()}}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "compiler", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=HANG, check=False,
                          preexec_fn=_capped)
    return done, time.monotonic() - started


def _one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr[-2000:]
    assert "goroutine" not in done.stderr and "Traceback" not in done.stderr
    return lines[0]


def test_a_values_file_over_the_memory_limit_is_one_line(tmp_path: Path) -> None:
    values = tmp_path / "values.cue"
    values.write_text(DOUBLING)
    done, _ = tjc(["validate", JOB, "--policy-values", str(values)], memory="256Mi")
    line = _one_line(done)
    assert line.startswith(f"{values}:1:1: error: ") and "memory" in line, line
    assert line.endswith("[TJC-POLICY-LIMIT]") and "TJC_CUE_MEMORY" in line


@pytest.mark.slow
@pytest.mark.parametrize("when", sorted(SLOW_PACKS))
def test_a_pack_over_the_time_limit_is_stopped_at_the_deadline(tmp_path: Path,
                                                              when: str) -> None:
    folder = tmp_path / "team-policies"
    folder.mkdir()
    (folder / "grid.cue").write_text(SLOW_PACKS[when])
    for verb in ("validate", "render"):
        done, took = tjc([verb, JOB, "--policy", str(folder)], timeout="1")
        line = _one_line(done)
        assert line.startswith(f"{folder / 'grid.cue'}:1:1: error: {when} the policy pack "
                               "went over the CUE evaluator's time limit (1 s"), line
        assert took < 20, took  # the deadline, the start-up and the kill


def test_a_normal_pack_runs_within_the_limits(tmp_path: Path) -> None:
    (tmp_path / "team.cue").write_text(TEAM)
    done, _ = tjc(["validate", JOB, "--policy", str(tmp_path), "--no-default-policies"],
                  memory="256Mi", timeout="20")
    assert done.returncode == 1, done.stderr
    assert "every TrainJob needs a team label [team.label]" in done.stdout


def test_limits_that_are_not_amounts_are_usage_errors(tmp_path: Path) -> None:
    (tmp_path / "team.cue").write_text(TEAM)
    for limits in ({"memory": "lots"}, {"timeout": "-1"}):
        done, _ = tjc(["validate", JOB, "--policy", str(tmp_path)], **limits)
        assert "TJC_CUE_" in _one_line(done)


def test_after_a_limit_the_next_load_gets_a_new_evaluator(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a long-running caller (the controller) relies on: the error says which pack and
    which limit, and the policies it loads next are evaluated as before."""
    from compiler.common.errors import PolicyError, PolicyLimitError
    from compiler.policy.packs import Loader

    monkeypatch.setenv("TJC_CACHE_DIR", "off")
    monkeypatch.setenv("TJC_CUE_TIMEOUT", "1")
    (tmp_path / "grid.cue").write_text(SLOW_PACKS["loading"])
    (tmp_path / "team.cue").write_text(TEAM)
    with pytest.raises(PolicyLimitError) as over:
        Loader().load_all([tmp_path / "grid.cue"])
    assert isinstance(over.value, PolicyError)
    assert (over.value.limit, over.value.file) == ("time", str(tmp_path / "grid.cue"))
    pack = Loader().load_all([tmp_path / "team.cue"])[0]
    found = pack.evaluate([{"rules": ["team.label"],
                            "input": {"object": {"metadata": {"labels": {}}}}}])
    assert found == [{"team.label": {"violations": [{"path": ["metadata", "labels"]}]}}]


# Compiled rules run in tjc's own process: one that would make more than a plan makes (a string
# built from the input a few thousand times over, iterations past the budget) hands its input
# to the evaluator, whose limits then hold as for any pack.
HUGE = """\
package huge

import "strings"

input: _

rules: "huge.text": {
\tseverity:  "warn"
\tappliesTo: ["JobSet"]
\tmessage:   "never"
\tviolations: [for c in input.containers
\t\tlet a = strings.Repeat(c.job, 200000)
\t\tlet b = a + a + a + a + a + a + a + a
\t\tlet d = strings.Repeat(b, 4000)
\t\tif len(d) == 1 {path: c.path}]
}
"""
LOOPS = """\
package loops

input: _

rules: "loops.five": {
\tseverity:  "warn"
\tappliesTo: ["TrainingRuntime"]
\tmessage:   "never"
\tviolations: [for a in input.containers for b in input.containers for c in input.containers
\t\tfor d in input.containers for e in input.containers
\t\tif a.container.name == "" && e.container.name == "x" {path: a.path}]
}
"""


def _runtime_with_containers(tmp_path: Path, count: int) -> Path:
    containers = "".join(f"                    - {{name: c{i}, image: 'ghcr.io/a/b:1'}}\n"
                         for i in range(count))
    path = tmp_path / "runtime.yaml"
    path.write_text(
        "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainingRuntime\n"
        "metadata: {name: wide, namespace: default}\nspec:\n  mlPolicy: {numNodes: 1}\n"
        "  template:\n    spec:\n      replicatedJobs:\n        - name: node\n"
        "          template:\n            metadata:\n              labels: "
        "{trainer.kubeflow.org/trainjob-ancestor-step: trainer}\n            spec:\n"
        "              template:\n                spec:\n                  containers:\n"
        + containers)
    return path


def test_a_compiled_rule_that_would_make_too_much_is_bounded_as_cue_is(tmp_path: Path) -> None:
    from compiler.policy.packs import Loader

    (tmp_path / "huge.cue").write_text(HUGE)
    assert Loader().load(tmp_path / "huge.cue").plan.compiled == {"huge.text"}
    done, took = tjc(["validate", JOB, "--policy", str(tmp_path), "--no-default-policies"],
                     memory="512Mi")
    line = _one_line(done)
    assert "huge.cue" in line and "memory limit" in line and "[TJC-POLICY-LIMIT]" in line, line
    assert took < HANG


def test_a_compiled_rule_past_its_iteration_budget_is_bounded_as_cue_is(
        tmp_path: Path) -> None:
    from compiler.policy.packs import Loader

    (tmp_path / "loops.cue").write_text(LOOPS)
    assert Loader().load(tmp_path / "loops.cue").plan.compiled == {"loops.five"}
    runtime = _runtime_with_containers(tmp_path, 30)  # 30^5 iterations
    done, took = tjc(["validate", str(runtime), "--policy", str(tmp_path),
                      "--no-default-policies"], timeout="2")
    line = _one_line(done)
    assert "loops.cue" in line and "time limit (2 s" in line, line
    assert took < 30, took
