"""The runtime snapshot: ConfigMap `<trainJob>-runtime-snapshot`, key `runtime`.

Taken at a TrainJob's first reconcile from the live runtime and read first ever after, so
edits to (or deletion of) the runtime do not change a TrainJob already started. Reading
checks what upstream checks, with its messages: the controller owner, the key, the YAML, and
that it is the runtime the TrainJob refers to.
"""

from __future__ import annotations

from typing import Any

import yaml

from compiler.controller.kube import CLUSTER_RUNTIME, CONFIGMAP, TRAINING_RUNTIME, Kube
from compiler.plugins.base import controller_reference

Obj = dict[str, Any]


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


def read(kube: Kube, trainjob: Obj) -> Obj | None:
    """The runtime in the snapshot, None when there is no snapshot; SnapshotError if bad."""
    meta = trainjob["metadata"]
    found = kube.get(CONFIGMAP, meta["namespace"], name_of(trainjob))
    if found is None:
        return None
    wrap = "unable to get runtime snapshot" if _kind(trainjob) == "TrainingRuntime" \
        else "getting runtime snapshot"
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
    _check_identity(trainjob, runtime, wrap)
    return runtime


def _check_identity(trainjob: Obj, runtime: Obj, wrap: str) -> None:
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


def write(kube: Kube, trainjob: Obj, runtime: Obj) -> None:
    """Take the snapshot (server-side apply, owned by the TrainJob)."""
    meta = runtime.get("metadata") or {}
    kept = {k: meta[k] for k in ("name", "namespace", "labels", "annotations", "uid",
                                 "resourceVersion", "generation") if k in meta}
    body = {"apiVersion": runtime.get("apiVersion"), "kind": runtime.get("kind"),
            "metadata": kept, "spec": runtime.get("spec") or {}}
    kube.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": name_of(trainjob), "namespace": trainjob["metadata"]["namespace"],
        "ownerReferences": [controller_reference(trainjob["metadata"]["name"],
                                                  trainjob["metadata"].get("uid", ""))]},
        "data": {"runtime": yaml.safe_dump(body, sort_keys=True)}})


def resolve(kube: Kube, trainjob: Obj) -> Obj:
    """The runtime to compile with: the snapshot, else the live one (then snapshotted)."""
    runtime = read(kube, trainjob)
    if runtime is None:
        runtime = live(kube, trainjob)
        write(kube, trainjob, runtime)
    return runtime
