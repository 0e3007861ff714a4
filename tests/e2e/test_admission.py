"""End to end: the controller admits TrainJobs and applies the policy packs itself, on a real
API server with no Kubeflow Trainer webhook installed (what the webhook would refuse reaches
it), before it builds anything."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from compiler.controller.kube import JOBSET, TRAINJOB, Kube
from compiler.controller.manager import Controller, Options
from compiler.policy.engine import PolicySet
from compiler.policy.packs import Loader, pack_files
from tests.e2e import cluster as cl
from tests.e2e.poll import condition, eventually
from tests.e2e.test_controller import cl_namespace, trainjob

pytestmark = pytest.mark.e2e
RUNTIMES = Path(__file__).resolve().parents[2] / "runtimes"


@pytest.fixture(scope="module")
def kube(e2e_api: Any) -> Kube:
    client = Kube(e2e_api)
    for path in sorted(RUNTIMES.glob("*.yaml")):
        client.apply(yaml.safe_load(path.read_text()))
    return client


@pytest.fixture(scope="module")
def controller(e2e_cluster: cl.Cluster, kube: Kube) -> Iterator[Controller]:
    """The controller with the built-in policy packs, as `tjc controller` starts it."""
    policies = PolicySet(Loader().load_all(pack_files([], builtin=True)))
    running = Controller(Kube(e2e_cluster.api_client()),
                         Options(metrics_port=-1, workers=2, policies=policies))
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    yield running
    running.stop.set()
    thread.join(10)


@pytest.fixture
def namespace(kube: Kube) -> str:
    name = f"e2e-adm-{uuid.uuid4().hex[:8]}"
    kube.create(cl_namespace(), None, {"apiVersion": "v1", "kind": "Namespace",
                                       "metadata": {"name": name}})
    return name


def _failed(kube: Kube, namespace: str, name: str) -> dict[str, Any]:
    found = eventually(lambda: condition(kube.get(TRAINJOB, namespace, name), "Failed"))
    assert isinstance(found, dict)
    return found


def test_what_the_webhook_refuses_fails_without_a_jobset(
        kube: Kube, controller: Controller, namespace: str) -> None:
    body = trainjob(namespace, "reserved", "torch-distributed", trainer={
        "numNodes": 1, "env": [{"name": "PET_NNODES", "value": "4"}]})
    kube.create(TRAINJOB, namespace, body)
    failed = _failed(kube, namespace, "reserved")
    assert failed["reason"] == "TrainJobInvalid"
    assert "[TJC-WEBHOOK-TORCH-RESERVED-ENV]" in failed["message"]
    kube.create(TRAINJOB, namespace, trainjob(namespace, "fine", "torch-distributed",
                                              trainer={"numNodes": 1}))
    eventually(lambda: kube.get(JOBSET, namespace, "fine"))
    assert kube.get(JOBSET, namespace, "reserved") is None


def test_a_policy_deny_fails_without_a_jobset(kube: Kube, controller: Controller,
                                              namespace: str) -> None:
    # a privileged container only the policies deny (a GPU request unequal to its limit,
    # which this test used, the API server refuses in the Pods: TJC-POD-RESOURCES, earlier)
    privileged = [{"manager": "example.com/m", "trainingRuntimeSpec": {"template": {"spec": {
        "replicatedJobs": [{"name": "node", "template": {"spec": {"template": {"spec": {
            "containers": [{"name": "node", "securityContext": {"privileged": True}}]}}}}}]}}}}]
    job = trainjob(namespace, "gpus", "torch-distributed", trainer={"numNodes": 1})
    job["spec"]["runtimePatches"] = privileged
    kube.create(TRAINJOB, namespace, job)
    failed = _failed(kube, namespace, "gpus")
    assert failed["reason"] == "TrainJobInvalid"
    assert "[security.privileged]" in failed["message"]
    assert kube.get(JOBSET, namespace, "gpus") is None
