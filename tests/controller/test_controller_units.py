"""The controller's parts without a cluster: work queue, status rules, snapshot checks,
and a reconcile against an in-memory API (the end-to-end tests use a real one)."""

from __future__ import annotations

import copy
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from compiler.common.jsondata import Obj
from compiler.controller import snapshot
from compiler.controller import status as st
from compiler.controller.kube import CONFIGMAP, JOBSET, SECRET, TRAINJOB, ApiError, Resource
from compiler.controller.reconcile import INVALID_REASON, Reconciler, _event_note
from compiler.controller.workqueue import WorkQueue
from compiler.core.context import SSHKeyPair
from compiler.core.plugins.base import controller_reference

RUNTIMES = Path(__file__).resolve().parents[2] / "runtimes"
NOW = 1_800_000_000.0


def test_queue_hands_a_key_to_one_worker_and_requeues_it_once() -> None:
    queue = WorkQueue()
    queue.add(("ns", "a"))
    queue.add(("ns", "a"))
    assert queue.get(0.1) == ("ns", "a")
    queue.add(("ns", "a"))  # while processing: comes back after done, once
    queue.add(("ns", "a"))
    assert queue.get(0.05) is None
    queue.done(("ns", "a"))
    assert queue.get(0.1) == ("ns", "a")
    queue.done(("ns", "a"))
    assert queue.get(0.05) is None


def test_queue_backoff_doubles_and_forget_resets() -> None:
    queue = WorkQueue(base_delay=0.01, max_delay=0.05)
    key = ("ns", "b")
    assert [queue.add_rate_limited(key) for _ in range(4)] == [0.01, 0.02, 0.04, 0.05]
    queue.forget(key)
    assert queue.add_rate_limited(key) == 0.01


def test_queue_delayed_add_and_shutdown() -> None:
    queue = WorkQueue()
    queue.add_after(("ns", "c"), 0.05)
    start = time.monotonic()
    assert queue.get(1.0) == ("ns", "c")
    assert time.monotonic() - start >= 0.04
    waiter: list[Any] = []
    thread = threading.Thread(target=lambda: waiter.append(queue.get()))
    thread.start()
    queue.shutdown()
    thread.join(1)
    assert waiter == [None]


def test_condition_transition_time_moves_only_when_status_flips() -> None:
    status: Obj = {}
    st.set_condition(status, {"type": "Suspended", "status": "True", "reason": "Suspended"}, NOW)
    first = status["conditions"][0]["lastTransitionTime"]
    st.set_condition(status, {"type": "Suspended", "status": "True", "reason": "Again"},
                     NOW + 60)
    assert status["conditions"][0]["lastTransitionTime"] == first
    assert status["conditions"][0]["reason"] == "Again"
    st.set_condition(status, {"type": "Suspended", "status": "False", "reason": "Resumed"},
                     NOW + 120)
    assert status["conditions"][0]["lastTransitionTime"] == st.now_text(NOW + 120)


def test_jobset_status_maps_to_trainjob_and_keeps_a_deadline() -> None:
    status = {"conditions": [{"type": "Failed", "status": "True", "reason": "DeadlineExceeded",
                              "message": "TrainJob exceeded its active deadline",
                              "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    jobset = {"status": {"conditions": [{"type": "Completed", "status": "True",
                                         "reason": "AllJobsCompleted", "message": "done",
                                         "lastTransitionTime": "2026-01-02T00:00:00Z"}],
                         "replicatedJobsStatus": [{"name": "node", "ready": 1, "succeeded": 2,
                                                   "failed": 0, "active": 0,
                                                   "suspended": 0}]}}
    out = st.from_jobset(status, jobset, NOW)
    assert st.condition(out, "Complete") == {
        "type": "Complete", "status": "True", "reason": "AllJobsCompleted",
        "message": "done", "lastTransitionTime": "2026-01-02T00:00:00Z"}
    assert st.condition(out, "Failed")["reason"] == "DeadlineExceeded"  # type: ignore[index]
    assert out["jobsStatus"] == [{"name": "node", "ready": 1, "succeeded": 2, "failed": 0,
                                  "active": 0, "suspended": 0}]


def test_deadline_restarts_at_resume() -> None:
    trainjob = {"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"}}
    assert st.deadline_start(trainjob, {}) == st.parse_time("2026-01-01T00:00:00Z")
    resumed = {"conditions": [{"type": "Suspended", "status": "False",
                               "lastTransitionTime": "2026-01-01T01:00:00Z"}]}
    assert st.deadline_start(trainjob, resumed) == st.parse_time("2026-01-01T01:00:00Z")


