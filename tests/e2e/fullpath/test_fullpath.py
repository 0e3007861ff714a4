"""The whole path with nothing faked: SDK -> TrainJob -> tjc -> JobSet -> Jobs -> Pods -> status.

No test writes any status: the JobSet controller makes the Jobs, the Job controller the pods,
the scheduler binds them to kwok nodes, kwok runs and finishes them (its stages: a pod runs for
`TJC_E2E_RUN_FOR`, fails with `TJC_E2E_OUTCOME=fail`), and the status comes back through the
JobSet to the TrainJob. Expected values are upstream's (reference §3 and §6): `Complete` or
`Failed` copied from the JobSet's `Completed`/`Failed` condition, `jobsStatus` one entry per
replicated job, `DeadlineExceeded` for the active deadline.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml

from compiler.common.jsondata import Obj
from compiler.controller.kube import JOBSET, TRAINJOB, Resource
from tests.e2e import cluster as cl
from tests.e2e import poll
from tests.e2e.fullpath.conftest import NAMESPACE, RUNTIMES, FullCluster, start_tjc

pytestmark = pytest.mark.e2e
JOBS = Resource("batch", "v1", "jobs", "Job")


def eventually(check: Callable[[], Any], timeout: float = 90.0, what: str = "") -> Any:
    """`poll.eventually` with the slower pace of a whole control plane."""
    return poll.eventually(check, timeout, what, interval=0.3)


def condition(obj: Obj | None, kind: str) -> Obj | None:
    """The condition when it is True (`poll.condition`)."""
    return poll.condition(obj, kind, "True")


@pytest.fixture(scope="module")
def tjc(full_cluster: FullCluster) -> Iterator[None]:
    """tjc's controller, for every namespace, for the whole module."""
    log = full_cluster.full.workdir / "tjc-controller.log"
    process = start_tjc(full_cluster.kubeconfig, log, "--workers", "4")
    yield
    process.stop()


@pytest.fixture
def ns(full_cluster: FullCluster, tjc: None) -> str:
    return full_cluster.namespace()


def sdk_train(fc: FullCluster, ns: str, runtime: str, **trainer: Any) -> str:
    """`TrainerClient().train()` of a CustomTrainer on `runtime`; the TrainJob's name."""
    from kubeflow.trainer import CustomTrainer, KubernetesBackendConfig, TrainerClient

    system = "kubeflow-system"
    if fc.kube.get(NAMESPACE, None, system) is None:
        fc.kube.create(NAMESPACE, None, {"apiVersion": "v1", "kind": "Namespace",
                                         "metadata": {"name": system}})
    fc.kube.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "kubeflow-trainer-public", "namespace": system},
        "data": {"kubeflow_trainer_version": "v2.3.0"}})
    client = TrainerClient(KubernetesBackendConfig(namespace=ns, config_file=fc.kubeconfig))
    name: str = client.train(runtime=runtime,
                             trainer=CustomTrainer(func=train_function, **trainer))
    return name


def train_function() -> None:
    """What the SDK packs into the TrainJob's command."""
    print("training")


def pods_of(fc: FullCluster, ns: str, name: str) -> list[Obj]:
    found = cl.api_request(fc.api, "GET", f"/api/v1/namespaces/{ns}/pods",
                           query=[("labelSelector", f"jobset.sigs.k8s.io/jobset-name={name}")])
    return list(found["items"])


def jobs_status(fc: FullCluster, ns: str, name: str) -> list[Obj]:
    job = fc.kube.get(TRAINJOB, ns, name) or {}
    return list((job.get("status") or {}).get("jobsStatus") or [])


