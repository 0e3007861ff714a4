"""Load: 1,000 TrainJobs created at once all reach their JobSet (target: under 30 s).

The controller runs as a subprocess so that its peak memory (VmHWM) can be read; the figures
are printed (run with -s to see them) and recorded in README.
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml

from compiler.controller.kube import JOBSET, TRAINJOB, Kube, Resource
from tests.e2e import cluster as cl

pytestmark = pytest.mark.e2e
RUNTIMES = Path(__file__).resolve().parents[2] / "runtimes"
COUNT = 1000


def _peak_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def test_thousand_trainjobs_reach_their_jobsets(e2e_cluster: cl.Cluster, e2e_api: Any) -> None:
    kube = Kube(e2e_api)
    for path in sorted(RUNTIMES.glob("*.yaml")):
        kube.apply(yaml.safe_load(path.read_text()))
    namespace = f"load-{uuid.uuid4().hex[:6]}"
    kube.create(Resource("", "v1", "namespaces", "Namespace", namespaced=False), None,
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    proc = subprocess.Popen([sys.executable, "-m", "compiler", "controller", "--kubeconfig",
                             e2e_cluster.kubeconfig, "--namespace", namespace,
                             "--metrics-port", "0", "--workers", "8"])
    try:
        time.sleep(2)  # the controller lists its (empty) namespace first
        start = time.monotonic()

        def create(i: int) -> None:
            kube.create(TRAINJOB, namespace, {
                "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                "metadata": {"name": f"job-{i}", "namespace": namespace},
                "spec": {"runtimeRef": {"name": "torch-distributed"},
                         "trainer": {"numNodes": 2}}})

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(create, range(COUNT)))
        created = time.monotonic() - start
        done = 0
        while time.monotonic() - start < 120:
            done = len(kube.list(JOBSET, namespace)[0])
            if done >= COUNT:
                break
            time.sleep(0.5)
        elapsed = time.monotonic() - start
        peak = _peak_mib(proc.pid)
        print(f"\nload: {COUNT} TrainJobs created in {created:.1f}s; all {done} JobSets after "
              f"{elapsed:.1f}s; controller peak memory {peak:.0f} MiB")
        assert done == COUNT
        assert proc.poll() is None
    finally:
        proc.terminate()
        proc.wait(20)
