"""The pss pack (the Pod Security Standards): upstream's recorded verdicts, the level a
Namespace of the inputs chooses, one diagnostic per problem across packs (`defersTo`).

The differential against k8s.io/pod-security-admission itself, over 10,000 generated pod
templates, the built-in runtimes and the golden JobSets, is `tests/parity/test_pss_parity.py`
(the parity tier); it also checks that the verdicts recorded here are upstream's.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from compiler.cli.main import main
from compiler.common.jsondata import Obj
from compiler.policy.compiled.gen import Deferred
from compiler.policy.compiled.plan import PackPlan
from compiler.policy.engine import PolicySet, Violation
from compiler.policy.packs import BUILTIN_DIR, Loader, Pack, Rule
from compiler.policy.prune import trie
from compiler.policy.views import policy_input
from tests.parity import pss_pods as pp

RECORDED = Path(__file__).resolve().parents[1] / "data" / "pss" / "upstream.json"
SECURITY_PACK = BUILTIN_DIR / "security.cue"


def _recorded() -> list[dict[str, Any]]:
    pods: list[dict[str, Any]] = json.loads(RECORDED.read_text(encoding="utf-8"))["pods"]
    return pods


@pytest.mark.parametrize("level", pp.LEVELS)
def test_rules_give_upstreams_recorded_verdicts(level: str) -> None:
    """Each pss rule fires exactly where k8s.io/pod-security-admission fails its check, on
    recorded pods where every check of the level fails for some and passes for others."""
    pods = _recorded()
    mine = pp.tjc_verdicts([p["template"] for p in pods], level)
    differ = [(p[level], sorted(m), p["template"]) for p, m in zip(pods, mine, strict=True)
              if set(p[level]) != m]
    assert not differ, f"{len(differ)} of {len(pods)} differ, e.g. {differ[0]}"
    failing = {c for p in pods for c in p[level]}
    assert len(failing) == (12 if level == "baseline" else 15) and failing <= set(pp.CHECKS)
    assert any(not p[level] for p in pods)


NAMESPACE = """\
apiVersion: v1
kind: Namespace
metadata:
  name: {name}
  labels: {labels}
"""
TRAINJOB = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {{name: job, namespace: {namespace}}}
spec:
  runtimeRef: {{name: torch-distributed}}
  trainer: {{numNodes: 2, image: ghcr.io/acme/trainer:1.0,
            resourcesPerNode: {{limits: {{cpu: "1"}}}}}}
"""
ENFORCE = "pod-security.kubernetes.io/enforce"


def _validate(tmp_path: Path, capsys: pytest.CaptureFixture[str], *texts: str,
              args: tuple[str, ...] = ()) -> tuple[int, str]:
    for i, text in enumerate(texts):
        (tmp_path / f"{i}.yaml").write_text(text)
    code = main(["validate", "-q", *args, str(tmp_path)])
    return code, capsys.readouterr().out


def _rules(out: str) -> set[str]:
    return {line.rsplit("[", 1)[1].rstrip("]") for line in out.splitlines() if "[pss." in line}


RESTRICTED_ON_TORCH = {"pss.allow-privilege-escalation", "pss.capabilities-restricted",
                       "pss.run-as-non-root", "pss.seccomp-restricted"}


WARN = "pod-security.kubernetes.io/warn"


