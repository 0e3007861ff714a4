"""Runtime resolution (reference §1): which runtime a TrainJob's `runtimeRef` names.

A TrainingRuntime is looked up only in the TrainJob's own namespace; a ClusterTrainingRuntime by
name. Any other group/kind is unsupported, as upstream's registry key
`<Kind>.<apiGroup>`. Pure: the caller passes every runtime it knows (user documents first,
then the built-ins).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from compiler.common.diagnostics import Diagnostic, ObjectRef, error
from compiler.common.jsondata import Obj

GROUP = "trainer.kubeflow.org"
RUNTIME_KINDS = ("TrainingRuntime", "ClusterTrainingRuntime")


class RuntimeKey(NamedTuple):
    """How a runtime is found: kind, namespace (empty for cluster scope) and name."""

    kind: str
    namespace: str
    name: str


def runtime_key(runtime: Obj) -> RuntimeKey:
    """The lookup key of a runtime document."""
    meta = runtime.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    kind = str(runtime.get("kind", ""))
    namespace = str(meta.get("namespace") or "default") if kind == "TrainingRuntime" else ""
    return RuntimeKey(kind, namespace, str(meta.get("name", "")))


def registry_key(runtime_ref: Obj) -> str:
    """Upstream's `GroupKind{apiGroup, kind}.String()` for a (defaulted) runtimeRef."""
    kind, group = runtime_ref.get("kind") or "", runtime_ref.get("apiGroup") or ""
    return f"{kind}.{group}" if group else kind


_SUPPORTED = frozenset(f"{k}.{GROUP}" for k in RUNTIME_KINDS)  # registry keys of runtimes


def wanted_key(trainjob: Obj) -> RuntimeKey | Diagnostic:
    """The runtime a defaulted TrainJob asks for, or why it cannot be resolved."""
    spec = trainjob.get("spec")
    ref = spec.get("runtimeRef") if isinstance(spec, dict) else None
    ref = ref if isinstance(ref, dict) else {}
    key = registry_key(ref)
    if key not in _SUPPORTED:
        return error("TJC-RUNTIME-UNSUPPORTED", f"unsupported runtime: {key}; expected kind "
                     "TrainingRuntime or ClusterTrainingRuntime of apiGroup trainer.kubeflow.org",
                     ("spec", "runtimeRef"))
    kind = str(ref["kind"])
    meta = trainjob.get("metadata")
    namespace = str((meta if isinstance(meta, dict) else {}).get("namespace") or "default")
    return RuntimeKey(kind, namespace if kind == "TrainingRuntime" else "",
                      str(ref.get("name", "")))


def find_runtime(key: RuntimeKey, runtimes: Iterable[Obj]) -> Obj | None:
    """The first runtime with this key (callers list user documents before built-ins)."""
    return next((r for r in runtimes if runtime_key(r) == key), None)


def not_found(key: RuntimeKey, elsewhere: Iterable[str] = ()) -> Diagnostic:
    """The error for a runtime that no document provides, worded as upstream's; `elsewhere`
    names the other namespaces that hold a TrainingRuntime of that name."""
    if key.kind == "TrainingRuntime":
        message = (f"TrainingRuntime specified in TrainJob is not found: TrainingRuntime "
                   f"{key.namespace}/{key.name}")
        others = sorted(set(elsewhere))
        if others:
            message += (f"; one exists in namespace {', '.join(others)}, but a TrainJob can use "
                        f"only a TrainingRuntime of its own namespace ({key.namespace}) or a "
                        f"ClusterTrainingRuntime")
    else:
        message = (f"not found ClusterTrainingRuntime specified in TrainJob: "
                   f"ClusterTrainingRuntime {key.name}")
    return error("TJC-RUNTIME-NOT-FOUND", message, ("spec", "runtimeRef", "name"))


ObjectKey = tuple[str, str, str]


def object_key(data: Obj) -> ObjectKey:
    """(kind, namespace, name) of a document, to pair it with its previous version."""
    meta = data.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    namespaced = data.get("kind") != "ClusterTrainingRuntime"
    namespace = str(meta.get("namespace") or "default") if namespaced else ""
    return str(data.get("kind", "")), namespace, str(meta.get("name", ""))


def object_ref(data: Obj) -> ObjectRef:
    """kind/name/namespace of a document as written (a cluster runtime has no namespace)."""
    kind, namespace, name = object_key(data)
    meta = data.get("metadata")
    if kind != "ClusterTrainingRuntime" and not (meta.get("namespace") if isinstance(meta, dict)
                                                 else None):
        namespace = ""
    return ObjectRef(kind, name, namespace)