def test_event_note_is_truncated_like_upstream() -> None:
    assert _event_note(ValueError("short")) == \
        "TrainJob resources reconciliation failed: short"
    long = _event_note(ValueError("x" * 2000))
    assert long.endswith("x ...") and len(long) == len(
        "TrainJob resources reconciliation failed: ") + 950 + 4


class FakeKube:
    """An in-memory API: objects by (resource plural, namespace, name), with uids,
    resourceVersions and the preconditions of create and apply."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], Obj] = {}
        self.applied: list[Obj] = []
        self.status_patches: list[Obj] = []
        self.deleted: list[tuple[str, str, str | None]] = []
        self.version = 0

    def put(self, res: Resource, obj: Obj) -> None:
        meta = obj["metadata"]
        self.version += 1
        meta.setdefault("uid", f"uid-{self.version}")
        meta["resourceVersion"] = str(self.version)
        self.objects[(res.plural, meta.get("namespace", ""), meta["name"])] = obj

    def get(self, res: Resource, namespace: str | None, name: str) -> Obj | None:
        return self.objects.get((res.plural, namespace or "", name))

    def create(self, res: Resource, namespace: str | None, obj: Obj) -> Obj:
        if self.get(res, namespace, obj["metadata"]["name"]) is not None:
            raise ApiError(409, "AlreadyExists", "already exists")
        obj = copy.deepcopy(obj)
        self.applied.append(obj)
        self.put(res, obj)
        return obj

    def apply(self, obj: Obj) -> Obj:
        from compiler.controller.kube import resource_of

        meta = obj["metadata"]
        found = self.get(resource_of(obj), meta.get("namespace"), meta["name"])
        seen = (found or {}).get("metadata") or {}
        if found is not None and meta.get("uid") not in (None, seen.get("uid")):
            raise ApiError(422, "Invalid", "metadata.uid: field is immutable")
        if meta.get("resourceVersion") not in (None, seen.get("resourceVersion")):
            raise ApiError(409, "Conflict", "the object has been modified")
        obj = copy.deepcopy(obj)
        obj["metadata"].pop("resourceVersion", None)
        if seen.get("uid"):
            obj["metadata"]["uid"] = seen["uid"]
        self.applied.append(obj)
        self.put(resource_of(obj), obj)
        return obj

    def patch_status(self, res: Resource, namespace: str, name: str, patch: Obj) -> Obj:
        self.status_patches.append(patch)
        found = self.get(res, namespace, name)
        if found is not None:
            want = (patch.get("metadata") or {}).get("resourceVersion")
            if want not in (None, found["metadata"].get("resourceVersion")):
                raise ApiError(409, "Conflict", "the object has been modified")
            found["status"] = copy.deepcopy(patch["status"])
            self.put(res, found)
        return patch

    def delete(self, res: Resource, namespace: str, name: str, *,
               uid: str | None = None) -> bool:
        self.deleted.append((res.plural, name, uid))
        return self.objects.pop((res.plural, namespace, name), None) is not None


class FakeStore:
    """An informer's store over the fake API."""

    def __init__(self, kube: FakeKube, res: Resource) -> None:
        self.kube, self.res = kube, res

    def get(self, namespace: str, name: str) -> Obj | None:
        return self.kube.get(self.res, namespace, name)


def _reconciler(kube: FakeKube) -> Reconciler:
    return Reconciler(kube, FakeStore(kube, TRAINJOB), FakeStore(kube, JOBSET),  # type: ignore[arg-type]
                      lambda ns, name: SSHKeyPair(b"PRIVATE", b"PUBLIC"), lambda *_: None,
                      clock=lambda: NOW)


def _trainjob(**spec: Any) -> Obj:
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": "j", "namespace": "ns", "uid": "u-1",
                         "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"runtimeRef": {"name": "torch-distributed"}, **spec}}


def _with_runtime(kube: FakeKube) -> None:
    from compiler.controller.kube import CLUSTER_RUNTIME

    runtime = yaml.safe_load((RUNTIMES / "torch-distributed.yaml").read_text())
    kube.put(CLUSTER_RUNTIME, runtime)


def test_reconcile_snapshots_the_runtime_and_applies_the_jobset() -> None:
    kube = FakeKube()
    _with_runtime(kube)
    kube.put(TRAINJOB, _trainjob(trainer={"numNodes": 2}))
    _reconciler(kube).reconcile(("ns", "j"))
    kinds = [o["kind"] for o in kube.applied]
    assert kinds == ["ConfigMap", "JobSet"]
    snap = kube.get(CONFIGMAP, "ns", "j-runtime-snapshot")
    assert snap is not None and snap["metadata"]["ownerReferences"][0]["uid"] == "u-1"
    assert snapshot.read(kube, _trainjob()) is not None  # type: ignore[arg-type]


