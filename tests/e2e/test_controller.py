"""End to end: `tjc controller` on a real API server (reference §6 behaviour)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from compiler.common.jsondata import Obj
from compiler.controller.kube import (
    CLUSTER_RUNTIME,
    CONFIGMAP,
    JOBSET,
    SECRET,
    TRAINING_RUNTIME,
    TRAINJOB,
    Kube,
    Resource,
)
from compiler.controller.manager import Controller, Options
from tests.e2e import cluster as cl
from tests.e2e.poll import condition, eventually

pytestmark = pytest.mark.e2e
RUNTIMES = Path(__file__).resolve().parents[2] / "runtimes"


@pytest.fixture(scope="module")
def kube(e2e_api: Any) -> Kube:
    """The admin client, with the built-in runtimes installed as ClusterTrainingRuntimes."""
    client = Kube(e2e_api)
    for path in sorted(RUNTIMES.glob("*.yaml")):
        client.apply(yaml.safe_load(path.read_text()))
    return client


@pytest.fixture(scope="module")
def controller(e2e_cluster: cl.Cluster, kube: Kube) -> Iterator[Controller]:
    """The controller, in process (its own client), for every namespace."""
    running = Controller(Kube(e2e_cluster.api_client()), Options(metrics_port=-1, workers=4))
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    yield running
    running.stop.set()
    thread.join(10)


@pytest.fixture
def namespace(kube: Kube) -> str:
    """A fresh namespace."""
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    kube.create(cl_namespace(), None, {"apiVersion": "v1", "kind": "Namespace",
                                       "metadata": {"name": name}})
    return name


def cl_namespace() -> Any:
    return Resource("", "v1", "namespaces", "Namespace", namespaced=False)


def trainjob(namespace: str, name: str, runtime: str = "jax-distributed", **spec: Any) -> Obj:
    """A TrainJob on a built-in runtime."""
    body: Obj = {"runtimeRef": {"name": runtime}, "trainer": {"numNodes": 2}, **spec}
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": name, "namespace": namespace}, "spec": body}


def resume(kube: Kube, namespace: str, name: str) -> None:
    """Lift a TrainJob's suspend and wait until its JobSet runs."""
    job = kube.get(TRAINJOB, namespace, name)
    assert job is not None
    job["spec"]["suspend"] = False
    kube.update(TRAINJOB, namespace, job)
    eventually(lambda: (kube.get(JOBSET, namespace, name) or {}).get("spec", {})
               .get("suspend") is False)


