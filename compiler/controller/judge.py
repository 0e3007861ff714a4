"""What the admission webhook decides for one object: the controller's verdict, at the door.

A TrainJob goes through the one pipeline (`compiler.pipeline.session`, through the
controller's `admission.session` and `admission.judge`): admission as the API server would,
with `old`, the previous version, on an update (transition and immutability rules), the
compile, and the policy packs with the settings `livepolicy` holds at this moment and the day
of this decision (exemptions expire); a finding on the compiled JobSet names the input field
that wrote it (`compiler.policy.check`). Its runtime is the one the controller compiles it
with: on an update of a TrainJob whose runtime snapshot the controller recorded, that snapshot
(while it is still the one recorded); else the live runtime, from the runtime informers'
stores (a GET when a store has not seen it yet), read as a snapshot holds it
(`snapshot.body`). A runtime that is not there is upstream's webhook error.

A TrainingRuntime or ClusterTrainingRuntime is judged by its own admission (with `old` on an
update) and, when that passes, by the packs (`admission.runtime_verdict`), as the pipeline
judges the runtime of every TrainJob. An update of an object being deleted (its finalizers
taken away) is not judged: a policy changed since must not keep it from going.

The prepared runtime and the pipeline session (each runtime checked once in it) are kept per
runtime version, settings and day (`memo`), as the reconcile keeps them. Called by
`webhookserver`, and by `reports` (the controller's policy reports judge every object so);
reads the cluster only through `Kube` and the informers' stores.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from compiler.common.diagnostics import Diagnostic, ObjectRef
from compiler.common.jsondata import Obj
from compiler.controller import admission, memo, ownership, snapshot
from compiler.controller.informer import Informer
from compiler.controller.kube import CLUSTER_RUNTIME, CONFIGMAP, TRAINING_RUNTIME, Kube
from compiler.controller.livepolicy import LivePolicies
from compiler.core.admission import admit
from compiler.core.compile import prepare_runtime
from compiler.core.context import CompileOptions
from compiler.core.resolve import RUNTIME_KINDS

if TYPE_CHECKING:
    from compiler.policy.engine import PolicySet

KINDS = ("TrainJob", *RUNTIME_KINDS)


class Runtimes:
    """The runtimes in the cluster: informers' stores, and a GET for one not seen yet."""

    def __init__(self, kube: Kube, watch: bool = True,
                 handler: Callable[[str, Obj], None] = lambda *_: None) -> None:
        self.kube = kube
        self.informers = {
            res.kind: Informer(kube, res, None, handler)
            for res in (TRAINING_RUNTIME, CLUSTER_RUNTIME)} if watch else {}

    def start(self) -> None:
        """Start watching (returns at once; `synced` says when the stores are filled)."""
        for informer in self.informers.values():
            informer.start()

    def synced(self) -> bool:
        """Whether every store has been filled once."""
        return all(i.synced.is_set() for i in self.informers.values())

    def stop(self) -> None:
        for informer in self.informers.values():
            informer.stop()

    def get(self, kind: str, namespace: str, name: str) -> Obj | None:
        """The runtime of this kind (a TrainingRuntime of `namespace`), or None."""
        res = TRAINING_RUNTIME if kind == "TrainingRuntime" else CLUSTER_RUNTIME
        scope = namespace if res.namespaced else ""
        informer = self.informers.get(res.kind)
        found = informer.get(scope, name) if informer is not None else None
        return found if found is not None else self.kube.get(res, scope or None, name)


