"""The controller acts only on what it owns and trusts nothing a tenant can edit: the runtime
snapshot's recorded digest, objects under the TrainJob's names that it does not control, the
JobSet of an earlier TrainJob of the same name, counts too large for any cluster (against the
in-memory API of test_controller_units; tests/e2e/test_tenant.py attacks a real one)."""

from __future__ import annotations

import copy
import hashlib
import logging
import tracemalloc
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as hs

from compiler.common.jsondata import Obj
from compiler.controller import ownership, snapshot, sshsecret
from compiler.controller import status as st
from compiler.controller.informer import Informer
from compiler.controller.kube import (
    CLUSTER_RUNTIME,
    CONFIGMAP,
    COSCHEDULING_PODGROUP,
    JOBSET,
    SECRET,
    TRAINJOB,
    ApiError,
    Resource,
)
from compiler.controller.reconcile import INVALID_REASON, ReconcileError, Reconciler, reason_of
from compiler.core import limits
from compiler.core.context import SSHKeyPair
from compiler.core.plugins.base import controller_reference
from tests.controller.test_controller_units import RUNTIMES, FakeKube, FakeStore, _trainjob

NOW = 1_800_000_000.0


class Recorder:
    """The reconciler's events, kept."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def __call__(self, trainjob: Obj, reason: str, note: str) -> None:
        self.events.append((reason, note))


def _runtime(name: str) -> Obj:
    """A built-in runtime; `gang` is torch-distributed with a coscheduling PodGroup."""
    if name != "gang":
        return yaml.safe_load((RUNTIMES / f"{name}.yaml").read_text())  # type: ignore[no-any-return]
    runtime: Obj = yaml.safe_load((RUNTIMES / "torch-distributed.yaml").read_text())
    runtime["metadata"]["name"] = "gang"
    runtime["spec"]["podGroupPolicy"] = {"coscheduling": {"scheduleTimeoutSeconds": 45}}
    return runtime


def _setup(runtime: str = "torch-distributed", **spec: Any) -> tuple[FakeKube, Reconciler,
                                                                       Recorder]:
    kube = FakeKube()
    kube.put(CLUSTER_RUNTIME, _runtime(runtime))
    job = _trainjob(**{"trainer": {"numNodes": 2}, **spec})
    job["spec"]["runtimeRef"]["name"] = runtime
    kube.put(TRAINJOB, job)
    events = Recorder()
    reconciler = Reconciler(kube, FakeStore(kube, TRAINJOB), FakeStore(kube, JOBSET),  # type: ignore[arg-type]
                            lambda ns, name: SSHKeyPair(b"PRIVATE", b"PUBLIC"), events,
                            clock=lambda: NOW)
    return kube, reconciler, events


def _status(kube: FakeKube) -> Obj:
    return (kube.get(TRAINJOB, "ns", "j") or {}).get("status") or {}


def _jobsets(kube: FakeKube) -> list[Obj]:
    return [o for o in kube.applied if o["kind"] == "JobSet"]


def _resume(kube: FakeKube) -> None:
    job = kube.get(TRAINJOB, "ns", "j")
    assert job is not None
    job["spec"]["suspend"] = False


def _node_spec(jobset: Obj) -> Obj:
    spec: Obj = jobset["spec"]["replicatedJobs"][-1]["template"]["spec"]["template"]["spec"]
    return spec


def _hostile_runtime(cm: Obj) -> None:
    """What a tenant who may edit ConfigMaps writes into the snapshot."""
    runtime = yaml.safe_load(cm["data"]["runtime"])
    pod = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"][
        "template"]["spec"]
    pod.update(hostNetwork=True, serviceAccountName="cluster-admin",
               volumes=[{"name": "root", "hostPath": {"path": "/"}}])
    pod["containers"][0].update(image="evil:latest",
                                securityContext={"privileged": True})
    cm["data"]["runtime"] = yaml.safe_dump(runtime)


def test_the_snapshot_digest_is_recorded_in_the_status() -> None:
    kube, reconciler, _ = _setup()
    reconciler.reconcile(("ns", "j"))
    cm = kube.get(CONFIGMAP, "ns", "j-runtime-snapshot")
    assert cm is not None
    want = "sha256:" + hashlib.sha256(cm["data"]["runtime"].encode()).hexdigest()
    record = st.condition(_status(kube), snapshot.RECORD)
    assert record is not None and record["status"] == "True" and want in record["message"]
    assert snapshot.recorded(kube.get(TRAINJOB, "ns", "j") or {}) == want
    assert cm["metadata"]["labels"] == {ownership.OWNED_LABEL: "j"}


@pytest.mark.parametrize("alter", [
    _hostile_runtime,
    lambda cm: cm["data"].pop("runtime"),
    lambda cm: cm["data"].update(runtime=cm["data"]["runtime"] + "# harmless?\n"),
], ids=["hostile-pod", "key-removed", "comment-added"])
def test_an_altered_snapshot_builds_no_jobset(alter: Any) -> None:
    kube, reconciler, events = _setup(suspend=True)
    reconciler.reconcile(("ns", "j"))
    first = _jobsets(kube)
    assert len(first) == 1
    alter(kube.get(CONFIGMAP, "ns", "j-runtime-snapshot"))
    _resume(kube)
    result = reconciler.reconcile(("ns", "j"))
    reconciler.reconcile(("ns", "j"))
    assert _jobsets(kube) == first  # the suspended JobSet was not rebuilt
    refused = st.condition(_status(kube), ownership.CONDITION)
    assert refused is not None and (refused["status"], refused["reason"]) == \
        ("True", snapshot.ALTERED)
    assert "ConfigMap ns/j-runtime-snapshot was altered" in refused["message"]
    assert [r for r, _ in events.events] == [snapshot.ALTERED]  # once, not on every pass
    assert result.requeue_after == ownership.RETRY_SECONDS


def test_a_snapshot_restored_to_what_was_recorded_builds_again() -> None:
    kube, reconciler, _ = _setup(suspend=True)
    reconciler.reconcile(("ns", "j"))
    cm = kube.get(CONFIGMAP, "ns", "j-runtime-snapshot")
    assert cm is not None
    original = cm["data"]["runtime"]
    _hostile_runtime(cm)
    _resume(kube)
    reconciler.reconcile(("ns", "j"))
    cm["data"]["runtime"] = original
    reconciler.reconcile(("ns", "j"))
    assert _node_spec(_jobsets(kube)[-1])["containers"][0]["image"] != "evil:latest"
    assert _jobsets(kube)[-1]["spec"]["suspend"] is False
    cleared = st.condition(_status(kube), ownership.CONDITION)
    assert cleared is not None and cleared["status"] == "False"


def test_a_deleted_snapshot_is_taken_again_only_from_the_same_runtime() -> None:
    kube, reconciler, _ = _setup(suspend=True)
    reconciler.reconcile(("ns", "j"))
    kube.delete(CONFIGMAP, "ns", "j-runtime-snapshot")
    reconciler.reconcile(("ns", "j"))  # the runtime is unchanged: taken again
    assert kube.get(CONFIGMAP, "ns", "j-runtime-snapshot") is not None
    assert st.condition(_status(kube), ownership.CONDITION) is None
    kube.delete(CONFIGMAP, "ns", "j-runtime-snapshot")
    runtime = kube.get(CLUSTER_RUNTIME, None, "torch-distributed")
    assert runtime is not None
    runtime["spec"]["mlPolicy"]["numNodes"] = 7
    kube.put(CLUSTER_RUNTIME, runtime)  # an edit: a new resourceVersion
    _resume(kube)
    reconciler.reconcile(("ns", "j"))
    refused = st.condition(_status(kube), ownership.CONDITION)
    assert refused is not None and "was deleted after the controller took it" in \
        refused["message"]
    assert _jobsets(kube)[-1]["spec"]["suspend"] is True


def test_a_stale_trainjob_copy_still_builds_from_the_recorded_snapshot() -> None:
    """The informer may hand over the TrainJob before the status that records the digest:
    the API server's copy is asked, and the runtime edited since is not used."""
    kube, reconciler, _ = _setup(suspend=True)
    reconciler.reconcile(("ns", "j"))
    runtime = kube.get(CLUSTER_RUNTIME, None, "torch-distributed")
    assert runtime is not None
    runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"][
        "spec"]["containers"][0]["image"] = "edited-later:1"
    _resume(kube)
    stale = copy.deepcopy(kube.get(TRAINJOB, "ns", "j") or {})
    stale["status"] = {}

    class StaleStore:
        def get(self, namespace: str, name: str) -> Obj:
            return stale

    reconciler.trainjobs = StaleStore()  # type: ignore[assignment]
    reconciler.reconcile(("ns", "j"))
    rebuilt = _jobsets(kube)[-1]
    assert rebuilt["spec"]["suspend"] is False
    assert _node_spec(rebuilt)["containers"][0]["image"] != "edited-later:1"