def test_jax_trainjob_gets_its_jobset(kube: Kube, controller: Controller,
                                      namespace: str) -> None:
    created = kube.create(TRAINJOB, namespace, trainjob(namespace, "mnist"))
    jobset = eventually(lambda: kube.get(JOBSET, namespace, "mnist"))
    owner = jobset["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == \
        ("TrainJob", "mnist", created["metadata"]["uid"], True)
    env = {e["name"]: e.get("value") for e in jobset["spec"]["replicatedJobs"][0]["template"][
        "spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["JAX_NUM_PROCESSES"] == "2"
    assert env["JAX_COORDINATOR_ADDRESS"] == "mnist-node-0-0.mnist:29500"
    assert kube.get(CONFIGMAP, namespace, "mnist-runtime-snapshot") is not None


def test_mpi_secret_is_made_once(kube: Kube, controller: Controller, namespace: str) -> None:
    kube.create(TRAINJOB, namespace, trainjob(namespace, "ds", "deepspeed-distributed"))
    secret = eventually(lambda: kube.get(SECRET, namespace, "ds-mpi-ssh-auth"))
    assert secret["immutable"] is True
    hostfile = eventually(lambda: kube.get(CONFIGMAP, namespace, "ds-mpi-hostfile"))
    assert "slots=" in hostfile["data"]["hostfile"]
    job = kube.get(TRAINJOB, namespace, "ds")
    assert job is not None
    job["metadata"].setdefault("labels", {})["touched"] = "yes"
    kube.update(TRAINJOB, namespace, job)
    time.sleep(2)
    again = kube.get(SECRET, namespace, "ds-mpi-ssh-auth")
    assert again is not None and again["data"] == secret["data"]
    assert again["metadata"]["uid"] == secret["metadata"]["uid"]


def test_suspend_then_resume(kube: Kube, controller: Controller, namespace: str) -> None:
    kube.create(TRAINJOB, namespace, trainjob(namespace, "s", suspend=True))
    eventually(lambda: (kube.get(JOBSET, namespace, "s") or {}).get("spec", {}).get("suspend"))
    eventually(lambda: (condition(kube.get(TRAINJOB, namespace, "s"), "Suspended") or {})
               .get("reason") == "Suspended")
    resume(kube, namespace, "s")
    resumed = eventually(lambda: condition(kube.get(TRAINJOB, namespace, "s"), "Suspended"))
    eventually(lambda: (condition(kube.get(TRAINJOB, namespace, "s"), "Suspended") or {})
               .get("reason") == "Resumed")
    assert resumed is not None


def test_jobset_status_flows_back(kube: Kube, controller: Controller, namespace: str) -> None:
    for name, js_type, reason in (("done", "Completed", "AllJobsCompleted"),
                                  ("broken", "Failed", "FailedJobs")):
        kube.create(TRAINJOB, namespace, trainjob(namespace, name))
        eventually(lambda name=name: kube.get(JOBSET, namespace, name))  # type: ignore[misc]
        kube.patch_status(JOBSET, namespace, name, {"status": {
            "conditions": [{"type": js_type, "status": "True", "reason": reason,
                            "message": "set by the test",
                            "lastTransitionTime": "2026-01-01T00:00:00Z"}],
            "replicatedJobsStatus": [{"name": "node", "ready": 0, "succeeded": 1, "failed": 0,
                                      "active": 0, "suspended": 0}]}})
        want = "Complete" if js_type == "Completed" else "Failed"
        got = eventually(lambda name=name, want=want:  # type: ignore[misc]
                         condition(kube.get(TRAINJOB, namespace, name), want))
        assert (got["status"], got["reason"]) == ("True", reason)
        status = (kube.get(TRAINJOB, namespace, name) or {})["status"]
        assert status["jobsStatus"][0]["name"] == "node"


def test_active_deadline(kube: Kube, controller: Controller, namespace: str) -> None:
    kube.create(TRAINJOB, namespace, trainjob(namespace, "late", activeDeadlineSeconds=2))
    eventually(lambda: kube.get(JOBSET, namespace, "late"))
    failed = eventually(lambda: condition(kube.get(TRAINJOB, namespace, "late"), "Failed"))
    assert failed["reason"] == "DeadlineExceeded"
    eventually(lambda: kube.get(JOBSET, namespace, "late") is None)


def test_runtime_deleted_after_first_reconcile_changes_nothing(
        kube: Kube, controller: Controller, namespace: str) -> None:
    runtime = yaml.safe_load((RUNTIMES / "torch-distributed.yaml").read_text())
    runtime["kind"] = "TrainingRuntime"
    runtime["metadata"] = {"name": "own", "namespace": namespace}
    kube.apply(runtime)
    kube.create(TRAINJOB, namespace, trainjob(namespace, "snap", "own", suspend=True) | {
        "spec": {"runtimeRef": {"name": "own", "kind": "TrainingRuntime"}, "suspend": True,
                 "trainer": {"numNodes": 2}}})
    eventually(lambda: kube.get(JOBSET, namespace, "snap"))
    kube.delete(TRAINING_RUNTIME, namespace, "own")
    resume(kube, namespace, "snap")


def test_runtime_of_another_namespace_is_refused(
        kube: Kube, controller: Controller, namespace: str) -> None:
    other = f"{namespace}-other"
    kube.create(cl_namespace(), None, {"apiVersion": "v1", "kind": "Namespace",
                                       "metadata": {"name": other}})
    runtime = yaml.safe_load((RUNTIMES / "torch-distributed.yaml").read_text())
    runtime["kind"] = "TrainingRuntime"
    runtime["metadata"] = {"name": "theirs", "namespace": other}
    kube.apply(runtime)
    kube.create(TRAINJOB, namespace, trainjob(namespace, "cross", "theirs") | {
        "spec": {"runtimeRef": {"name": "theirs", "kind": "TrainingRuntime"},
                 "trainer": {"numNodes": 1}}})
    events = eventually(lambda: [e for e in kube.list(_events(), namespace)[0]
                                 if e.get("reason") == "TrainJobResourcesCreationFailed"])
    assert "TrainingRuntime specified in TrainJob is not found" in events[0]["note"]
    assert kube.get(JOBSET, namespace, "cross") is None
    assert kube.get(CLUSTER_RUNTIME, None, "theirs") is None


def _events() -> Any:
    from compiler.controller.manager import EVENTS

    return EVENTS


def train_function() -> None:
    """What the SDK packs into the TrainJob's command."""
    print("training")


def test_kubeflow_sdk_trains_on_jax_and_torch(e2e_cluster: cl.Cluster, kube: Kube,
                                              controller: Controller, namespace: str) -> None:
    from kubeflow.trainer import CustomTrainer, KubernetesBackendConfig, TrainerClient

    system = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
    if kube.get(system, None, "kubeflow-system") is None:
        kube.create(system, None, {"apiVersion": "v1", "kind": "Namespace",
                                   "metadata": {"name": "kubeflow-system"}})
    kube.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "kubeflow-trainer-public", "namespace": "kubeflow-system"},
        "data": {"kubeflow_trainer_version": "v2.3.0"}})
    client = TrainerClient(KubernetesBackendConfig(namespace=namespace,
                                                   config_file=e2e_cluster.kubeconfig))
    names = {r.name for r in client.list_runtimes()}
    assert {p.stem for p in RUNTIMES.glob("*.yaml")} <= names
    for runtime in ("jax-distributed", "torch-distributed"):
        name = client.train(runtime=runtime,
                            trainer=CustomTrainer(func=train_function, num_nodes=2))
        created = kube.get(TRAINJOB, namespace, name)
        assert created is not None
        jobset = eventually(lambda name=name: kube.get(JOBSET, namespace,
                                                       name))  # type: ignore[misc]
        owner = jobset["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["uid"]) == ("TrainJob", created["metadata"]["uid"])
        node = jobset["spec"]["replicatedJobs"][-1]["template"]["spec"]["template"]["spec"][
            "containers"][0]
        assert node["command"] == created["spec"]["trainer"]["command"]
