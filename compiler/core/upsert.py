"""Upstream's upsert rules and the TrainJob env conversion (reference §4, `pkg/apply`).

For each new item in order, the first existing item that matches is replaced in place,
otherwise the item is appended. Env vars and volumes match by `name`, volume mounts by
`mountPath`, ports by `containerPort` or `name` (two missing names match, as upstream's
`ptr.Equal(nil, nil)`). Pure; used by plugins and the JobSet builder.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from compiler.common.jsondata import Obj
from compiler.kube.quantity import QuantityError, canonical

Match = Callable[[Obj, Obj], bool]


def _by(key: str) -> Match:
    return lambda a, b: a.get(key) == b.get(key)


def port_match(a: Obj, b: Obj) -> bool:
    """Upstream's `byContainerPortOrName`: same containerPort, or same (possibly absent) name."""
    return a.get("containerPort") == b.get("containerPort") or a.get("name") == b.get("name")


def upsert(items: list[Obj], new: Iterable[Obj], match: Match) -> list[int]:
    """Replace the first matching item or append, for each new item in order; returns the
    index each new item landed at (for the origin recorder).

    The new items are inserted as they are: callers pass dicts nobody else holds.
    """
    landed: list[int] = []
    for item in new:
        for i, cur in enumerate(items):
            if match(cur, item):
                items[i] = item
                landed.append(i)
                break
        else:
            landed.append(len(items))
            items.append(item)
    return landed


def upsert_by_key(items: list[Obj], new: Iterable[Obj], key: str) -> list[int]:
    """`upsert` matching on one key, with an index instead of a scan per new item."""
    first: dict[Any, int] = {}
    landed: list[int] = []
    for i, cur in enumerate(items):
        first.setdefault(cur.get(key), i)
    for item in new:
        index = first.get(item.get(key))
        if index is None:
            index = first[item.get(key)] = len(items)
            items.append(item)
        else:
            items[index] = item
        landed.append(index)
    return landed


def _upsert_field(obj: Obj, key: str, new: Sequence[Obj], match: Match) -> list[int]:
    """Upsert into the list `obj[key]`, creating it only when there is something to add."""
    return upsert(obj.setdefault(key, []), new, match) if new else []


def upsert_env(container: Obj, envs: Sequence[Obj]) -> list[int]:
    """Upsert env vars by name into a container (the indices they landed at)."""
    return upsert_by_key(container.setdefault("env", []), envs, "name") if envs else []


def upsert_ports(container: Obj, ports: Sequence[Obj]) -> list[int]:
    """Upsert ports by containerPort or name into a container."""
    return _upsert_field(container, "ports", ports, port_match)


def upsert_mounts(container: Obj, mounts: Sequence[Obj]) -> list[int]:
    """Upsert volume mounts by mountPath into a container."""
    return _upsert_field(container, "volumeMounts", mounts, _by("mountPath"))


def upsert_volumes(pod_spec: Obj, volumes: Sequence[Obj]) -> list[int]:
    """Upsert volumes by name into a pod spec."""
    return _upsert_field(pod_spec, "volumes", volumes, _by("name"))


def env_var(env: Obj) -> Obj:
    """`apply.EnvVar`: a TrainJob env var as upstream converts it.

    With `valueFrom`, only fieldRef.fieldPath, resourceFieldRef (containerName, resource and a
    divisor that is always set) and configMap/secret key refs (key, name, optional) survive;
    otherwise `value` is always set, even to "".
    """
    out: Obj = {"name": env.get("name", "")}
    source = env.get("valueFrom")
    if not isinstance(source, dict):
        out["value"] = env.get("value", "")
        return out
    converted: Obj = {}
    if isinstance(ref := source.get("fieldRef"), dict):
        converted["fieldRef"] = {"fieldPath": ref.get("fieldPath", "")}
    if isinstance(ref := source.get("resourceFieldRef"), dict):
        converted["resourceFieldRef"] = {
            "containerName": ref.get("containerName", ""),
            "resource": ref.get("resource", ""),
            "divisor": _divisor(ref.get("divisor")),
        }
    for key in ("configMapKeyRef", "secretKeyRef"):
        if isinstance(ref := source.get(key), dict):
            selector = {"key": ref.get("key", ""), "name": ref.get("name", "")}
            if ref.get("optional") is not None:
                selector["optional"] = ref["optional"]
            converted[key] = selector
    out["valueFrom"] = converted
    return out


def _divisor(value: Any) -> str:
    if value is None or value == "":
        return "0"
    try:
        return canonical(value)
    except QuantityError:
        return str(value)


def env_vars(envs: Any) -> list[Obj]:
    """Convert a TrainJob env list (None gives an empty list)."""
    return [env_var(e) for e in envs or [] if isinstance(e, dict)]
