"""Container environment as core validation has it (`ValidateEnv`, `validateEnvVarValueFrom`,
`validateObjectFieldSelector`, `validateContainerResourceFieldSelector`,
`validateConfigMapKeySelector`, `validateSecretKeySelector`, `ValidateEnvFrom`):

- a name, printable ASCII other than '=' (`IsRelaxedEnvVarName`: the rule since 1.34); names
  may repeat (the later one wins: a warning, not an error);
- `valueFrom` names exactly one source, and not beside a non-empty `value` (`Scope.RUNTIME`
  on: a patch's `valueFrom` merges with the runtime's);
- a fieldRef's fieldPath is one the downward API gives a container (`metadata.labels['k']`
  and `metadata.annotations['k']` with a qualified key), its apiVersion `v1`; a
  resourceFieldRef's resource a container's cpu, memory or ephemeral-storage limit or request
  (or hugepages), with a divisor that resource allows; a ConfigMap or Secret key ref names a
  DNS-1123 subdomain and a config key;
- an envFrom prefix is a valid name; each envFrom names one ConfigMap or Secret, by a valid
  name.

Called by `compiler.kube.podspec.check`; pure.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from compiler.kube.objectmeta import is_qualified_name
from compiler.kube.podspec.base import (
    Problem,
    Scope,
    config_key_problems,
    dicts,
    env_name_problems,
    object_name_problems,
    text,
)
from compiler.kube.quantity import QuantityError, canonical

RULE = "TJC-POD-ENV"
LISTS = ("containers", "initContainers")
SOURCES = ("fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef", "fileKeyRef")
FIELD_PATHS = ("metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
               "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP",
               "status.podIPs")
# what ConvertDownwardAPIFieldLabel takes for v1 ("spec.host" is the old spelling of
# spec.nodeName); a container's env may use only FIELD_PATHS of them
_CONVERTIBLE = (*FIELD_PATHS, "metadata.annotations", "metadata.labels", "spec.restartPolicy",
                "spec.host", "spec.schedulerName", "status.phase")
RESOURCES = ("limits.cpu", "limits.memory", "limits.ephemeral-storage", "requests.cpu",
             "requests.memory", "requests.ephemeral-storage")
_SIZES = ("1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei")
_DIVISORS = {"cpu": ("1m", "1"), "memory": _SIZES, "ephemeral-storage": _SIZES}


def problems(pod: dict[str, Any], scope: Scope) -> Iterator[Problem]:
    """Every env and envFrom problem of the pod spec's containers and init containers."""
    for key in LISTS:
        for c_index, container in dicts(pod.get(key)):
            for index, var in dicts(container.get("env")):
                yield from env_var(var, (key, c_index, "env", index), scope)
            for index, source in dicts(container.get("envFrom")):
                yield from _env_from(source, (key, c_index, "envFrom"), index)


def env_var(var: dict[str, Any], at: tuple[Any, ...], scope: Scope) -> Iterator[Problem]:
    """One env var: its name and its valueFrom."""
    name = text(var.get("name"))
    if not name:
        yield Problem(RULE, (*at, "name"), "an env var has no name; expected a name")
    for msg in env_name_problems(name) if name else []:
        yield Problem(RULE, (*at, "name"), f"env name {name!r} is not valid: {msg}")
    source = var.get("valueFrom")
    if isinstance(source, dict):
        yield from _value_from(source, text(var.get("value")), name, (*at, "valueFrom"), scope)


def _value_from(source: dict[str, Any], value: str, name: str, at: tuple[Any, ...],
                scope: Scope) -> Iterator[Problem]:
    used = [key for key in SOURCES if isinstance(source.get(key), dict)]
    if scope >= Scope.RUNTIME:
        if not used:
            yield Problem(RULE, at, f"valueFrom of env {name!r} names no source; expected one "
                          "of " + ", ".join(SOURCES))
        elif value:
            yield Problem(RULE, at, f"env {name!r} has both a value and valueFrom; expected "
                          "one of them")
        elif len(used) > 1:
            yield Problem(RULE, at, f"valueFrom of env {name!r} names {' and '.join(used)}; "
                          "expected one source")
    if "fieldRef" in used:
        yield from _field_ref(source["fieldRef"], name, (*at, "fieldRef"))
    if "resourceFieldRef" in used:
        yield from _resource_ref(source["resourceFieldRef"], name, (*at, "resourceFieldRef"))
    for key in ("configMapKeyRef", "secretKeyRef"):
        if key in used:
            yield from _key_ref(source[key], key, name, (*at, key))


