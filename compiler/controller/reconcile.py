"""One reconcile of one TrainJob, in upstream's order (reference §6).

managedBy → resolve the runtime (snapshot first) → compile with the core (which admits the
TrainJob) → policy packs (`admission`) → server-side apply each object (a running JobSet is not
rewritten, an existing PodGroup or SSH Secret is kept) → Suspended condition → status from the
JobSet → active deadline → status patch when changed. A TrainJob the compiler or a policy
refuses gets a Failed condition with the diagnostics instead of a retry loop. Errors become a
Warning event and a retry with backoff.
"""

from __future__ import annotations

import contextlib
import copy
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from compiler.compile import compile_trainjob
from compiler.context import CompileOptions, SSHKeySource
from compiler.controller import admission, snapshot
from compiler.controller import status as st
from compiler.controller.informer import Informer
from compiler.controller.kube import (
    JOBSET,
    SECRET,
    TRAINJOB,
    ApiError,
    Kube,
    resource_of,
)

if TYPE_CHECKING:
    from compiler.policy.engine import PolicySet

Obj = dict[str, Any]
Key = tuple[str, str]
MANAGED_BY = "trainer.kubeflow.org/trainjob-controller"
INVALID_REASON = "TrainJobInvalid"
SUPPORTED_RUNTIMES = ("TrainingRuntime.trainer.kubeflow.org",
                      "ClusterTrainingRuntime.trainer.kubeflow.org")


class ReconcileError(Exception):
    """Creating or updating the TrainJob's objects failed (retried with backoff)."""


@dataclass
class Result:
    """When to look at the TrainJob again regardless of events (an active deadline)."""

    requeue_after: float | None = None


class Reconciler:
    """Reconciles TrainJobs against the API server, reading watched objects from stores."""

    def __init__(self, kube: Kube, trainjobs: Informer, jobsets: Informer,
                 ssh_keys: SSHKeySource, events: Callable[[Obj, str, str], None],
                 clock: Callable[[], float] = time.time,
                 policies: PolicySet | None = None) -> None:
        self.kube, self.trainjobs, self.jobsets = kube, trainjobs, jobsets
        self.ssh_keys, self.events, self.clock = ssh_keys, events, clock
        self.policies = policies

    def reconcile(self, key: Key) -> Result:
        """One pass over one TrainJob; raises ReconcileError/ApiError to be retried."""
        trainjob = self.trainjobs.get(*key)
        if trainjob is None:
            return Result()
        if (trainjob.get("spec") or {}).get("managedBy") not in (None, MANAGED_BY):
            return Result()
        now = self.clock()
        before = trainjob.get("status") or {}
        status = copy.deepcopy(before)
        failure: Exception | None = None
        jobset: Obj | None = None
        if not st.finished(trainjob):
            try:
                jobset = self._apply_objects(trainjob, status, now)
            except (ReconcileError, ApiError, snapshot.SnapshotError) as exc:
                failure = exc
                self.events(trainjob, "TrainJobResourcesCreationFailed", _event_note(exc))
        st.set_suspended(status, trainjob, now)
        status = self._jobset_status(trainjob, status, jobset, now)
        requeue = self._deadline(trainjob, status, now)
        if status != before:
            self.kube.patch_status(TRAINJOB, key[0], key[1], {"status": status})
        if failure is not None:
            raise ReconcileError(str(failure)) from failure
        return Result(requeue)

    def _apply_objects(self, trainjob: Obj, status: Obj, now: float) -> Obj | None:
        key = runtime_key(trainjob)
        if key not in SUPPORTED_RUNTIMES:
            st.set_condition(status, {"type": "Failed", "status": "True",
                                      "reason": "TrainingRuntimeNotSupported",
                                      "message": f"unsupported runtime: {key}"}, now)
            return None
        runtime = snapshot.resolve(self.kube, trainjob)
        meta = trainjob["metadata"]
        mpi = ((runtime.get("spec") or {}).get("mlPolicy") or {}).get("mpi") is not None
        keys = self.ssh_keys if mpi and not self._exists(SECRET, meta, "-mpi-ssh-auth") \
            else None
        result = compile_trainjob(trainjob, runtime, options=CompileOptions(ssh_keys=keys))
        errors = admission.refusals(result, trainjob, runtime, self.policies)
        if errors:
            st.set_condition(status, {"type": "Failed", "status": "True",
                                      "reason": INVALID_REASON,
                                      "message": admission.message(errors)}, now)
            return None
        applied: Obj | None = None
        for obj in result.objects:
            if self._keep_existing(trainjob, obj):
                continue
            out = self.kube.apply(obj)
            if obj.get("kind") == "JobSet":
                applied = out
        return applied

    def _exists(self, res: Any, meta: Obj, suffix: str) -> bool:
        return self.kube.get(res, meta["namespace"], meta["name"] + suffix) is not None

    def _keep_existing(self, trainjob: Obj, obj: Obj) -> bool:
        """Objects upstream does not rewrite: a running JobSet, an existing PodGroup while
        the TrainJob runs. (An existing SSH Secret never gets here: without keys the compile
        emits none.)"""
        suspended = (trainjob.get("spec") or {}).get("suspend") is True
        meta = obj.get("metadata") or {}
        kind = obj.get("kind")
        if kind == "JobSet":
            current = self.jobsets.get(meta.get("namespace", ""), meta.get("name", ""))
            return current is not None and not suspended and \
                (current.get("spec") or {}).get("suspend") is not True
        return kind == "PodGroup" and not suspended and \
            self.kube.get(resource_of(obj), meta["namespace"], meta["name"]) is not None

    def _jobset_status(self, trainjob: Obj, status: Obj, applied: Obj | None,
                       now: float) -> Obj:
        meta = trainjob["metadata"]
        jobset = self.jobsets.get(meta["namespace"], meta["name"]) or applied
        if jobset is None:
            return status
        return st.from_jobset(status, jobset, now)

    def _deadline(self, trainjob: Obj, status: Obj, now: float) -> float | None:
        seconds = (trainjob.get("spec") or {}).get("activeDeadlineSeconds")
        if not isinstance(seconds, int) or seconds <= 0 or st.is_true(status, "Complete") or \
                st.is_true(status, "Failed") or st.is_true(status, "Suspended"):
            return None
        start = st.deadline_start(trainjob, status)
        if start is None:
            return None
        remaining = start + seconds - now
        if remaining > 0:
            return max(remaining, 1.0)
        st.set_condition(status, {"type": "Failed", "status": "True",
                                  "reason": st.DEADLINE_REASON,
                                  "message": "TrainJob exceeded its active deadline"}, now)
        meta = trainjob["metadata"]
        # upstream only logs a failed delete; the JobSet goes with the TrainJob anyway
        with contextlib.suppress(ApiError):
            self.kube.delete(JOBSET, meta["namespace"], meta["name"])
        return None


def runtime_key(trainjob: Obj) -> str:
    """The runtime registry key, `GroupKind.String()`: `Kind.group`, or `Kind` alone."""
    ref = (trainjob.get("spec") or {}).get("runtimeRef") or {}
    ref = ref if isinstance(ref, dict) else {}
    kind = str(ref.get("kind") or "ClusterTrainingRuntime")
    group = ref.get("apiGroup", "trainer.kubeflow.org")
    return f"{kind}.{group}" if group else kind


def _event_note(exc: Exception) -> str:
    text = str(exc)
    note = f"TrainJob resources reconciliation failed: {text[:950]}"
    return note + " ..." if len(text.encode()) > 950 else note
