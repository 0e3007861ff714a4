"""What the controller remembers between reconciles of a TrainJob, to skip work whose answer
cannot have changed. Most reconciles are for a change of the JobSet's status; before this, each
one read the snapshot again, compiled, admitted and ran the policy packs, to keep a JobSet that
is running anyway.

- **Snapshots.** The snapshot ConfigMap the controller wrote or verified, by its uid and
  resourceVersion, with its digest. The API server gives every change of an object a new
  resourceVersion, so while the ConfigMap informer's copy has that uid and resourceVersion the
  content is the one verified, and neither a GET nor the digest check is repeated; any other
  copy (edited, replaced, unlabelled, not seen yet) takes the full path of `snapshot.resolve`.
  The informer's store is updated before the reconcile its event queues, so an edit is seen by
  that reconcile. The runtime is parsed, prepared for the compile (`prepare_runtime`) and
  checked by the policy packs once per digest (and settings version and day).
- **Verdicts.** For a TrainJob (its uid and everything but its status and resourceVersion),
  the snapshot's digest, whether an SSH key was to be made, and the version of the policy
  settings and the day it was judged on (new settings, or an exemption's expiry, may change
  the verdict: it is reached again, as after a restart): the objects (kind, name) it
  compiled to, once the compile, admission, policy packs and limits passed and the objects were
  written. When every such object exists, is the TrainJob's own and would be kept as it is
  (`objects.all_kept`), nothing is compiled; otherwise the compile runs as before.

- **The controller's own status writes.** The TrainJob a status patch returned, by the
  resourceVersion it was patched from: while the informer's copy still has that
  resourceVersion (it has not seen the patch yet), the reconcile starts from what the patch
  returned, instead of computing a status from the stale copy that the API server refuses
  (the patch has the resourceVersion as a precondition) and retrying.

One entry per TrainJob (a newer one replaces it), dropped when the TrainJob is gone or
finished; the parsed runtimes are few (one per runtime version). Thread-safe.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

import yaml

from compiler.common.jsondata import Obj
from compiler.common.records import dataclass

T = TypeVar("T")

Key = tuple[str, str]
Identity = tuple[str, str, str, str]  # apiVersion, kind, namespace, name
RUNTIMES_KEPT = 32


@dataclass(frozen=True)
class Snapshot:
    """A snapshot ConfigMap verified (or written) for one TrainJob."""

    trainjob_uid: str
    uid: str
    resource_version: str
    digest: str


@dataclass(frozen=True)
class Verdict:
    """A compile that passed, and the objects it wrote."""

    key: str
    objects: tuple[Identity, ...]


def content_key(trainjob: Obj, digest: str, new_key: bool, policies: str = "") -> str:
    """What a compile's outcome depends on: the TrainJob as the user wrote it (not its status,
    resourceVersion or managedFields), the runtime's digest, whether a key pair is made, and
    the policy settings' version and day it was judged on (`policies`)."""
    meta = {k: v for k, v in (trainjob.get("metadata") or {}).items()
            if k not in ("resourceVersion", "managedFields")}
    spec = {**{k: v for k, v in trainjob.items() if k != "status"}, "metadata": meta}
    text = json.dumps([spec, digest, new_key, policies], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def identity(obj: Obj) -> Identity:
    """(apiVersion, kind, namespace, name) of an object."""
    meta = obj.get("metadata") or {}
    return (str(obj.get("apiVersion", "")), str(obj.get("kind", "")),
            str(meta.get("namespace", "")), str(meta.get("name", "")))


class Memo:
    """Snapshots and verdicts per TrainJob, runtimes per digest."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._snapshots: dict[Key, Snapshot] = {}
        self._verdicts: dict[Key, Verdict] = {}
        self._runtimes: OrderedDict[str, Obj] = OrderedDict()
        self._derived: OrderedDict[tuple[str, str], Any] = OrderedDict()
        self._patched: dict[Key, tuple[str, Obj]] = {}

    def snapshot(self, key: Key, trainjob_uid: str, seen: Obj | None) -> Snapshot | None:
        """The snapshot remembered for this TrainJob when `seen` (the informer's copy of the
        ConfigMap) is still exactly the one verified."""
        meta = (seen or {}).get("metadata") or {}
        with self._lock:
            found = self._snapshots.get(key)
        if found is None or found.trainjob_uid != trainjob_uid or not found.uid or \
                meta.get("uid") != found.uid or \
                str(meta.get("resourceVersion") or "") != found.resource_version:
            return None
        return found

    def remember_snapshot(self, key: Key, trainjob_uid: str, configmap: Obj,
                          digest: str) -> None:
        """The ConfigMap just written or verified (its uid and resourceVersion as returned)."""
        meta = configmap.get("metadata") or {}
        uid, version = str(meta.get("uid") or ""), str(meta.get("resourceVersion") or "")
        if not uid or not version:
            return
        with self._lock:
            self._snapshots[key] = Snapshot(trainjob_uid, uid, version, digest)

    def runtime(self, digest: str, text: str | None = None) -> Obj | None:
        """The runtime of a snapshot, parsed once per digest (`text` parses it when new);
        callers must not change it."""
        with self._lock:
            found = self._runtimes.get(digest)
            if found is not None:
                self._runtimes.move_to_end(digest)
                return found
        if text is None:
            return None
        parsed = yaml.safe_load(text)
        if not isinstance(parsed, dict):
            return None
        with self._lock:
            self._runtimes[digest] = parsed
            while len(self._runtimes) > RUNTIMES_KEPT:
                self._runtimes.popitem(last=False)
        return parsed

    def derived(self, what: str, digest: str, make: Callable[[], T]) -> T:
        """`make()`, once per runtime version: what depends on the runtime alone (the
        prepared runtime, what the policy packs say of it). Callers must not change it."""
        with self._lock:
            if (what, digest) in self._derived:
                self._derived.move_to_end((what, digest))
                found: T = self._derived[(what, digest)]
                return found
        made = make()
        with self._lock:
            self._derived[(what, digest)] = made
            while len(self._derived) > 2 * RUNTIMES_KEPT:
                self._derived.popitem(last=False)
        return made

    def verdict(self, key: Key, content: str) -> Verdict | None:
        """The verdict for this TrainJob when it was reached from the same content."""
        with self._lock:
            found = self._verdicts.get(key)
        return found if found is not None and found.key == content else None

    def remember_verdict(self, key: Key, content: str, objects: list[Obj]) -> None:
        """A compile that passed, and the objects it wrote."""
        with self._lock:
            self._verdicts[key] = Verdict(content, tuple(identity(o) for o in objects))

    def remember_patch(self, key: Key, before: Obj, after: Any) -> None:
        """The TrainJob as a status patch of `before` returned it (when it is the same
        TrainJob, at a new resourceVersion)."""
        old, new = before.get("metadata") or {}, \
            (after.get("metadata") or {}) if isinstance(after, dict) else {}
        version = str(old.get("resourceVersion") or "")
        if not version or not new.get("uid") or new.get("uid") != old.get("uid") or \
                new.get("resourceVersion") in (None, version):
            return
        meta = {k: v for k, v in new.items() if k != "managedFields"}
        with self._lock:
            self._patched[key] = (version, {**after, "metadata": meta})

    def latest(self, key: Key, trainjob: Obj) -> Obj:
        """The informer's copy, or what the controller's last status patch of that very copy
        returned (the informer has not seen the patch yet)."""
        meta = trainjob.get("metadata") or {}
        with self._lock:
            found = self._patched.get(key)
            if found is None:
                return trainjob
            if found[0] == str(meta.get("resourceVersion") or "") and \
                    (found[1].get("metadata") or {}).get("uid") == meta.get("uid"):
                return found[1]
            del self._patched[key]  # the informer has caught up, or the TrainJob changed
        return trainjob

    def forget(self, key: Key, *, gone: bool = True) -> None:
        """Drop what is remembered of a TrainJob: all of it when it is gone; when it is
        finished, all but its last status patch (the informer may not have seen it yet)."""
        with self._lock:
            self._snapshots.pop(key, None)
            self._verdicts.pop(key, None)
            if gone:
                self._patched.pop(key, None)
