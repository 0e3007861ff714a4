"""Faults: the controller killed and restarted, the API server restarted, conflicting
appliers, two replicas with leader election. Every TrainJob still converges, with exactly
its own objects. The controller runs as a subprocess (`tjc controller`)."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from compiler.controller.kube import CONFIGMAP, JOBSET, LEASE, TRAINJOB, Kube, Resource
from tests.e2e import cluster as cl

pytestmark = pytest.mark.e2e
RUNTIMES = Path(__file__).resolve().parents[2] / "runtimes"
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)


def free_port() -> int:
    """A free loopback port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Runner:
    """`tjc controller` subprocesses for one namespace."""

    def __init__(self, cluster: cl.Cluster, namespace: str) -> None:
        self.cluster, self.namespace = cluster, namespace
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, *extra: str, port: int = 0) -> subprocess.Popen[bytes]:
        """Start one controller."""
        proc = subprocess.Popen(
            [sys.executable, "-m", "compiler", "controller", "--kubeconfig",
             self.cluster.kubeconfig, "--namespace", self.namespace, "--metrics-port",
             str(port), *extra], env={**_env(), "POD_NAMESPACE": self.namespace})
        self.procs.append(proc)
        return proc

    def stop_all(self) -> None:
        """Terminate every controller still running."""
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(20)


def _env() -> dict[str, str]:
    import os

    return dict(os.environ)


@pytest.fixture
def setup(e2e_cluster: cl.Cluster, e2e_api: Any) -> Iterator[tuple[Kube, Runner]]:
    """An admin client, the built-in runtimes, a fresh namespace and a controller runner."""
    kube = Kube(e2e_api)
    for path in sorted(RUNTIMES.glob("*.yaml")):
        kube.apply(yaml.safe_load(path.read_text()))
    namespace = f"fault-{uuid.uuid4().hex[:6]}"
    kube.create(NAMESPACES, None, {"apiVersion": "v1", "kind": "Namespace",
                                   "metadata": {"name": namespace}})
    runner = Runner(e2e_cluster, namespace)
    yield kube, runner
    runner.stop_all()


def submit(kube: Kube, namespace: str, count: int, prefix: str = "job",
           runtime: str = "torch-distributed") -> None:
    """Create `count` TrainJobs."""
    for i in range(count):
        kube.create(TRAINJOB, namespace, {
            "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": f"{prefix}-{i}", "namespace": namespace},
            "spec": {"runtimeRef": {"name": runtime}, "trainer": {"numNodes": 2}}})


def converged(kube: Kube, namespace: str, count: int, timeout: float = 90.0) -> None:
    """Every TrainJob has exactly its JobSet and snapshot, and nothing else exists."""
    end = time.monotonic() + timeout
    while True:
        jobs = {j["metadata"]["name"]: j for j in kube.list(TRAINJOB, namespace)[0]}
        jobsets = kube.list(JOBSET, namespace)[0]
        snapshots = [c for c in kube.list(CONFIGMAP, namespace)[0]
                     if c["metadata"]["name"].endswith("-runtime-snapshot")]
        if len(jobsets) == len(jobs) == count == len(snapshots):
            break
        if time.monotonic() > end:
            pytest.fail(f"{len(jobs)} TrainJobs, {len(jobsets)} JobSets, {len(snapshots)} "
                        f"snapshots after {timeout}s")
        time.sleep(0.5)
    for jobset in jobsets:
        owner = jobset["metadata"]["ownerReferences"]
        assert len(owner) == 1 and owner[0]["uid"] == \
            jobs[jobset["metadata"]["name"]]["metadata"]["uid"]


def test_controller_killed_mid_run_and_restarted(setup: tuple[Kube, Runner]) -> None:
    kube, runner = setup
    proc = runner.start("--workers", "2")
    submit(kube, runner.namespace, 150)
    time.sleep(1.5)
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    runner.start()
    converged(kube, runner.namespace, 150)


def test_apiserver_restarted_mid_run(e2e_cluster: cl.Cluster,
                                     setup: tuple[Kube, Runner]) -> None:
    if e2e_cluster.control_plane is None:
        pytest.skip("an existing cluster (KUBECONFIG): its API server is not restarted")
    kube, runner = setup
    runner.start()
    submit(kube, runner.namespace, 60)
    e2e_cluster.control_plane.restart_apiserver()
    submit(kube, runner.namespace, 60, prefix="after")
    converged(kube, runner.namespace, 120)


def test_conflicting_applier_is_overruled_while_suspended(setup: tuple[Kube, Runner]) -> None:
    kube, runner = setup
    runner.start()
    kube.create(TRAINJOB, runner.namespace, {
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": "held", "namespace": runner.namespace},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, "suspend": True,
                 "trainer": {"numNodes": 2}}})
    converged(kube, runner.namespace, 1)
    # Another manager takes spec.suspend over; the controller's forced apply takes it back.
    intruder = kube.api
    cl.api_request(intruder, "PATCH", JOBSET.path(runner.namespace, "held"), {
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": "held", "namespace": runner.namespace},
        "spec": {"suspend": False}},
        query=[("fieldManager", "intruder"), ("force", "true")],
        content_type="application/apply-patch+yaml")
    job = kube.get(TRAINJOB, runner.namespace, "held")
    assert job is not None
    job["metadata"].setdefault("labels", {})["nudge"] = "1"
    kube.update(TRAINJOB, runner.namespace, job)
    end = time.monotonic() + 30
    while (kube.get(JOBSET, runner.namespace, "held") or {})["spec"].get("suspend") is not True:
        assert time.monotonic() < end, "the controller did not take spec.suspend back"
        time.sleep(0.3)


def test_two_replicas_one_leader(setup: tuple[Kube, Runner]) -> None:
    kube, runner = setup
    ports = [free_port(), free_port()]
    procs = [runner.start("--leader-elect", port=port) for port in ports]
    end = time.monotonic() + 60
    while True:  # exactly one replica leads (ready); the other waits (not ready)
        ready = [_get(port, "/readyz") for port in ports]
        lease = kube.get(LEASE, runner.namespace, "tjc-controller")
        if sorted(ready) == [200, 503] and lease and lease["spec"].get("holderIdentity"):
            break
        assert time.monotonic() < end, f"readiness {ready}"
        time.sleep(0.5)
    leader = ready.index(200)
    submit(kube, runner.namespace, 5)
    converged(kube, runner.namespace, 5)
    assert _get(ports[1 - leader], "/readyz") == 503
    metrics = _text(ports[leader], "/metrics")
    assert "tjc_reconcile_total" in metrics and "tjc_workqueue_depth" in metrics
    assert _get(ports[leader], "/healthz") == 200
    procs[leader].send_signal(signal.SIGKILL)
    procs[leader].wait(10)
    submit(kube, runner.namespace, 5, prefix="later")
    converged(kube, runner.namespace, 10, timeout=60)
    assert procs[1 - leader].poll() is None and _get(ports[1 - leader], "/readyz") == 200


def _get(port: int, path: str) -> int:
    """The HTTP status of a probe; 0 while nothing listens yet."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except OSError:
        return 0


def _text(port: int, path: str) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
        return str(answer.read().decode())
