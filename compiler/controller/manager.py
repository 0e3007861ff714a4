"""`tjc controller`: informers, the work queue, workers, leader election and probes.

The TrainJob informer queues every TrainJob it sees (but not for a change of its status
alone); the JobSet, ConfigMap, Secret and
PodGroup informers (PodGroups only where the cluster serves their API) queue the TrainJob
that controls the object. The ConfigMap and Secret informers watch only objects labelled
`trainer.kubeflow.org/trainjob-name` (the controller labels what it makes) and keep only their
metadata. Workers take keys one at a time per
key, reconcile, and requeue on failure (backoff) or at an active deadline. With
`--leader-elect` nothing is reconciled until this replica holds the Lease, and the process
exits when it loses it (a restarted replica starts clean). With `--policy-reports`, what the
admission and policies say of every TrainJob and runtime is kept in a PolicyReport per
namespace (`reports`, in a thread of its own).
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
import uuid
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from compiler.common.jsondata import Obj
from compiler.common.records import dataclass
from compiler.controller.informer import Informer, jobset_fields, key_of
from compiler.controller.kube import (
    CONFIGMAP,
    COSCHEDULING_PODGROUP,
    JOBSET,
    SECRET,
    TRAINJOB,
    VOLCANO_PODGROUP,
    ApiError,
    Kube,
    Resource,
    client_from_kubeconfig,
)
from compiler.controller.leader import LeaderElector
from compiler.controller.livepolicy import LivePolicies
from compiler.controller.metrics import Metrics, serve
from compiler.controller.ownership import OWNED_LABEL
from compiler.controller.reconcile import Reconciler, reason_of
from compiler.controller.reports import PolicyReports
from compiler.controller.workqueue import WorkQueue

if TYPE_CHECKING:
    from compiler.policy.engine import PolicySet

LOG = logging.getLogger("tjc.controller")
EVENTS = Resource("events.k8s.io", "v1", "events", "Event")
REPORTER = "trainer-trainjob-controller"


@dataclass
class Options:
    """The command line of `tjc controller`."""

    kubeconfig: str | None = None
    namespace: str | None = None
    workers: int = 4
    metrics_port: int = 8080
    leader_elect: bool = False
    leader_namespace: str = "default"
    lease_name: str = "tjc-controller"
    policies: PolicySet | LivePolicies | None = None
    policy_reports: bool = False


def owner_key(obj: Obj) -> tuple[str, str] | None:
    """The (namespace, name) of the TrainJob that controls an object, if one does."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == "TrainJob" and \
                str(ref.get("apiVersion", "")).startswith("trainer.kubeflow.org/"):
            return key_of(obj)[0], str(ref.get("name"))
    return None


def beyond_status(old: Obj, new: Obj) -> bool:
    """Whether a TrainJob changed in more than its status: a change of the status alone (the
    controller's own status patch) needs no new reconcile."""
    return _without_status(old) != _without_status(new)


def _without_status(obj: Obj) -> Obj:
    meta = {k: v for k, v in (obj.get("metadata") or {}).items()
            if k not in ("resourceVersion", "managedFields")}
    return {**{k: v for k, v in obj.items() if k != "status"}, "metadata": meta}