def test_reconcile_refuses_an_invalid_trainjob_with_a_condition() -> None:
    kube = FakeKube()
    _with_runtime(kube)
    kube.put(TRAINJOB, _trainjob(trainer={"numNodes": 2, "resourcesPerNode": {
        "limits": {"cpu": "lots"}}}))
    _reconciler(kube).reconcile(("ns", "j"))
    patched = kube.status_patches[-1]["status"]
    failed = st.condition(patched, "Failed")
    assert failed is not None and failed["reason"] == INVALID_REASON
    assert "TJC-SCHEMA-QUANTITY" in failed["message"]
    assert not [o for o in kube.applied if o["kind"] == "JobSet"]


def test_managed_by_another_controller_is_left_alone() -> None:
    kube = FakeKube()
    kube.put(TRAINJOB, _trainjob(managedBy="kueue.x-k8s.io/multikueue"))
    _reconciler(kube).reconcile(("ns", "j"))
    assert kube.applied == [] and kube.status_patches == []


@pytest.mark.parametrize(("change", "message"), [
    (lambda cm: cm["metadata"]["ownerReferences"][0].update(uid="other"),
     "owned by another object"),
    (lambda cm: cm["data"].pop("runtime"), 'missing "runtime" data key'),
    (lambda cm: cm["data"].update(runtime="a: [b"), "unable to unmarshal the snapshot"),
    (lambda cm: cm["data"].update(runtime=yaml.safe_dump({
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "other"}})), "refers to the wrong runtime"),
])
def test_snapshot_checks(change: Any, message: str) -> None:
    kube = FakeKube()
    _with_runtime(kube)
    trainjob = _trainjob()
    kube.put(CONFIGMAP, snapshot.configmap(trainjob, snapshot.body(kube.get(
        Resource("trainer.kubeflow.org", "v1alpha1", "clustertrainingruntimes",
                 "ClusterTrainingRuntime", False), None, "torch-distributed") or {})))
    change(kube.get(CONFIGMAP, "ns", "j-runtime-snapshot"))
    with pytest.raises(snapshot.SnapshotError, match=message):
        snapshot.read(kube, trainjob)  # type: ignore[arg-type]


