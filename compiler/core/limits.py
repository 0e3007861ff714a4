"""What the cluster could never run: refused once, with a reason, instead of retried forever.

JobSet runs each replicated job as an Indexed Job, whose `parallelism` the API server caps at
100,000 (batch validation, `maxParallelismForIndexedJob`): a larger one would make JobSet's
controller fail on every try. The pods of one TrainJob together are capped at 150,000, the
largest cluster Kubernetes is tested for ("Considerations for large clusters": at most 150,000
pods in total). JobSet's webhook refuses a JobSet whose generated Job or Pod names would
be over 63 characters. Only integers are multiplied: no check allocates in proportion to a count.
(The MPI hostfile, the one object whose size grows with the node count, is sized before it is
built by the compiler itself, `compiler/core/plugins/mpi/`.) Called by the compile for every
JobSet it makes, so validate, render, krm, the controller and the library refuse the same
TrainJobs; the controller gives such a refusal the Failed reason `REASON`. Pure.
"""

from __future__ import annotations

from typing import Any

from compiler.common.diagnostics import Diagnostic, Path, error
from compiler.common.jsondata import Obj

REASON = "TrainJobUnschedulable"
RULES = frozenset({"TJC-JOBSET-NAME-TOO-LONG", "TJC-JOBSET-PARALLELISM", "TJC-JOBSET-PODS"})
NUM_NODES: Path = ("spec", "trainer", "numNodes")
MAX_INDEXED_PARALLELISM = 100_000
MAX_PODS = 150_000


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


MAX_NAME = 63  # a DNS-1035 label: what JobSet's webhook requires of Job and Pod names


def _long_names(jobset: Obj) -> str | None:
    """JobSet's webhook (v0.12 `ValidateCreate`) refuses a JobSet whose longest Job name
    (`<jobset>-<replicated job>-<last job index>`) or, for an Indexed Job (the default) with
    completions, longest Pod name (`...-<last pod index>-abcde`) is over 63 characters: a
    TrainJob name of up to 63 characters passes Trainer's own checks and then could never
    get its JobSet."""
    name = str((jobset.get("metadata") or {}).get("name", ""))
    for job in (jobset.get("spec") or {}).get("replicatedJobs") or []:
        spec = ((job.get("template") or {}).get("spec")) or {}
        longest = f"{name}-{job.get('name')}-{_count(job.get('replicas')) - 1}"
        if len(longest) > MAX_NAME:
            return (f"JobSet name is too long, job names generated for this JobSet will exceed "
                    f"{MAX_NAME} characters ({longest}); the JobSet webhook refuses it: "
                    "shorten the TrainJob name")
        completions = spec.get("completions")
        # JobSet's defaulting makes a Job without a completionMode Indexed first
        if (spec.get("completionMode") or "Indexed") == "Indexed" and \
                isinstance(completions, int) and not isinstance(completions, bool):
            pod = f"{longest}-{completions - 1}-abcde"
            if len(pod) > MAX_NAME:
                return (f"JobSet name is too long, pod names generated for this JobSet will "
                        f"exceed {MAX_NAME} characters ({pod}); the JobSet webhook refuses "
                        "it: shorten the TrainJob name")
    return None


def check(objects: list[Obj]) -> Diagnostic | None:
    """Why the compiled JobSet could never run (an error about the TrainJob), or None."""
    for obj in objects:
        if obj.get("kind") != "JobSet":
            continue
        too_long = _long_names(obj)
        if too_long is not None:
            return error("TJC-JOBSET-NAME-TOO-LONG", too_long, ("metadata", "name"))
        counted = _counts(obj)
        if counted is not None:
            return counted
    return None


def _counts(obj: Obj) -> Diagnostic | None:
    total = 0
    for job in (obj.get("spec") or {}).get("replicatedJobs") or []:
        spec = ((job.get("template") or {}).get("spec")) or {}
        parallelism = _count(spec.get("parallelism"))
        if parallelism > MAX_INDEXED_PARALLELISM:
            return error("TJC-JOBSET-PARALLELISM", f"replicated job {job.get('name')!r} would "
                         f"run {parallelism} pods at once; an Indexed Job may run at most "
                         f"{MAX_INDEXED_PARALLELISM}", NUM_NODES)
        total += _count(job.get("replicas")) * max(parallelism, 0)
    if total > MAX_PODS:
        return error("TJC-JOBSET-PODS", f"the JobSet would run {total} pods; more than "
                     f"{MAX_PODS} for one TrainJob cannot be scheduled (the largest cluster "
                     "Kubernetes supports)", NUM_NODES)
    return None
