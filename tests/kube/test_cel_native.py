"""`compiler.kube.celnative` against the CEL runtime: a check that says "holds" must be right.

The reference is the CEL evaluation itself (cel-cpp, RE2 patterns: `^` and `$` are the ends
of the text): whenever `holds` accepts a `self`, the rule's CEL program evaluates to `true` on
it. Names that the checks need not decide (uppercase, a trailing line break, a leading digit,
64 characters, non-ASCII letters, values the runtime cannot convert) are listed, and
hypothesis adds names from the label alphabet and beyond. Ordinary valid names must be
accepted, or the check would save nothing.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from compiler.kube import cel, celnative

RULES = tuple(celnative.CHECKS)
BOTH = (celnative.NAME_FORMAT, celnative.NAME_LENGTH)


def cel_true(rule: str, self: Any) -> bool:
    """Whether the CEL runtime evaluates `rule` to `true` on `self`."""
    program = cel._program(rule, False)
    assert not program.problem
    outcome, failure = cel._evaluate(program, {"self": self})
    return not failure and outcome is True


def assert_sound(self: Any) -> None:
    for rule in RULES:
        if celnative.holds((rule,), self):
            assert cel_true(rule, self), (rule, self)
    if celnative.holds(BOTH, self):
        assert all(cel_true(rule, self) for rule in BOTH), self


def _rules(node: Any) -> set[str]:
    if node is None:
        return set()
    found = {rule.rule for rule in node.rules}
    for child in (*node.props.values(), node.items, node.extra):
        found |= _rules(child)
    return found


def test_every_check_is_a_rule_of_a_crd() -> None:
    plan = cel._plan("TrainJob")
    assert isinstance(plan, cel._Node)
    assert {rule.rule for rule in plan.rules} == set(BOTH)
    assert plan.group is not None and plan.group.native
    assert celnative.MANAGED_BY in _rules(plan)
    for kind in ("TrainingRuntime", "ClusterTrainingRuntime"):
        assert {celnative.ONE_POLICY, celnative.STARTUP} <= _rules(cel._plan(kind))
    assert set(RULES) == {*BOTH, celnative.MANAGED_BY, celnative.ONE_POLICY, celnative.STARTUP}


@pytest.mark.parametrize("name", [
    "a", "job-1", "recsys-run-000403", "a" * 63, "x0", "a-b-c", "a--b",
])
def test_valid_names_are_accepted(name: str) -> None:
    self = {"metadata": {"name": name}}
    assert celnative.holds(BOTH, self)
    assert_sound(self)


@pytest.mark.parametrize("name", [
    "", "A", "Job-1", "1job", "-job", "job-", "job_1", "job.1", "job\n", "\njob", "job\n1",
    "a" * 64, "jöb", "\u0130", "k\u212a", "\ud800", "j\udcffb",
])
def test_names_the_rules_refuse_are_left_to_cel(name: str) -> None:
    self = {"metadata": {"name": name}}
    assert not all(cel_true(rule, self) for rule in BOTH)  # the runtime refuses each
    assert not celnative.holds(BOTH, self)
    assert_sound(self)


@pytest.mark.parametrize("self", [
    None, "job-1", ["job-1"], {}, {"metadata": None}, {"metadata": {}},
    {"metadata": {"name": 7}}, {"metadata": {"name": None}}, {"metadata": {"name": ["a"]}},
    {"metadata": {"generateName": "job-"}},
    {"metadata": {"name": "job-1", "generateName": 2**70}},
    {"metadata": {"name": "job-1", "generateName": -(2**63) - 1}},
    {"metadata": {"name": "job-1", "generateName": "\ud800"}},
    {"metadata": {"name": "job-1", "generateName": ("tuple",)}},
    {"metadata": {"name": "job-1", "generateName": object()}},
    {"metadata": {"name": "job-1"}, "spec": {1: "a key that is no string"}},
    # cel-expr-python ends a string at a NUL (it sees "job"); the API server refuses the name
    {"metadata": {"name": "job\x00"}},
])
def test_values_the_checks_do_not_vouch_for_are_left_to_cel(self: Any) -> None:
    assert not celnative.holds(BOTH, self)
    assert_sound(self)


def test_rules_without_a_check_are_left_to_cel() -> None:
    self = {"metadata": {"name": "job-1"}}
    assert not celnative.holds((celnative.NAME_FORMAT, "self.metadata.name != ''"), self)
    assert not celnative.holds((celnative.NAME_FORMAT + " ",), self)


@given(st.one_of(
    st.text(alphabet="abcxyz0189-", max_size=70),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=70),
    st.text(max_size=8),
))
@example("a" * 62 + "-")
@example("z" * 63)
def test_any_name_accepted_is_accepted_by_cel(name: str) -> None:
    assert_sound({"metadata": {"name": name}})
    assert_sound({"metadata": {"name": name, "generateName": name}})


SOURCES = ("torch", "mpi", "jax", "xgboost", "flux", "plain", "other")
SOME = st.one_of(st.none(), st.integers(-3, 3), st.text(max_size=3), st.booleans(),
                 st.just({}), st.just([]), st.just({"numProcPerNode": 1}))


@given(st.one_of(st.sampled_from(["trainer.kubeflow.org/trainjob-controller",
                                  "kueue.x-k8s.io/multikueue", "kueue.x-k8s.io/multikueue ",
                                  "", "other", "trainer.kubeflow.org/trainjob-controller\x00"]),
                 st.text(max_size=5), SOME))
def test_managed_by_accepted_is_accepted_by_cel(self: Any) -> None:
    assert_sound(self)


@given(st.one_of(st.dictionaries(st.sampled_from(SOURCES), SOME, max_size=4), SOME))
def test_one_policy_accepted_is_accepted_by_cel(self: Any) -> None:
    assert_sound(self)


JOBS = st.lists(st.one_of(
    st.fixed_dictionaries({"name": st.just("node")},
                          optional={"dependsOn": SOME, "replicas": st.integers(0, 2)}),
    SOME), max_size=3)
POLICY = st.one_of(st.fixed_dictionaries({}, optional={
    "startupPolicyOrder": st.one_of(st.sampled_from(["InOrder", "AnyOrder", "inorder", ""]),
                                    SOME)}), SOME)


@given(st.one_of(st.fixed_dictionaries({}, optional={"startupPolicy": POLICY,
                                                     "replicatedJobs": st.one_of(JOBS, SOME),
                                                     "network": SOME}), SOME))
def test_startup_accepted_is_accepted_by_cel(self: Any) -> None:
    assert_sound(self)


@pytest.mark.parametrize("rule,self", [
    (celnative.MANAGED_BY, "trainer.kubeflow.org/trainjob-controller"),
    (celnative.MANAGED_BY, "kueue.x-k8s.io/multikueue"),
    (celnative.ONE_POLICY, {}),
    (celnative.ONE_POLICY, {"torch": {"numProcPerNode": "auto"}}),
    (celnative.ONE_POLICY, {"numNodes": 2, "mpi": {"sshAuthMountPath": "/x"}}),
    (celnative.STARTUP, {"replicatedJobs": [{"name": "node"}]}),
    (celnative.STARTUP, {"startupPolicy": {"startupPolicyOrder": "InOrder"},
                         "replicatedJobs": [{"name": "launcher"}, {"name": "node"}]}),
    (celnative.STARTUP, {"startupPolicy": {"startupPolicyOrder": "AnyOrder"},
                         "replicatedJobs": [{"name": "node", "dependsOn": []}]}),
])
def test_usual_runtime_and_trainjob_values_are_accepted(rule: str, self: Any) -> None:
    assert celnative.holds((rule,), self) and cel_true(rule, self)


@pytest.mark.parametrize("rule,self", [
    (celnative.MANAGED_BY, "example.com/mine"),
    (celnative.ONE_POLICY, {"torch": {}, "mpi": {}}),
    (celnative.ONE_POLICY, {"torch": None, "jax": None}),
    (celnative.STARTUP, {"startupPolicy": {"startupPolicyOrder": "InOrder"},
                         "replicatedJobs": [{"name": "a"}, {"name": "b", "dependsOn": []}]}),
])
def test_values_the_rules_refuse_are_left_to_cel(rule: str, self: Any) -> None:
    assert not cel_true(rule, self)
    assert not celnative.holds((rule,), self)