def assert_complete_as_upstream(fc: FullCluster, ns: str, name: str) -> None:
    """TrainJob Complete with the JobSet's Completed condition copied; jobsStatus mirrored."""
    done = eventually(lambda: condition(fc.kube.get(TRAINJOB, ns, name), "Complete"),
                      what=f"{ns}/{name} Complete")
    jobset = fc.kube.get(JOBSET, ns, name)
    completed = condition(jobset, "Completed")
    assert completed is not None
    assert (done["reason"], done["message"]) == (completed["reason"], completed["message"])
    assert done["reason"] == "AllJobsCompleted"
    assert condition(fc.kube.get(TRAINJOB, ns, name), "Failed") is None
    want = [{k: r.get(k, 0) for k in ("name", "ready", "succeeded", "failed", "active",
                                      "suspended")}
            for r in (jobset or {})["status"]["replicatedJobsStatus"]]
    got = eventually(lambda: [{k: r.get(k, 0) for k in want[0]} for r in
                              jobs_status(fc, ns, name)] == want and want)
    assert got == want


@pytest.mark.parametrize("runtime", ["jax-distributed", "torch-distributed",
                                     "deepspeed-distributed"])
def test_sdk_trainjob_runs_to_complete(full_cluster: FullCluster, ns: str, runtime: str) -> None:
    fc = full_cluster
    name = sdk_train(fc, ns, runtime, num_nodes=2, env={"TJC_E2E_RUN_FOR": "4s"})
    # Running: the pods are bound to kwok nodes and run; the TrainJob sees active jobs.
    running = eventually(lambda: [p for p in pods_of(fc, ns, name)
                                  if p.get("status", {}).get("phase") == "Running"],
                         what="a Running pod")
    assert all(p["spec"]["nodeName"] in fc.cpu_nodes + fc.gpu_nodes for p in running)
    eventually(lambda: any(s.get("active", 0) > 0 for s in jobs_status(fc, ns, name)),
               what="jobsStatus with an active job")
    assert_complete_as_upstream(fc, ns, name)
    jobset = fc.kube.get(JOBSET, ns, name) or {}
    replicated = {r["name"] for r in jobset["spec"]["replicatedJobs"]}
    assert {s["name"] for s in jobs_status(fc, ns, name)} == replicated
    pods = pods_of(fc, ns, name)
    assert pods and all(p["status"]["phase"] == "Succeeded" for p in pods)
    # numNodes 2 is two pods: two `node` pods, or (MPI, the launcher runs as a node) one
    # launcher and one `node` pod (reference §3.3).
    by_job = sorted(p["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"]
                    for p in pods)
    assert by_job == (["launcher", "node"] if runtime.startswith("deepspeed") else
                      ["node", "node"])


def own_runtime(fc: FullCluster, ns: str, base: str, name: str) -> None:
    """A TrainingRuntime in `ns`: `base` with Jobs that do not retry (backoffLimit 0)."""
    runtime = yaml.safe_load((RUNTIMES / f"{base}.yaml").read_text())
    runtime["kind"] = "TrainingRuntime"
    runtime["metadata"] = {"name": name, "namespace": ns,
                           "labels": runtime["metadata"].get("labels") or {}}
    for rj in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
        rj["template"]["spec"]["backoffLimit"] = 0
    fc.kube.apply(runtime)


def test_failing_pod_fails_the_trainjob(full_cluster: FullCluster, ns: str) -> None:
    fc = full_cluster
    own_runtime(fc, ns, "torch-distributed", "no-retry")
    name = sdk_train(fc, ns, "no-retry", num_nodes=2, env={"TJC_E2E_OUTCOME": "fail"})
    failed = eventually(lambda: condition(fc.kube.get(TRAINJOB, ns, name), "Failed"),
                        what="TrainJob Failed")
    js_failed = condition(fc.kube.get(JOBSET, ns, name), "Failed")
    assert js_failed is not None
    assert (failed["reason"], failed["message"]) == (js_failed["reason"], js_failed["message"])
    assert failed["reason"] == "FailedJobs"
    assert condition(fc.kube.get(TRAINJOB, ns, name), "Complete") is None
    assert any(p["status"]["phase"] == "Failed" for p in pods_of(fc, ns, name))
    eventually(lambda: any(s.get("failed", 0) > 0 for s in jobs_status(fc, ns, name)),
               what="jobsStatus with a failed job")