def _field_ref(ref: dict[str, Any], name: str, at: tuple[Any, ...]) -> Iterator[Problem]:
    path = text(ref.get("fieldPath"))
    version = text(ref.get("apiVersion")) or "v1"  # (the v1 default)
    if not path:
        yield Problem(RULE, (*at, "fieldPath"), f"fieldRef of env {name!r} has no fieldPath")
        return
    subscripted = path.endswith("']") and "['" in path[:-2] and not path.startswith("['")
    base, key = path[:-2].split("['", 1) if subscripted else (path, "")
    if version != "v1" or base not in _CONVERTIBLE or (subscripted and base not in (
            "metadata.annotations", "metadata.labels")):
        yield Problem(RULE, (*at, "fieldPath"), f"fieldPath {path!r} ({version}) of env "
                      f"{name!r} is not a field the downward API gives")
    elif subscripted:
        for msg in is_qualified_name(key.lower() if base == "metadata.annotations" else key):
            yield Problem(RULE, at, f"key {key!r} of fieldPath {path!r} (env {name!r}) is not "
                          f"a qualified name: {msg}")
    elif base not in FIELD_PATHS and base != "spec.host":
        yield Problem(RULE, (*at, "fieldPath"), f"fieldPath {path!r} of env {name!r} is not "
                      f"one a container's env may use: {', '.join(FIELD_PATHS)}")


def _resource_ref(ref: dict[str, Any], name: str, at: tuple[Any, ...]) -> Iterator[Problem]:
    resource = text(ref.get("resource"))
    if not resource:
        yield Problem(RULE, (*at, "resource"), f"resourceFieldRef of env {name!r} has no "
                      "resource")
    elif resource not in RESOURCES and not resource.startswith(("requests.hugepages-",
                                                                  "limits.hugepages-")):
        yield Problem(RULE, (*at, "resource"), f"resource {resource!r} of env {name!r} is not "
                      f"one of {', '.join(RESOURCES)}")
    divisor = ref.get("divisor")
    if divisor is None or isinstance(divisor, bool):
        return
    try:
        shown_as = canonical(divisor)
    except QuantityError:
        return
    kind = resource.split(".", 1)[-1]
    allowed = _SIZES if kind.startswith("hugepages-") else _DIVISORS.get(kind)
    if shown_as != "0" and allowed is not None and shown_as not in allowed:
        yield Problem(RULE, (*at, "divisor"), f"divisor {shown_as!r} of env {name!r} is not "
                      f"one {resource} allows: {', '.join(allowed)}")


def _key_ref(ref: dict[str, Any], kind: str, name: str, at: tuple[Any, ...]
             ) -> Iterator[Problem]:
    ref_name = text(ref.get("name"))
    for msg in object_name_problems(ref_name):
        yield Problem(RULE, (*at, "name"), f"{kind} name {ref_name!r} of env {name!r} is not "
                      f"a DNS-1123 subdomain: {msg}")
    key = text(ref.get("key"))
    if not key:
        yield Problem(RULE, (*at, "key"), f"{kind} of env {name!r} has no key")
    for msg in config_key_problems(key) if key else []:
        yield Problem(RULE, (*at, "key"), f"{kind} key {key!r} of env {name!r} is not valid: "
                      f"{msg}")


def _env_from(source: dict[str, Any], at: tuple[Any, ...], index: int) -> Iterator[Problem]:
    prefix = text(source.get("prefix"))
    for msg in env_name_problems(prefix) if prefix else []:
        yield Problem(RULE, (*at, index, "prefix"), f"envFrom prefix {prefix!r} is not valid: "
                      f"{msg}")
    used = [key for key in ("configMapRef", "secretRef") if isinstance(source.get(key), dict)]
    if len(used) != 1:
        yield Problem(RULE, (*at, index), "an envFrom names " + (" and ".join(used) or
                      "nothing") + "; expected one of configMapRef or secretRef")
    for key in used:
        ref_name = text(source[key].get("name"))
        if not ref_name:
            yield Problem(RULE, (*at, index, key, "name"), f"envFrom {key} has no name")
        for msg in object_name_problems(ref_name, prefix=True) if ref_name else []:
            yield Problem(RULE, (*at, index, key, "name"), f"envFrom {key} name {ref_name!r} "
                          f"is not a DNS-1123 subdomain: {msg}")
