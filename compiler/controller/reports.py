"""`tjc controller --policy-reports`: one PolicyReport per namespace, kept current.

Every TrainJob the controller watches, and every TrainingRuntime and ClusterTrainingRuntime
(watched here), is judged as the admission webhook judges it (`judge`: the controller's own
admission and policy functions, the settings `livepolicy` holds, the day of the judgement; a
started TrainJob against its recorded snapshot, as the reconcile compiles it), when it is
seen, when it changes, when a runtime it uses changes, and again for all when the policy
settings load a new version or the day turns (exemptions expire). What a TrainJob's compile
found in its runtime's template is the runtime's to report: its own judgement finds it. The
findings become results (`compiler.io.policyreport`); each namespace whose results
changed gets its report applied (server-side apply, the report whole) at most every
`interval` seconds, and the ClusterTrainingRuntimes a `ClusterPolicyReport`. A report that
cannot be written (its CRD not installed yet) is logged once and tried again every
`interval`, while its namespace has objects.

Judging runs in a thread of its own, never in a reconcile: reports never slow the building
of JobSets. Started and fed by `manager`.
"""

from __future__ import annotations

import datetime
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from compiler.common.diagnostics import Diagnostic, ObjectRef, refused, with_object
from compiler.common.jsondata import Obj
from compiler.controller.informer import Informer
from compiler.controller.judge import Judge, Runtimes
from compiler.controller.kube import ApiError, Kube
from compiler.controller.livepolicy import LivePolicies
from compiler.io.policyreport import Subject, checked_rules, report

if TYPE_CHECKING:
    from compiler.policy.engine import PolicySet

LOG = logging.getLogger("tjc.controller")
Key = tuple[str, str, str]  # kind, namespace, name
_RUNTIME_KINDS = ("TrainingRuntime", "ClusterTrainingRuntime")


