"""The fields a JobSet release knows: what its API server would drop from a JobSet spec.

A Kubeflow Trainer release embeds the JobSet API of the JobSet release it is built with in its
runtime CRDs, so a runtime the Trainer CRD takes can still hold a field an older JobSet drops
silently when the controller creates the JobSet (`volumeClaimPolicies` before v0.11): its
JobSet CRD prunes what it does not declare. `dropped(spec, jobset)` lists those fields of a
JobSet spec, checked against that JobSet release's CRD (generated from its pinned module:
`compiler.kube.releases`). `known(jobset)` says whether tjc holds a JobSet release's schema.
Pure apart from reading the packaged schemas once.
"""

from __future__ import annotations

from typing import Any

from compiler.common.diagnostics import Path
from compiler.kube.releases import jobset_release, jobset_versions
from compiler.kube.structural import UNKNOWN_RULE, sanitize

_API = "jobset.x-k8s.io/v1alpha2"


def known(jobset: str) -> bool:
    """Whether the schema of the JobSet release `jobset` is held."""
    return jobset_release(jobset) is not None


def versions() -> tuple[str, ...]:
    """The JobSet releases whose schemas are held, oldest first."""
    return jobset_versions()


def dropped(spec: Any, jobset: str) -> list[Path]:
    """The paths (below the spec) of the fields of a JobSet spec the JobSet release `jobset`
    does not declare, outermost first; ValueError for a release whose schema is not held."""
    release = jobset_release(jobset)
    if release is None:
        raise ValueError(f"no schema of JobSet {jobset}; known: {', '.join(versions())}")
    if not isinstance(spec, dict):
        return []
    doc = {"apiVersion": _API, "kind": "JobSet", "metadata": {"name": "x"}, "spec": spec}
    _, found = sanitize("JobSet", doc, subject="document", release=release)
    return [d.path[1:] for d in found if d.rule == UNKNOWN_RULE and d.path[:1] == ("spec",)]
