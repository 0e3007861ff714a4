"""`tjc validate` compiles a valid TrainJob only to check its JobSet, so it compiles the
JobSet's policy view (`CompileOptions.policy_view`: no env, ports, volume mounts or envFrom
written into containers). Here: the view is the full JobSet without those fields, with the same
diagnostics; validating with views reports exactly what validating with full compiles
reports; and the checks that decide when a view is enough (`compiler.policy.viewed`) refuse
what would read or locate a field the view leaves out. On a generated corpus (with runtime
patches, initializers, MPI and Flux runtimes), every golden case and hand-made read tries."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench.corpus import corpus
from compiler.common.jsondata import Obj
from compiler.core.compile import POLICY_VIEW, compile_defaulted, policy_view
from compiler.core.context import VIEW_SKIPS
from compiler.io.builtin import builtin_runtimes
from compiler.io.loader import Document, Source, iter_source
from compiler.policy.check import PolicyChecker
from compiler.policy.engine import PolicySet
from compiler.policy.packs import Loader, pack_files
from compiler.policy.prune import trie
from compiler.policy.viewed import holds_in_view, reads_in_view
from compiler.validate.documents import Validator, prepare
from tests import goldenfile


def _checker() -> PolicyChecker:
    return PolicyChecker(PolicySet(Loader({}).load_all(pack_files([], builtin=True))))


def _sources() -> list[list[Source]]:
    """The corpus (one list of sources) and each golden case's inputs."""
    own, jobs = corpus(300, seed=9)
    out = [[Source(f"doc{i}.json", json.dumps(doc, indent=2))
             for i, doc in enumerate([*own, *jobs])]]
    for path in goldenfile.cases():
        case = goldenfile.parse(path)
        out.append([Source(name, text) for name, text in case.inputs.items()])
    return out


def _trainjobs(sources: list[Source]) -> list[Document]:
    return [d for s in sources for d in iter_source(s)
            if isinstance(d, Document) and d.data.get("kind") == "TrainJob"]


def _strip(jobset: Obj) -> Obj:
    for job in jobset["spec"]["replicatedJobs"]:
        pod = job["template"]["spec"]["template"]["spec"]
        for key in ("containers", "initContainers"):
            for container in pod.get(key) or []:
                for skipped in VIEW_SKIPS:
                    container.pop(skipped, None)
    return jobset


def test_the_view_is_the_jobset_without_the_skipped_fields() -> None:
    checker, smaller, compared, errors = _checker(), 0, 0, 0
    for sources in _sources():
        validator, _ = prepare(sources, list(builtin_runtimes()), policies=checker)
        for doc in _trainjobs(sources):
            found, data = validator.check_trainjob(doc)
            entry = validator._entry(found, data)
            if entry is None:
                continue
            full = compile_defaulted(data, entry.get())
            view = compile_defaulted(data, entry.get(), options=POLICY_VIEW)
            assert [d.text() for d in view.diagnostics] == [d.text() for d in full.diagnostics]
            jobsets = [o for o in view.objects if o["kind"] == "JobSet"]
            assert policy_view(data, entry.get()) == (jobsets[0] if jobsets else None)
            errors += not view.ok
            # the view builds no MPI hostfile ConfigMap (nothing checks it); the rest is the same
            kept = [o for o in full.objects if not (o["kind"] == "ConfigMap" and str(
                o["metadata"]["name"]).endswith("-mpi-hostfile"))]
            assert [o["kind"] for o in view.objects] == [o["kind"] for o in kept]
            for a, b in zip(kept, view.objects, strict=True):
                if a["kind"] == "JobSet":
                    compared += 1
                    smaller += a != b
                    assert _strip(json.loads(json.dumps(a))) == _strip(b)
    assert compared > 250 and smaller > 200 and errors > 0, (compared, smaller, errors)