@pytest.mark.parametrize(("labels", "expected", "severity"), [
    ({ENFORCE: "restricted"}, RESTRICTED_ON_TORCH, "error"),
    ({ENFORCE: "no-such-level"}, RESTRICTED_ON_TORCH, "error"),  # upstream: restricted
    ({ENFORCE: "privileged", WARN: "restricted"}, RESTRICTED_ON_TORCH, "warning"),
    ({ENFORCE: "baseline", WARN: "restricted"}, RESTRICTED_ON_TORCH, "warning"),
    ({ENFORCE: "restricted", WARN: "baseline"}, RESTRICTED_ON_TORCH, "error"),
])
def test_namespace_labels_choose_the_level(labels: dict[str, str], expected: set[str],
                                           severity: str, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """The enforce level's checks are errors, those only a stricter warn level has warnings."""
    code, out = _validate(tmp_path, capsys, NAMESPACE.format(name="team-a",
                                                            labels=json.dumps(labels)),
                          TRAINJOB.format(namespace="team-a"))
    assert _rules(out) == expected, out
    assert code == (1 if severity == "error" else 0)
    assert all(f": {severity}: " in line and "namespace team-a" in line
               for line in out.splitlines() if "[pss." in line)


def test_settings_set_the_level_of_namespaces_without_labels(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    values = tmp_path / "values.yaml"
    values.write_text("pss: {enforce: restricted}\n")
    inputs = tmp_path / "in"
    inputs.mkdir()
    code, out = _validate(inputs, capsys, TRAINJOB.format(namespace="team-b"),
                          NAMESPACE.format(name="team-c", labels=json.dumps({ENFORCE: "baseline"})),
                          TRAINJOB.format(namespace="team-c"), args=("--policy-values",
                                                                      str(values)))
    assert code == 1 and _rules(out) == RESTRICTED_ON_TORCH, out
    assert "(the default: setting pss.enforce)" in out and "team-c" not in out


def test_the_default_level_is_upstreams_and_the_flag_sets_another(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Unlabelled namespaces are privileged (nothing refused) unless --pss-level, which wins
    over the values file, says otherwise."""
    values = tmp_path / "values.yaml"
    values.write_text("pss: {enforce: baseline, warn: baseline}\n")
    inputs = tmp_path / "in"
    inputs.mkdir()
    job = TRAINJOB.format(namespace="team-b")
    code, out = _validate(inputs, capsys, job)
    assert code == 0 and _rules(out) == set(), out
    code, out = _validate(inputs, capsys, job, args=("--pss-level", "restricted"))
    assert code == 1 and _rules(out) == RESTRICTED_ON_TORCH, out
    code, out = _validate(inputs, capsys, job, args=(
        "--policy-values", str(values), "--pss-level", "enforce=baseline,warn=restricted"))
    assert code == 0 and _rules(out) == RESTRICTED_ON_TORCH, out
    assert "(the default warning level: setting pss.warn)" in out


@pytest.mark.parametrize(("args", "message"), [
    (("--pss-level", "enforce=strict"), "expected [enforce=|warn=]LEVEL"),
    (("--pss-level", "audit=baseline"), "expected [enforce=|warn=]LEVEL"),
    (("--pss-level", "baseline", "--no-default-policies", "--policy", str(SECURITY_PACK)),
     "--pss-level: no loaded pack has pss settings"),
])
def test_a_pss_level_that_cannot_apply_is_a_usage_error(
        args: tuple[str, ...], message: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "job.yaml").write_text(TRAINJOB.format(namespace="team-b"))
    try:
        code = main(["validate", "-q", *args, str(tmp_path)])
    except SystemExit as exc:  # argparse's usage error
        code = int(str(exc.code))
    captured = capsys.readouterr()
    assert code == 2 and message in captured.out + captured.err, captured


def test_worker_processes_read_the_namespaces_of_other_files(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With -j, a worker validating a TrainJob learns the Namespace of another file."""
    texts = [NAMESPACE.format(name="team-a", labels=json.dumps({ENFORCE: "restricted"}))]
    texts += [TRAINJOB.format(namespace="team-a").replace("name: job", f"name: job{i}")
              for i in range(4)]
    code, one = _validate(tmp_path, capsys, *texts, args=("-j", "1"))
    code_two, two = _validate(tmp_path, capsys, *texts, args=("-j", "2"))
    assert code == code_two == 1 and one == two and _rules(two) == RESTRICTED_ON_TORCH


def test_render_and_passthrough_read_the_namespaces(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(NAMESPACE.format(name="team-a", labels=json.dumps({ENFORCE: "restricted"}))
                    + "---\n" + TRAINJOB.format(namespace="team-a"))
    for args in (["render", str(path)], ["render", "--passthrough", str(path)]):
        assert main(args) == 1
        assert _rules(capsys.readouterr().err) == RESTRICTED_ON_TORCH


def test_a_rule_runs_only_where_its_level_checks() -> None:
    """Every pss rule opens with a test of its level, a guard the plan works out once per
    input for all of them: at privileged (the default) no rule runs, at baseline those of
    baseline's 12 checks, at restricted its 15 (not the four a restricted check replaces)."""
    plan = Loader().load(BUILTIN_DIR / "pss.cue").plan
    assert set(plan.guards) == plan.compiled and len(plan.compiled) == 19
    assert len({guard for guards in plan.guards.values() for guard in guards}) == 3
    ran: list[str] = []

    def entry(rid: str) -> Callable[[Any], list[Any]]:
        def run(env: Any) -> list[Any]:
            ran.append(rid)
            return []
        return run
    plan.entries = {rid: entry(rid) for rid in plan.entries}
    js = pp.jobset({"spec": {"containers": [{"name": "node",
                                             "securityContext": {"privileged": True}}]}})
    ids = sorted(plan.compiled)
    for level, runs in (("privileged", 0), ("baseline", 12), ("restricted", 15)):
        ran.clear()
        inp = policy_input("JobSet", js, {"metadata": {"namespace": "team-a"}},
                           {"team-a": {ENFORCE: level}})
        assert plan.run(inp, ids) == {rid: [] for rid in ids}
        assert len(ran) == runs, (level, ran)


def test_a_rule_is_compiled_at_its_first_run() -> None:
    """A rule's written function is compiled when an input first opens it: at privileged
    (the default) a run compiles none of the 19, at baseline its 12, and they are kept."""
    plan = Loader().load(BUILTIN_DIR / "pss.cue").plan
    js = pp.jobset({"spec": {"containers": [{"name": "node"}]}})
    ids = sorted(plan.compiled)

    def built() -> set[str]:
        return {rid for rid, e in plan.entries.items() if not isinstance(e, Deferred)}
    assert built() == set()
    for level, count in (("privileged", 0), ("baseline", 12), ("privileged", 12)):
        inp = policy_input("JobSet", js, {"metadata": {"namespace": "team-a"}},
                           {"team-a": {ENFORCE: level}})
        assert plan.run(inp, ids) == {rid: [] for rid in ids}
        assert len(built()) == count, level
    kept = {rid: plan.entries[rid] for rid in built()}
    inp = policy_input("JobSet", js, {"metadata": {"namespace": "team-a"}},
                       {"team-a": {ENFORCE: "baseline"}})
    plan.run(inp, ids)
    assert all(plan.entries[rid] is fn for rid, fn in kept.items())


def test_policy_input_has_the_namespace_and_the_pod_metadata() -> None:
    js = pp.jobset({"metadata": {"annotations": {"a": "b"}},
                    "spec": {"containers": [{"name": "node"}]}})
    got = policy_input("JobSet", js, {"metadata": {"namespace": "team-a"}},
                       {"team-a": {ENFORCE: "restricted"}})
    assert got["namespace"] == {"name": "team-a", "labels": {ENFORCE: "restricted"}}
    assert got["pods"][0]["metadata"] == {"annotations": {"a": "b"}}
    cluster = policy_input("ClusterTrainingRuntime", {"metadata": {"name": "x"}}, None,
                           {"": {ENFORCE: "restricted"}})
    assert cluster["namespace"] == {"name": "", "labels": {}}


def test_one_problem_gives_one_diagnostic_across_packs() -> None:
    """With every built-in pack, no field is reported by two rules, at either level; a pss
    rule whose problem the security pack reports is left to it."""
    templates = pp.pod_templates(31, 300)
    fired: set[tuple[str, str]] = set()
    for level in pp.LEVELS:
        for warn in pp.LEVELS:
            policies: PolicySet = pp.policy_set(level, security=True, warn=warn)
            for template in templates:
                found = policies.check("JobSet", pp.jobset(template), pp.TRAINJOB)
                paths = [v.path for v in found]
                assert len(paths) == len(set(paths)), (level, warn, template)
                fired |= {(v.rule.id, v.severity) for v in found}
    assert {("security.privileged", "deny"), ("pss.run-as-non-root", "deny"),
            ("pss.capabilities-restricted", "warn"), ("security.run-as-non-root", "warn")} \
        <= fired
    assert not any(rule == "pss.privileged" for rule, _ in fired)


Found = dict[str, list[tuple[tuple[str | int, ...], str, str]]]


class _Fixed(PackPlan):
    """A plan that reports fixed violations (path, message, own severity) per rule."""

    def __init__(self, found: Found) -> None:
        self.found = found
        self.compiled = frozenset(found)

    def run(self, inp: Obj, rule_ids: Any) -> dict[str, Any]:
        return {rid: list(self.found[rid]) for rid in rule_ids}


def _pack(name: str, rules: list[Rule], found: Found) -> Pack:
    return Pack(name, f"{name}.cue", {r.id: r for r in rules}, trie([], []),
                Path(f"{name}.cue"), {}, _Fixed(found), None)  # type: ignore[arg-type]


def _found(packs: list[Pack], skip: tuple[str, ...] = ()) -> list[tuple[str, object, str]]:
    violations: list[Violation] = PolicySet(packs, skip=skip).check(
        "JobSet", pp.jobset({"spec": {}}))
    return [(v.rule.id, v.path[-1], v.severity) for v in violations]


def test_a_violation_gives_way_to_an_equal_or_stronger_one_at_its_path() -> None:
    kinds = ("JobSet",)
    first = Rule("a.one", "deny", "m", kinds, "a", defers_to=("b.two",))
    second = Rule("b.two", "deny", "m", kinds, "b", defers_to=("a.one", "c.absent"))
    packs = [_pack("a", [first], {"a.one": [(("spec", 1), "x", ""), (("spec", 3), "x", "warn")]}),
             _pack("b", [second], {"b.two": [(("spec", 1), "y", "warn"), (("spec", 2), "z", ""),
                                             (("spec", 3), "z", "deny")]})]
    # at 1 the warning gives way to the error; at 3 the warning (its own severity) too
    assert _found(packs) == [("a.one", 1, "deny"), ("b.two", 2, "deny"), ("b.two", 3, "deny")]
    # with the other rule left out, nothing gives way
    assert _found(packs, ("a",)) == [("b.two", 1, "warn"), ("b.two", 2, "deny"),
                                     ("b.two", 3, "deny")]
    # two rules that defer to each other at one path and severity both stay
    even = [_pack("a", [first], {"a.one": [(("spec", 1), "x", "")]}),
            _pack("b", [second], {"b.two": [(("spec", 1), "y", "")]})]
    assert _found(even) == [("a.one", 1, "deny"), ("b.two", 1, "deny")]
