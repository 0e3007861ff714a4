"""The second edit of a TrainJob, synced by a real GitOps tool to a cluster with JobSet's webhook.

A Helm chart holds a TrainJob; `helm upgrade --install` applies it through tjc as its
post-renderer (`deploy/helm/tjc-post-renderer`), on the full control plane: JobSet v0.12.0 with
its validating webhook, the garbage collector, kwok running the pods (600 s each, so a run
is still going when the next edit comes). Nothing of Trainer's controller runs: this is the
GitOps path, where the rendered JobSet is what goes to the cluster.

- Without `--name-hash`, changing the image and numNodes makes the upgrade fail: the JobSet
  webhook refuses the update (`spec.replicatedJobs` is immutable); the old run goes on.
- With `--name-hash` (README: Changing a TrainJob), the upgrade creates a JobSet of a new name
  and Helm deletes the old one; the garbage collector removes its Jobs and pods. Suspending
  keeps the name (an update the webhook takes). After `helm uninstall` nothing is left.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from compiler.common.jsondata import Obj
from compiler.controller.kube import JOBSET, Resource
from tests.e2e import cluster as cl
from tests.e2e import poll
from tests.e2e.conftest import _unavailable
from tests.e2e.fullpath.conftest import FullCluster

pytestmark = pytest.mark.e2e
JOBS = Resource("batch", "v1", "jobs", "Job")
PODS = Resource("", "v1", "pods", "Pod")
POST_RENDERER = cl.REPO_ROOT / "deploy" / "helm" / "tjc-post-renderer"
TOOLS = cl.REPO_ROOT / "e2e" / "tools" / "build.sh"
NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"

CHART = {
    "Chart.yaml": "apiVersion: v2\nname: train\nversion: 0.1.0\n",
    "values.yaml": "image: registry.example/train:v1\nnumNodes: 2\nsuspend: false\n",
    "templates/trainjob.yaml": """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: {{ .Release.Name }}
spec:
  runtimeRef:
    name: torch-distributed
  suspend: {{ .Values.suspend }}
  trainer:
    image: {{ .Values.image }}
    numNodes: {{ .Values.numNodes }}
    env:
      - name: TJC_E2E_RUN_FOR
        value: 600s
    resourcesPerNode:
      requests: {cpu: "1", memory: 2Gi}
      limits: {cpu: "1", memory: 2Gi}
""",
}


@pytest.fixture(scope="module")
def helm() -> Path:
    """helm v3.19.0 as e2e/tools/build.sh built it."""
    folder = Path(subprocess.run(["sh", str(TOOLS), "--print-dir"], capture_output=True,
                                 text=True, check=True).stdout.strip())
    if not os.access(folder / "helm", os.X_OK):
        _unavailable(f"helm not built (run {TOOLS}): {folder}")
    return folder / "helm"


class Release:
    """`helm upgrade --install` of the chart, tjc as the post-renderer."""

    def __init__(self, fc: FullCluster, helm: Path, tmp: Path, ns: str) -> None:
        self.fc, self.ns, self.helm = fc, ns, helm
        self.chart = tmp / "chart"
        for rel, text in CHART.items():
            (self.chart / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.chart / rel).write_text(text)
        shim = tmp / "bin" / "tjc"  # the tjc of this checkout, as the wrapper calls it
        shim.parent.mkdir()
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m compiler "$@"\n')
        shim.chmod(0o755)
        self.env = {**os.environ, "PATH": f"{shim.parent}{os.pathsep}{os.environ['PATH']}",
                    "PYTHONPATH": str(cl.REPO_ROOT), "KUBECONFIG": fc.kubeconfig,
                    **{f"HELM_{k}_HOME": str(tmp / "helm" / k.lower())
                       for k in ("CACHE", "CONFIG", "DATA")}}

    def upgrade(self, *tjc_args: str, **values: Any) -> subprocess.CompletedProcess[str]:
        sets = [arg for k, v in values.items() for arg in ("--set", f"{k}={v}")]
        post = [arg for a in tjc_args for arg in ("--post-renderer-args", a)]
        return subprocess.run(
            [str(self.helm), "upgrade", "--install", "train", str(self.chart), "-n", self.ns,
             "--post-renderer", str(POST_RENDERER), *post, *sets],
            capture_output=True, text=True, env=self.env, timeout=300, check=False)

    def uninstall(self) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.helm), "uninstall", "train", "-n", self.ns],
                              capture_output=True, text=True, env=self.env, timeout=300,
                              check=False)

    def jobsets(self) -> list[Obj]:
        return self.fc.kube.list(JOBSET, self.ns)[0]

    def of(self, res: Resource, jobset: str | None = None) -> list[Obj]:
        """Jobs or pods of the namespace (of one JobSet, if named), deleted ones included."""
        return self.fc.kube.list(res, self.ns, f"{NAME_LABEL}={jobset}" if jobset else None)[0]

    def running(self, jobset: str, count: int) -> list[Obj]:
        """Wait until the JobSet's `count` pods run; they are on kwok nodes."""
        def pods() -> list[Obj]:
            found = [p for p in self.of(PODS, jobset)
                     if (p.get("status") or {}).get("phase") == "Running"]
            return found if len(found) == count else []
        found: list[Obj] = eventually(pods, f"{count} Running pods of {jobset}")
        return found

    def only(self, jobset: str) -> None:
        """Wait until the JobSet is the namespace's only one, with every Job and pod its."""
        def alone() -> bool:
            names = [j["metadata"]["name"] for j in self.jobsets()]
            return names == [jobset] and all(
                o["metadata"]["labels"].get(NAME_LABEL) == jobset
                for res in (JOBS, PODS) for o in self.of(res))
        eventually(alone, f"{jobset} alone in {self.ns}, its old Jobs and pods gone")


