"""Fuzzing the edges: the loader, `tjc validate`, `tjc render` and `tjc explain` on malformed
and mutated inputs, each run in a worker process under a memory cap and a time limit.

Derandomized with a fixed budget in CI (`TJC_FUZZ_EXAMPLES` per family, default below) so the
suite stays quick; `make fuzz` runs the long campaign (`tests.fuzz.campaign`). Every outcome
must keep the promises of `tests.fuzz.harness.problems`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings

from tests.fuzz import strategies as fs
from tests.fuzz.harness import Case, Outcome, Worker, problems

EXAMPLES = int(os.environ.get("TJC_FUZZ_EXAMPLES", "60"))
BUDGET = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def worker() -> Iterator[Worker]:
    """One worker process for the module, replaced by the harness if a case kills it."""
    running = Worker()
    yield running
    running.close()


def _check(worker: Worker, case: Case) -> None:
    found = problems(case, worker.run(case))
    assert not found, f"tjc {case.verb} {' '.join(case.args)}: {found}\nfiles: {case.files!r}"


@BUDGET
@given(case=fs.cases_for(fs.single(fs.token_soup())))
def test_token_soup(worker: Worker, case: Case) -> None:
    _check(worker, case)


@BUDGET
@given(case=fs.cases_for(fs.single(fs.deep_text())))
def test_deep_nesting(worker: Worker, case: Case) -> None:
    _check(worker, case)


@BUDGET
@given(case=fs.cases_for(fs.single(fs.objects_text())))
def test_malformed_objects(worker: Worker, case: Case) -> None:
    _check(worker, case)


@BUDGET
@given(case=fs.cases_for(fs.mutated_golden()))
def test_mutated_golden_inputs(worker: Worker, case: Case) -> None:
    _check(worker, case)


def test_the_harness_sees_broken_promises() -> None:
    """The checks can fail: a run past its time limit, a traceback, an exit code of 3, an
    unlocated line and render output that does not parse are all reported."""
    slow = Worker(seconds=0.001)
    try:
        case = Case("render", ["in.yaml"], {"in.yaml": "a: [" + "1," * 200_000 + "1]\n"})
        assert "took more than" in problems(case, slow.run(case))[0]
    finally:
        slow.close()
    render = Case("render", ["in.yaml"])
    assert problems(render, Outcome(code=3)) == ["exit code 3"]
    assert problems(render, Outcome(code=1, stderr="Traceback (most recent call last):\n"))[0] \
        == "a traceback was printed"
    assert "not a located" in problems(render, Outcome(code=1, stderr="error: x [R]\n"))[0]
    assert "does not parse" in problems(render, Outcome(code=0, stdout="a: [\n"))[0]
    assert problems(render, Outcome(code=1, stderr="in.yaml:1:2: error: x: y [TJC-X]\n")) == []


@BUDGET
@given(case=fs.differential_cases())
def test_one_verdict_from_every_tool(worker: Worker, case: Case) -> None:
    """validate, render, krm and the library refuse the same documents."""
    _check(worker, case)


def test_a_string_yaml_1_1_reads_as_a_boolean_reaches_krm_quoted(worker: Worker) -> None:
    """Found by the campaign: `"apiVersion": "Y"` is a string for validate and render (JSON),
    and must reach krm as an orchestrator writes it (quoted; yaml.v3 quotes YAML 1.1's
    booleans), not as PyYAML does (plain `Y`, a boolean for sigs.k8s.io/yaml)."""
    doc = ('{"apiVersion": "Y", "kind": "TrainJob", "metadata": {"name": "a", "namespace": "d"},'
           ' "spec": {"runtimeRef": {"name": "torch-distributed"}}}\n')
    case = Case("differential", ["trainjob.yaml"], {"trainjob.yaml": doc})
    outcome = worker.run(case)
    assert json.loads(outcome.stdout) == {"validate": 0, "render": 0, "krm": 0}
    _check(worker, case)