class Controller:
    """The running controller."""

    def __init__(self, kube: Kube, options: Options) -> None:
        from compiler.io import sshkeys

        self.kube, self.options = kube, options
        self.queue = WorkQueue()
        self.metrics = Metrics(self.queue.depth)
        self.stop = threading.Event()
        ns = options.namespace
        self.reports: PolicyReports | None = None
        self.trainjobs = Informer(kube, TRAINJOB, ns, self._trainjob, relevant=beyond_status)
        if options.policy_reports:
            self.reports = PolicyReports(kube, self.trainjobs, options.policies)
        self.owned = [Informer(kube, JOBSET, ns, self._owned, keep=jobset_fields), *(
            Informer(kube, res, ns, self._owned, selector=OWNED_LABEL, slim=True)
            for res in (CONFIGMAP, SECRET))]
        self.reconciler = Reconciler(kube, self.trainjobs, self.owned[0], sshkeys.generated(),
                                     self._event, policies=options.policies,
                                     configmaps=self.owned[1])
        self.identity = f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"
        if isinstance(options.policies, LivePolicies) and options.policies.report is None:
            options.policies.report = self._settings_event

    def _served(self, res: Resource) -> bool:
        """Whether the cluster has this API (PodGroups exist only with their scheduler);
        asked again until the API server answers."""
        while not self.stop.is_set():
            try:
                self.kube.list(res, self.options.namespace)
                return True
            except ApiError as exc:
                if exc.status == 404:
                    return False
                LOG.warning("%s: %s; asking again", res.plural, exc)
                self.stop.wait(1.0)
        return False

    def _trainjob(self, kind: str, obj: Obj) -> None:
        self.queue.add(key_of(obj))
        if self.reports is not None:
            self.reports.trainjob_event(kind, obj)

    def _owned(self, _: str, obj: Obj) -> None:
        key = owner_key(obj)
        if key is not None:
            self.queue.add(key)

    def _event(self, trainjob: Obj, reason: str, note: str) -> None:
        meta = trainjob["metadata"]
        self._warn({"apiVersion": trainjob.get("apiVersion"), "kind": "TrainJob",
                    "name": meta["name"], "namespace": meta["namespace"],
                    "uid": meta.get("uid")}, "Reconciling", reason, note)

    def _settings_event(self, note: str) -> None:
        """The policy settings did not reload (`livepolicy` has logged it): a Warning event
        on the controller's own Pod ($POD_NAME in $POD_NAMESPACE, as the deployment sets
        them), where the platform team looks; without them the log line is all."""
        pod, namespace = os.environ.get("POD_NAME"), os.environ.get("POD_NAMESPACE")
        if pod and namespace:
            self._warn({"apiVersion": "v1", "kind": "Pod", "name": pod,
                        "namespace": namespace}, "Reloading", "PolicySettingsNotReloaded",
                       note[:1000])

    def _warn(self, regarding: Obj, action: str, reason: str, note: str) -> None:
        """A Warning event (events.k8s.io/v1) about an object; a failure to write it is
        logged, never raised."""
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        namespace, name = regarding["namespace"], regarding["name"]
        try:
            self.kube.create(EVENTS, namespace, {
                "apiVersion": "events.k8s.io/v1", "kind": "Event",
                "metadata": {"name": f"{name}.{time.time_ns():x}", "namespace": namespace},
                "eventTime": now, "reportingController": REPORTER,
                "reportingInstance": self.identity, "action": action, "reason": reason,
                "note": note, "type": "Warning", "regarding": regarding})
        except ApiError as exc:
            LOG.warning("event for %s/%s: %s", namespace, name, exc)

    def work(self) -> None:
        """One worker: reconcile keys until the queue shuts down."""
        while (key := self.queue.get()) is not None:
            start = time.monotonic()
            failed = False
            try:
                result = self.reconciler.reconcile(key)
                self.queue.forget(key)
                if result.requeue_after is not None:
                    self.queue.add_after(key, result.requeue_after)
            except Exception as exc:  # every failure is retried, none stops the worker
                failed = True
                delay = self.queue.add_rate_limited(key)
                LOG.warning("reconcile %s/%s failed (retry in %.2fs): %s", *key, delay,
                            reason_of(exc))
            finally:
                self.metrics.observe(time.monotonic() - start, failed)
                self.queue.done(key)

    def run(self) -> int:
        """Run until a signal (0) or the loss of the leader lease (1)."""
        if self.options.metrics_port >= 0:
            try:
                serve(self.metrics, self.options.metrics_port)
            except OSError as exc:  # the port is taken, or privileged
                raise StartupError(f"cannot serve metrics on port {self.options.metrics_port}:"
                                   f" {exc.strerror or exc}") from exc
        elector = None
        if self.options.leader_elect:
            elector = LeaderElector(self.kube, self.options.leader_namespace,
                                    self.options.lease_name, self.identity)
            if not elector.acquire(self.stop):
                return 0
            threading.Thread(target=elector.keep, args=(self.stop,), daemon=True).start()
        self.owned += [Informer(self.kube, res, self.options.namespace, self._owned)
                       for res in (COSCHEDULING_PODGROUP, VOLCANO_PODGROUP) if self._served(res)]
        for informer in [self.trainjobs, *self.owned]:
            informer.start()
        for informer in [self.trainjobs, *self.owned]:
            while not informer.synced.wait(0.5):
                if self.stop.is_set():
                    return 0
        workers = [threading.Thread(target=self.work, name=f"worker-{i}", daemon=True)
                   for i in range(max(1, self.options.workers))]
        for worker in workers:
            worker.start()
        if self.reports is not None:
            self.reports.start()
        self.metrics.ready.set()
        LOG.info("controller running (%s)", self.options.namespace or "all namespaces")
        code = 0
        while not self.stop.wait(0.5):
            if elector is not None and elector.lost.is_set():
                code = 1
                break
        self._shutdown(workers)
        return code

    def _shutdown(self, workers: list[threading.Thread]) -> None:
        """Let the workers finish the keys they hold, then stop watching."""
        self.queue.shutdown()
        for worker in workers:
            worker.join(10)
        for informer in [self.trainjobs, *self.owned]:
            informer.stop()
        if self.reports is not None:
            self.reports.stop()


class StartupError(RuntimeError):
    """The controller cannot start (a usage error, exit 2)."""


def run(options: Options) -> int:
    """Build the controller from the options and run it; SIGTERM/SIGINT stop it."""
    kube = Kube(client_from_kubeconfig(options.kubeconfig))
    if options.leader_elect and options.leader_namespace == "default":
        options.leader_namespace = os.environ.get("POD_NAMESPACE", "default")
    controller = Controller(kube, options)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: controller.stop.set())
    return controller.run()
