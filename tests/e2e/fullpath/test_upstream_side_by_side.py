"""Kubeflow Trainer v2.3.0's own controller and tjc's, side by side, on the same inputs.

Each controller gets a fresh cluster (etcd, kube-apiserver, the Trainer, JobSet and
scheduler-plugins PodGroup CRDs, the eight built-in ClusterTrainingRuntimes) and the same
inputs (`sidebyside.all_inputs()`: the golden cases and generated TrainJobs over the built-in
runtimes and custom ones, more than 200 TrainJobs); what each created is compared semantically
(`sidebyside.compare`). Upstream's controller runs without its admission webhooks (none is
registered), as tjc's does; the inputs are ones its webhooks admit.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from compiler.common.jsondata import Obj
from compiler.controller.kube import Kube
from tests.e2e import cluster as cl
from tests.e2e import controlplane as cp
from tests.e2e.conftest import _unavailable
from tests.e2e.fullpath import sidebyside as sbs
from tests.e2e.fullpath.conftest import RUNTIMES, start_tjc

pytestmark = pytest.mark.e2e


def _binaries() -> tuple[cl.Binaries, Path]:
    if os.environ.get("TJC_E2E") == "0":
        pytest.skip("TJC_E2E=0")
    if os.environ.get("KUBECONFIG"):
        pytest.skip("the side-by-side test needs two fresh local clusters")
    binaries, bin_dir = cl.find_binaries(), cp.find_binaries()
    if binaries is None or bin_dir is None:
        _unavailable(f"binaries missing: run e2e/cluster/build.sh and {cp.BUILD_SCRIPT}")
    assert binaries is not None and bin_dir is not None
    return binaries, bin_dir


def run_controller(which: str, inputs: sbs.Inputs, crd_paths: list[Path]
                   ) -> tuple[dict[str, Obj], dict[str, str], float]:
    """On a fresh cluster: create the inputs, run `which` controller until nothing changes."""
    binaries, bin_dir = _binaries()
    with cl.cluster(binaries) as running:
        plane = running.control_plane
        assert plane is not None
        api = running.api_client()
        try:
            cl.install_crds(api, [*crd_paths, bin_dir / "crds"])
            kube = Kube(api)
            for path in sorted(RUNTIMES.glob("*.yaml")):
                kube.apply(yaml.safe_load(path.read_text()))
            refused = sbs.create_inputs(api, inputs)
            full = cp.FullControlPlane(plane=plane, bin_dir=bin_dir)
            if which == "tjc":
                full.processes["tjc"] = start_tjc(running.kubeconfig,
                                                  plane.workdir / "tjc.log", "--workers", "4",
                                                  # the policy packs are tjc's own addition
                                                  # (README): upstream has none to compare
                                                  "--no-default-policies")
            else:
                full.start_trainer_controller()
            try:
                want = len(inputs.trainjobs) - sum(k.split("/")[1] == "TrainJob"
                                                   for k in refused)
                took = sbs.wait_settled(api, inputs.namespaces, want, timeout=600)
                return sbs.collect(api, inputs.namespaces), refused, took
            finally:
                full.stop()
        finally:
            api.close()


def test_same_objects_as_upstreams_controller(e2e_crd_paths: list[Path]) -> None:
    inputs = sbs.all_inputs()
    assert len(inputs.trainjobs) >= 200
    ours, our_refused, our_time = run_controller("tjc", inputs, e2e_crd_paths)
    theirs, their_refused, their_time = run_controller("upstream", inputs, e2e_crd_paths)
    assert our_refused == their_refused
    result = sbs.compare(ours, theirs)
    jobsets = sum("/JobSet/" in k for k in ours)
    print(f"\nside by side: {len(inputs.trainjobs)} TrainJobs ({len(our_refused)} inputs refused "
          f"by the API server), {jobsets} JobSets; {result.equal} objects equal, "
          f"{len(result.env_order_only)} equal but for env order (README), "
          f"{len(result.failures)} different; settled in {our_time:.0f}s (tjc) / "
          f"{their_time:.0f}s (upstream); skipped golden cases: {len(inputs.skipped)}")
    assert jobsets >= 200
    assert not result.failures, "\n".join(result.failures[:60])


def test_the_comparison_sees_a_difference() -> None:
    """The comparison is not blind: a changed env value, a missing object, a reordered env."""
    env = [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]
    jobset: Obj = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                   "metadata": {"name": "j", "namespace": "n", "uid": "1"},
                   "spec": {"replicatedJobs": [{"name": "node", "env": env}]}}
    changed = yaml.safe_load(yaml.safe_dump(jobset))
    changed["metadata"]["uid"] = "2"
    assert sbs.compare({"n/JobSet/j": jobset}, {"n/JobSet/j": changed}).equal == 1
    changed["spec"]["replicatedJobs"][0]["env"][1]["value"] = "3"
    result = sbs.compare({"n/JobSet/j": jobset, "n/Secret/s": {}}, {"n/JobSet/j": changed})
    assert result.failures == [
        "n/JobSet/j: .spec.replicatedJobs[0].env[1].value: tjc '2' / upstream '3'",
        "n/Secret/s: only tjc made it"]
    changed["spec"]["replicatedJobs"][0]["env"] = env[::-1]
    assert sbs.compare({"k": jobset}, {"k": changed}).env_order_only == ["k"]