class PolicyReports:
    """The findings per object, and the reports they make."""

    def __init__(self, kube: Kube, trainjobs: Informer,
                 policies: PolicySet | LivePolicies | None,
                 clock: Callable[[], float] = time.time, interval: float = 2.0) -> None:
        self.kube, self.trainjobs, self.policies = kube, trainjobs, policies
        self.clock, self.interval = clock, interval
        self.runtimes = Runtimes(kube, handler=self._runtime_event)
        self.judge = Judge(self.runtimes, policies, clock)
        self.found: dict[Key, tuple[Subject, list[Diagnostic]]] = {}
        self._pending: set[Key] = set()
        self._dirty: set[str] = set()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._judged_with: tuple[int, datetime.date] | None = None
        self._failed: dict[str, str] = {}  # namespace: why its report was not written
        self.applied = 0  # reports written

    # -- events ----------------------------------------------------------------------

    def trainjob_event(self, kind: str, obj: Obj) -> None:
        """A TrainJob seen, changed or gone (the controller's informer)."""
        self._event(kind, "TrainJob", obj)

    def _runtime_event(self, kind: str, obj: Obj) -> None:
        self._event(kind, str(obj.get("kind") or ""), obj)
        meta = obj.get("metadata") or {}
        with self._lock:  # the TrainJobs that use it are judged again too
            self._pending.update(
                ("TrainJob", *k) for k in _users(self.trainjobs, str(obj.get("kind") or ""),
                                                 str(meta.get("namespace") or ""),
                                                 str(meta.get("name") or "")))
        self._wake.set()

    def _event(self, event: str, kind: str, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        key = (kind, str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        with self._lock:
            if event == "DELETED":
                gone = self.found.pop(key, None)
                if gone is not None:
                    self._dirty.add(gone[0].namespace)
                self._pending.discard(key)
            else:
                self._pending.add(key)
        self._wake.set()

    # -- the loop --------------------------------------------------------------------

    def start(self) -> None:
        self.runtimes.start()
        threading.Thread(target=self.run, name="policy-reports", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        self.runtimes.stop()

    def run(self) -> None:
        """Judge what is pending, write what changed, until stopped."""
        while not self._stop.is_set():
            self._wake.wait(self.interval)
            self._wake.clear()
            self.step()

    def step(self) -> None:
        """One pass: judge what is pending (all of it after new settings or a new day),
        then write the reports that changed."""
        self._settings_changed()
        with self._lock:
            pending, self._pending = self._pending, set()
        for key in sorted(pending, key=lambda k: (k[0] == "TrainJob", k)):
            self._judge(key)  # (runtimes first: a TrainJob's passes read its runtime's)
        self.flush()

    def _settings_changed(self) -> None:
        """After a new version of the policy settings, or at a new day: all again."""
        generation = 0
        if isinstance(self.policies, LivePolicies):
            generation = self.policies.current()[1]
        now = (generation, _day(self.clock()))
        if now != self._judged_with:
            self._judged_with = now
            with self._lock:
                self._pending.update(self.found)
                self._pending.update(("TrainJob", *k) for k in _keys(self.trainjobs))

    def _judge(self, key: Key) -> None:
        obj = self._current(key)
        if obj is None:
            return
        try:
            found = self.judge.judge({"uid": "", "operation": "UPDATE", "object": obj,
                                      "oldObject": obj if key[0] == "TrainJob" else None})
        except Exception as exc:  # an API error reading a runtime, a policy over its limits
            LOG.warning("policy report: cannot judge %s %s/%s: %s", *key, exc)
            return
        subject = self._subject(key, obj, found)
        ref = subject.ref
        own = [d for d in with_object(found, ref)
               if d.obj == ref or (d.obj is not None and d.obj.kind == "JobSet")]
        with self._lock:
            before = self.found.get(key)
            self.found[key] = (subject, own)
            if before is None or before[0] != subject or before[1] != own:
                self._dirty.add(subject.namespace)

    def _current(self, key: Key) -> Obj | None:
        kind, namespace, name = key
        if kind == "TrainJob":
            return self.trainjobs.get(namespace, name)
        informer = self.runtimes.informers.get(kind)
        return informer.get(namespace, name) if informer is not None else None

    def _subject(self, key: Key, obj: Obj, found: list[Diagnostic]) -> Subject:
        kind, namespace, name = key
        meta = obj.get("metadata") or {}
        ref = ObjectRef(kind, name, namespace)
        rules: tuple[str, ...] = ()
        policies = self._policy_set()
        if policies is not None:
            own = policies.applicable(kind)
            if kind == "TrainJob":
                runtime = self.found.get(_runtime_key(obj))
                at_runtime = {d.rule for d in runtime[1]} if runtime is not None else set()
                rules = checked_rules(own, policies.applicable("JobSet"),
                                      not refused([d for d in found if d.obj in (None, ref)]),
                                      at_runtime)
            else:
                rules = tuple(own)
        return Subject(ref, str(obj.get("apiVersion") or ""), str(meta.get("uid") or ""),
                       rules)

    def _policy_set(self) -> PolicySet | None:
        live = self.policies
        return live.current()[0] if isinstance(live, LivePolicies) else live

    def flush(self) -> None:
        """Write the report of every namespace whose results changed."""
        with self._lock:
            dirty, self._dirty = self._dirty, set()
            by_scope = {ns: [v for v in self.found.values() if v[0].namespace == ns]
                        for ns in dirty}
        policies = self._policy_set()
        severities = {r.id: r.severity for r in policies.rules()} if policies else {}
        for namespace, entries in sorted(by_scope.items()):
            made = report(namespace, [s for s, _ in entries],
                          [d for _, f in entries for d in f], severities)
            try:
                self.kube.apply(made)
                self.applied += 1
                self._failed.pop(namespace, None)
            except ApiError as exc:
                if self._failed.get(namespace) != str(exc):
                    LOG.warning("policy report of %s not written: %s",
                                namespace or "the cluster", exc)
                self._failed[namespace] = str(exc)
                if entries:  # (tried again at the next pass; a namespace emptied is let go)
                    with self._lock:
                        self._dirty.add(namespace)


def _day(now: float) -> datetime.date:
    return datetime.datetime.fromtimestamp(now, datetime.timezone.utc).date()


def _key(obj: Obj) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _keys(trainjobs: Informer) -> list[tuple[str, str]]:
    return [_key(obj) for obj in trainjobs.items()]


def _runtime_key(trainjob: Obj) -> Key:
    ref = (trainjob.get("spec") or {}).get("runtimeRef") or {}
    ref = ref if isinstance(ref, dict) else {}
    kind = str(ref.get("kind") or "ClusterTrainingRuntime")
    namespace = str((trainjob.get("metadata") or {}).get("namespace") or "") \
        if kind == "TrainingRuntime" else ""
    return kind, namespace, str(ref.get("name") or "")


def _users(trainjobs: Informer, kind: str, namespace: str, name: str
           ) -> list[tuple[str, str]]:
    """The TrainJobs that reference this runtime."""
    if kind not in _RUNTIME_KINDS:
        return []
    return [_key(obj) for obj in trainjobs.items()
            if _runtime_key(obj) == (kind, namespace, name)]
