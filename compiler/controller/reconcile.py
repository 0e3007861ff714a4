"""One reconcile of one TrainJob, in upstream's order (reference §6).

managedBy → resolve the runtime (the snapshot, verified against the digest recorded in the
status, first) → compile with the core (which admits the TrainJob) → policy packs
(`admission`: the settings `livepolicy` holds now, exemptions expiring on the reconcile's
day) → write each object the TrainJob owns (`objects`: a running JobSet is not
rewritten, an existing PodGroup or SSH Secret is kept) → Suspended condition → status from the
JobSet this TrainJob controls → active deadline → status patch when changed. A TrainJob the
compiler or a policy refuses, or one the cluster could never run (`limits`), gets a Failed
condition with the diagnostics instead of a retry loop; one whose snapshot was altered, or whose
names are taken by objects it does not own (`ownership`), gets a `Refused` condition and is
looked at again later. Errors become a Warning event and a retry with backoff. What a
reconcile verified (the snapshot, a compile that passed) is remembered (`memo`): a TrainJob
whose objects are all there and kept is not compiled again for a change of its JobSet's status.
"""

from __future__ import annotations

import contextlib
import copy
import datetime
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from compiler.common.jsondata import Obj
from compiler.common.records import dataclass
from compiler.controller import admission, memo, objects, ownership, snapshot, sshsecret
from compiler.controller import status as st
from compiler.controller.informer import Informer
from compiler.controller.kube import (
    JOBSET,
    TRAINJOB,
    ApiError,
    Kube,
)
from compiler.controller.livepolicy import LivePolicies
from compiler.core import limits
from compiler.core.compile import prepare_runtime
from compiler.core.context import CompileOptions, SSHKeySource

if TYPE_CHECKING:
    from compiler.policy.engine import PolicySet

LOG = logging.getLogger("tjc.controller")

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
                 policies: PolicySet | LivePolicies | None = None,
                 configmaps: objects.Store | None = None) -> None:
        self.kube, self.trainjobs, self.jobsets = kube, trainjobs, jobsets
        self.ssh_keys, self.events, self.clock = ssh_keys, events, clock
        self.policies, self.configmaps = policies, configmaps
        self.memo = memo.Memo()

    def reconcile(self, key: Key) -> Result:
        """One pass over one TrainJob; raises ReconcileError/ApiError to be retried."""
        trainjob = self.trainjobs.get(*key)
        if trainjob is None:
            self.memo.forget(key)
            return Result()
        trainjob = self.memo.latest(key, trainjob)
        if (trainjob.get("spec") or {}).get("managedBy") not in (None, MANAGED_BY):
            return Result()
        now = self.clock()
        before = trainjob.get("status") or {}
        status = copy.deepcopy(before)
        failure: Exception | None = None
        jobset: Obj | None = None
        requeue: float | None = None
        if st.finished(trainjob):
            self.memo.forget(key, gone=False)
        else:
            try:
                jobset = self._apply_objects(trainjob, status, now)
                ownership.clear(status, now)
            except ownership.Refused as exc:
                requeue = self._refuse(trainjob, before, status, exc, now)
            except Exception as exc:  # an API error, or a runtime of a shape
                # the compiler cannot take: an event the tenant sees, then a retry with backoff
                failure = exc
                self.events(trainjob, "TrainJobResourcesCreationFailed", _event_note(
                    exc if isinstance(exc, (ReconcileError, ApiError, snapshot.SnapshotError))
                    else RuntimeError(reason_of(exc))))
        st.set_suspended(status, trainjob, now)
        status = self._jobset_status(trainjob, status, jobset, now)
        deadline = self._deadline(trainjob, status, now, jobset)
        requeue = deadline if requeue is None else min(requeue, deadline or requeue)
        if status != before:
            self.memo.remember_patch(key, trainjob, self.kube.patch_status(
                TRAINJOB, key[0], key[1], _status_patch(trainjob, status)))
        if failure is not None:
            raise ReconcileError(reason_of(failure)) from failure
        return Result(requeue)

    def _apply_objects(self, trainjob: Obj, status: Obj, now: float) -> Obj | None:
        key = runtime_key(trainjob)
        if key not in SUPPORTED_RUNTIMES:
            st.set_condition(status, {"type": "Failed", "status": "True",
                                      "reason": "TrainingRuntimeNotSupported",
                                      "message": f"unsupported runtime: {key}"}, now)
            return None
        runtime, digest = self._runtime(trainjob)
        snapshot.record(status, trainjob, digest, now)
        mpi = ((runtime.get("spec") or {}).get("mlPolicy") or {}).get("mpi") is not None
        keys = self.ssh_keys if mpi and sshsecret.check(self.kube, trainjob) is None else None
        # The status is the controller's own (written through the status subresource, which
        # the API server's create and update ignore): admission looks at what the user wrote.
        spec_only = {k: v for k, v in trainjob.items() if k != "status"}
        policies, judged = self._policies(now)
        content = memo.content_key(spec_only, digest, keys is not None, judged)
        passed = self.memo.verdict(_key(trainjob), content)
        if passed is not None and \
                objects.all_kept(self.kube, self.jobsets, trainjob, passed.objects):
            return None  # built from this very input, and everything is kept as it is
        prepared = self.memo.derived("prepared", digest, lambda: prepare_runtime(runtime))
        today = _day(now)
        session = self.memo.derived("session", f"{digest}/{judged}", lambda: admission.session(
            runtime, prepared, policies, today))
        result, said = admission.judge(session, spec_only, CompileOptions(ssh_keys=keys))
        errors = admission.errors(said)
        if errors:
            unschedulable = all(d.rule in limits.RULES for d in errors)
            st.set_condition(status, {"type": "Failed", "status": "True",
                                      "reason": limits.REASON if unschedulable
                                      else INVALID_REASON,
                                      "message": admission.message(errors)}, now)
            return None
        written: dict[str, Obj] = {}
        try:
            objects.write_all(self.kube, self.jobsets, trainjob, list(result.objects), written)
        finally:  # a Secret made before a later write failed is still recorded as ours
            if "Secret" in written:
                sshsecret.record(status, written["Secret"], now)
        self.memo.remember_verdict(_key(trainjob), content, list(result.objects))
        return written.get("JobSet")

    def _policies(self, now: float) -> tuple[PolicySet | None, str]:
        """The policy set to judge with now, and what a verdict reached with it depends on:
        the settings' version and the day (exemptions expire), empty without policies."""
        live = self.policies
        if live is None:
            return None, ""
        policies, generation = live.current() if isinstance(live, LivePolicies) else (live, 0)
        return policies, f"{generation}@{_day(now).isoformat()}"

    def _runtime(self, trainjob: Obj) -> tuple[Obj, str]:
        """The runtime and the snapshot's digest: remembered while the informer's copy of the
        snapshot is the very one verified (and the status records no other digest), else
        `snapshot.resolve`."""
        meta, key = trainjob["metadata"], _key(trainjob)
        uid = str(meta.get("uid") or "")
        if self.configmaps is not None:
            seen = self.configmaps.get(meta["namespace"], snapshot.name_of(trainjob))
            known = self.memo.snapshot(key, uid, seen)
            runtime = self.memo.runtime(known.digest) if known is not None else None
            if known is not None and runtime is not None and \
                    snapshot.recorded(trainjob) in (None, known.digest):
                snapshot.check_identity(trainjob, runtime, snapshot.wrap_of(trainjob))
                return runtime, known.digest
        runtime, digest, configmap = snapshot.resolve(self.kube, trainjob)
        self.memo.remember_snapshot(key, uid, configmap, digest)
        self.memo.runtime(digest, (configmap.get("data") or {}).get("runtime"))
        return runtime, digest

    def _refuse(self, trainjob: Obj, before: Obj, status: Obj, refusal: ownership.Refused,
                now: float) -> float:
        """A Refused condition, and a Warning event when it is new; when to look again."""
        meta = trainjob["metadata"]
        LOG.warning("TrainJob %s/%s refused: %s", meta["namespace"], meta["name"],
                    refusal.message)
        if ownership.refusal_changed(before, refusal):
            self.events(trainjob, refusal.reason, refusal.message[:1000])
        ownership.set_refused(status, refusal, now)
        return ownership.RETRY_SECONDS

    def _jobset_status(self, trainjob: Obj, status: Obj, applied: Obj | None,
                       now: float) -> Obj:
        """Status only from the JobSet this TrainJob (by uid) controls: not from one of an
        earlier TrainJob of the same name, nor from one someone else made."""
        jobset = objects.owned_jobset(self.jobsets, trainjob) or applied
        if jobset is None:
            return status
        return st.from_jobset(status, jobset, now)

    def _deadline(self, trainjob: Obj, status: Obj, now: float,
                  applied: Obj | None = None) -> float | None:
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
        # upstream only logs a failed delete; the JobSet goes with the TrainJob anyway. Only
        # the TrainJob's own JobSet is deleted (the uid is a precondition of the delete).
        owned = objects.owned_jobset(self.jobsets, trainjob) or applied
        if owned is not None:
            with contextlib.suppress(ApiError):
                self.kube.delete(JOBSET, meta["namespace"], meta["name"],
                                 uid=owned["metadata"].get("uid"))
        return None


