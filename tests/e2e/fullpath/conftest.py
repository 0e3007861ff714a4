"""Fixtures of the full-path tests: a local API server with the whole control plane beside it.

Each module gets a fresh cluster (`full_cluster`): etcd and kube-apiserver, the Trainer and
JobSet CRDs, kube-controller-manager, kube-scheduler, the JobSet controller and kwok with three
CPU nodes and two nodes of 8 `nvidia.com/gpu` each (see `tests/e2e/controlplane.py`). They
need the binaries of `e2e/cluster/build.sh` and `e2e/controlplane/build.sh`; without them the
tests skip, or fail with `TJC_E2E=1` (CI). With `KUBECONFIG` set they are skipped: they drive
pods through kwok's stages, which an existing cluster (kind) does not have.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from compiler.controller.kube import Kube, Resource
from tests.e2e import cluster as cl
from tests.e2e import controlplane as cp
from tests.e2e.conftest import _unavailable

RUNTIMES = cl.REPO_ROOT / "runtimes"
NAMESPACE = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
CPU_NODES = 3
GPU_NODES = 2


@dataclass
class FullCluster:
    """A running cluster with the full control plane and an admin client."""

    cluster: cl.Cluster
    full: cp.FullControlPlane
    api: Any
    kube: Kube
    cpu_nodes: list[str]
    gpu_nodes: list[str]

    @property
    def kubeconfig(self) -> str:
        return self.cluster.kubeconfig

    def namespace(self, prefix: str = "fp") -> str:
        """A fresh namespace."""
        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        self.kube.create(NAMESPACE, None, {"apiVersion": "v1", "kind": "Namespace",
                                           "metadata": {"name": name}})
        return name


def start_tjc(kubeconfig: str, log: Path, *extra: str) -> cl._Process:
    """`tjc controller` as a subprocess (all namespaces), logging to `log`; killed with us."""
    return cl._Process("tjc-controller", [
        sys.executable, "-m", "compiler", "controller", "--kubeconfig", kubeconfig,
        "--metrics-port", "0", *extra], log)


@pytest.fixture(scope="module")
def full_cluster(e2e_crd_paths: list[Path]) -> Iterator[FullCluster]:
    """A fresh cluster with the whole control plane, kwok nodes and the built-in runtimes."""
    if os.environ.get("TJC_E2E") == "0":
        pytest.skip("TJC_E2E=0")
    if os.environ.get("KUBECONFIG"):
        pytest.skip("the full-path tests need the local control plane (kwok's stages)")
    binaries = cl.find_binaries()
    bin_dir = cp.find_binaries()
    if binaries is None or bin_dir is None:
        _unavailable(f"binaries missing: run e2e/cluster/build.sh and {cp.BUILD_SCRIPT}")
    assert binaries is not None and bin_dir is not None
    with cl.cluster(binaries) as running:
        assert running.control_plane is not None
        api = running.api_client()
        try:
            cl.install_crds(api, e2e_crd_paths)
            with cp.full_control_plane(running.control_plane, bin_dir) as full:
                cpu = full.add_nodes(api, CPU_NODES, prefix="kwok-cpu")
                gpu = full.add_nodes(api, GPU_NODES, gpus=8, prefix="kwok-gpu")
                kube = Kube(api)
                for path in sorted(RUNTIMES.glob("*.yaml")):
                    kube.apply(yaml.safe_load(path.read_text()))
                yield FullCluster(running, full, api, kube, cpu, gpu)
        finally:
            api.close()
