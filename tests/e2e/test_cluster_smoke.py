"""Smoke tests of the e2e cluster: the CRDs install, a ClusterTrainingRuntime is stored and read
back, and it is still there, unchanged, after the API server restarts."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s_client

from tests.e2e import cluster as cl

pytestmark = pytest.mark.e2e

GROUP, VERSION, PLURAL = "trainer.kubeflow.org", "v1alpha1", "clustertrainingruntimes"


@pytest.fixture
def runtime(e2e_api: Any) -> Iterator[dict[str, Any]]:
    """runtimes/torch-distributed.yaml under a name of its own, created; deleted afterwards."""
    doc = yaml.safe_load((cl.REPO_ROOT / "runtimes" / "torch-distributed.yaml").read_text())
    assert isinstance(doc, dict) and doc["kind"] == "ClusterTrainingRuntime"
    name = f"tjc-e2e-smoke-{uuid.uuid4().hex[:8]}"
    doc["metadata"] = {"name": name, "labels": doc["metadata"].get("labels", {})}
    objects = k8s_client.CustomObjectsApi(e2e_api)
    created = objects.create_cluster_custom_object(GROUP, VERSION, PLURAL, doc)
    assert created["metadata"]["uid"]
    yield doc
    objects.delete_cluster_custom_object(GROUP, VERSION, PLURAL, name)


def _read(api: Any, name: str) -> dict[str, Any]:
    got = k8s_client.CustomObjectsApi(api).get_cluster_custom_object(GROUP, VERSION, PLURAL, name)
    assert isinstance(got, dict)
    return got


def test_crds_are_established(e2e_api: Any) -> None:
    crds = cl.api_request(e2e_api, "GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
    names = {c["metadata"]["name"] for c in crds["items"]}
    assert {"trainjobs.trainer.kubeflow.org", "trainingruntimes.trainer.kubeflow.org",
            "clustertrainingruntimes.trainer.kubeflow.org", "jobsets.jobset.x-k8s.io"} <= names


def test_runtime_round_trip(e2e_api: Any, runtime: dict[str, Any]) -> None:
    read = _read(e2e_api, runtime["metadata"]["name"])
    assert read["spec"]["mlPolicy"] == runtime["spec"]["mlPolicy"]
    jobs = read["spec"]["template"]["spec"]["replicatedJobs"]
    assert [j["name"] for j in jobs] == ["node"]


def test_runtime_survives_an_apiserver_restart(
    e2e_cluster: cl.Cluster, e2e_api: Any, runtime: dict[str, Any]
) -> None:
    if e2e_cluster.control_plane is None:
        pytest.skip("an existing cluster (KUBECONFIG): its API server is not restarted")
    before = _read(e2e_api, runtime["metadata"]["name"])

    e2e_cluster.control_plane.restart_apiserver()

    # The same client goes on working; the object came back from etcd unchanged.
    after = _read(e2e_api, runtime["metadata"]["name"])
    assert after["metadata"]["uid"] == before["metadata"]["uid"]
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert after["spec"] == before["spec"]
