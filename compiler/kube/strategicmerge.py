"""Kubernetes strategic merge patch for a JobSet spec, with the JobSet and PodSpec merge keys.

Reproduces `strategicpatch.StrategicMergePatch(src, patch, jobsetv1alpha2.JobSetSpec{})` for
the patches a TrainJob's `runtimePatches` can carry (they are typed, so no `$patch` directives):
maps merge recursively and a null deletes a key; lists with a merge key merge item by item
(matched items merge recursively in place, new items are appended in patch order); every other
list, tolerations and node selector terms included, is replaced wholesale. Pure.
"""

from __future__ import annotations

from typing import Any

from compiler.common.diagnostics import error
from compiler.common.errors import CompileError
from compiler.common.jsondata import copy_json, copy_without_nulls

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
    return merge_into(copy_json(original), patch)


def merge_into(original: Any, patch: Any) -> Any:
    """`strategic_merge` into an `original` the caller owns: merged in place, without the
    copy (the result may be `original` itself); `patch` is not modified and shares nothing
    with the result."""
    return _merge(original, patch, "")


def _merge(original: Any, patch: Any, key: str) -> Any:
    if isinstance(patch, dict) and isinstance(original, dict):
        for name, value in patch.items():
            if value is None:
                original.pop(name, None)
            elif name in original and type(original[name]) is type(value):
                original[name] = _merge(original[name], value, name)
            else:
                original[name] = copy_without_nulls(value)
        return original
    if isinstance(patch, list) and isinstance(original, list) and key in MERGE_KEYS \
            and (original or patch):
        return _merge_list(original, patch, MERGE_KEYS[key], key)
    return copy_without_nulls(patch)


def _merge_list(original: list[Any], patch: list[Any], merge_key: str, key: str) -> list[Any]:
    """`mergeSlice` for lists of maps: merge by key, then upstream's element order.

    Matched items merge in place and new items are appended; then the items named by the
    patch (in patch order) and the original-only items (in original order) are interleaved
    by `mergeSortedSlice`: an original-only item goes first only when it stood before the
    next patch item in the original list, so new items land before later original ones.
    """
    for item in [*original, *patch]:
        if not isinstance(item, dict) or merge_key not in item:
            raise CompileError(error(
                "TJC-PATCH-MERGE-KEY",
                f"{key}: an item has no merge key {merge_key!r}; every item of {key} "
                f"must set {merge_key}"))
    merged = list(original)
    for item in patch:
        index = _index(merged, item[merge_key], merge_key)
        if index < 0:
            merged.append(copy_without_nulls(item))
        else:
            merged[index] = _merge(merged[index], item, key)
    patch_keys = [item[merge_key] for item in patch]
    from_patch = [m for m in merged if m[merge_key] in patch_keys]
    server_only = [m for m in merged if m[merge_key] not in patch_keys]
    from_patch.sort(key=lambda m: _index(patch, m[merge_key], merge_key))
    server_only.sort(key=lambda m: _index(original, m[merge_key], merge_key))
    return _merge_sorted(server_only, from_patch, original, merge_key)


def keyed(value: Any, key: str = "") -> bool:
    """Whether every list under a strategic-merge list key (`MERGE_KEYS`, at any depth) holds
    only maps whose merge key is a non-empty string or a non-zero integer.

    The merge of documents that are all keyed cannot fail: its one error is a merge list
    item without its merge key (`_merge_list`), and what it merges into a keyed list is a
    keyed item (it never drops a key: the typed patches hold no null). The typed form of a
    patch (`compiler.core.context`) is keyed when the patch is: it drops nulls, empty lists
    and zero values of `omitempty` fields, which such a key value is not, and adds no list."""
    if isinstance(value, dict):
        for name, item in value.items():
            if isinstance(item, (dict, list)) and not keyed(item, name):
                return False
        return True
    if isinstance(value, list):
        merge_key = MERGE_KEYS.get(key)
        for item in value:
            if merge_key is not None and not (
                    isinstance(item, dict) and _key_value(item.get(merge_key))):
                return False
            if isinstance(item, (dict, list)) and not keyed(item, key):
                return False
    return True


def _key_value(value: Any) -> bool:
    return (type(value) is str and value != "") or (type(value) is int and value != 0)


def _index(items: list[Any], value: Any, merge_key: str) -> int:
    return next((i for i, item in enumerate(items) if item.get(merge_key) == value), -1)


def _merge_sorted(left: list[Any], right: list[Any], order: list[Any],
                  merge_key: str) -> list[Any]:
    """`mergeSortedSlice`: interleave, taking `left` first only when both are in `order` and
    the left item comes first there."""
    out: list[Any] = []
    i = j = 0
    while i < len(left) or j < len(right):
        if j >= len(right):
            out.append(left[i])
            i += 1
        elif i >= len(left):
            out.append(right[j])
            j += 1
        else:
            li = _index(order, left[i][merge_key], merge_key)
            ri = _index(order, right[j][merge_key], merge_key)
            if li >= 0 and ri >= 0 and li < ri:
                out.append(left[i])
                i += 1
            else:
                out.append(right[j])
                j += 1
    return out