def trainjob(ns: str, name: str, runtime: str = "torch-distributed", **spec: Any) -> Obj:
    trainer = {"numNodes": 2, "env": [{"name": "TJC_E2E_RUN_FOR", "value": "3s"}]}
    trainer.update(spec.pop("trainer", {}))
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"runtimeRef": {"name": runtime}, "trainer": trainer, **spec}}


def test_suspend_then_resume_with_real_jobs(full_cluster: FullCluster, ns: str) -> None:
    fc = full_cluster
    fc.kube.create(TRAINJOB, ns, trainjob(ns, "sus", suspend=True))
    jobs = eventually(lambda: fc.kube.list(JOBS, ns)[0], what="the Jobs of a suspended JobSet")
    assert all(j["spec"].get("suspend") is True for j in jobs)
    suspended = eventually(lambda: condition(fc.kube.get(TRAINJOB, ns, "sus"), "Suspended"))
    assert suspended["reason"] == "Suspended"
    time.sleep(3)
    assert pods_of(fc, ns, "sus") == []
    job = fc.kube.get(TRAINJOB, ns, "sus")
    assert job is not None
    job["spec"]["suspend"] = False
    fc.kube.update(TRAINJOB, ns, job)
    eventually(lambda: pods_of(fc, ns, "sus"), what="pods after resume")
    assert_complete_as_upstream(fc, ns, "sus")
    resumed = [c for c in fc.kube.get(TRAINJOB, ns,
                                      "sus")["status"]["conditions"]  # type: ignore[index]
               if c["type"] == "Suspended"]
    assert (resumed[0]["status"], resumed[0]["reason"]) == ("False", "Resumed")


def test_active_deadline_stops_running_pods(full_cluster: FullCluster, ns: str) -> None:
    fc = full_cluster
    fc.kube.create(TRAINJOB, ns, trainjob(
        ns, "late", activeDeadlineSeconds=5,
        trainer={"env": [{"name": "TJC_E2E_RUN_FOR", "value": "600s"}]}))
    eventually(lambda: [p for p in pods_of(fc, ns, "late")
                        if p.get("status", {}).get("phase") == "Running"], what="Running pods")
    failed = eventually(lambda: condition(fc.kube.get(TRAINJOB, ns, "late"), "Failed"))
    assert (failed["reason"], failed["message"]) == (
        "DeadlineExceeded", "TrainJob exceeded its active deadline")
    eventually(lambda: fc.kube.get(JOBSET, ns, "late") is None, what="JobSet deleted")
    eventually(lambda: not pods_of(fc, ns, "late"), what="pods garbage-collected")


def test_gpu_requests_land_on_gpu_nodes_only(full_cluster: FullCluster, ns: str) -> None:
    fc = full_cluster
    gpu = {"resourcesPerNode": {"limits": {"nvidia.com/gpu": "4"}}}
    fc.kube.create(TRAINJOB, ns, trainjob(ns, "gpu", trainer=gpu | {"numNodes": 3}))
    too_big = {"resourcesPerNode": {"limits": {"nvidia.com/gpu": "16"}}}
    fc.kube.create(TRAINJOB, ns, trainjob(ns, "toobig", trainer=too_big))
    pods = eventually(lambda: [p for p in pods_of(fc, ns, "gpu") if p["spec"].get("nodeName")]
                      if len([p for p in pods_of(fc, ns, "gpu")
                              if p["spec"].get("nodeName")]) == 3 else None,
                      what="three GPU pods bound")
    assert {p["spec"]["nodeName"] for p in pods} <= set(fc.gpu_nodes)
    assert_complete_as_upstream(fc, ns, "gpu")
    unbound = eventually(lambda: pods_of(fc, ns, "toobig"), what="pods of toobig")
    time.sleep(3)
    unbound = pods_of(fc, ns, "toobig")
    assert unbound and all(not p["spec"].get("nodeName") for p in unbound)
    scheduled = [c for p in unbound for c in p["status"].get("conditions") or []
                 if c["type"] == "PodScheduled"]
    assert scheduled and all(c["reason"] == "Unschedulable" for c in scheduled)
    assert "nvidia.com/gpu" in scheduled[0]["message"]
