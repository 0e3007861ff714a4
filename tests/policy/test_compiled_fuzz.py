"""Differential: packs written at random from the constructs the policy compiler covers give the
same violations through their compiled plans as through CUE, on generated documents.

Each example is a pack of rules whose `violations` comprehensions are built from `for` clauses
over the pods and containers (and over fields of a container), `let` clauses, presence tests,
defaults, comparisons with literals of every kind, `&&`/`||`/`!`, `len`, string and list
builtins, helper struct unification and interpolated messages, over paths that exist in some
documents and not in others and hold values of unexpected types in some. What CUE does is
the reference, whatever it is: a violation, none, or the rule's error; the plans must agree, or
hand the input to CUE.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.common.jsondata import Obj
from compiler.policy.engine import PolicySet
from compiler.policy.packs import Loader
from tests.policy.test_compiled_properties import documents

HEADER = """package fuzz

import (
\t"list"
\t"strings"
)

input: _

settings: fuzz: {
\tnames: *["node", "x"] | [...string]
\tlimit: *2 | int
}

_kinds: ["TrainingRuntime", "ClusterTrainingRuntime", "JobSet"]
_level: *input.namespace.labels.level | "-"
_on: {"-": settings.fuzz.limit > 1}
_name: input.namespace.name

_split: {
\ttext:  string
\t_all:  strings.Split(text, "/")
\tfirst: _all[0]
\tlast:  _all[len(_all)-1]
\tmany:  len(_all) > 1
}
"""

# (fewer examples in the fast tier, `make test-fast`)
EXAMPLES = 15 if os.environ.get("TJC_TEST_FAST") else 60
C_PATHS = ["c.container.name", "c.container.image", "c.container.args",
           "c.container.securityContext.privileged", "c.container.securityContext.runAsUser",
           "c.container.workingDir", "c.container.env", "c.ancestor", "c.init", "c.job",
           "c.requests.cpu", "c.limits[\"nvidia.com/gpu\"]", "c.pod.hostNetwork"]
P_PATHS = ["p.job", "p.ancestor", "p.spec.hostNetwork", "p.spec.restartPolicy",
           "p.spec.priority", "p.spec.nodeSelector.pool", "p.spec.containers",
           "p.spec.volumes"]
LITERALS = ['"node"', '"x"', '""', '"trainer"', "true", "false", "null", "0", "1", "1000",
            '"Always"', '"1"']
# A rule's first clause may test only the file's fields and the settings (a guard, as a level
# or a setting turns a rule on): mostly true, sometimes false, rarely an error (the rule then
# goes to CUE for every input), or a test the plan cannot use as a guard.
GUARDS = ['settings.fuzz.limit > 1', '_level == "-"', '_on[_level]',
          'settings.fuzz.names[0] == "node"', 'list.Contains(settings.fuzz.names, "x")',
          'settings.fuzz.limit > 5', '_level != "-"', '_level == "-" && settings.fuzz.limit < 0']
ERRING_GUARD = '_on[_name]'  # no field for the namespace's name
STRING_OPS = ['strings.HasPrefix({x}, "n")', 'strings.Contains({x}, "/")',
              'strings.HasSuffix({x}, "e")', 'len({x}) > 3', 'strings.ToLower({x}) == {x}',
              'list.Contains(settings.fuzz.names, {x})', '(_split & {{text: {x}}}).many',
              'len(strings.Split({x}, ":")) == 2', '{x} + "!" == "node!"']


def _atom(draw: st.DrawFn, paths: list[str]) -> str:
    path = draw(st.sampled_from(paths))
    return _on(draw, path)


def _on(draw: st.DrawFn, path: str) -> str:
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return f"{path} {draw(st.sampled_from(['!=', '==']))} _|_"
    if kind == 1:
        op = draw(st.sampled_from(["==", "!=", "<", ">="]))
        return f"{path} {op} {draw(st.sampled_from(LITERALS))}"
    if kind == 2:
        default = draw(st.sampled_from(LITERALS))
        op = draw(st.sampled_from(["==", "!="]))
        return f"(*{path} | {default}) {op} {draw(st.sampled_from(LITERALS))}"
    if kind == 3:
        return draw(st.sampled_from(STRING_OPS)).format(x=path)
    if kind == 4:
        return f"len(*{path} | []) >= settings.fuzz.limit"
    return path  # a bool, or the rule's error


@st.composite
def conditions(draw: st.DrawFn, paths: list[str], depth: int = 0) -> str:
    if depth >= 2 or draw(st.booleans()):
        return _atom(draw, paths)
    left, right = draw(conditions(paths, depth + 1)), draw(conditions(paths, depth + 1))
    form = draw(st.integers(0, 2))
    if form == 0:
        return f"({left} && {right})"
    if form == 1:
        return f"({left} || {right})"
    return f"!({left})"


@st.composite
def rules(draw: st.DrawFn, index: int) -> str:
    over_pods = draw(st.booleans())
    var, source, paths = ("p", "input.pods", P_PATHS) if over_pods else \
        ("c", "input.containers", C_PATHS)
    clauses = [f"for {var} in {source}"]
    if draw(st.booleans()):
        bound, default = draw(st.sampled_from(paths)), draw(st.sampled_from(LITERALS))
        clauses.append(f"let v = *{bound} | {default}")
        paths = [*paths, "v"]
    for _ in range(draw(st.integers(1, 2))):
        if draw(st.integers(0, 3)):  # mostly guarded, as packs are written
            guarded = draw(st.sampled_from(paths))
            clauses += [f"if {guarded} != _|_", f"if {_on(draw, guarded)}"]
        else:
            clauses.append(f"if {draw(conditions(paths))}")
    if draw(st.integers(0, 2)) == 0:
        guard = ERRING_GUARD if draw(st.integers(0, 9)) == 9 else draw(st.sampled_from(GUARDS))
        clauses.insert(0, f"if {guard}")
    if not over_pods and draw(st.integers(0, 3)) == 0:
        clauses.append("for i, e in *c.container.env | []")
        paths = [*paths, "e.name", "e.value", "i"]
    shown = draw(st.sampled_from(paths))
    message = f'"{var} \\({var}.job): \\({shown})"' if draw(st.booleans()) else '"fixed"'
    body = f"path: list.Concat([{var}.path, [\"x\"]])\n\t\tmessage: {message}"
    return (f'rules: "fuzz.r{index}": {{\n\tseverity: "warn"\n\tappliesTo: _kinds\n'
            f'\tmessage: "rule {index}"\n\tviolations: [{" ".join(clauses)} {{\n\t\t{body}\n'
            f"\t}}]\n}}\n")


@st.composite
def packs(draw: st.DrawFn) -> str:
    return HEADER + "\n".join(draw(rules(i)) for i in range(draw(st.integers(1, 3))))


def _found(policies: PolicySet, kind: str, obj: Obj, trainjob: Obj | None) -> list[Any]:
    found = [(v.rule.id, v.path, v.message) for v in policies.check(kind, obj, trainjob)]
    return found + [d.text() for d in policies.errors]


def test_random_packs_give_what_cue_gives(tmp_path: Path) -> None:
    """Every pack compiles whole, the plans agree with CUE on every document, and the
    examples are not vacuous: rules fire, CUE reports rule errors, the plans decide most,
    some rules have guards."""
    seen: Counter[str] = Counter()

    # derandomized in every tier: the counts below are over all examples, which a random
    # draw of the fast tier's 15 now and then left short
    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck),
              derandomize=True)
    @given(source=packs(), docs=st.lists(documents(), min_size=4, max_size=4))
    def check(source: str, docs: list[tuple[str, Obj, Obj | None]]) -> None:
        folder = tmp_path / f"pack{seen['packs']}"
        seen["packs"] += 1
        folder.mkdir()
        (folder / "fuzz.cue").write_text(source)
        pack = Loader().load(folder / "fuzz.cue")
        assert pack.plan.compiled == set(pack.rules), (pack.plan.reasons, source)
        for kind, obj, trainjob in docs:
            want = _found(PolicySet([pack], plans=False), kind, obj, trainjob)
            assert _found(PolicySet([pack]), kind, obj, trainjob) == want, source
            seen["violations"] += sum(1 for f in want if isinstance(f, tuple))
            seen["errors"] += sum(1 for f in want if isinstance(f, str))
        seen["decided"] += pack.plan.decided
        seen["handed"] += pack.plan.handed
        seen["guarded"] += len(pack.plan.guards)

    check()
    assert seen["violations"] > EXAMPLES // 6 and seen["errors"] > EXAMPLES // 6, seen
    assert seen["decided"] * (2 if EXAMPLES < 60 else 1) > seen["handed"], seen
    assert seen["guarded"] > 0, seen
