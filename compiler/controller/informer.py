"""List+watch one resource into a local store, calling back on every change.

An informer lists the resource (all namespaces, or one), then watches from the list's
resourceVersion; a 410 Gone, a dropped connection or any error lists again (after a short
pause when it failed). The store holds the latest object per (namespace, name) for the
reconciler to read without a request. Runs in its own thread.

A `relevant` test can keep a change from reaching the handler (the store still takes it):
the TrainJob informer ignores changes to a TrainJob's status alone, which are the
controller's own status patches. An informer can watch only the objects a label selector
picks, and keep only their metadata (`slim`): the ConfigMap and Secret informers, which only
say which TrainJob to reconcile, do both, so that no Secret's data and no other ConfigMap of
the cluster is held in memory. Another `keep` function can cut objects down to the fields the
controller reads (the JobSet informer keeps a JobSet's identity, `spec.suspend` and status).
No store keeps `metadata.managedFields`, which nothing reads and which is often the largest
part of an object.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator

from compiler.common.jsondata import Obj
from compiler.controller.kube import Gone, Kube, Resource

Key = tuple[str, str]
Handler = Callable[[str, Obj], None]
Changed = Callable[[Obj, Obj], bool]
Keep = Callable[[Obj], Obj]
LOG = logging.getLogger("tjc.controller")


def key_of(obj: Obj) -> Key:
    """(namespace, name) of an object."""
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


class Informer:
    """A watched resource and its store."""

    def __init__(self, kube: Kube, res: Resource, namespace: str | None,
                 handler: Handler, *, selector: str | None = None, slim: bool = False,
                 relevant: Changed | None = None, keep: Keep | None = None) -> None:
        self.kube, self.res, self.namespace, self.handler = kube, res, namespace, handler
        self.selector, self.slim, self.relevant = selector, slim, relevant
        self.keep = keep
        self._store: dict[Key, Obj] = {}
        self._lock = threading.Lock()
        self.synced = threading.Event()
        self._stop = threading.Event()
        self.relists = 0

    def get(self, namespace: str, name: str) -> Obj | None:
        """The stored object, or None."""
        with self._lock:
            return self._store.get((namespace, name))

    def items(self) -> list[Obj]:
        """Every stored object."""
        with self._lock:
            return list(self._store.values())

    def start(self) -> threading.Thread:
        """Run in a daemon thread."""
        thread = threading.Thread(target=self.run, name=f"informer-{self.res.plural}",
                                  daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        """Stop after the current watch ends."""
        self._stop.set()

    def run(self) -> None:
        """List, then watch, until stopped."""
        while not self._stop.is_set():
            try:
                version = self._relist()
                self._watch(version)
            except Gone:
                LOG.info("%s: watch expired, listing again", self.res.plural)
            except Exception as exc:  # API and connection errors alike (they vary by version)
                if not self._stop.is_set():
                    LOG.warning("%s: %s: %s; listing again", self.res.plural,
                                type(exc).__name__, exc)
                self._stop.wait(1.0)

    def _relist(self) -> str:
        items, version = self.kube.list(self.res, self.namespace, **self._query())
        items = [self._kept(item) for item in items]
        fresh = {key_of(item): item for item in items}
        with self._lock:
            gone = [obj for key, obj in self._store.items() if key not in fresh]
            self._store = fresh
        self.relists += 1
        for obj in gone:
            self.handler("DELETED", obj)
        for item in items:
            self.handler("ADDED", item)
        self.synced.set()
        return version

    def _watch(self, version: str) -> None:
        while not self._stop.is_set():
            for kind, raw in self._events(version):
                obj = self._kept(raw)
                meta = obj.get("metadata") or {}
                version = str(meta.get("resourceVersion") or version)
                if kind == "BOOKMARK":
                    continue
                with self._lock:
                    if kind == "DELETED":
                        old = self._store.pop(key_of(obj), None)
                    else:
                        old, self._store[key_of(obj)] = self._store.get(key_of(obj)), obj
                if kind == "MODIFIED" and old is not None and self.relevant is not None and \
                        not self.relevant(old, obj):
                    continue
                self.handler(kind, obj)
                if self._stop.is_set():
                    return

    def _events(self, version: str) -> Iterator[tuple[str, Obj]]:
        if self.selector:
            return self.kube.watch(self.res, self.namespace, version, selector=self.selector)
        return self.kube.watch(self.res, self.namespace, version)

    def _query(self) -> dict[str, str]:
        """The label selector argument of list and watch, when there is one."""
        return {"selector": self.selector} if self.selector else {}

    def _kept(self, obj: Obj) -> Obj:
        """What the store keeps of an object: all of it, its identity (slim), or what `keep`
        gives; never its managedFields."""
        meta = obj.get("metadata")
        if isinstance(meta, dict) and "managedFields" in meta:
            obj = {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
        if self.keep is not None:
            return self.keep(obj)
        if not self.slim:
            return obj
        return {k: obj[k] for k in ("apiVersion", "kind", "metadata") if k in obj}


def jobset_fields(obj: Obj) -> Obj:
    """What the controller reads of a JobSet: its identity and owner (metadata), whether it
    is suspended, and its status; not the pod templates."""
    kept: Obj = {k: obj[k] for k in ("apiVersion", "kind", "metadata", "status") if k in obj}
    spec = obj.get("spec")
    if isinstance(spec, dict) and "suspend" in spec:
        kept["spec"] = {"suspend": spec["suspend"]}
    return kept