def test_a_snapshot_without_a_recorded_digest_is_never_read() -> None:
    """A snapshot planted (with the TrainJob's uid as owner) before the first reconcile is
    replaced by one taken from the live runtime."""
    kube, reconciler, _ = _setup()
    planted = snapshot.configmap(_trainjob(), "placeholder")
    kube.put(CONFIGMAP, planted)
    planted["data"]["runtime"] = snapshot.body(
        kube.get(CLUSTER_RUNTIME, None, "torch-distributed") or {})
    _hostile_runtime(planted)
    reconciler.reconcile(("ns", "j"))
    assert _node_spec(_jobsets(kube)[-1])["containers"][0]["image"] != "evil:latest"
    assert "privileged" not in str(_jobsets(kube)[-1])
    cm = kube.get(CONFIGMAP, "ns", "j-runtime-snapshot")
    assert cm is not None and "evil" not in cm["data"]["runtime"]


def _foreign(kind: str, name: str, owner_uid: str | None = None) -> Obj:
    meta: Obj = {"name": name, "namespace": "ns"}
    if owner_uid:
        meta["ownerReferences"] = [controller_reference("j", owner_uid)]
    api = {"JobSet": "jobset.x-k8s.io/v1alpha2",
           "PodGroup": "scheduling.x-k8s.io/v1alpha1"}.get(kind, "v1")
    return {"apiVersion": api, "kind": kind, "metadata": meta, "data": {"x": "planted"}}


