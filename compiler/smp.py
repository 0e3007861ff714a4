"""Kubernetes strategic merge patch for a JobSet spec, with the JobSet and PodSpec merge keys.

Reproduces `strategicpatch.StrategicMergePatch(src, patch, jobsetv1alpha2.JobSetSpec{})` for
the patches a TrainJob's `runtimePatches` can carry (they are typed, so no `$patch` directives):
maps merge recursively and a null deletes a key; lists with a merge key merge item by item
(matched items merge recursively in place, new items are appended in patch order); every other
list, tolerations and node selector terms included, is replaced wholesale. Pure.
"""

from __future__ import annotations

import copy
from typing import Any

from compiler.diagnostics import error
from compiler.errors import CompileError

# field name -> merge key, from the `patchMergeKey` struct tags of k8s.io/api and JobSet.
MERGE_KEYS = {
    "replicatedJobs": "name",
    "dependsOn": "name",
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "imagePullSecrets": "name",
    "schedulingGates": "name",
    "resourceClaims": "name",
    "env": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "ports": "containerPort",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
}


def strategic_merge(original: Any, patch: Any) -> Any:
    """Return `original` with `patch` applied (neither argument is modified)."""
    return _merge(copy.deepcopy(original), patch, "")


def _merge(original: Any, patch: Any, key: str) -> Any:
    if isinstance(patch, dict) and isinstance(original, dict):
        for name, value in patch.items():
            if value is None:
                original.pop(name, None)
            elif name in original:
                original[name] = _merge(original[name], value, name)
            else:
                original[name] = _strip_nulls(copy.deepcopy(value))
        return original
    if isinstance(patch, list) and isinstance(original, list) and key in MERGE_KEYS:
        return _merge_list(original, patch, MERGE_KEYS[key], key)
    return _strip_nulls(copy.deepcopy(patch))


def _merge_list(original: list[Any], patch: list[Any], merge_key: str, key: str) -> list[Any]:
    for item in patch:
        if not isinstance(item, dict) or merge_key not in item:
            raise CompileError(error(
                "TJC-PATCH-MERGE-KEY",
                f"{key}: a patch item has no merge key {merge_key!r}; every item of {key} "
                f"must set {merge_key}"))
        index = next((i for i, cur in enumerate(original)
                      if isinstance(cur, dict) and cur.get(merge_key) == item[merge_key]), None)
        if index is None:
            original.append(_strip_nulls(copy.deepcopy(item)))
        else:
            original[index] = _merge(original[index], item, key)
    return original


def _strip_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_strip_nulls(v) for v in value]
    return value
