"""The Go typed round trip, as plain-dict transformations.

Upstream decodes a runtime's JobSet spec into Go structs, re-encodes it and turns it into an
ApplyConfiguration, and the objects it creates are those ApplyConfigurations marshalled to
JSON. Those steps change the data in a few visible ways that this module reproduces:

- resource quantities come out canonical (`2000m` -> `2`), from the CRD quantity markers;
- struct-valued fields that Go never omits appear as `{}` (job and pod template `metadata`,
  container `resources`, claim template `metadata`/`spec.resources`/`status`);
- a few value-typed `omitempty` scalars disappear when zero (env `value: ""`, `readOnly: false`,
  `replicas: 0`, ...), and an env `resourceFieldRef` gets `divisor: "0"`;
- `finalize` drops what an ApplyConfiguration marshals away: null values, empty lists and
  empty Go maps (labels, annotations, resource lists, ...), while empty structs stay `{}`.

Pure; called by `compiler.context` and the JobSet plugin.
"""

from __future__ import annotations

from typing import Any

from compiler.data import copy_json
from compiler.defaults import canonicalize_quantities, quantity_tree

Obj = dict[str, Any]

_CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
_ZERO_DROPPED_CONTAINER = ("stdin", "stdinOnce", "tty", "workingDir", "imagePullPolicy",
                           "terminationMessagePath", "terminationMessagePolicy")
_ZERO_DROPPED_POD = ("hostNetwork", "hostPID", "hostIPC", "serviceAccountName",
                     "serviceAccount", "nodeName", "hostname", "subdomain", "schedulerName",
                     "priorityClassName", "restartPolicy", "dnsPolicy")
_ZERO_DROPPED_MOUNT = ("readOnly", "subPath", "subPathExpr")
# Go map types: an empty one is omitted when marshalled; an empty struct is not.
MAP_FIELDS = frozenset({"labels", "annotations", "nodeSelector", "limits", "requests",
                        "overhead", "matchLabels", "volumeAttributes", "options", "data",
                        "binaryData", "stringData"})


def jobset_spec(spec: Obj) -> Obj:
    """Return the JobSet spec as upstream's typed round trip leaves it (a new dict)."""
    out = copy_json(spec)
    canonicalize_quantities(out, quantity_tree("TrainingRuntime", "spec", "template", "spec"))
    for rjob in _dicts(out.get("replicatedJobs")):
        _replicated_job(rjob)
    for policy in _dicts(out.get("volumeClaimPolicies")):
        for claim in _dicts(policy.get("templates")):
            _claim(claim, with_status=True)
    return finalize(out)


def _replicated_job(rjob: Obj) -> None:
    _drop_zero(rjob, ("replicas", "groupName"))
    job_template = _struct(rjob, "template")
    _struct(job_template, "metadata")
    job_spec = _struct(job_template, "spec")
    pod_template = _struct(job_spec, "template")
    _struct(pod_template, "metadata")
    pod_spec(_struct(pod_template, "spec"))


def pod_spec(spec: Obj) -> Obj:
    """Normalise one PodSpec in place."""
    _drop_zero(spec, _ZERO_DROPPED_POD)
    for key in _CONTAINER_LISTS:
        for container in _dicts(spec.get(key)):
            _container(container)
    for volume in _dicts(spec.get("volumes")):
        _volume(volume)
    return spec


def patch_pod_spec(spec: Obj) -> Obj:
    """Normalise a `PodSpecPatch` in place: its containers are `ContainerPatch`es."""
    for key in ("initContainers", "containers"):
        for container in _dicts(spec.get(key)):
            for env in _dicts(container.get("env")):
                env_var(env)
            for mount in _dicts(container.get("volumeMounts")):
                _drop_zero(mount, _ZERO_DROPPED_MOUNT)
    for volume in _dicts(spec.get("volumes")):
        _volume(volume)
    return spec


def _container(container: Obj) -> None:
    _drop_zero(container, _ZERO_DROPPED_CONTAINER)
    _struct(container, "resources")
    for env in _dicts(container.get("env")):
        env_var(env)
    for mount in _dicts(container.get("volumeMounts")):
        _drop_zero(mount, _ZERO_DROPPED_MOUNT)
    for port in _dicts(container.get("ports")):
        _drop_zero(port, ("name", "hostPort", "hostIP"))


def env_var(env: Obj) -> Obj:
    """Normalise one typed EnvVar in place (value omitted when empty, divisor defaulted)."""
    _drop_zero(env, ("value",))
    source = env.get("valueFrom")
    if isinstance(source, dict):
        _divisor(source.get("resourceFieldRef"))
    return env


def _volume(volume: Obj) -> None:
    for item in _dicts(_get(volume, "downwardAPI", "items")):
        _divisor(item.get("resourceFieldRef"))
    for source in _dicts(_get(volume, "projected", "sources")):
        for item in _dicts(_get(source, "downwardAPI", "items")):
            _divisor(item.get("resourceFieldRef"))
    claim = _get(volume, "ephemeral", "volumeClaimTemplate")
    if isinstance(claim, dict):
        _claim(claim, with_status=False)


def _claim(claim: Obj, *, with_status: bool) -> None:
    _struct(claim, "metadata")
    _struct(_struct(claim, "spec"), "resources")
    if with_status:
        _struct(claim, "status")


def _divisor(ref: Any) -> None:
    if isinstance(ref, dict) and ref.get("divisor") in (None, ""):
        ref["divisor"] = "0"


def _struct(parent: Obj, key: str) -> Obj:
    """Make `parent[key]` a dict (Go emits a value struct even when it is empty)."""
    value = parent.get(key)
    if not isinstance(value, dict):
        value = {}
        parent[key] = value
    return value


def _drop_zero(obj: Obj, keys: tuple[str, ...]) -> None:
    for key in keys:
        if key in obj and obj[key] in ("", 0, False, None) and obj[key] is not True:
            del obj[key]


def _dicts(value: Any) -> list[Obj]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _get(obj: Obj, *keys: str) -> Any:
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)  # type: ignore[assignment]
    return obj


def finalize(value: Obj) -> Obj:
    """Drop nulls, empty lists and empty maps as an ApplyConfiguration marshal does.

    `jobset_spec` ends with it, so the compile steps after it only need to avoid adding
    empty values; the output is then what upstream's marshalled ApplyConfiguration holds.
    """
    out: Obj = {}
    for key, item in value.items():
        if item is None:
            continue
        if isinstance(item, dict):
            if item or key not in MAP_FIELDS:
                out[key] = finalize(item)
        elif isinstance(item, list):
            if item:
                out[key] = _finalize_list(item)
        else:
            out[key] = item
    return out


def _finalize_list(items: list[Any]) -> list[Any]:
    return [finalize(v) if isinstance(v, dict) else _finalize_list(v) if isinstance(v, list)
            else v for v in items]
