"""Tests of the rules of one location evaluated together (`compiler.kube.cel._Group`).

Where a location has several rules that read `self` alone, they are first evaluated as one
conjunction; only when that is not `true` is each rule evaluated on its own. The API server
evaluates every rule on its own, in declaration order (apiextensions-apiserver
`pkg/apiserver/schema/cel/validation.go`, `validateExpressions`): a false rule reports its
`message` (or its `messageExpression`, or `failed rule: <rule>`), a rule whose evaluation
fails reports `<error> evaluating rule: <message or rule>`, and the other rules still run.
These tests pin that the grouping changes none of it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from compiler.common import diskcache
from compiler.common.diagnostics import Severity
from compiler.kube import cel
from tests.kube.test_validate_cel import with_plan

ERROR = cel.ERROR_ID
GENERIC = cel.GENERIC_ID


def spec_rules(*rules: dict[str, Any]) -> dict[str, Any]:
    """A made-up TrainJob schema whose `spec` object carries `rules`."""
    return {"type": "object", "properties": {"spec": {
        "type": "object", "x-kubernetes-validations": list(rules)}}}


def reported(spec: dict[str, Any], old: dict[str, Any] | None = None
             ) -> list[tuple[str, Severity, tuple[str | int, ...], str]]:
    diagnostics = cel.validate("TrainJob", {"spec": spec},
                               None if old is None else {"spec": old})
    return [(d.rule, d.severity, d.path, d.message) for d in diagnostics]


@pytest.fixture
def evaluations(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The CEL evaluations made (no memo between tests)."""
    seen: list[str] = []
    evaluate = cel._evaluate

    def counting(program: Any, data: dict[str, Any]) -> tuple[Any, str]:
        seen.append("eval")
        return evaluate(program, data)

    monkeypatch.setattr(cel, "_MEMO", {})
    monkeypatch.setattr(cel, "_evaluate", counting)
    yield seen


TWO = spec_rules({"rule": "self.a > 0", "message": "a must be positive"},
                 {"rule": "self.b < 10", "message": "b must stay below 10"})


def test_rules_that_all_hold_report_nothing_and_cost_one_evaluation(
        evaluations: list[str]) -> None:
    with with_plan(TWO):
        assert reported({"a": 1, "b": 2}) == []
    assert len(evaluations) == 1


@pytest.mark.parametrize(("spec", "messages"), [
    ({"a": 0, "b": 2}, ["a must be positive"]),
    ({"a": 1, "b": 20}, ["b must stay below 10"]),
    ({"a": 0, "b": 20}, ["a must be positive", "b must stay below 10"]),
])
def test_each_false_rule_reports_its_message_in_declaration_order(
        spec: dict[str, Any], messages: list[str]) -> None:
    with with_plan(TWO):
        assert reported(spec) == [(GENERIC, Severity.ERROR, ("spec",), m) for m in messages]


def test_a_runtime_error_beside_a_holding_rule_is_reported_alone() -> None:
    with with_plan(TWO):
        assert reported({"b": 2}) == [(ERROR, Severity.ERROR, ("spec",),
                                       "no such key: a evaluating rule: a must be positive")]


def test_a_runtime_error_beside_a_false_rule_reports_both() -> None:
    # CEL's `&&` gives false for an error and a false operand: each rule still reports its own
    with with_plan(TWO):
        assert reported({"b": 20}) == [
            (ERROR, Severity.ERROR, ("spec",),
             "no such key: a evaluating rule: a must be positive"),
            (GENERIC, Severity.ERROR, ("spec",), "b must stay below 10")]


def test_message_expression_field_path_and_reason_of_a_grouped_rule() -> None:
    schema = spec_rules(
        {"rule": "self.replicas > 0", "message": "replicas must be positive"},
        {"rule": "self.replicas <= self.max", "fieldPath": ".replicas",
         "reason": "FieldValueForbidden", "message": "static",
         "messageExpression": "'replicas ' + string(self.replicas) + ' exceed ' + "
                              "string(self.max)"})
    with with_plan(schema):
        assert reported({"replicas": 2, "max": 3}) == []
        assert reported({"replicas": 5, "max": 3}) == [
            (GENERIC, Severity.ERROR, ("spec", "replicas"), "forbidden: replicas 5 exceed 3")]


def test_an_unsupported_rule_beside_a_supported_one() -> None:
    schema = spec_rules({"rule": "self.items.isSorted()", "message": "sorted"},
                        {"rule": "size(self.items) < 3", "message": "at most two"})
    with with_plan(schema):
        for spec, errors in (({"items": [2, 1]}, []),
                             ({"items": [3, 1, 2]}, ["at most two"])):
            found = reported(spec)
            assert [(r, s, p) for r, s, p, _ in found[:1]] == [
                (cel.UNSUPPORTED_ID, Severity.WARNING, ("spec",))]
            assert "isSorted" in found[0][3]
            assert [m for _, _, _, m in found[1:]] == errors


