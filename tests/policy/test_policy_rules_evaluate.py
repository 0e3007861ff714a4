"""Every built-in rule evaluates without error on every document the suite has or generates.

A rule that cannot be evaluated (TJC-POLICY-ERROR) is a bug of the pack, so it fails the
suite here rather than reaching a user: over the golden cases' inputs, the examples, the packs'
own test cases, the built-in runtimes, and generated TrainJob/runtime pairs with their JobSets.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from compiler import compile_trainjob
from compiler.common.jsondata import Obj
from compiler.io.builtin import builtin_runtimes
from compiler.io.loader import Source, read_sources
from compiler.policy.check import PolicyChecker
from compiler.policy.engine import PolicySet
from compiler.policy.packs import Loader, pack_files
from compiler.validate.documents import validate_stream
from tests import goldenfile
from tests.strategies import framework_pair, job_and_runtime

ROOT = Path(__file__).resolve().parents[2]
_POLICIES: list[PolicySet] = []


def _builtin() -> PolicySet:
    if not _POLICIES:
        # CUE itself (the compiled plans of the built-in rules are checked against it in
        # tests/policy/test_compiled_plans.py): a pack's bug must show here
        _POLICIES.append(PolicySet(Loader().load_all(pack_files([], builtin=True)),
                                   plans=False))
    return _POLICIES[0]


def _errors(policies: PolicySet) -> list[str]:
    return [d.text() for d in policies.errors]


def test_rules_evaluate_on_every_document_of_the_suite() -> None:
    policies = _builtin()
    checker = PolicyChecker(policies)
    corpora: list[list[Source]] = [
        read_sources([str(ROOT / "examples")]),
        read_sources([str(ROOT / "policies" / "testdata")]),
        [doc.source for doc in builtin_runtimes()],
    ]
    for path in goldenfile.cases():
        case = goldenfile.parse(path)
        corpora.append([Source(name, text) for name, text in case.inputs.items()])
    before = policies.evaluations
    for sources in corpora:
        list(validate_stream(sources, builtin_runtimes(), policies=checker))
    assert policies.evaluations > before + 100, "the corpus reached the rules"
    assert _errors(policies) == []


@given(st.one_of(job_and_runtime(), framework_pair()))
def test_rules_evaluate_on_generated_jobs(pair: tuple[Obj, Obj]) -> None:
    policies = _builtin()
    trainjob, runtime = pair
    result = compile_trainjob(trainjob, runtime, validate=False)
    policies.check(str(runtime["kind"]), runtime)
    policies.check("TrainJob", trainjob)
    for obj in result.objects:
        if obj.get("kind") == "JobSet":
            policies.check("JobSet", obj, trainjob)
    assert _errors(policies) == []
