"""Writing a compiled TrainJob's objects: only over what the TrainJob owns.

Every object the compile gives (JobSet, MPI hostfile ConfigMap and SSH Secret, PodGroup) is
looked up first; one that exists and is not controlled by this TrainJob refuses the whole
write (`ownership.Refused`, naming every such object) before anything is written. What is the
TrainJob's own is kept as upstream keeps it (a running JobSet, a PodGroup while the TrainJob
runs, the immutable SSH Secret) or applied with preconditions (`ownership.write`).
Called by `reconcile` with what the compiler gave; it never changes an object's content.
"""

from __future__ import annotations

from typing import Protocol

from compiler.common.jsondata import Obj
from compiler.controller import ownership
from compiler.controller.kube import ApiError, Kube, resource_of


class Store(Protocol):
    """An informer's store: the latest object by namespace and name."""

    def get(self, namespace: str, name: str) -> Obj | None:
        """The stored object, or None."""


def uid_of(trainjob: Obj) -> str:
    """The TrainJob's uid ("" when it has none)."""
    return str((trainjob.get("metadata") or {}).get("uid") or "")


def current(kube: Kube, jobsets: Store, obj: Obj) -> Obj | None:
    """The object as it exists now: a JobSet from the store, anything else from the API
    server. (A JobSet the store does not have yet is found when creating it fails.)"""
    meta = obj.get("metadata") or {}
    namespace, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
    if obj.get("kind") == "JobSet":
        return jobsets.get(namespace, name)
    return kube.get(resource_of(obj), namespace, name)


def owned_jobset(jobsets: Store, trainjob: Obj) -> Obj | None:
    """The TrainJob's JobSet from the store, only when this TrainJob (this uid) controls it."""
    meta = trainjob["metadata"]
    found = jobsets.get(meta["namespace"], meta["name"])
    return found if found is not None and ownership.controlled_by(found, uid_of(trainjob)) \
        else None


def write_all(kube: Kube, jobsets: Store, trainjob: Obj, objects: list[Obj],
              written: dict[str, Obj] | None = None) -> dict[str, Obj]:
    """Write the compiled objects (none when one is foreign); those written, by kind, also
    into `written` as they are written (so a caller still knows what was made when a later
    write fails)."""
    seen = [(obj, current(kube, jobsets, obj)) for obj in objects]
    _refuse_foreign([found for _, found in seen], trainjob)
    written = {} if written is None else written
    for obj, found in seen:
        try:
            out = _write(kube, trainjob, obj, found)
        except ApiError as exc:
            if exc.status != 409 or found is not None:
                raise
            meta = obj["metadata"]  # made since it was looked up: look again
            found = kube.get(resource_of(obj), meta.get("namespace"), meta["name"])
            if found is None:
                raise
            _refuse_foreign([found], trainjob)
            out = _write(kube, trainjob, obj, found)
        if out is not None:
            written[str(obj.get("kind"))] = out
    return written


def all_kept(kube: Kube, jobsets: Store, trainjob: Obj,
             identities: tuple[tuple[str, str, str, str], ...]) -> bool:
    """Whether every object an earlier compile wrote (apiVersion, kind, namespace, name)
    exists, is this TrainJob's own and would be kept as it is: then nothing needs compiling or
    writing. `Refused` when one is not the TrainJob's own. Kinds that are always applied again
    (the MPI hostfile) make it False before anything is looked up."""
    if not identities or any(kind not in _KEEPABLE for _, kind, _, _ in identities):
        return False
    found = [_existing(kube, jobsets, {"apiVersion": api, "kind": kind,
                                       "metadata": {"namespace": ns, "name": name}})
             for api, kind, ns, name in identities]
    _refuse_foreign(found, trainjob)
    return all(_keep(trainjob, {"kind": kind}, obj)
               for (_, kind, _, _), obj in zip(identities, found, strict=True))


_KEEPABLE = ("JobSet", "Secret", "PodGroup")


def _existing(kube: Kube, jobsets: Store, obj: Obj) -> Obj | None:
    """`current`, asking the API server for a JobSet the store has not seen yet (one GET,
    where compiling and failing to create it would take a compile and two requests)."""
    found = current(kube, jobsets, obj)
    if found is None and obj.get("kind") == "JobSet":
        meta = obj["metadata"]
        found = kube.get(resource_of(obj), meta["namespace"], meta["name"])
    return found


def _refuse_foreign(found: list[Obj | None], trainjob: Obj) -> None:
    foreign = [o for o in found if o is not None and
               not ownership.controlled_by(o, uid_of(trainjob))]
    if foreign:
        raise ownership.not_owned(foreign, trainjob)


def _write(kube: Kube, trainjob: Obj, obj: Obj, found: Obj | None) -> Obj | None:
    return None if _keep(trainjob, obj, found) else ownership.write(kube, obj, found)


def _keep(trainjob: Obj, obj: Obj, found: Obj | None) -> bool:
    """Objects upstream does not rewrite: a running JobSet, an existing PodGroup while the
    TrainJob runs, the SSH Secret once made (it is immutable)."""
    if found is None:
        return False
    suspended = (trainjob.get("spec") or {}).get("suspend") is True
    kind = obj.get("kind")
    if kind == "JobSet":
        return not suspended and (found.get("spec") or {}).get("suspend") is not True
    return kind == "Secret" or (kind == "PodGroup" and not suspended)
