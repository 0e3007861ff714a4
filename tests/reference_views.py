"""`compiler.policy.views.policy_input` as it was before it became one pass over the
replicatedJobs (three views walked separately, then the totals), kept so the tests can show
the fast one builds the same input, key for key and in the same order."""

from __future__ import annotations

from compiler.common.jsondata import Obj, get_path
from compiler.core.context import ANCESTOR_LABEL
from compiler.policy.views import _JOBS, _dict, _gpus, _list, _meta, quantities

Path = tuple[str | int, ...]


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
                                **quantities(container),
                                "pod": pod})
    return out


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


def policy_input(kind: str, obj: Obj, trainjob: Obj | None = None) -> Obj:
    """The `input` a rule sees for one document (a JobSet also gets its TrainJob)."""
    jobs = replicated_jobs(kind, obj)
    out: Obj = {"kind": kind, "object": obj, "pods": pods(jobs), "containers": containers(jobs)}
    if kind == "JobSet":
        out["trainJob"] = _meta(trainjob or {})
        out["summary"] = summary(jobs)
    return out
