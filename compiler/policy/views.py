"""What a policy rule sees of one document: the `input` of the policy contract.

Besides the document itself (`object`), the views a rule needs most: every pod template
(`pods`, with its metadata) and every container (`containers`) with its field path inside the
document, the namespace its Pods run in with that Namespace's labels (`namespace`, from the
Namespace objects of the inputs), and for a compiled JobSet the TrainJob it came from and
totals over the job (`summary`). The same rule then reads a runtime and a JobSet alike. Pure
functions of the data.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from compiler.common.jsondata import Obj, get_at
from compiler.core.context import ANCESTOR_LABEL
from compiler.kube.quantity import QuantityError, canonical_string, parse

Path = tuple[str | int, ...]

_LISTS = (("initContainers", True), ("containers", False))  # a pod's container lists, init?
_JOBS = {"JobSet": ("spec",), "TrainingRuntime": ("spec", "template", "spec"),
         "ClusterTrainingRuntime": ("spec", "template", "spec")}


def _dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


@lru_cache(maxsize=4096)
def canonical(value: Any) -> str:
    """A quantity's canonical string, as `policy_input` writes requests and limits (the
    value itself when it is no quantity)."""
    try:
        return canonical_string(parse(str(value)))
    except (QuantityError, ValueError, TypeError):
        return str(value)


def quantities(container: Obj) -> Obj:
    """The container's requests and limits as canonical quantity strings (comparable), as
    `policy_input` gives them."""
    resources = _dict(container.get("resources"))
    return {field: {str(k): canonical(str(v)) for k, v in _dict(resources.get(field)).items()}
            for field in ("requests", "limits")}


@lru_cache(maxsize=4096)
def _whole(value: str) -> int | None:
    """A quantity's integer part (None: not a quantity); every JobSet repeats a few."""
    try:
        return int(parse(value).value)
    except (QuantityError, ValueError, TypeError):
        return None


def _gpus(container: Obj) -> int:
    resources = _dict(container.get("resources"))
    for field in ("limits", "requests"):
        found = [_whole(str(q)) for name, q in _dict(resources.get(field)).items()
                 if "gpu" in name.lower()]
        if found:
            return 0 if None in found else sum(n for n in found if n is not None)
    return 0


def _meta(obj: Obj) -> Obj:
    meta = _dict(obj.get("metadata"))
    return {"name": str(meta.get("name", "")), "namespace": str(meta.get("namespace") or ""),
            "labels": {str(k): str(v) for k, v in _dict(meta.get("labels")).items()},
            "annotations": {str(k): str(v) for k, v in _dict(meta.get("annotations")).items()}}


def policy_input(kind: str, obj: Obj, trainjob: Obj | None = None,
                 namespaces: dict[str, dict[str, str]] | None = None) -> Obj:
    """The `input` a rule sees for one document (a JobSet also gets its TrainJob): every pod
    template, every container, the namespace with its labels (from `namespaces`, by name)
    and (for a JobSet) the totals, in one pass over the replicatedJobs."""
    out, totals = _input(kind, obj)
    owner = _meta(obj)
    if kind == "JobSet":
        out["trainJob"] = _meta(trainjob or {})
        out["summary"] = {"numNodes": totals[0], "gpus": totals[1], "replicatedJobs": totals[2]}
        owner = out["trainJob"] if out["trainJob"]["namespace"] else owner
    name = "" if kind == "ClusterTrainingRuntime" else owner["namespace"]
    labels = (namespaces or {}).get(name) if name else None
    out["namespace"] = {"name": name, "labels": dict(labels or {})}
    return out


def _input(kind: str, obj: Obj) -> tuple[Obj, list[int]]:
    pods: list[Obj] = []
    containers: list[Obj] = []
    totals = [0, 0, 0]  # trainer nodes, GPUs over all pods, replicatedJobs
    base = _JOBS.get(kind)
    spec = get_at(obj, base) if base is not None else None
    if base is not None and isinstance(spec, dict):
        jobs = spec.get("replicatedJobs")
        for i, job in enumerate(jobs if isinstance(jobs, list) else ()):
            if isinstance(job, dict):
                _job(kind, (*base, "replicatedJobs", i), job, (pods, containers), totals)
    return {"kind": kind, "object": obj, "pods": pods, "containers": containers}, totals


def _parts(job: Obj) -> tuple[Any, Any, str, Obj]:
    """A replicatedJob's Job spec, pod spec, ancestor label ("" if none) and pod template
    metadata ({} if none)."""
    template = job.get("template")
    if not isinstance(template, dict):
        return None, None, "", {}
    job_spec = template.get("spec")
    pod_template = job_spec.get("template") if isinstance(job_spec, dict) else None
    pod = pod_template.get("spec") if isinstance(pod_template, dict) else None
    pod_meta = pod_template.get("metadata") if isinstance(pod_template, dict) else None
    meta = template.get("metadata")
    labels = meta.get("labels") if isinstance(meta, dict) else None
    ancestor = labels.get(ANCESTOR_LABEL) if isinstance(labels, dict) else None
    return job_spec, pod, ancestor if isinstance(ancestor, str) else "", _dict(pod_meta)


def _job(kind: str, path: Path, job: Obj, views: tuple[list[Obj], list[Obj]],
         totals: list[int]) -> None:
    """One replicatedJob's pod template and containers, and (for a JobSet) its share of the
    totals, as `policy_input` has them."""
    pods, containers = views
    job_spec, pod, ancestor, pod_meta = _parts(job)
    name = str(job.get("name", ""))
    pod_path = (*path, "template", "spec", "template", "spec")
    if isinstance(pod, dict):
        pods.append({"path": list(pod_path), "jobPath": list(path), "job": name,
                     "ancestor": ancestor, "metadata": pod_meta, "spec": pod})
        for field, init in _LISTS:
            for i, container in enumerate(_list(pod.get(field))):
                if isinstance(container, dict):
                    containers.append({"path": [*pod_path, field, i], "job": name,
                                       "ancestor": ancestor, "init": init,
                                       "container": container, **quantities(container),
                                       "pod": pod})
    if kind == "JobSet":
        totals[2] += 1
        pod_count = int(job.get("replicas") or 1) * int(_dict(job_spec).get("parallelism") or 1)
        totals[1] += pod_count * sum(_gpus(c) for c in _list(_dict(pod).get("containers"))
                                     if isinstance(c, dict))
        if ancestor == "trainer":
            totals[0] += pod_count