def test_existing_ssh_secret_is_not_regenerated() -> None:
    kube = FakeKube()
    runtime = yaml.safe_load((RUNTIMES / "deepspeed-distributed.yaml").read_text())
    from compiler.controller.kube import CLUSTER_RUNTIME

    kube.put(CLUSTER_RUNTIME, runtime)
    trainjob = _trainjob(trainer={"numNodes": 2})
    trainjob["spec"]["runtimeRef"]["name"] = "deepspeed-distributed"
    kube.put(TRAINJOB, trainjob)
    kube.put(SECRET, {"apiVersion": "v1", "kind": "Secret", "immutable": True,
                      "metadata": {"name": "j-mpi-ssh-auth", "namespace": "ns", "uid": "s-1",
                                   "ownerReferences": [controller_reference("j", "u-1")]},
                      "data": {"kept": "yes"}})
    trainjob["status"] = {"conditions": [{"type": "MPISSHSecret", "status": "True",
                                          "reason": "Recorded",
                                          "message": "Secret j-mpi-ssh-auth has uid s-1",
                                          "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    _reconciler(kube).reconcile(("ns", "j"))
    assert "Secret" not in [o["kind"] for o in kube.applied]
    assert "JobSet" in [o["kind"] for o in kube.applied]
    assert kube.get(SECRET, "ns",
                    "j-mpi-ssh-auth")["data"] == {"kept": "yes"}  # type: ignore[index]


def test_informer_lists_again_after_410_gone() -> None:
    from compiler.controller.informer import Informer
    from compiler.controller.kube import Gone

    class WatchKube:
        def __init__(self) -> None:
            self.lists = 0

        def list(self, res: Resource, namespace: str | None) -> tuple[list[Obj], str]:
            self.lists += 1
            items = [{"metadata": {"namespace": "ns", "name": f"v{self.lists}"}}]
            return items, str(self.lists)

        def watch(self, res: Resource, namespace: str | None, version: str) -> Any:
            if version == "1":
                raise Gone(410, "Expired", "too old resource version")
            yield "ADDED", {"metadata": {"namespace": "ns", "name": "watched",
                                         "resourceVersion": "3"}}
            informer.stop()

    seen: list[tuple[str, str]] = []
    informer = Informer(WatchKube(), TRAINJOB, None,  # type: ignore[arg-type]
                        lambda kind, obj: seen.append((kind, obj["metadata"]["name"])))
    informer.run()
    assert seen == [("ADDED", "v1"), ("DELETED", "v1"), ("ADDED", "v2"), ("ADDED", "watched")]
    assert informer.get("ns", "watched") is not None and informer.get("ns", "v1") is None


def test_unsupported_runtime_kind_fails_the_trainjob() -> None:
    kube = FakeKube()
    trainjob = _trainjob()
    trainjob["spec"]["runtimeRef"].update(kind="Foo", apiGroup="example.com")
    kube.put(TRAINJOB, trainjob)
    _reconciler(kube).reconcile(("ns", "j"))
    failed = st.condition(kube.status_patches[-1]["status"], "Failed")
    assert failed is not None and (failed["reason"], failed["message"]) == (
        "TrainingRuntimeNotSupported", "unsupported runtime: Foo.example.com")
    assert kube.applied == []


def _policies() -> Any:
    from compiler.policy.engine import PolicySet
    from compiler.policy.packs import Loader, pack_files

    return PolicySet(Loader().load_all(pack_files([], builtin=True)))


def test_reconcile_refuses_what_the_webhook_refuses() -> None:
    kube = FakeKube()
    _with_runtime(kube)
    kube.put(TRAINJOB, _trainjob(trainer={"numNodes": 2, "env": [
        {"name": "PET_NNODES", "value": "4"}]}))
    _reconciler(kube).reconcile(("ns", "j"))
    failed = st.condition(kube.status_patches[-1]["status"], "Failed")
    assert failed is not None and failed["reason"] == INVALID_REASON
    assert "spec.trainer.env: " in failed["message"]
    assert "[TJC-WEBHOOK-TORCH-RESERVED-ENV]" in failed["message"]
    assert not [o for o in kube.applied if o["kind"] == "JobSet"]


def test_reconcile_refuses_a_policy_deny_and_builds_what_passes() -> None:
    kube = FakeKube()
    _with_runtime(kube)
    # (a GPU request unequal to its limit, which this test used, the API server refuses:
    # TJC-POD-RESOURCES, before any policy; a privileged container only policy denies)
    privileged = [{"manager": "example.com/m", "trainingRuntimeSpec": {"template": {"spec": {
        "replicatedJobs": [{"name": "node", "template": {"spec": {"template": {"spec": {
            "containers": [{"name": "node", "securityContext": {"privileged": True}}]}}}}}]}}}}]
    kube.put(TRAINJOB, _trainjob(trainer={"numNodes": 1}, runtimePatches=privileged))
    reconciler = _reconciler(kube)
    reconciler.policies = _policies()
    reconciler.reconcile(("ns", "j"))
    failed = st.condition(kube.status_patches[-1]["status"], "Failed")
    assert failed is not None and failed["reason"] == INVALID_REASON
    assert "[security.privileged]" in failed["message"]
    assert not [o for o in kube.applied if o["kind"] == "JobSet"]
    good = FakeKube()
    _with_runtime(good)
    good.put(TRAINJOB, _trainjob(trainer={"numNodes": 1}))
    passing = _reconciler(good)
    passing.policies = reconciler.policies
    passing.reconcile(("ns", "j"))
    assert [o["kind"] for o in good.applied] == ["ConfigMap", "JobSet"]


def test_the_controller_admits_a_trainjob_once_through_the_pipeline(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The controller runs a TrainJob through the one pipeline (`compiler.pipeline.session`),
    as validate and render do: it is admitted once, and the policy packs see the TrainJob as
    admitted and defaulted (before, the compile admitted it and the policy side could admit
    it again)."""
    from compiler.core import admission
    from compiler.pipeline import session

    real = admission.check_object
    walks: list[str] = []
    processed: list[str] = []

    def counted(kind: str, *args: Any, **kwargs: Any) -> Any:
        walks.append(kind)
        return real(kind, *args, **kwargs)

    real_process = session.Session.process

    def through(self: Any, doc: Any, *args: Any, **kwargs: Any) -> Any:
        processed.append(doc.data["metadata"]["name"])
        return real_process(self, doc, *args, **kwargs)

    monkeypatch.setattr(admission, "check_object", counted)
    monkeypatch.setattr(session.Session, "process", through)
    kube = FakeKube()
    _with_runtime(kube)
    kube.put(TRAINJOB, _trainjob(trainer={"numNodes": 1}))
    reconciler = _reconciler(kube)
    reconciler.policies = _policies()
    reconciler.reconcile(("ns", "j"))
    assert [o["kind"] for o in kube.applied] == ["ConfigMap", "JobSet"]
    assert walks.count("TrainJob") == 1 and processed == ["j"]