@pytest.mark.parametrize(("runtime", "res", "obj"), [
    ("deepspeed-distributed", SECRET, _foreign("Secret", "j-mpi-ssh-auth")),
    ("deepspeed-distributed", SECRET, _foreign("Secret", "j-mpi-ssh-auth", "someone-else")),
    ("deepspeed-distributed", CONFIGMAP, _foreign("ConfigMap", "j-mpi-hostfile")),
    ("torch-distributed", CONFIGMAP, _foreign("ConfigMap", "j-runtime-snapshot")),
    ("torch-distributed", JOBSET, _foreign("JobSet", "j", "old-uid")),
    ("gang", COSCHEDULING_PODGROUP, _foreign("PodGroup", "j")),
], ids=["ssh-secret", "ssh-secret-other-owner", "hostfile", "snapshot", "old-jobset",
        "podgroup"])
def test_an_object_not_controlled_by_the_trainjob_is_refused(runtime: str, res: Resource,
                                                             obj: Obj) -> None:
    kube, reconciler, events = _setup(runtime)
    kube.put(res, obj)
    reconciler.reconcile(("ns", "j"))
    name = f"{obj['kind']} ns/{obj['metadata']['name']}"
    refused = st.condition(_status(kube), ownership.CONDITION)
    assert refused is not None and refused["reason"] == "ObjectNotOwned"
    assert name in refused["message"] and "not controlled by this TrainJob" in \
        refused["message"]
    assert events.events and name in events.events[0][1]
    assert kube.get(res, "ns", obj["metadata"]["name"]) == obj  # untouched, not adopted
    assert not [o for o in kube.applied if o["kind"] in ("JobSet", "Secret")]


