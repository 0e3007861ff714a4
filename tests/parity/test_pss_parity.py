"""The pss pack against the Pod Security Standards' own implementation (the parity oracle's
`pss` op: k8s.io/pod-security-admission's EvaluatePod on each pod as the API server stores it).

Generated pod templates (`tests/parity/pss_pods.py`, seeded), the pod templates of the built-in
runtimes and those of the golden cases' JobSets go through both: the same checks must fail at
each level. With the pss pack alone every rule is its check; with every built-in pack, the
checks the security pack reports for the pss pack (`pss_pods.SECURITY`) may be reported by
either, and the security pack's floor may be stricter than a level (a Windows pod adding a
capability at restricted), never laxer. The recorded verdicts of the fast tier
(`tests/data/pss/upstream.json`) must be upstream's; TJC_UPDATE_PSS=1 writes them again.

Examples: TJC_PSS_EXAMPLES (default 10,000), drawn with a fixed seed, or a random one with
TJC_PARITY_RANDOM (`make parity`), which the report prints.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
import yaml

from compiler.common.jsondata import Obj
from compiler.io.builtin import builtin_runtimes
from compiler.policy.engine import Violation
from tests import goldenfile
from tests.parity import pss_pods as pp
from tests.parity.oracle import Oracle, build

pytestmark = pytest.mark.parity  # runs the Go oracle

EXAMPLES = int(os.environ.get("TJC_PSS_EXAMPLES", "10000"))
RECORDED_SEED = 30  # the recorded verdicts' templates
SEED = random.randrange(2**32) if os.environ.get("TJC_PARITY_RANDOM") else 28
BATCH = 500
RECORDED = Path(__file__).resolve().parents[1] / "data" / "pss" / "upstream.json"


@pytest.fixture(scope="module")
def oracle() -> Iterator[Oracle]:
    running = Oracle(build())
    yield running
    running.close()


def upstream(oracle: Oracle, templates: Sequence[Obj]) -> list[dict[str, set[str]]]:
    """Per template, the failed check ids at each level, asked in batches."""
    out: list[dict[str, set[str]]] = []
    for start in range(0, len(templates), BATCH):
        pods = [{"metadata": t.get("metadata") or {}, "spec": t["spec"]}
                for t in templates[start:start + BATCH]]
        answer = oracle.ask({"op": "pss", "pods": pods, "levels": list(pp.LEVELS)})
        for pod, result in zip(pods, answer["pods"], strict=True):
            assert "error" not in result, f"{result['error']}: {json.dumps(pod)}"
            out.append({level: set(result["levels"][level]["denied"]) for level in pp.LEVELS})
    return out


def _differences(templates: Sequence[Obj], theirs: Sequence[dict[str, set[str]]],
                 security: bool) -> list[str]:
    found = []
    for level in pp.LEVELS:
        mine = pp.tjc_verdicts(templates, level, security)
        for template, tjc, up in zip(templates, mine, theirs, strict=True):
            extra, missing = tjc - up[level], up[level] - tjc
            if security:  # the security pack's floor may report more, never less
                extra = {c for c in extra if c not in pp.SECURITY}
            if extra or missing:
                found.append(f"{level}: tjc only {sorted(extra)}, upstream only "
                             f"{sorted(missing)}\n  template: {json.dumps(template)}")
    return found


def _report(found: Sequence[str], compared: int) -> str:
    return f"{compared} pod templates compared, {len(found)} differ; first: " + \
        "\n".join(found[:3])


@pytest.mark.parametrize("security", [False, True], ids=["pss", "all-packs"])
def test_generated_pod_templates_match_upstream(oracle: Oracle, security: bool) -> None:
    templates = pp.pod_templates(SEED, EXAMPLES)
    theirs = upstream(oracle, templates)
    found = _differences(templates, theirs, security)
    failing = {c for verdict in theirs for level in pp.LEVELS for c in verdict[level]}
    clean = sum(not v["restricted"] for v in theirs)
    print(f"\npss parity (seed {SEED}): {len(templates)} pod templates x {len(pp.LEVELS)} "
          f"levels compared with k8s.io/pod-security-admission, {clean} pass restricted, "
          f"{len(found)} differ")
    assert failing == set(pp.CHECKS), f"checks that never failed: {set(pp.CHECKS) - failing}"
    assert 0 < clean < len(templates)
    assert not found, _report(found, len(templates))


def test_warn_level_warns_of_what_enforce_allows(oracle: Oracle) -> None:
    """enforce baseline, warn restricted: an error exactly where baseline refuses, a warning
    only where restricted refuses, and where it does an error or a warning (a Windows pod
    may pass restricted and not baseline: restricted's capability check leaves it out)."""
    templates = pp.pod_templates(SEED + 1, min(EXAMPLES, 2000))
    theirs = upstream(oracle, templates)
    policies = pp.policy_set("baseline", security=False, warn="restricted")
    found = []
    for template, up in zip(templates, theirs, strict=True):
        violations = policies.check("JobSet", pp.jobset(template), pp.TRAINJOB)
        denied = any(v.severity == "deny" for v in violations)
        warned = any(v.severity == "warn" for v in violations)
        if denied != bool(up["baseline"]) or (warned and not up["restricted"]) \
                or (up["restricted"] and not violations):
            found.append(f"denied {denied}, warned {warned}, upstream {up}: "
                         f"{json.dumps(template)}")
    assert not found, _report(found, len(templates))


def _by_pod(violations: Sequence[Violation], jobs_at: int) -> dict[int, list[Violation]]:
    """Violations by replicated job index (`jobs_at`: where the index sits in a path)."""
    out: dict[int, list[Violation]] = {}
    for v in violations:
        out.setdefault(int(v.path[jobs_at]), []).append(v)
    return out


def _objects_match(oracle: Oracle, kind: str, obj: Obj, jobs: list[Obj], jobs_at: int,
                   trainjob: Obj | None) -> list[str]:
    """A runtime's or JobSet's pod templates: upstream's verdicts and the pss rules that
    fire on the object itself, pod by pod."""
    templates = [job["template"]["spec"]["template"] for job in jobs]
    theirs = upstream(oracle, templates)
    found = []
    for level in pp.LEVELS:
        policies = pp.policy_set(level, security=False)
        by_pod = _by_pod(policies.check(kind, obj, trainjob), jobs_at)
        for i, up in enumerate(theirs):
            mine = pp.fired(by_pod.get(i, []), level, security=False)
            if mine != up[level]:
                found.append(f"{kind} {obj['metadata']['name']} job {i} at {level}: tjc "
                             f"{sorted(mine)}, upstream {sorted(up[level])}")
    return found


def test_builtin_runtimes_match_upstream(oracle: Oracle) -> None:
    found = []
    for doc in builtin_runtimes():
        rt = doc.data
        found += _objects_match(oracle, rt["kind"], rt,
                                rt["spec"]["template"]["spec"]["replicatedJobs"], 4, None)
    assert not found, "\n".join(found)


def _golden_jobsets() -> Iterator[tuple[str, Obj]]:
    for path in goldenfile.cases():
        text = goldenfile.parse(path).wants.get("want/objects.yaml", "")
        for obj in yaml.safe_load_all(text):
            if isinstance(obj, dict) and obj.get("kind") == "JobSet":
                yield path.stem, obj


def test_golden_jobsets_match_upstream(oracle: Oracle) -> None:
    found, count = [], 0
    for _, js in _golden_jobsets():
        count += 1
        meta = js["metadata"]
        trainjob = {"metadata": {"name": meta["name"], "namespace": meta.get("namespace", "")}}
        found += _objects_match(oracle, "JobSet", js, js["spec"]["replicatedJobs"], 2,
                                trainjob)
    assert count > 100 and not found, "\n".join(found)


def test_recorded_verdicts_are_upstream(oracle: Oracle) -> None:
    """The fast tier's recorded verdicts (`tests/policy/test_pss.py`) are upstream's."""
    templates = pp.pod_templates(RECORDED_SEED, 200)
    theirs = upstream(oracle, templates)
    pods = [json.dumps({"template": t, **{level: sorted(v[level]) for level in pp.LEVELS}},
                       sort_keys=True, separators=(",", ":"))
            for t, v in zip(templates, theirs, strict=True)]
    about = (f"pod templates (tests/parity/pss_pods.py, seed {RECORDED_SEED}) and the checks "
             "k8s.io/pod-security-admission v0.36.2 fails for each at each level (version "
             "latest); TJC_UPDATE_PSS=1 pytest tests/parity/test_pss_parity.py writes them")
    text = '{"about": ' + json.dumps(about) + ',\n "pods": [\n' + ",\n".join(pods) + "\n]}\n"
    if os.environ.get("TJC_UPDATE_PSS") == "1":
        RECORDED.parent.mkdir(parents=True, exist_ok=True)
        RECORDED.write_text(text, encoding="utf-8")
    assert RECORDED.read_text(encoding="utf-8") == text, \
        "the recorded verdicts differ from upstream's (TJC_UPDATE_PSS=1 writes them)"