def _day(now: float) -> datetime.date:
    """The UTC date of a clock reading: the day an exemption's `expires` is judged on."""
    return datetime.datetime.fromtimestamp(now, datetime.timezone.utc).date()


def _key(trainjob: Obj) -> Key:
    meta = trainjob["metadata"]
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def runtime_key(trainjob: Obj) -> str:
    """The runtime registry key, `GroupKind.String()`: `Kind.group`, or `Kind` alone."""
    ref = (trainjob.get("spec") or {}).get("runtimeRef") or {}
    ref = ref if isinstance(ref, dict) else {}
    kind = str(ref.get("kind") or "ClusterTrainingRuntime")
    group = ref.get("apiGroup", "trainer.kubeflow.org")
    return f"{kind}.{group}" if group else kind


def reason_of(exc: BaseException) -> str:
    """What went wrong, never empty: the message, else the exception's type and repr."""
    text = str(exc).strip()
    if text and isinstance(exc, (ReconcileError, ApiError, snapshot.SnapshotError)):
        return text
    return f"{type(exc).__name__}: {text or repr(exc)}"


def _event_note(exc: Exception) -> str:
    text = str(exc) if str(exc).strip() else reason_of(exc)
    note = f"TrainJob resources reconciliation failed: {text[:950]}"
    return note + " ..." if len(text.encode()) > 950 else note


def _status_patch(trainjob: Obj, status: Obj) -> Obj:
    """The status merge patch, with the resourceVersion it was computed from as a precondition:
    a status computed from a stale copy (the informer may lag behind the last patch) is refused
    with a conflict and recomputed, instead of dropping the conditions written since (the
    recorded snapshot digest and SSH Secret uid among them)."""
    patch: Obj = {"status": status}
    version = (trainjob.get("metadata") or {}).get("resourceVersion")
    if version:
        patch["metadata"] = {"resourceVersion": version}
    return patch