def test_a_rule_that_only_parses_inside_parentheses_is_still_unsupported() -> None:
    # alone the text is no expression (the API server reports a compile error); wrapped in
    # the conjunction's parentheses it would read as `(self.a) || (self.b)`
    schema = spec_rules({"rule": "self.a) || (self.b"}, {"rule": "self.c"})
    with with_plan(schema):
        found = reported({"a": False, "b": True, "c": True})
        assert [(r, s) for r, s, _, _ in found] == [(cel.UNSUPPORTED_ID, Severity.WARNING)]


def test_a_trailing_comment_stays_inside_its_rule(evaluations: list[str]) -> None:
    schema = spec_rules({"rule": "self.a > 0 // a counts from one"},
                        {"rule": "self.b < 10"})
    with with_plan(schema):
        assert reported({"a": 1, "b": 2}) == []
        assert len(evaluations) == 1  # the comment ends at its line, not the conjunction
        assert reported({"a": 1, "b": 20}) == [
            (GENERIC, Severity.ERROR, ("spec",), "failed rule: self.b < 10")]
        assert reported({"a": 0, "b": 2}) == [
            (GENERIC, Severity.ERROR, ("spec",),
             "failed rule: self.a > 0 // a counts from one")]


def test_a_rule_that_is_no_bool_is_reported_beside_a_holding_one() -> None:
    # the API server refuses such a rule when the CRD is created; offline it is one error
    schema = spec_rules({"rule": "self.n"}, {"rule": "self.n > 0"})
    with with_plan(schema):
        found = reported({"n": 3})
        assert [(r, s, p) for r, s, p, _ in found] == [(ERROR, Severity.ERROR, ("spec",))]
        assert "self.n" in found[0][3]


def test_transition_rules_keep_their_place_between_grouped_rules() -> None:
    schema = spec_rules({"rule": "self.a > 0", "message": "first"},
                        {"rule": "self == oldSelf", "message": "second"},
                        {"rule": "self.b < 10", "message": "third"})
    with with_plan(schema):
        assert [m for *_, m in reported({"a": 0, "b": 20}, {"a": 1, "b": 2})] == [
            "first", "second", "third"]
        assert [m for *_, m in reported({"a": 1, "b": 2}, {"a": 1, "b": 3})] == ["second"]
        assert reported({"a": 0, "b": 20}, {"a": 0, "b": 20}) == []  # ratcheted, unchanged


def test_optional_old_self_rules_are_evaluated_alone() -> None:
    schema = spec_rules(
        {"rule": "self.a > 0", "message": "a must be positive"},
        {"rule": "!oldSelf.hasValue() || self.a >= oldSelf.value().a",
         "optionalOldSelf": True, "message": "a may only grow"},
        {"rule": "self.b < 10", "message": "b must stay below 10"})
    with with_plan(schema):
        assert reported({"a": 1, "b": 2}) == []
        assert [m for *_, m in reported({"a": 1, "b": 20}, {"a": 2, "b": 2})] == [
            "a may only grow", "b must stay below 10"]


def test_root_name_rules_report_as_each_rule_alone() -> None:
    name_format = "metadata.name must match RFC 1035 DNS label format"
    name_length = "metadata.name must be no more than 63 characters"
    for name, messages in (("job-1", []), ("Job-1", [name_format]),
                           ("a" * 64, [name_length]), ("A" * 64, [name_format, name_length])):
        doc = {"metadata": {"name": name, "namespace": "default"}}
        assert [d.message for d in cel.validate("TrainJob", doc)] == messages


def test_a_group_program_is_kept_between_runs(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(diskcache.CACHE_ENV, str(tmp_path))

    def new_process() -> None:
        for name, value in (("_RUNTIME", []), ("_PROGRAMS", {}), ("_GROUP_PROGRAMS", {}),
                            ("_MEMO", {})):
            monkeypatch.setattr(cel, name, value)

    with with_plan(TWO):
        plan = cel._plan("TrainJob")
        group = plan.props["spec"].group if isinstance(plan, cel._Node) else None
        assert group is not None
        new_process()
        assert reported({"a": 1, "b": 2}) == []  # compiles, and keeps the programs
        new_process()
        env = cel._runtime()[1]
        monkeypatch.setattr(cel, "_RUNTIME", [cel._RUNTIME[0], _NoCompile(env),
                                              cel._RUNTIME[2]])
        assert reported({"a": 1, "b": 2}) == []  # a compile would make the rules unsupported
        assert cel._GROUP_PROGRAMS[group.source] is not None


class _NoCompile:
    """A CEL environment that only reads stored programs back."""

    def __init__(self, env: Any) -> None:
        self.deserialize = env.deserialize

    def compile(self, source: str) -> Any:
        raise AssertionError(f"compiled again: {source}")