def test_a_planted_ssh_key_is_neither_used_nor_replaced() -> None:
    kube, reconciler, _ = _setup("deepspeed-distributed")
    planted = _foreign("Secret", "j-mpi-ssh-auth")
    kube.put(SECRET, planted)
    reconciler.reconcile(("ns", "j"))
    assert kube.get(SECRET, "ns", "j-mpi-ssh-auth") is planted
    kube.delete(SECRET, "ns", "j-mpi-ssh-auth")
    reconciler.reconcile(("ns", "j"))
    made = kube.get(SECRET, "ns", "j-mpi-ssh-auth")
    assert made is not None and ownership.controlled_by(made, "u-1")
    assert made["metadata"]["labels"] == {ownership.OWNED_LABEL: "j"}
    assert _jobsets(kube)


def test_the_ssh_secret_made_is_recorded_and_kept() -> None:
    kube, reconciler, _ = _setup("deepspeed-distributed")
    reconciler.reconcile(("ns", "j"))
    made = kube.get(SECRET, "ns", "j-mpi-ssh-auth")
    assert made is not None
    assert sshsecret.recorded(kube.get(TRAINJOB, "ns", "j") or {}) == made["metadata"]["uid"]
    reconciler.reconcile(("ns", "j"))
    assert [o["kind"] for o in kube.applied].count("Secret") == 1
    assert st.condition(_status(kube), ownership.CONDITION) is None


def test_an_ssh_secret_replaced_with_the_trainjobs_owner_reference_is_refused() -> None:
    """A tenant deletes the Secret and creates one with the same ownerReference and its own
    key: controlled by the TrainJob, but not the one the controller made."""
    kube, reconciler, events = _setup("deepspeed-distributed")
    reconciler.reconcile(("ns", "j"))
    made = kube.get(SECRET, "ns", "j-mpi-ssh-auth")
    assert made is not None
    kube.delete(SECRET, "ns", "j-mpi-ssh-auth")
    planted = {**_foreign("Secret", "j-mpi-ssh-auth", "u-1"), "data": {"k": "attacker"}}
    kube.put(SECRET, planted)
    applied = len(kube.applied)
    reconciler.reconcile(("ns", "j"))
    refused = st.condition(_status(kube), ownership.CONDITION)
    assert refused is not None and refused["reason"] == sshsecret.REPLACED
    assert f"recorded uid {made['metadata']['uid']}" in refused["message"]
    assert events.events[-1][0] == sshsecret.REPLACED
    assert len(kube.applied) == applied and kube.get(SECRET, "ns", "j-mpi-ssh-auth") is planted


def test_the_ssh_secret_is_recorded_when_a_later_write_fails() -> None:
    """The Secret is made before the JobSet: when the JobSet's write fails, the uid of the
    Secret just made is still recorded, so the next reconcile uses it instead of refusing it
    as replaced."""
    kube, reconciler, _ = _setup("deepspeed-distributed")
    real_create = kube.create

    def failing_jobset(res: Any, namespace: str | None, obj: Obj) -> Obj:
        if obj.get("kind") == "JobSet":
            raise ApiError(500, "InternalError", "etcd timed out")
        return real_create(res, namespace, obj)

    kube.create = failing_jobset  # type: ignore[method-assign]
    with pytest.raises(ReconcileError):
        reconciler.reconcile(("ns", "j"))
    made = kube.get(SECRET, "ns", "j-mpi-ssh-auth")
    assert made is not None and not _jobsets(kube)
    assert sshsecret.recorded(kube.get(TRAINJOB, "ns", "j") or {}) == made["metadata"]["uid"]
    kube.create = real_create  # type: ignore[method-assign]
    reconciler.reconcile(("ns", "j"))
    assert st.condition(_status(kube), ownership.CONDITION) is None
    assert _jobsets(kube)