class Judge:
    """Decides AdmissionReview requests for TrainJobs and runtimes."""

    def __init__(self, runtimes: Runtimes, policies: PolicySet | LivePolicies | None,
                 clock: Callable[[], float] = time.time) -> None:
        self.runtimes, self.policies, self.clock = runtimes, policies, clock
        self.memo = memo.Memo()

    def judge(self, request: Obj) -> list[Diagnostic]:
        """Every diagnostic of the request's object (errors refuse it)."""
        obj, old = request["object"], request.get("oldObject")
        kind = obj.get("kind")
        if kind not in KINDS or (old is not None and _deleting(obj)):
            return []
        policies, generation = self._policies()
        today = datetime.datetime.fromtimestamp(self.clock(), datetime.timezone.utc).date()
        judged = f"{generation}@{today.isoformat()}"
        if kind == "TrainJob":
            spec_only = {k: v for k, v in obj.items() if k != "status"}
            return self._trainjob(spec_only, old, policies, today, judged)
        return self._runtime(obj, old, policies, today)

    def _policies(self) -> tuple[PolicySet | None, int]:
        live = self.policies
        if live is None:
            return None, 0
        return live.current() if isinstance(live, LivePolicies) else (live, 0)

    def _trainjob(self, trainjob: Obj, old: Obj | None, policies: PolicySet | None,
                  today: datetime.date, judged: str) -> list[Diagnostic]:
        found = self._runtime_of(trainjob, old)
        if found is None:  # upstream's webhook: the runtime must exist first
            return admit(trainjob, None, old)
        runtime, digest = found
        prepared = self.memo.derived("prepared", digest, lambda: prepare_runtime(runtime))
        session = self.memo.derived("session", f"{digest}/{judged}", lambda: admission.session(
            runtime, prepared, policies, today))
        return admission.judge(session, trainjob, CompileOptions(), old)[1]

    def _runtime_of(self, trainjob: Obj, old: Obj | None) -> tuple[Obj, str] | None:
        """The runtime the controller compiles the TrainJob with, and its digest."""
        if old is not None:
            recorded = self._snapshot(trainjob, old)
            if recorded is not None:
                return recorded
        ref = (trainjob.get("spec") or {}).get("runtimeRef")
        ref = ref if isinstance(ref, dict) else {}
        kind = str(ref.get("kind") or "ClusterTrainingRuntime")
        name = ref.get("name")
        meta = trainjob.get("metadata") or {}
        if kind not in RUNTIME_KINDS or not isinstance(name, str) or not name or \
                ref.get("apiGroup", "trainer.kubeflow.org") != "trainer.kubeflow.org":
            return None
        live = self.runtimes.get(kind, str(meta.get("namespace") or ""), name)
        if live is None:
            return None
        text = snapshot.body(live)
        digest = snapshot.digest(text)
        runtime = self.memo.runtime(digest, text)
        return (runtime, digest) if runtime is not None else None

    def _snapshot(self, trainjob: Obj, old: Obj) -> tuple[Obj, str] | None:
        """The runtime snapshot the controller recorded for the TrainJob, while the
        ConfigMap is its own and still holds what was recorded; else None."""
        want = snapshot.recorded(old)
        meta = old.get("metadata") or {}
        if want is None or not meta.get("namespace") or not meta.get("name"):
            return None
        found = self.runtimes.kube.get(CONFIGMAP, str(meta["namespace"]),
                                       snapshot.name_of(old))
        if found is None or not ownership.controlled_by(found, str(meta.get("uid") or "")):
            return None
        text = (found.get("data") or {}).get("runtime")
        if snapshot.digest(text) != want:
            return None
        try:
            snapshot.check_identity(trainjob, self.memo.runtime(want, text) or {},
                                    snapshot.wrap_of(trainjob))
        except snapshot.SnapshotError:
            return None
        runtime = self.memo.runtime(want)
        return (runtime, want) if runtime is not None else None

    def _runtime(self, runtime: Obj, old: Obj | None, policies: PolicySet | None,
                 today: datetime.date) -> list[Diagnostic]:
        return admission.runtime_verdict(runtime, old, policies, today)


def _ref(obj: Obj) -> ObjectRef:
    meta = obj.get("metadata") or {}
    return ObjectRef(str(obj.get("kind", "")), str(meta.get("name", "")),
                     str(meta.get("namespace") or ""))


def _deleting(obj: Obj) -> bool:
    meta = obj.get("metadata")
    return isinstance(meta, dict) and bool(meta.get("deletionTimestamp"))
