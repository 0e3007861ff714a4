"""What the cluster could never run: refused once, with a reason, instead of retried forever.

JobSet runs each replicated job as an Indexed Job, whose `parallelism` the API server caps at
100,000 (batch validation, `maxParallelismForIndexedJob`): a larger one would make JobSet's
controller fail on every try. The pods of one TrainJob together are capped at 150,000, the
largest cluster Kubernetes is tested for ("Considerations for large clusters": at most 150,000
pods in total). Only integers are multiplied: no check allocates in proportion to a count.
(The MPI hostfile, the one object whose size grows with the node count, is sized before it is
built by the compiler itself, `compiler/core/plugins/mpi.py`.) Called by `reconcile` before
anything is written; pure.
"""

from __future__ import annotations

from typing import Any

from compiler.common.jsondata import Obj

REASON = "TrainJobUnschedulable"
MAX_INDEXED_PARALLELISM = 100_000
MAX_PODS = 150_000


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def check(objects: list[Obj]) -> str | None:
    """Why the compiled JobSet could never run, or None when it could."""
    for obj in objects:
        if obj.get("kind") != "JobSet":
            continue
        total = 0
        for job in (obj.get("spec") or {}).get("replicatedJobs") or []:
            spec = ((job.get("template") or {}).get("spec")) or {}
            parallelism = _count(spec.get("parallelism"))
            if parallelism > MAX_INDEXED_PARALLELISM:
                return (f"replicated job {job.get('name')!r} would run {parallelism} pods at "
                        f"once; an Indexed Job may run at most {MAX_INDEXED_PARALLELISM}")
            total += _count(job.get("replicas")) * max(parallelism, 0)
        if total > MAX_PODS:
            return (f"the JobSet would run {total} pods; the controller refuses more than "
                    f"{MAX_PODS} for one TrainJob (the largest cluster Kubernetes supports)")
    return None