def test_a_status_computed_from_a_stale_copy_is_not_written() -> None:
    """The status patch carries the resourceVersion it was computed from: a stale informer
    copy gets a conflict (and a retry) instead of dropping the recorded Secret uid."""
    kube, reconciler, _ = _setup("deepspeed-distributed")
    stale = copy.deepcopy(kube.get(TRAINJOB, "ns", "j") or {})
    reconciler.reconcile(("ns", "j"))
    made = kube.get(SECRET, "ns", "j-mpi-ssh-auth")
    assert made is not None

    class StaleStore:
        def get(self, namespace: str, name: str) -> Obj:
            return stale

    reconciler.trainjobs = StaleStore()  # type: ignore[assignment]
    stale["spec"]["suspend"] = True  # the status computed from it differs from the stored one
    with pytest.raises(ApiError) as raised:
        reconciler.reconcile(("ns", "j"))
    assert raised.value.status == 409
    assert sshsecret.recorded(kube.get(TRAINJOB, "ns", "j") or {}) == made["metadata"]["uid"]


def test_a_stale_trainjob_copy_does_not_refuse_the_secret_just_made() -> None:
    """The informer may hand over the TrainJob before the status that records the uid."""
    kube, reconciler, _ = _setup("deepspeed-distributed")
    reconciler.reconcile(("ns", "j"))
    stale = copy.deepcopy(kube.get(TRAINJOB, "ns", "j") or {})
    stale["status"] = {}

    class StaleStore:
        def get(self, namespace: str, name: str) -> Obj:
            return stale

    reconciler.trainjobs = StaleStore()  # type: ignore[assignment]
    reconciler.reconcile(("ns", "j"))
    assert st.condition(kube.status_patches[-1]["status"], ownership.CONDITION) is None


def test_an_edited_hostfile_is_written_back() -> None:
    kube, reconciler, _ = _setup("deepspeed-distributed")
    reconciler.reconcile(("ns", "j"))
    hostfile = kube.get(CONFIGMAP, "ns", "j-mpi-hostfile")
    assert hostfile is not None
    ours = hostfile["data"]["hostfile"]
    hostfile["data"]["hostfile"] = "evil.example slots=64\n"
    reconciler.reconcile(("ns", "j"))
    again = kube.get(CONFIGMAP, "ns", "j-mpi-hostfile")
    assert again is not None and again["data"]["hostfile"] == ours
    assert again["metadata"]["uid"] == hostfile["metadata"]["uid"]


