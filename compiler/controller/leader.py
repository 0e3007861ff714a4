"""Lease-based leader election (coordination.k8s.io/v1), so one replica reconciles.

A candidate takes the Lease when it is free or expired (create, or update with the Lease's
resourceVersion: the API server refuses a stale update, so two candidates never both win),
then renews it; a leader that cannot renew before the lease expires stops leading.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from compiler.controller.kube import LEASE, ApiError, Kube

LOG = logging.getLogger("tjc.controller")


def _micro(now: float) -> str:
    return datetime.fromtimestamp(now, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _seconds(text: Any) -> float:
    if not isinstance(text, str):
        return 0.0
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class LeaderElector:
    """Acquires and renews one Lease."""

    def __init__(self, kube: Kube, namespace: str, name: str, identity: str,
                 lease_seconds: int = 15, renew_seconds: float = 10.0,
                 retry_seconds: float = 2.0, clock: Callable[[], float] = time.time) -> None:
        self.kube, self.namespace, self.name, self.identity = kube, namespace, name, identity
        self.lease_seconds, self.renew_seconds = lease_seconds, renew_seconds
        self.retry_seconds, self.clock = retry_seconds, clock
        self.lost = threading.Event()

    def try_acquire(self) -> bool:
        """Take or renew the Lease once; True when this candidate holds it."""
        now = self.clock()
        lease = self.kube.get(LEASE, self.namespace, self.name)
        spec = {"holderIdentity": self.identity, "leaseDurationSeconds": self.lease_seconds,
                "renewTime": _micro(now)}
        try:
            if lease is None:
                spec["acquireTime"] = _micro(now)
                self.kube.create(LEASE, self.namespace, {
                    "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": self.name, "namespace": self.namespace},
                    "spec": spec})
                return True
            current = lease.get("spec") or {}
            holder = current.get("holderIdentity")
            expires = _seconds(current.get("renewTime")) + \
                float(current.get("leaseDurationSeconds") or self.lease_seconds)
            if holder not in (None, "", self.identity) and expires > now:
                return False
            if holder != self.identity:
                spec["acquireTime"] = _micro(now)
                spec["leaseTransitions"] = int(current.get("leaseTransitions") or 0) + 1
            lease["spec"] = {**current, **spec}
            self.kube.update(LEASE, self.namespace, lease)
            return True
        except ApiError as exc:
            if exc.status == 409:
                return False
            raise

    def acquire(self, stop: threading.Event) -> bool:
        """Block until this candidate leads (True) or `stop` is set (False)."""
        while not stop.is_set():
            try:
                if self.try_acquire():
                    LOG.info("became leader (%s)", self.identity)
                    return True
            except ApiError as exc:
                LOG.warning("leader election: %s", exc)
            stop.wait(self.retry_seconds)
        return False

    def keep(self, stop: threading.Event) -> None:
        """Renew until stopped; set `lost` when the lease could not be kept."""
        last = self.clock()
        while not stop.wait(self.renew_seconds / 2):
            try:
                if not self.try_acquire():
                    LOG.error("another replica holds the leader lease")
                    self.lost.set()
                    return
                last = self.clock()
                continue
            except ApiError as exc:
                LOG.warning("leader election: %s", exc)
            if self.clock() - last > self.lease_seconds:
                LOG.error("lost the leader lease")
                self.lost.set()
                return