def test_validating_with_views_reports_as_with_full_compiles(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for sources in _sources():
        runs = []
        for views in (True, False):
            checker = _checker()
            monkeypatch.setattr(checker, "views_suffice", lambda views=views: views)
            validator, _ = prepare(sources, list(builtin_runtimes()), policies=checker)
            runs.append([d.text() for doc in _trainjobs(sources)
                         for d in validator.trainjob_with_policies(doc)])
        assert runs[0] == runs[1]
    assert any(runs)


FLUX_RUNTIME: Obj = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime",
    "metadata": {"name": "flux"},
    "spec": {"mlPolicy": {"numNodes": 2, "flux": {}}, "template": {"spec": {"replicatedJobs": [{
        "name": "node", "template": {
            "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
            "spec": {"template": {"spec": {"containers": [{
                "name": "node", "image": "x:1",
                "env": [{"name": "FLUX_VIEW_IMAGE", "value": "view:1"}]}]}}}}}]}}}}


def test_a_flux_runtime_compiles_in_full() -> None:
    """Flux reads the env in its container: a view of a Flux job is the full JobSet."""
    job: Obj = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                "metadata": {"name": "f", "namespace": "default"},
                "spec": {"runtimeRef": {"name": "flux"},
                         "trainer": {"numNodes": 2, "env": [{"name": "A", "value": "1"}]}}}
    sources = [Source("rt.json", json.dumps(FLUX_RUNTIME)), Source("job.json", json.dumps(job))]
    validator: Validator = prepare(sources, [], policies=_checker())[0]
    found, data = validator.check_trainjob(_trainjobs(sources)[0])
    entry = validator._entry(found, data)
    assert entry is not None
    full = compile_defaulted(data, entry.get())
    assert "flux" in full.plugins and full.ok
    assert compile_defaulted(data, entry.get(), options=POLICY_VIEW).objects == full.objects


def _reads(*paths: list[str | None]) -> Any:
    return trie([list(p) for p in paths], [])


def test_which_reads_a_view_can_answer() -> None:
    for pack in Loader({}).load_all(pack_files([], builtin=True)):
        assert reads_in_view(pack.reads), pack.name
    assert reads_in_view(_reads(["containers", None, "container", "image"],
                                ["object", "spec", "mlPolicy"], ["summary"],
                                ["pods", None, "spec", "hostPID"]))
    refused_reads: list[list[str | None]] = [
        ["containers", None, "container", "env"], ["containers", None, "container"],
        ["containers", None], ["containers"], ["containers", None, "pod"],
        ["containers", None, "pod", "containers"], ["pods", None, "spec"],
        ["pods", None, "spec", "initContainers"], ["object"], ["object", "spec"],
        ["object", "spec", "replicatedJobs", None, "name"], ["containers", "0"], [None], []]
    for refused in refused_reads:
        assert not reads_in_view(_reads(refused)), refused
    assert not reads_in_view(trie([], [["containers", None, "container"]]))


def test_which_violation_fields_a_view_holds() -> None:
    pod = ("spec", "replicatedJobs", 0, "template", "spec", "template", "spec")
    held = [(*pod, "containers", 1, "image"), (*pod, "containers", 0, "resources", "requests",
                                              "nvidia.com/gpu"),
            (*pod, "initContainers", 0, "securityContext"), (*pod, "volumes", 2, "hostPath"),
            (*pod, "hostNetwork"), ("spec", "replicatedJobs", 0, "template", "spec",
                                    "parallelism"),
            ("spec", "replicatedJobs", 1, "replicas"), ("spec", "replicatedJobs", 0, "template",
                                                        "spec", "template", "metadata"),
            ("spec", "suspend"), ("metadata", "labels")]
    lost = [(*pod, "containers", 1, "env"), (*pod, "containers", 1, "volumeMounts", 0),
            (*pod, "containers", 1), (*pod, "containers"), (*pod, "initContainers", 0, "envFrom"),
            pod, pod[:-1], pod[:-2], pod[:-3], pod[:3], ("spec", "replicatedJobs"), ("spec",), ()]
    assert all(holds_in_view(p) for p in held)
    assert not any(holds_in_view(p) for p in lost)
