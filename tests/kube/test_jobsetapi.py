"""What each JobSet release's API server keeps of a JobSet spec (`compiler.kube.jobsetapi`),
from the CRD of the JobSet module each Trainer release is pinned with."""

from __future__ import annotations

import pytest

from compiler.kube import jobsetapi

SPEC = {"replicatedJobs": [{"name": "node", "template": {"spec": {"template": {"spec": {
    "containers": [{"name": "node", "image": "busybox:1.36"}]}}}}}],
    "volumeClaimPolicies": [{"templates": [{"metadata": {"name": "initializer"}}]}]}


def test_each_jobset_release_keeps_what_its_crd_declares() -> None:
    assert jobsetapi.versions() == ("v0.10.1", "v0.11.1", "v0.12.0")
    assert jobsetapi.dropped(SPEC, "v0.10.1") == [("volumeClaimPolicies",)]  # new in v0.11
    assert jobsetapi.dropped(SPEC, "v0.11.1") == jobsetapi.dropped(SPEC, "v0.12.0") == []
    assert jobsetapi.known("v0.11.1") and not jobsetapi.known("v0.9.0")
    with pytest.raises(ValueError, match=r"no schema of JobSet v0\.9\.0"):
        jobsetapi.dropped(SPEC, "v0.9.0")
