"""What the controller remembers between reconciles (`compiler.controller.memo`): a change of
the JobSet's status alone neither reads the snapshot again nor compiles, while an edited or
replaced snapshot, a changed TrainJob and a foreign JobSet are still caught (against the
in-memory API of test_controller_units, whose every write gives a new resourceVersion)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from compiler.common.jsondata import Obj
from compiler.controller import ownership, snapshot
from compiler.controller import reconcile as rc
from compiler.controller import status as st
from compiler.controller.informer import Informer, jobset_fields
from compiler.controller.kube import CLUSTER_RUNTIME, CONFIGMAP, JOBSET, TRAINJOB, Resource
from compiler.controller.reconcile import Reconciler
from compiler.core.context import SSHKeyPair
from compiler.core.plugins.base import controller_reference
from tests.controller.test_controller_units import RUNTIMES, FakeKube, FakeStore, _trainjob

NOW = 1_800_000_000.0
KEY = ("ns", "j")


class CountingKube(FakeKube):
    """The in-memory API, counting GETs by resource."""

    def __init__(self) -> None:
        super().__init__()
        self.gets: list[str] = []

    def get(self, res: Resource, namespace: str | None, name: str) -> Obj | None:
        self.gets.append(res.plural)
        return super().get(res, namespace, name)


class Store(FakeStore):
    """An informer's store over the in-memory API (its reads are not requests)."""

    def get(self, namespace: str, name: str) -> Obj | None:
        return self.kube.objects.get((self.res.plural, namespace, name))