def eventually(check: Callable[[], Any], what: str) -> Any:
    return poll.eventually(check, 90.0, what, interval=0.3)


def image_and_nodes(jobset: Obj) -> tuple[str, int]:
    node = next(r for r in jobset["spec"]["replicatedJobs"] if r["name"] == "node")
    spec = node["template"]["spec"]
    return spec["template"]["spec"]["containers"][0]["image"], int(spec["parallelism"])


def test_a_changed_trainjob_syncs_as_a_new_jobset_with_name_hash(
        full_cluster: FullCluster, helm: Path, tmp_path: Path) -> None:
    ns = full_cluster.namespace("gitops")
    release = Release(full_cluster, helm, tmp_path, ns)
    done = release.upgrade()
    assert done.returncode == 0, done.stderr
    first = release.running("train", 2)

    # the naive way: the same JobSet, updated; JobSet's webhook refuses it, the run goes on
    done = release.upgrade(image="registry.example/train:v2", numNodes=3)
    assert done.returncode != 0
    assert 'admission webhook "vjobset.kb.io" denied the request' in done.stderr
    assert "spec.replicatedJobs: Invalid value" in done.stderr
    assert "field is immutable" in done.stderr
    [jobset] = release.jobsets()
    assert image_and_nodes(jobset) == ("registry.example/train:v1", 2)
    assert {p["metadata"]["uid"] for p in release.running("train", 2)} == \
        {p["metadata"]["uid"] for p in first}

    # the documented way: a new JobSet; Helm deletes the old one, the GC its Jobs and pods
    done = release.upgrade("--name-hash", image="registry.example/train:v2", numNodes=3)
    assert done.returncode == 0, done.stderr
    second = next(j["metadata"]["name"] for j in release.jobsets()
                  if j["metadata"]["name"] != "train")
    assert second.startswith("train-")
    release.running(second, 3)
    release.only(second)
    [jobset] = release.jobsets()
    assert image_and_nodes(jobset) == ("registry.example/train:v2", 3)

    # a suspend is an update the webhook takes: same name, the pods go, nothing else changes
    done = release.upgrade("--name-hash", image="registry.example/train:v2", numNodes=3,
                           suspend="true")
    assert done.returncode == 0, done.stderr
    eventually(lambda: not release.of(PODS), f"no pods of the suspended {second}")
    assert [j["metadata"]["name"] for j in release.jobsets()] == [second]

    # the next edit, resumed: again a new JobSet replaces the old one
    done = release.upgrade("--name-hash", image="registry.example/train:v3", numNodes=3)
    assert done.returncode == 0, done.stderr
    third = next(j["metadata"]["name"] for j in release.jobsets()
                 if j["metadata"]["name"] != second)
    release.running(third, 3)
    release.only(third)

    done = release.uninstall()
    assert done.returncode == 0, done.stderr
    eventually(lambda: not (release.jobsets() or release.of(JOBS) or release.of(PODS)),
               f"nothing left in {ns}")
