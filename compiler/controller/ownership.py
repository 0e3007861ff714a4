"""What the controller owns, and refusing everything else.

An object is this TrainJob's only when its controller ownerReference names a TrainJob with
the TrainJob's uid: a name alone proves nothing (a tenant can create `<name>-mpi-ssh-auth`
first, a JobSet of an earlier TrainJob of the same name may still wait for garbage
collection). Anything else under one of the TrainJob's names is never applied over, adopted,
read for status or trusted: the reconcile stops with a `Refused` condition and a Warning event
naming it, and looks again later (the object may be deleted).

Writes carry preconditions so that nothing planted between the check and the write is
overwritten: a new object is created (POST fails when the name is taken since), an existing one
is applied with its uid (and, for a ConfigMap, its resourceVersion): the API server rejects
the apply when the object was replaced (or edited) since it was checked.

Used by `snapshot`, `sshsecret`, `objects` and `reconcile`; it decides nothing about what to
build, only whether an object may be used or written.
"""

from __future__ import annotations

from compiler.common.jsondata import Obj
from compiler.controller import status as st
from compiler.controller.kube import TRAINJOB, Kube, resource_of

TRAINER_GROUP = "trainer.kubeflow.org/"
# Label on the ConfigMaps and Secrets the controller makes: its informers watch only these.
OWNED_LABEL = "trainer.kubeflow.org/trainjob-name"
CONDITION = "Refused"
# Kinds a namespace tenant can write (JobSets and PodGroups are the controller's alone).
TENANT_WRITABLE = ("ConfigMap", "Secret")
# How long to wait before looking again at a TrainJob that is refused for a collision.
RETRY_SECONDS = 30.0


class Refused(Exception):
    """The controller will not build this TrainJob now; `reason` is the condition reason."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason, self.message = reason, message


def set_refused(status: Obj, refusal: Refused, now: float) -> None:
    """The `Refused` condition, True, with the refusal's reason and message."""
    st.set_condition(status, {"type": CONDITION, "status": "True", "reason": refusal.reason,
                              "message": refusal.message[:32000]}, now)


def clear(status: Obj, now: float) -> None:
    """Turn a `Refused` condition False once the TrainJob's objects are written again."""
    if st.is_true(status, CONDITION):
        st.set_condition(status, {"type": CONDITION, "status": "False", "reason": "Resolved",
                                  "message": "the TrainJob's objects are its own again"}, now)


def refusal_changed(before: Obj, refusal: Refused) -> bool:
    """Whether the status does not say this refusal yet (then it is worth an event)."""
    found = st.condition(before, CONDITION)
    return found is None or found.get("status") != "True" or \
        found.get("reason") != refusal.reason or found.get("message") != refusal.message


def latest(kube: Kube, trainjob: Obj) -> Obj:
    """The TrainJob as the API server has it now (the informer's copy may predate the last
    status patch), when it is still the same TrainJob; else the copy given."""
    meta = trainjob["metadata"]
    fresh = kube.get(TRAINJOB, meta["namespace"], meta["name"]) or {}
    return fresh if (fresh.get("metadata") or {}).get("uid") == meta.get("uid") else trainjob


def controller_ref(obj: Obj) -> Obj | None:
    """The ownerReference marked controller, if any."""
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return next((r for r in refs if isinstance(r, dict) and r.get("controller") is True), None)


def controlled_by(obj: Obj, uid: str) -> bool:
    """Whether the object's controller is the TrainJob with this uid."""
    ref = controller_ref(obj)
    return bool(uid) and ref is not None and ref.get("kind") == "TrainJob" and \
        str(ref.get("apiVersion", "")).startswith(TRAINER_GROUP) and ref.get("uid") == uid


def describe(obj: Obj) -> str:
    """`Kind namespace/name` of an object."""
    meta = obj.get("metadata") or {}
    return f"{obj.get('kind')} {meta.get('namespace')}/{meta.get('name')}"


def not_owned(found: list[Obj], trainjob: Obj) -> Refused:
    """The refusal for objects that hold the TrainJob's names but are not its own."""
    uid = (trainjob.get("metadata") or {}).get("uid")
    names = ", ".join(f"{describe(o)} ({_controller_text(o)})" for o in found)
    return Refused("ObjectNotOwned", (
        f"{names} already exists and is not controlled by this TrainJob (uid {uid}); the "
        "controller does not use, adopt or overwrite it: delete it, or rename the TrainJob"))


def _controller_text(obj: Obj) -> str:
    ref = controller_ref(obj)
    if ref is None:
        return "no controller"
    return f"controller {ref.get('kind')} {ref.get('name')} uid {ref.get('uid')}"


def labelled(obj: Obj) -> Obj:
    """A ConfigMap or Secret with the label the controller's informers select on."""
    if obj.get("kind") not in ("ConfigMap", "Secret"):
        return obj
    meta = dict(obj.get("metadata") or {})
    owner = controller_ref(obj) or {}
    meta["labels"] = {**(meta.get("labels") or {}), OWNED_LABEL: str(owner.get("name", ""))}
    return {**obj, "metadata": meta}


def write(kube: Kube, obj: Obj, existing: Obj | None) -> Obj:
    """Create `obj`, or apply it over `existing` (which must be the TrainJob's own) with the
    uid seen as precondition, and for what a tenant can edit the resourceVersion too (an
    edit since the check fails the apply; the next pass looks again)."""
    obj = labelled(obj)
    meta = obj["metadata"]
    if existing is None:
        return kube.create(resource_of(obj), meta.get("namespace"), obj)
    seen = existing.get("metadata") or {}
    guard = {"uid": seen.get("uid")}
    if obj.get("kind") in TENANT_WRITABLE:
        guard["resourceVersion"] = seen.get("resourceVersion")
    return kube.apply({**obj, "metadata": {**meta, **guard}})