@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the TrainJobs compiled, in order."""
    from compiler.pipeline import session

    seen: list[str] = []
    from compiler.core.compile import compile_defaulted as real

    def counting(trainjob: Obj, runtime: Any, **kwargs: Any) -> Any:
        seen.append(trainjob["metadata"]["name"])
        return real(trainjob, runtime, **kwargs)

    monkeypatch.setattr(session, "compile_defaulted", counting)
    return seen


def _setup(**spec: Any) -> tuple[CountingKube, Reconciler, list[tuple[str, str]]]:
    kube = CountingKube()
    kube.put(CLUSTER_RUNTIME, yaml.safe_load((RUNTIMES / "torch-distributed.yaml").read_text()))
    kube.put(TRAINJOB, _trainjob(**{"trainer": {"numNodes": 2}, **spec}))
    events: list[tuple[str, str]] = []
    reconciler = Reconciler(kube, Store(kube, TRAINJOB), Store(kube, JOBSET),  # type: ignore[arg-type]
                            lambda ns, name: SSHKeyPair(b"PRIVATE", b"PUBLIC"),
                            lambda _, reason, note: events.append((reason, note)),
                            clock=lambda: NOW, configmaps=Store(kube, CONFIGMAP))
    return kube, reconciler, events


def _status(kube: FakeKube) -> Obj:
    return (kube.get(TRAINJOB, *KEY) or {}).get("status") or {}


def _jobset(kube: FakeKube) -> Obj:
    found = kube.get(JOBSET, *KEY)
    assert found is not None
    return found


def _snapshot(kube: FakeKube) -> Obj:
    found = kube.get(CONFIGMAP, "ns", "j-runtime-snapshot")
    assert found is not None
    return found


def test_a_jobset_status_change_reads_no_snapshot_and_compiles_nothing(
        compiles: list[str]) -> None:
    kube, reconciler, _ = _setup()
    reconciler.reconcile(KEY)
    assert compiles == ["j"] and len([o for o in kube.applied if o["kind"] == "JobSet"]) == 1
    jobset = _jobset(kube)
    jobset["status"] = {"conditions": [{"type": "Completed", "status": "True",
                                        "reason": "AllJobsCompleted", "message": "done",
                                        "lastTransitionTime": "2026-01-01T00:00:10Z"}],
                        "replicatedJobsStatus": [{"name": "node", "succeeded": 2}]}
    kube.put(JOBSET, jobset)
    kube.gets.clear()
    reconciler.reconcile(KEY)
    assert compiles == ["j"]  # not compiled again
    # no request but the status patch (which, in the in-memory API, reads the TrainJob)
    assert kube.gets == ["trainjobs"] and len(kube.status_patches) == 2
    assert st.is_true(_status(kube), "Complete")
    assert _status(kube)["jobsStatus"] == [{"name": "node", "succeeded": 2}]
    assert reconciler.memo.verdict(KEY, "") is None  # (a content key never matches "")
    reconciler.reconcile(KEY)  # finished: what was remembered is dropped
    assert reconciler.memo._verdicts == {} and reconciler.memo._snapshots == {}


@pytest.mark.parametrize("replace", [False, True], ids=["edited", "deleted-and-made-again"])
def test_an_altered_snapshot_is_still_refused(compiles: list[str], replace: bool) -> None:
    kube, reconciler, events = _setup(suspend=True)
    reconciler.reconcile(KEY)
    reconciler.reconcile(KEY)
    cm = copy.deepcopy(_snapshot(kube))
    runtime = yaml.safe_load(cm["data"]["runtime"])
    runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"][
        "spec"]["hostNetwork"] = True
    cm["data"]["runtime"] = yaml.safe_dump(runtime)
    if replace:
        del cm["metadata"]["uid"]
    kube.put(CONFIGMAP, cm)  # a new resourceVersion, as the API server gives every write
    job = kube.get(TRAINJOB, *KEY)
    assert job is not None
    job["spec"]["suspend"] = False
    reconciler.reconcile(KEY)
    refused = st.condition(_status(kube), ownership.CONDITION)
    assert refused is not None and refused["reason"] == snapshot.ALTERED
    assert [reason for reason, _ in events] == [snapshot.ALTERED]
    assert all(not js["spec"].get("replicatedJobs", [{}])[0]["template"]["spec"]["template"][
        "spec"].get("hostNetwork") for js in kube.applied if js["kind"] == "JobSet")


def test_a_changed_trainjob_is_compiled_again(compiles: list[str]) -> None:
    kube, reconciler, _ = _setup()
    reconciler.reconcile(KEY)
    reconciler.reconcile(KEY)
    assert compiles == ["j"]
    job = kube.get(TRAINJOB, *KEY)
    assert job is not None
    job["metadata"]["labels"] = {"team": "a"}
    reconciler.reconcile(KEY)
    assert compiles == ["j", "j"]


def test_a_foreign_jobset_is_refused_though_the_compile_is_remembered(
        compiles: list[str]) -> None:
    kube, reconciler, events = _setup()
    reconciler.reconcile(KEY)
    planted = copy.deepcopy(_jobset(kube))
    planted["metadata"] = {"name": "j", "namespace": "ns", "ownerReferences": [
        controller_reference("j", "someone-else")]}
    kube.objects.pop(("jobsets", "ns", "j"))
    kube.put(JOBSET, planted)
    reconciler.reconcile(KEY)
    refused = st.condition(_status(kube), ownership.CONDITION)
    assert refused is not None and refused["reason"] == "ObjectNotOwned"
    assert [reason for reason, _ in events] == ["ObjectNotOwned"]
    assert compiles == ["j"]


def test_a_deleted_trainjob_is_forgotten(compiles: list[str]) -> None:
    kube, reconciler, _ = _setup()
    reconciler.reconcile(KEY)
    assert reconciler.memo._verdicts and reconciler.memo._snapshots
    kube.objects.pop(("trainjobs", "ns", "j"))
    reconciler.reconcile(KEY)
    assert reconciler.memo._verdicts == {} and reconciler.memo._snapshots == {}


def test_the_jobset_store_keeps_identity_suspend_and_status_only() -> None:
    jobset: Obj = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                   "metadata": {"name": "j", "namespace": "ns", "uid": "u", "resourceVersion": "3",
                                "ownerReferences": [controller_reference("j", "u-1")],
                                "managedFields": [{"manager": "trainer"}]},
                   "spec": {"suspend": True, "replicatedJobs": [{"name": "node"}]},
                   "status": {"conditions": []}}

    class ListKube:
        def list(self, res: Resource, namespace: str | None) -> tuple[list[Obj], str]:
            return [jobset], "1"

        def watch(self, res: Resource, namespace: str | None, version: str) -> Any:
            informer.stop()
            return iter(())

    informer = Informer(ListKube(), JOBSET, None, lambda *_: None,  # type: ignore[arg-type]
                        keep=jobset_fields)
    informer.run()
    meta = {k: v for k, v in jobset["metadata"].items() if k != "managedFields"}
    assert informer.get("ns", "j") == {**jobset, "metadata": meta, "spec": {"suspend": True}}
    assert jobset_fields({"kind": "JobSet", "spec": {"replicatedJobs": []}}) == {"kind": "JobSet"}


def test_a_jobset_the_store_has_not_seen_yet_is_asked_for_not_built_again(
        compiles: list[str]) -> None:
    kube, reconciler, _ = _setup()
    reconciler.jobsets = FakeStore(kube, Resource("", "v1", "none",
                                                  "None"))  # type: ignore[assignment]
    reconciler.reconcile(KEY)
    kube.gets.clear()
    reconciler.reconcile(KEY)
    assert compiles == ["j"] and "jobsets" in kube.gets
    assert len([o for o in kube.applied if o["kind"] == "JobSet"]) == 1
    kube.objects.pop(("jobsets", "ns", "j"))  # deleted: built again
    reconciler.reconcile(KEY)
    assert compiles == ["j", "j"]
    assert len([o for o in kube.applied if o["kind"] == "JobSet"]) == 2


def test_a_runtime_is_prepared_once_for_every_trainjob_of_its_version(
        monkeypatch: pytest.MonkeyPatch, compiles: list[str]) -> None:
    prepared: list[str] = []
    real = rc.prepare_runtime  # type: ignore[attr-defined]

    def counting(runtime: Obj) -> Any:
        prepared.append(runtime["metadata"]["name"])
        return real(runtime)

    monkeypatch.setattr(rc, "prepare_runtime", counting)
    kube, reconciler, _ = _setup()
    other = _trainjob(trainer={"numNodes": 3})
    other["metadata"].update(name="k", uid="u-2")
    kube.put(TRAINJOB, other)
    reconciler.reconcile(KEY)
    reconciler.reconcile(("ns", "k"))
    assert compiles == ["j", "k"] and prepared == ["torch-distributed"]
    runtime = kube.get(CLUSTER_RUNTIME, None, "torch-distributed")
    assert runtime is not None
    runtime["spec"]["mlPolicy"]["numNodes"] = 2
    kube.put(CLUSTER_RUNTIME, runtime)  # a new version: prepared again for a new TrainJob
    third = _trainjob(trainer={"numNodes": 1})
    third["metadata"].update(name="m", uid="u-3")
    kube.put(TRAINJOB, third)
    reconciler.reconcile(("ns", "m"))
    assert prepared == ["torch-distributed", "torch-distributed"]
    assert [js["spec"]["replicatedJobs"][-1]["template"]["spec"]["parallelism"]
            for js in kube.applied if js["kind"] == "JobSet"] == [2, 3, 1]


class PatchKube(CountingKube):
    """The in-memory API, answering a status patch with the object, as the API server does."""

    def patch_status(self, res: Resource, namespace: str, name: str, patch: Obj) -> Obj:
        super().patch_status(res, namespace, name, patch)
        return copy.deepcopy(self.objects[(res.plural, namespace, name)])


class FrozenStore:
    """An informer that has not seen anything since it was made."""

    def __init__(self, kube: FakeKube) -> None:
        self.objects = copy.deepcopy(kube.objects)

    def get(self, namespace: str, name: str) -> Obj | None:
        return self.objects.get(("trainjobs", namespace, name))


def test_a_reconcile_starts_from_the_status_patch_the_informer_has_not_seen(
        compiles: list[str]) -> None:
    kube = PatchKube()
    kube.put(CLUSTER_RUNTIME, yaml.safe_load((RUNTIMES / "torch-distributed.yaml").read_text()))
    kube.put(TRAINJOB, _trainjob(trainer={"numNodes": 2}))
    reconciler = Reconciler(kube, FrozenStore(kube), Store(kube, JOBSET),  # type: ignore[arg-type]
                            lambda ns, name: SSHKeyPair(b"PRIVATE", b"PUBLIC"), lambda *_: None,
                            clock=lambda: NOW, configmaps=Store(kube, CONFIGMAP))
    reconciler.reconcile(KEY)
    jobset = _jobset(kube)
    jobset["status"] = {"conditions": [{"type": "Completed", "status": "True",
                                        "reason": "AllJobsCompleted", "message": "done"}]}
    kube.put(JOBSET, jobset)
    reconciler.reconcile(KEY)  # from the stale copy, the patch would be refused (409)
    assert st.is_true(_status(kube), "Complete") and compiles == ["j"]
    assert snapshot.recorded(kube.get(TRAINJOB, *KEY) or {}) is not None
    reconciler.trainjobs = FrozenStore(kube)  # type: ignore[assignment]
    assert reconciler.memo.latest(KEY, reconciler.trainjobs.get(*KEY) or {}) == \
        reconciler.trainjobs.get(*KEY)  # caught up: the informer's copy again
    assert reconciler.memo._patched == {}
