"""The runtime snapshot: ConfigMap `<trainJob>-runtime-snapshot`, key `runtime`.

Taken at a TrainJob's first reconcile from the live runtime and read first ever after, so
edits to (or deletion of) the runtime do not change a TrainJob already started. Reading
checks what upstream checks, with its messages: the controller owner, the key, the YAML, and
that it is the runtime the TrainJob refers to.

Better than upstream, the snapshot is not trusted for its name: a tenant who may edit
ConfigMaps must not choose what the controller builds. When the controller takes a snapshot it
records the SHA-256 of its content in the TrainJob's status (condition `RuntimeSnapshot`,
written through the status subresource, which a namespace tenant cannot write), and every read
compares the ConfigMap with that digest: an altered snapshot, or one deleted while the runtime
changed since, is refused (`Refused`, reason `RuntimeSnapshotAltered`), and a snapshot whose
digest was never recorded is never read: it is taken again from the live runtime.
"""

from __future__ import annotations

import hashlib
import re
import threading
from typing import Any

import yaml

from compiler.common.jsondata import Obj
from compiler.controller import ownership
from compiler.controller import status as st
from compiler.controller.kube import CLUSTER_RUNTIME, CONFIGMAP, TRAINING_RUNTIME, Kube
from compiler.core.plugins.base import controller_reference

RECORD = "RuntimeSnapshot"
ALTERED = "RuntimeSnapshotAltered"
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


class SnapshotError(Exception):
    """The snapshot cannot be used, or the runtime cannot be found."""


def name_of(trainjob: Obj) -> str:
    """The snapshot ConfigMap's name."""
    return f"{trainjob['metadata']['name']}-runtime-snapshot"


def _ref(trainjob: Obj) -> Obj:
    ref = (trainjob.get("spec") or {}).get("runtimeRef") or {}
    return ref if isinstance(ref, dict) else {}


def _kind(trainjob: Obj) -> str:
    return str(_ref(trainjob).get("kind") or "ClusterTrainingRuntime")


def read(kube: Kube, trainjob: Obj, found: Obj | None = None) -> Obj | None:
    """The runtime in the snapshot (`found`, else fetched), None when there is no snapshot;
    SnapshotError if bad."""
    meta = trainjob["metadata"]
    if found is None:
        found = kube.get(CONFIGMAP, meta["namespace"], name_of(trainjob))
    if found is None:
        return None
    wrap = wrap_of(trainjob)
    owner = next((o for o in (found.get("metadata") or {}).get("ownerReferences") or []
                  if o.get("controller")), None)
    if owner is None or owner.get("uid") != meta.get("uid"):
        raise SnapshotError(f"{wrap}: invalid runtime snapshot: a snapshot configmap exists "
                            "but is owned by another object")
    data = (found.get("data") or {}).get("runtime")
    if data is None:
        raise SnapshotError(f'{wrap}: invalid runtime snapshot: snapshot ConfigMap missing '
                            '"runtime" data key')
    try:
        runtime = yaml.safe_load(data)
    except yaml.YAMLError as exc:
        raise SnapshotError(f"{wrap}: invalid runtime snapshot: unable to unmarshal the "
                            f"snapshot: {exc}") from None
    if not isinstance(runtime, dict):
        raise SnapshotError(f"{wrap}: invalid runtime snapshot: unable to unmarshal the "
                            "snapshot: not an object")
    check_identity(trainjob, runtime, wrap)
    return runtime


def wrap_of(trainjob: Obj) -> str:
    """How upstream starts its snapshot errors, by the runtime's kind."""
    return "unable to get runtime snapshot" if _kind(trainjob) == "TrainingRuntime" \
        else "getting runtime snapshot"


def check_identity(trainjob: Obj, runtime: Obj, wrap: str) -> None:
    """SnapshotError unless the snapshot holds the runtime the TrainJob refers to."""
    ref = _ref(trainjob)
    name = str((runtime.get("metadata") or {}).get("name", ""))
    group = str(runtime.get("apiVersion", "")).split("/")[0]
    kind = str(runtime.get("kind", ""))
    if name == ref.get("name") and (ref.get("kind") is None or ref["kind"] == kind) and \
            (ref.get("apiGroup") is None or ref["apiGroup"] == group):
        return
    raise SnapshotError(
        f'{wrap}: invalid runtime snapshot: the snapshot refers to the wrong runtime: '
        f'expecting a runtime with name, api group and kind of "{ref.get("name")}", '
        f'"{ref.get("apiGroup") or "<any>"}", "{ref.get("kind") or "<any>"}" but found '
        f'runtime with name, api group and kind of "{name}", "{group}", "{kind}"')


# Where each runtime kind is looked up, and upstream's message when it is not there.
_LOOKUP = {
    "TrainingRuntime": (TRAINING_RUNTIME, True,
                        "TrainingRuntime specified in TrainJob is not found: "
                        'trainingruntimes.trainer.kubeflow.org "{}" not found'),
    "ClusterTrainingRuntime": (CLUSTER_RUNTIME, False,
                               "not found ClusterTrainingRuntime specified in TrainJob: "
                               'clustertrainingruntimes.trainer.kubeflow.org "{}" not found'),
}


