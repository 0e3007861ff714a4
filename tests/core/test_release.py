"""The served Kubeflow Trainer releases as named gates (`compiler.core.release`), and the library
choosing one (`CompileOptions.trainer_version`): what differs is documented gate by gate, an
unserved release is refused with a reason, and a compile follows the release's gates."""

from __future__ import annotations

import re
from typing import Any

import pytest

from compiler import compile_trainjob
from compiler.core.context import CompileOptions
from compiler.core.release import (
    DEFAULT,
    GATE_DOCS,
    GATES,
    SERVED,
    UnservedRelease,
    release_of,
)

RUNTIME: dict[str, Any] = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime",
    "metadata": {"name": "gang"},
    "spec": {"mlPolicy": {"numNodes": 1, "torch": {}},
             "podGroupPolicy": {"coscheduling": {}},
             "template": {"spec": {"replicatedJobs": [{
                 "name": "node",
                 "template": {"metadata": {"labels": {
                     "trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                     "spec": {"template": {"spec": {"containers": [{
                         "name": "node", "image": "pytorch/pytorch:2",
                         "resources": {"requests": {"cpu": "2", "memory": "4Gi"}}}]}}}}}]}}}}
TRAINJOB: dict[str, Any] = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
    "metadata": {"name": "job", "namespace": "default"},
    "spec": {"runtimeRef": {"name": "gang"},
             "trainer": {"numNodes": 2, "resourcesPerNode": {"limits": {"nvidia.com/gpu": 1}}}}}


def test_every_served_release_has_gates_and_the_newest_is_the_default() -> None:
    assert SERVED == ("v2.1.0", "v2.2.0", "v2.2.1", "v2.3.0")
    assert DEFAULT.version == "v2.3.0" and release_of("v2.3.0") is DEFAULT
    assert CompileOptions().release is DEFAULT
    assert tuple(GATE_DOCS) == GATES
    for release in SERVED[:-1]:  # each older release differs in documented gates only
        changed = [g for g in GATES if getattr(release_of(release), g) != getattr(DEFAULT, g)]
        assert changed and all(GATE_DOCS[g][2].startswith(("pkg/", "manifests/"))
                               for g in changed)
    assert release_of("v2.2.0").gates() != release_of("v2.2.1").gates()  # K4 only


@pytest.mark.parametrize(("version", "why"), [
    ("v2.0.1", "tjc reproduces v2.1.0 and later only"),
    ("v2.0.0", "no CRDs, built-in runtimes or parity oracle"),
    ("v2.4.0", "is not served; use one of v2.1.0, v2.2.0, v2.2.1, v2.3.0"),
    ("2.3.0", "must look like vX.Y.Z")])
def test_an_unserved_release_is_refused_with_a_reason(version: str, why: str) -> None:
    with pytest.raises(UnservedRelease, match=re.escape(why)):
        release_of(version)
    with pytest.raises(ValueError, match=re.escape(why)):
        CompileOptions(trainer_version=version)


def _node_and_podgroup(version: str) -> tuple[Any, Any]:
    result = compile_trainjob(TRAINJOB, RUNTIME, options=CompileOptions(trainer_version=version))
    assert result.ok, result.diagnostics
    podgroup = next(o for o in result.objects if o["kind"] == "PodGroup")
    jobset = next(o for o in result.objects if o["kind"] == "JobSet")
    pod = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    return pod["containers"][0]["resources"], podgroup["spec"]["minResources"]


def test_the_library_compiles_as_the_release_given() -> None:
    """docs/releases.md C1: v2.3.0 merges resourcesPerNode over the runtime's, v2.2.1
    replaces them (the PodGroup counts the TrainJob's requests: none), v2.1.0 replaces them
    in the JobSet only (the PodGroup counts the runtime's)."""
    merged = {"limits": {"nvidia.com/gpu": "1"}, "requests": {"cpu": "2", "memory": "4Gi"}}
    assert _node_and_podgroup("v2.3.0") == (merged, {"cpu": "4", "memory": "8Gi"})
    assert _node_and_podgroup("v2.2.1") == ({"limits": {"nvidia.com/gpu": "1"}}, {})
    assert _node_and_podgroup("v2.1.0") == ({"limits": {"nvidia.com/gpu": "1"}},
                                            {"cpu": "4", "memory": "8Gi"})


