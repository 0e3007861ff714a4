"""Fuzzing the edges: the loader, `tjc validate`, `tjc render` and `tjc explain` on malformed
and mutated inputs, each run in a worker process under a memory cap and a time limit.

Derandomized with a fixed budget in CI (`TJC_FUZZ_EXAMPLES` per family, default below) so the
suite stays quick; `make fuzz` runs the long campaign (`tests.fuzz.campaign`). Every outcome
must keep the promises of `tests.fuzz.harness.problems`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz import strategies as fs
from tests.fuzz.harness import Case, Worker, problems

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


@settings(max_examples=1, deadline=None, database=None)
@given(st.just(None))
def test_the_harness_sees_a_broken_promise(worker: Worker, _: None) -> None:
    """The checks can fail: a worker that runs out of its time limit is reported."""
    slow = Worker(seconds=0.001)
    try:
        case = Case("render", ["in.yaml"], {"in.yaml": "a: [" + "1," * 200_000 + "1]\n"})
        assert problems(case, slow.run(case))
    finally:
        slow.close()
    assert problems(Case("render", ["x"]), type(worker.run(Case("render", ["x"])))(
        code=3, stderr="Traceback (most recent call last):\n"))
