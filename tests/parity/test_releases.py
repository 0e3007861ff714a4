"""The oracle of every other served Kubeflow Trainer release (`parity/oracle/releases/`), asked
about the same kind of pairs as the v2.3.0 oracle (tests/parity/test_parity.py) plus what only
that release's API has, and about the TrainJobs of examples/ on its own built-in runtimes.

For now these tests hold the oracles to being the release they are built from and to answering
every pair in the shape the comparison reads; tjc itself compiles for v2.3.0 only, so comparing
it with another release's oracle is the target of the `--trainer-version` gates (issue 27):
`test_tjc_matches_each_release` is a strict xfail until they exist.

Examples: TJC_PARITY_EXAMPLES / 5 per release (derandomized in CI; `make parity` runs more).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from compiler.kube.releases import DEFAULT, RELEASES, release_data
from tests.parity import releases as rel
from tests.parity.compare import RUNS, difference
from tests.parity.oracle import Oracle, build

pytestmark = pytest.mark.parity  # runs the Go oracles

OLDER = [release for release in RELEASES if release != DEFAULT]
EXAMPLES = max(20, int(os.environ.get("TJC_PARITY_EXAMPLES", "500")) // 5)
RANDOM = bool(os.environ.get("TJC_PARITY_RANDOM"))
budget = settings(max_examples=EXAMPLES, derandomize=not RANDOM, deadline=None,
                  database=None, suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def oracles() -> Iterator[dict[str, Oracle]]:
    """One oracle process per release, started on first use."""
    running: dict[str, Oracle] = {}

    class Lazy(dict[str, Oracle]):
        def __missing__(self, release: str) -> Oracle:
            running[release] = Oracle(build(release))
            return running[release]

    yield Lazy()
    for oracle in running.values():
        oracle.close()


@pytest.mark.parametrize("release", OLDER)
def test_oracle_is_built_from_the_release(oracles: dict[str, Oracle], release: str) -> None:
    """The binary links the release's own Trainer module and the JobSet it requires."""
    modules = oracles[release].ask({"op": "modules"})
    assert modules["github.com/kubeflow/trainer/v2"] == release
    assert modules["sigs.k8s.io/jobset"] == release_data(release).jobset


@pytest.mark.parametrize("release", OLDER)
def test_release_oracle_answers_generated_pairs(oracles: dict[str, Oracle],
                                                release: str) -> None:
    oracle = oracles[release]
    seen: Counter[str] = Counter()

    @budget
    @given(rel.release_case(release))
    def check(case: tuple[list[dict[str, Any]], dict[str, Any]]) -> None:
        runtimes, job = case
        answer = oracle.ask({"op": "case", "runtimes": runtimes, "trainjob": job, "runs": RUNS})
        seen[rel.outcome(answer)] += 1

    check()
    print(f"\nparity {release}: {sum(seen.values())} pairs, {dict(seen)}")
    assert sum(seen.values()) >= EXAMPLES and seen["built"] and seen["refused"], seen


@pytest.mark.parametrize("release", OLDER)
def test_release_oracle_builds_the_examples(oracles: dict[str, Oracle], release: str) -> None:
    """Each example on the release's own built-in runtimes is admitted and built; the torch
    example runs the image of the release's torch-distributed runtime."""
    torch = rel.builtin_runtimes(release)["torch-distributed"]
    image = torch["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"][
        "template"]["spec"]["containers"][0]["image"]
    cases = rel.input_cases(release)
    assert cases
    for name, runtimes, job in cases:
        answer = oracles[release].ask({"op": "case", "runtimes": runtimes, "trainjob": job})
        assert rel.outcome(answer) == "built", (name, json.dumps(answer)[:500])
        if name == "torch-mnist":
            jobset = next(o for o in answer["outputs"][0] if o["kind"] == "JobSet")
            pod = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
            assert pod["containers"][0]["image"] == image


@pytest.mark.xfail(strict=True, reason="tjc compiles for Kubeflow Trainer v2.3.0 only: the "
                   "target of the --trainer-version gates (issue 27), which remove this mark")
@pytest.mark.parametrize("release", OLDER)
def test_tjc_matches_each_release(oracles: dict[str, Oracle], release: str) -> None:
    found = [f"{name}: {diff}" for name, runtimes, job in rel.input_cases(release)
             if (diff := difference(oracles[release], runtimes, job)) is not None]
    assert not found, "\n".join(found)
