"""What a policy rule sees of one document: the `input` of the policy contract.

Besides the document itself (`object`), the views a rule needs most: every pod template
(`pods`) and every container (`containers`) with its field path inside the document, and for a
compiled JobSet the TrainJob it came from and totals over the job (`summary`). The same rule
then reads a runtime and a JobSet alike. Pure functions of the data.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from compiler.common.jsondata import Obj, get_path
from compiler.core.context import ANCESTOR_LABEL
from compiler.kube.quantity import QuantityError, canonical_string, parse

Path = tuple[str | int, ...]

_JOBS = {"JobSet": ("spec",), "TrainingRuntime": ("spec", "template", "spec"),
         "ClusterTrainingRuntime": ("spec", "template", "spec")}


def _dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def replicated_jobs(kind: str, obj: Obj) -> list[tuple[Path, Obj]]:
    """(path, replicatedJob) of a JobSet or a runtime's JobSet template."""
    base = _JOBS.get(kind)
    spec = get_path(obj, *base) if base is not None else None
    if base is None or not isinstance(spec, dict):
        return []
    return [((*base, "replicatedJobs", i), job)
            for i, job in enumerate(_list(spec.get("replicatedJobs"))) if isinstance(job, dict)]


def _pod_path(job_path: Path) -> Path:
    return (*job_path, "template", "spec", "template", "spec")


def pods(jobs: list[tuple[Path, Obj]]) -> list[Obj]:
    """Every pod template spec, with its path and replicatedJob name."""
    out = []
    for path, job in jobs:
        spec = get_path(job, "template", "spec", "template", "spec")
        ancestor = get_path(job, "template", "metadata", "labels", ANCESTOR_LABEL)
        if isinstance(spec, dict):
            out.append({"path": list(_pod_path(path)), "jobPath": list(path),
                        "job": str(job.get("name", "")),
                        "ancestor": ancestor if isinstance(ancestor, str) else "", "spec": spec})
    return out


def containers(jobs: list[tuple[Path, Obj]]) -> list[Obj]:
    """Every container and init container of every pod template."""
    out = []
    for path, job in jobs:
        ancestor = get_path(job, "template", "metadata", "labels", ANCESTOR_LABEL)
        pod = get_path(job, "template", "spec", "template", "spec")
        for field, init in (("initContainers", True), ("containers", False)):
            for i, container in enumerate(_list(_dict(pod).get(field))):
                if isinstance(container, dict):
                    out.append({"path": [*_pod_path(path), field, i],
                                "job": str(job.get("name", "")),
                                "ancestor": ancestor if isinstance(ancestor, str) else "",
                                "init": init, "container": container,
                                **_quantities(container),
                                "pod": pod})
    return out


@lru_cache(maxsize=4096)
def _canonical(value: Any) -> str:
    try:
        return canonical_string(parse(str(value)))
    except (QuantityError, ValueError, TypeError):
        return str(value)


def _quantities(container: Obj) -> Obj:
    """The container's requests and limits as canonical quantity strings (comparable)."""
    resources = _dict(container.get("resources"))
    return {field: {str(k): _canonical(str(v)) for k, v in _dict(resources.get(field)).items()}
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


def summary(jobs: list[tuple[Path, Obj]]) -> Obj:
    """Totals of a JobSet: trainer nodes, GPUs over all pods, replicatedJobs."""
    nodes, gpus, count = 0, 0, 0
    for _, job in jobs:
        count += 1
        spec = _dict(get_path(job, "template", "spec"))
        pod_count = int(job.get("replicas") or 1) * int(spec.get("parallelism") or 1)
        pod = _dict(get_path(job, "template", "spec", "template", "spec"))
        gpus += pod_count * sum(_gpus(c) for c in _list(pod.get("containers"))
                                if isinstance(c, dict))
        if get_path(job, "template", "metadata", "labels", ANCESTOR_LABEL) == "trainer":
            nodes += pod_count
    return {"numNodes": nodes, "gpus": gpus, "replicatedJobs": count}


def _meta(obj: Obj) -> Obj:
    meta = _dict(obj.get("metadata"))
    return {"name": str(meta.get("name", "")), "namespace": str(meta.get("namespace") or ""),
            "labels": {str(k): str(v) for k, v in _dict(meta.get("labels")).items()},
            "annotations": {str(k): str(v) for k, v in _dict(meta.get("annotations")).items()}}


def policy_input(kind: str, obj: Obj, trainjob: Obj | None = None) -> Obj:
    """The `input` a rule sees for one document (a JobSet also gets its TrainJob)."""
    jobs = replicated_jobs(kind, obj)
    out: Obj = {"kind": kind, "object": obj, "pods": pods(jobs), "containers": containers(jobs)}
    if kind == "JobSet":
        out["trainJob"] = _meta(trainjob or {})
        out["summary"] = summary(jobs)
    return out