def test_a_runtime_prepared_for_one_release_is_not_compiled_for_another() -> None:
    from compiler import prepare_runtime

    prepared = prepare_runtime(RUNTIME, release_of("v2.2.1"))
    with pytest.raises(ValueError, match=re.escape("prepared for Kubeflow Trainer v2.2.1, not "
                                                   "v2.3.0")):
        compile_trainjob(TRAINJOB, prepared)
    assert compile_trainjob(TRAINJOB, prepared,
                            options=CompileOptions(trainer_version="v2.2.1")).ok


def test_v2_1_admits_pod_template_overrides_as_its_webhook_does() -> None:
    """v2.1.0's JobSet `Validate`: an override's target job must exist, it gives no env to the
    node container, and on an update the overrides change only while suspended (C9); its
    torch `Validate` takes numProcPerNode `auto`, `cpu`, `gpu` or an int (V9)."""
    from compiler import admit

    v21 = release_of("v2.1.0")

    def rules(job: dict[str, Any], old: dict[str, Any] | None = None) -> set[str]:
        return {d.rule for d in admit(job, RUNTIME, old, release=v21)
                if d.severity.name == "ERROR"}

    def with_spec(**fields: Any) -> dict[str, Any]:
        return {**TRAINJOB, "spec": {**TRAINJOB["spec"], **fields}}

    good = [{"targetJobs": [{"name": "node"}], "spec": {"nodeSelector": {"pool": "a"}}}]
    assert rules(with_spec(podTemplateOverrides=good)) == set()
    assert rules(with_spec(podTemplateOverrides=[{"targetJobs": [{"name": "nope"}]}])) == {
        "TJC-WEBHOOK-OVERRIDE-JOB"}
    env = [{"targetJobs": [{"name": "node"}], "spec": {"containers": [
        {"name": "node", "env": [{"name": "A", "value": "1"}]}]}}]
    assert rules(with_spec(podTemplateOverrides=env)) == {"TJC-WEBHOOK-OVERRIDE-ENV"}
    assert rules(with_spec(podTemplateOverrides=good), old=TRAINJOB) == {
        "TJC-WEBHOOK-OVERRIDE-IMMUTABLE"}
    assert rules(with_spec(podTemplateOverrides=good, suspend=True), old=TRAINJOB) == set()
    trainer = {**TRAINJOB["spec"]["trainer"], "numProcPerNode": "many"}
    assert rules(with_spec(trainer=trainer)) == {"TJC-WEBHOOK-TORCH-NUM-PROC-PER-NODE"}
    assert rules(with_spec(trainer={**trainer, "numProcPerNode": "gpu"})) == set()


def gate_rows() -> list[str]:
    """README's gate table, row by row, from the release table and GATE_DOCS."""
    def shown(value: object) -> str:
        if isinstance(value, bool):
            return "yes" if value else "no"
        if isinstance(value, frozenset):
            return ", ".join(sorted(value)) or "-"
        return str(value)

    rows = []
    for gate in GATES:
        ids, what, upstream = GATE_DOCS[gate]
        values = " | ".join(shown(getattr(release_of(r), gate)) for r in SERVED)
        rows.append(f"| `{gate}` | {values} | {what} | {ids} | `{upstream}` |")
    return rows


def test_readme_has_the_gate_table() -> None:
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    head = "| gate | " + " | ".join(SERVED) + " | what | docs/releases.md | upstream file |"
    assert "\n".join([head, "|---|" + "---|" * (len(SERVED) + 3), *gate_rows()]) in readme