def live(kube: Kube, trainjob: Obj) -> Obj:
    """The runtime the TrainJob refers to, from the API server (a TrainingRuntime only in the
    TrainJob's namespace); SnapshotError if missing."""
    res, namespaced, missing = _LOOKUP.get(_kind(trainjob), _LOOKUP["ClusterTrainingRuntime"])
    name = str(_ref(trainjob).get("name", ""))
    found = kube.get(res, trainjob["metadata"]["namespace"] if namespaced else None, name)
    if found is None:
        raise SnapshotError(missing.format(name))
    return found


def body(runtime: Obj) -> str:
    """The snapshot's `runtime` value: the runtime's identity and spec as YAML (written once
    per runtime version: the API server gives every change a new resourceVersion)."""
    meta = runtime.get("metadata") or {}
    version = (runtime.get("apiVersion"), runtime.get("kind"), meta.get("namespace"),
               meta.get("name"), meta.get("uid"), meta.get("resourceVersion"))
    with _BODIES_LOCK:
        text = _BODIES.get(version) if version[-1] and version[-2] else None
    if text is not None:
        return text
    kept = {k: meta[k] for k in ("name", "namespace", "labels", "annotations", "uid",
                                 "resourceVersion", "generation") if k in meta}
    text = yaml.safe_dump({"apiVersion": runtime.get("apiVersion"), "kind": runtime.get("kind"),
                           "metadata": kept, "spec": runtime.get("spec") or {}},
                          sort_keys=True)
    if version[-1] and version[-2]:
        with _BODIES_LOCK:
            _BODIES[version] = text
            while len(_BODIES) > 64:
                del _BODIES[next(iter(_BODIES))]
    return text


_BODIES: dict[tuple[Any, ...], str] = {}
_BODIES_LOCK = threading.Lock()


def configmap(trainjob: Obj, text: str) -> Obj:
    """The snapshot ConfigMap holding `text`, owned by the TrainJob."""
    meta = trainjob["metadata"]
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": name_of(trainjob), "namespace": meta["namespace"],
        "ownerReferences": [controller_reference(meta["name"], meta.get("uid", ""))]},
        "data": {"runtime": text}}


def digest(text: Any) -> str:
    """`sha256:<hex>` of a snapshot's `runtime` value (`none` when it is not a string)."""
    if not isinstance(text, str):
        return "none"
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def recorded(trainjob: Obj) -> str | None:
    """The digest recorded in the TrainJob's status, if any."""
    found = st.condition(trainjob.get("status") or {}, RECORD)
    match = _DIGEST.search(str((found or {}).get("message", "")))
    return match.group(0) if match and (found or {}).get("status") == "True" else None


def record(status: Obj, trainjob: Obj, value: str, now: float) -> None:
    """Keep the digest in the status (a condition: the status schema has no other place)."""
    st.set_condition(status, {"type": RECORD, "status": "True", "reason": "Recorded",
                              "message": f"ConfigMap {name_of(trainjob)} holds {value}"}, now)


def resolve(kube: Kube, trainjob: Obj) -> tuple[Obj, str, Obj]:
    """The runtime to compile with, the snapshot's digest and the snapshot ConfigMap (as read,
    or as written): the verified snapshot, else the live runtime (then snapshotted). `Refused`
    when the snapshot is not the TrainJob's own or does not match the recorded digest."""
    meta = trainjob["metadata"]
    found = kube.get(CONFIGMAP, meta["namespace"], name_of(trainjob))
    if found is not None and not ownership.controlled_by(found, str(meta.get("uid", ""))):
        raise ownership.not_owned([found], trainjob)
    want = recorded(trainjob)
    if want is None and found is not None:
        want = recorded(ownership.latest(kube, trainjob))
    if want is None or found is None:
        runtime = live(kube, trainjob)
        text = body(runtime)
        if want is not None and digest(text) != want:
            raise ownership.Refused(ALTERED, (
                f"ConfigMap {meta['namespace']}/{name_of(trainjob)} was deleted after the "
                f"controller took it, and the runtime has changed since (now {digest(text)}, "
                f"recorded {want}); no JobSet is built: re-create the TrainJob"))
        written = ownership.write(kube, configmap(trainjob, text), found)
        return runtime, digest(text), written
    got = digest((found.get("data") or {}).get("runtime"))
    if got != want:
        raise ownership.Refused(ALTERED, (
            f"ConfigMap {meta['namespace']}/{name_of(trainjob)} was altered after the "
            f"controller took it (it holds {got}, the controller recorded {want}); no JobSet "
            "is built from it: re-create the TrainJob"))
    parsed = read(kube, trainjob, found)
    assert parsed is not None
    return parsed, got, found
