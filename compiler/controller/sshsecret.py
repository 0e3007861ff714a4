"""The MPI SSH Secret `<name>-mpi-ssh-auth`: used only when it is the one the controller made.

The controller creates the Secret once (immutable) and records its uid in the TrainJob's status
(condition `MPISSHSecret`), where a namespace tenant cannot write. A Secret of that name that
is not controlled by the TrainJob, or that is but has another uid (deleted and made again by
someone who copied the ownerReference, with their own key), is refused: its key is never put
into the TrainJob's pods, and it is never overwritten. Called by `reconcile` before the
compile (whether to make a key) and after the write (to record the uid).
"""

from __future__ import annotations

from compiler.common.jsondata import Obj
from compiler.controller import ownership
from compiler.controller import status as st
from compiler.controller.kube import SECRET, Kube

RECORD = "MPISSHSecret"
REPLACED = "SSHSecretReplaced"


def name_of(trainjob: Obj) -> str:
    """The Secret's name."""
    return f"{trainjob['metadata']['name']}-mpi-ssh-auth"


def recorded(trainjob: Obj) -> str | None:
    """The uid of the Secret the controller made, as the status records it."""
    found = st.condition(trainjob.get("status") or {}, RECORD)
    if found is None or found.get("status") != "True":
        return None
    words = str(found.get("message", "")).split()
    return words[-1] if len(words) > 1 and words[-2] == "uid" else None


def record(status: Obj, secret: Obj, now: float) -> None:
    """Record the uid of the Secret just made."""
    meta = secret.get("metadata") or {}
    st.set_condition(status, {"type": RECORD, "status": "True", "reason": "Recorded",
                              "message": f"Secret {meta.get('name')} has uid {meta.get('uid')}"},
                     now)


def check(kube: Kube, trainjob: Obj) -> Obj | None:
    """The TrainJob's own SSH Secret (then no new key is made), None when there is none;
    `Refused` for any other Secret under its name."""
    meta = trainjob["metadata"]
    found = kube.get(SECRET, meta["namespace"], name_of(trainjob))
    if found is None:
        return None
    if not ownership.controlled_by(found, str(meta.get("uid") or "")):
        raise ownership.not_owned([found], trainjob)
    uid = (found.get("metadata") or {}).get("uid")
    want = recorded(trainjob)
    if want is None:
        want = recorded(ownership.latest(kube, trainjob))
    if uid != want:
        raise ownership.Refused(REPLACED, (
            f"Secret {meta['namespace']}/{name_of(trainjob)} (uid {uid}) is not the one the "
            f"controller made (recorded uid {want or 'none'}); its key is not used: delete it "
            "and the controller makes a new one"))
    return found