def test_an_old_jobset_of_the_same_name_gives_no_status() -> None:
    """The TrainJob was deleted and created again; the old JobSet (old uid) waits for garbage
    collection and says Completed."""
    kube, reconciler, _ = _setup()
    old = _foreign("JobSet", "j", "old-uid")
    old["status"] = {"conditions": [{"type": "Completed", "status": "True",
                                     "reason": "AllJobsCompleted", "message": "old run",
                                     "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                     "replicatedJobsStatus": [{"name": "node", "succeeded": 1}]}
    kube.put(JOBSET, old)
    reconciler.reconcile(("ns", "j"))
    status = _status(kube)
    assert st.condition(status, "Complete") is None and "jobsStatus" not in status
    kube.delete(JOBSET, "ns", "j")  # garbage collected
    reconciler.reconcile(("ns", "j"))
    built = kube.get(JOBSET, "ns", "j")
    assert built is not None and ownership.controlled_by(built, "u-1")
    assert st.condition(_status(kube), "Complete") is None


class EmptyStore:
    """A JobSet informer that has not seen anything yet."""

    def get(self, namespace: str, name: str) -> None:
        return None


@pytest.mark.parametrize("owner", ["old-uid", "u-1"])
def test_a_jobset_the_informer_has_not_seen_yet(owner: str) -> None:
    """Creating it fails (409); the controller looks again: another's is refused, its own
    (running) is kept."""
    kube, reconciler, _ = _setup()
    existing = _foreign("JobSet", "j", owner)
    existing["spec"] = {"suspend": False}
    kube.put(JOBSET, existing)
    reconciler.jobsets = EmptyStore()  # type: ignore[assignment]
    reconciler.reconcile(("ns", "j"))
    assert kube.get(JOBSET, "ns", "j") is existing and not _jobsets(kube)
    refused = st.condition(_status(kube), ownership.CONDITION)
    assert (refused is not None) == (owner == "old-uid")


def test_the_deadline_deletes_only_the_trainjobs_own_jobset() -> None:
    kube, reconciler, _ = _setup(activeDeadlineSeconds=1)
    kube.put(JOBSET, _foreign("JobSet", "j", "old-uid"))
    reconciler.reconcile(("ns", "j"))
    assert kube.deleted == []
    kube.delete(JOBSET, "ns", "j")
    kube.deleted.clear()
    job = kube.get(TRAINJOB, "ns", "j")
    assert job is not None
    job["status"] = {}
    reconciler.reconcile(("ns", "j"))
    built = kube.get(JOBSET, "ns", "j")
    assert built is None and kube.deleted[-1][2] is not None  # with the uid precondition


@pytest.mark.parametrize("runtime", ["deepspeed-distributed", "mlx-distributed"])
def test_an_mpi_hostfile_for_int32_max_nodes_is_refused_without_building_it(
        runtime: str) -> None:
    kube, reconciler, _ = _setup(runtime, trainer={"numNodes": 2**31 - 1})
    tracemalloc.start()
    try:
        reconciler.reconcile(("ns", "j"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024 * 1024
    failed = st.condition(_status(kube), "Failed")
    assert failed is not None and failed["reason"] == INVALID_REASON
    assert "TJC-MPI-HOSTFILE-TOO-LARGE" in failed["message"]
    assert not _jobsets(kube) and kube.get(CONFIGMAP, "ns", "j-mpi-hostfile") is None


@pytest.mark.parametrize(("nodes", "parallelism", "replicas", "fails"), [
    (2**31 - 1, None, 1, "at most 100000"),
    (100_000, None, 1, None),
    (2, 100_001, 1, "'helper' would run 100001 pods at once"),
    (2, 1000, 149, None),
    (2, 1000, 151, "the JobSet would run 151002 pods"),
])
def test_counts_no_cluster_could_run_fail_the_trainjob(nodes: int, parallelism: int | None,
                                                      replicas: int,
                                                      fails: str | None) -> None:
    kube, reconciler, _ = _setup(trainer={"numNodes": nodes})
    runtime = kube.get(CLUSTER_RUNTIME, None, "torch-distributed")
    assert runtime is not None
    if parallelism:
        runtime["spec"]["template"]["spec"]["replicatedJobs"].append({
            "name": "helper", "replicas": replicas, "template": {"spec": {
                "parallelism": parallelism, "template": {"spec": {"containers": [
                    {"name": "helper", "image": "busybox"}]}}}}})
    tracemalloc.start()
    try:
        reconciler.reconcile(("ns", "j"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024 * 1024
    failed = st.condition(_status(kube), "Failed")
    if fails is None:
        assert failed is None and _jobsets(kube)
        return
    assert failed is not None and failed["reason"] == limits.REASON and fails in \
        failed["message"], failed
    assert not _jobsets(kube)


def test_a_failed_reconcile_has_a_reason_never_an_empty_message(
        caplog: pytest.LogCaptureFixture) -> None:
    assert reason_of(ReconcileError("")) == "ReconcileError: ReconcileError('')"
    assert reason_of(KeyError("spec")) == "KeyError: 'spec'"
    assert reason_of(RuntimeError()) == "RuntimeError: RuntimeError()"
    from compiler.controller.manager import Controller, Options

    kube, _, _ = _setup()
    controller = Controller(kube, Options(metrics_port=-1))  # type: ignore[arg-type]

    def broken(key: Any) -> Any:
        raise ReconcileError("")

    controller.reconciler.reconcile = broken  # type: ignore[method-assign]
    controller.queue.add(("ns", "j"))
    with caplog.at_level(logging.WARNING, "tjc.controller"):
        import threading

        worker = threading.Thread(target=controller.work)
        worker.start()
        for _ in range(100):
            if caplog.records:
                break
            worker.join(0.05)
        controller.queue.shutdown()
        worker.join(5)
    assert caplog.records
    message = caplog.records[0].getMessage()
    assert message.endswith("ReconcileError: ReconcileError('')"), message


def test_configmap_and_secret_informers_select_and_keep_only_metadata() -> None:
    calls: list[tuple[str, str | None]] = []

    class SelectingKube:
        def list(self, res: Resource, namespace: str | None,
                 selector: str | None = None) -> tuple[list[Obj], str]:
            calls.append(("list", selector))
            return [{"apiVersion": "v1", "kind": "Secret", "data": {"k": "c2VjcmV0"},
                     "metadata": {"namespace": "ns", "name": "s"}}], "1"

        def watch(self, res: Resource, namespace: str | None, version: str, *,
                  selector: str | None = None) -> Any:
            calls.append(("watch", selector))
            informer.stop()
            yield from ()

    informer = Informer(SelectingKube(), SECRET, None, lambda *_: None,  # type: ignore[arg-type]
                        selector=ownership.OWNED_LABEL, slim=True)
    informer.run()
    assert calls == [("list", ownership.OWNED_LABEL), ("watch", ownership.OWNED_LABEL)]
    assert informer.get("ns", "s") == {"apiVersion": "v1", "kind": "Secret",
                                       "metadata": {"namespace": "ns", "name": "s"}}


def test_a_change_of_the_status_alone_reconciles_nothing() -> None:
    from compiler.controller.manager import beyond_status

    job = _trainjob(trainer={"numNodes": 2})
    job["metadata"]["resourceVersion"] = "1"
    patched = copy.deepcopy(job)
    patched["status"] = {"conditions": [{"type": "Suspended", "status": "True"}]}
    patched["metadata"].update(resourceVersion="2", managedFields=[{"manager": "trainer"}])
    assert not beyond_status(job, patched)
    for change in ({"spec": {**job["spec"], "suspend": True}},
                   {"metadata": {**job["metadata"], "labels": {"nudge": "1"}}}):
        assert beyond_status(job, {**patched, **change})
    events: list[str] = []

    class WatchKube:
        def list(self, res: Resource, namespace: str | None) -> tuple[list[Obj], str]:
            return [job], "1"

        def watch(self, res: Resource, namespace: str | None, version: str) -> Any:
            yield "MODIFIED", patched
            yield "MODIFIED", {**patched, "spec": {"suspend": True}}
            informer.stop()

    informer = Informer(WatchKube(), TRAINJOB, None,  # type: ignore[arg-type]
                        lambda kind, obj: events.append(kind), relevant=beyond_status)
    informer.run()
    assert events == ["ADDED", "MODIFIED"]
    stored = informer.get("ns", "j")
    assert stored is not None and "managedFields" not in stored["metadata"]
    assert stored == {**patched, "spec": {"suspend": True}, "metadata": {
        k: v for k, v in patched["metadata"].items() if k != "managedFields"}}


@settings(max_examples=60, deadline=None, derandomize=True)
@given(nodes=hs.integers(1, 60), replicas=hs.integers(1, 12), slots=hs.integers(1, 1000),
       name=hs.from_regex(r"[a-z][a-z0-9-]{0,20}[a-z0-9]", fullmatch=True),
       as_node=hs.booleans())
def test_hostfile_size_is_the_length_of_the_hostfile(nodes: int, replicas: int, slots: int,
                                                     name: str, as_node: bool) -> None:
    from compiler.core.compile import compile_trainjob
    from compiler.core.plugins import mpi

    runtime = yaml.safe_load((RUNTIMES / "deepspeed-distributed.yaml").read_text())
    runtime["spec"]["mlPolicy"]["mpi"]["runLauncherAsNode"] = as_node
    for job in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
        job["replicas"] = replicas
    job = _trainjob(trainer={"numNodes": nodes, "numProcPerNode": slots})
    job["metadata"]["name"] = name
    job["spec"]["runtimeRef"]["name"] = "deepspeed-distributed"
    sizes: list[int] = []
    real = mpi.hostfile_size

    def measured(ctx: Any) -> int:
        sizes.append(real(ctx))
        return sizes[-1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(mpi, "hostfile_size", measured)
        # Replicas other than 1 are refused by upstream's webhook; the size is about the
        # compiler's arithmetic, so admission is skipped as `tjc render --no-validate` does.
        result = compile_trainjob(job, runtime, validate=False)
    hostfile = next(o for o in result.objects if o["kind"] == "ConfigMap")
    assert sizes == [len(hostfile["data"]["hostfile"].encode())]
