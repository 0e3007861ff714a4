"""Compiled plans of the built-in rules: the same violations as CUE, without the evaluator.

A CUE evaluation costs about a millisecond per pack, and in a real repository every JobSet is
new where the rules look (each job has its own image tag), so the memo cannot help. Each
built-in rule's `violations` comprehension is a pure function of a few fields; here it is
written in Python over the same `input` and settings, giving the same paths and messages in
the same order; a pack's rules are one plan (one pass over the containers and pods for all of
them), which reads the input as `views.plan_input` builds it (the parts only a few rules read
are asked for, not built for every document).

A pack's plan is used only for the exact pack file it was written from (`DIGESTS`: a changed pack
is evaluated by CUE), and whenever an input has a shape the plan does not decide as CUE does
(a field of an unexpected type, which CUE would report as an evaluation error), it raises
`Fallback` and the engine evaluates that input with CUE. `tests/test_native_plans.py` checks
every plan against CUE on the policy test cases and a generated corpus.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from compiler.common.jsondata import Obj
from compiler.policy.views import canonical, gpus, resource_lists, trainjob_label

Found = list[tuple[Sequence[Any], str | None]]  # (path, message or None: the rule's message)
# A pack's plan: the violations of each of the `active` rules it is asked for (by rule id;
# it may give others too), from the input and the pack's settings.
PackPlan = Callable[[Obj, Obj, Collection[str]], dict[str, Found]]

# sha256 of the pack files the plans below were written from.
DIGESTS = {
    "images": "d639061b89e8613b803ff9ae9b69625cf6d43f44261cf8450b115c56b4664c0d",
    "resources": "b72ac303748299ffa5269b6c82c9c0c9f5f725d20ac5746ef56180d4fdd710d1",
    "scheduling": "61ac9a7236db93ace51a26b00139d4db6f4c0ccc626a08e2644e3f58b52ff4b2",
    "security": "ccc403d0d088fd25e145b20daa55aae5c7df3a411c016641817d567ee2042c3e",
}


class Fallback(Exception):
    """The input has a shape only CUE decides (it would most likely be a rule error)."""


_MISSING = object()
_EMPTY: Obj = {}


def _get(value: Any, *keys: str) -> Any:
    """A field down a path of structs, `_MISSING` where CUE's selector would fail."""
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            return _MISSING
        value = value[key]
    return value


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise Fallback
    return value


def _bool_or_null(value: Any) -> bool | None:
    if value is _MISSING or value is None:
        return None
    if not isinstance(value, bool):
        raise Fallback
    return value


def _ref(image: str) -> tuple[str, str, bool, str]:
    """images.cue's _ref: registry, name, digest, tag."""
    slash = image.split("/")
    first = slash[0]
    registry = first if len(slash) > 1 and (
        "." in first or ":" in first or first == "localhost") else "docker.io"
    name = image if registry == first and len(slash) > 1 else "docker.io/" + image
    digest = "@" in image
    last = slash[-1]
    tag = last.split(":")[1] if not digest and ":" in last else ""
    return registry, name, digest, tag


def images(inp: Obj, settings: Obj, active: Collection[str]) -> dict[str, Found]:
    """The images pack: images.tag, images.allowed-registries."""
    tag = "images.tag" in active
    allowed = settings["images"]["allowedRegistries"] \
        if "images.allowed-registries" in active else None
    untagged: Found = []
    foreign: Found = []
    if tag or allowed is not None:
        for c in inp["containers"]:
            image = c["container"].get("image", _MISSING)
            if image is _MISSING:
                continue
            registry, name, digest, version = _ref(_str(image))
            if tag and not digest and version in ("", "latest"):
                how = "untagged" if version == "" else "tagged latest"
                untagged.append(((*c["path"], "image"),
                                 f"image {image} is {how}: pin a version tag or a digest"))
            if allowed is not None and registry not in allowed and \
                    not any(name.startswith(a + "/") for a in allowed):
                foreign.append(((*c["path"], "image"), f"image {image} comes from "
                                f"{registry}, which is not in the allowed registries"))
    return {"images.tag": untagged, "images.allowed-registries": foreign}


@lru_cache(maxsize=4096)
def _extended(name: str) -> bool:
    return "/" in name and not name.startswith("kubernetes.io/") and \
        ".kubernetes.io" not in name.split("/")[0]


def resources(inp: Obj, settings: Obj, active: Collection[str]) -> dict[str, Found]:
    """The resources pack: resources.trainer-requests,
    resources.extended-requests-equal-limits, resources.max-nodes, resources.max-gpus."""
    trainer = "resources.trainer-requests" in active
    extended = "resources.extended-requests-equal-limits" in active
    bare: Found = []
    unequal: Found = []
    if trainer or extended:
        for c in inp["containers"]:
            requests, limits = resource_lists(c["container"])
            if trainer and c["ancestor"] == "trainer" and not c["init"] and \
                    _str(c["container"].get("name", _MISSING)) == "node" and \
                    not requests and not limits:
                bare.append((tuple(c["path"]), f"the trainer container of {c['job']} sets no "
                             "resource requests or limits (set spec.trainer.resourcesPerNode)"))
            if extended and requests:
                _unequal(c["path"], requests, limits, unequal)
    out = {"resources.trainer-requests": bare,
           "resources.extended-requests-equal-limits": unequal}
    if "resources.max-nodes" in active:
        out["resources.max-nodes"] = _over(
            inp, _nodes, settings["resources"]["maxNumNodes"],
            ("template", "spec", "parallelism"), "trainer nodes, more than the allowed")
    if "resources.max-gpus" in active:
        out["resources.max-gpus"] = _over(
            inp, gpus, settings["resources"]["maxGPUs"],
            ("template", "spec", "template", "spec", "containers"),
            "GPUs in all, more than the allowed")
    return out


def _unequal(path: Sequence[Any], requests: Obj, limits: Obj, found: Found) -> None:
    """resources.extended-requests-equal-limits for one container: its extended requests
    (by name) whose canonical quantity is not its limit's."""
    names, plain = _extended_names(tuple(requests))
    if not names:
        return
    if not plain:  # as `policy_input` keys them
        requests = {str(k): v for k, v in requests.items()}
    if not _extended_names(tuple(limits))[1]:
        limits = {str(k): v for k, v in limits.items()}
    for name in names:
        raw, raw_limit = str(requests[name]), limits.get(name)
        if raw_limit is not None and str(raw_limit) == raw:
            continue  # (equal strings, equal canonical quantities)
        request = canonical(raw)
        limit = None if raw_limit is None else canonical(str(raw_limit))
        if limit == request:
            continue
        message = f"{name} request {request} has no limit; set the limit equal to the " \
            "request (pods would be rejected)" if limit is None else \
            f"{name} request {request} differs from its limit {limit}; pods would be " \
            "rejected"
        found.append(((*path, "resources", "requests", name), message))


@lru_cache(maxsize=4096)
def _extended_names(keys: tuple[Any, ...]) -> tuple[tuple[str, ...], bool]:
    """The extended resource names of a requests map with these keys, as `policy_input`
    keys them (`str`), sorted; and whether every key is a string already. (Equal key tuples
    give the same answer: keys that are equal but of different types are numbers or
    booleans, which name no extended resource.)"""
    return tuple(sorted({name for name in map(str, keys) if _extended(name)})), \
        all(isinstance(k, str) for k in keys)


def _nodes(inp: Obj) -> int:
    return int(inp["summary"]["numNodes"])


def _over(inp: Obj, total: Callable[[Obj], int], bound: Any, tail: tuple[str, ...],
          what: str) -> Found:
    if bound is None:
        return []
    value = total(inp)
    if value <= bound:
        return []
    return [((*p["jobPath"], *tail), f"{value} {what} {bound}")
            for p in inp["pods"] if p["ancestor"] == "trainer"]


def scheduling(inp: Obj, settings: Obj, active: Collection[str]) -> dict[str, Found]:
    """The scheduling pack: scheduling.one-pod-group-policy (runtimes),
    scheduling.kueue-replicated-jobs (JobSets), scheduling.mpi-openmpi (runtimes)."""
    out: dict[str, Found] = {}
    if "scheduling.one-pod-group-policy" in active:
        policy = _get(inp["object"], "spec", "podGroupPolicy")
        both = _get(policy, "coscheduling") is not _MISSING and \
            _get(policy, "volcano") is not _MISSING
        out["scheduling.one-pod-group-policy"] = [(("spec", "podGroupPolicy"), None)] \
            if both else []
    if "scheduling.kueue-replicated-jobs" in active:
        queue = trainjob_label(inp, "kueue.x-k8s.io/queue-name")
        count = inp["summary"]["replicatedJobs"]
        out["scheduling.kueue-replicated-jobs"] = [] if queue is None or count <= 8 else [(
            ("spec", "replicatedJobs"), f"{count} replicatedJobs in a job queued by Kueue "
            f"({_str(queue)}); Kueue admits at most 8")]
    if "scheduling.mpi-openmpi" in active:
        impl = _get(inp["object"], "spec", "mlPolicy", "mpi", "mpiImplementation")
        out["scheduling.mpi-openmpi"] = [] if impl is _MISSING or impl == "OpenMPI" else [(
            ("spec", "mlPolicy", "mpi", "mpiImplementation"),
            f"mpiImplementation {_str(impl)} is not supported; use OpenMPI")]
    return out


def _in(value: Any, key: str) -> Any:
    """`_get(value, key)`, for the one key."""
    return value.get(key, _MISSING) if isinstance(value, dict) else _MISSING


_HOST = ("hostNetwork", "hostPID", "hostIPC")


def security(inp: Obj, settings: Obj, active: Collection[str]) -> dict[str, Found]:
    """The security pack: security.privileged, security.host-namespaces,
    security.host-path, security.capabilities, security.run-as-non-root."""
    out: dict[str, Found] = {}
    if "security.privileged" in active or "security.capabilities" in active or \
            "security.run-as-non-root" in active:
        out.update(_containers(inp, settings, active))
    if "security.host-namespaces" in active or "security.host-path" in active:
        out.update(_pods(inp, active))
    return out


def _containers(inp: Obj, settings: Obj, active: Collection[str]) -> dict[str, Found]:
    """security.privileged, security.capabilities and security.run-as-non-root, in one pass
    over the containers."""
    privileged = "security.privileged" in active
    capable = "security.capabilities" in active
    allowed = settings["security"]["allowedCapabilities"] if capable else ()
    non_root = "security.run-as-non-root" in active
    runs_privileged: Found = []
    capabilities: Found = []
    as_root: Found = []
    for c in inp["containers"]:
        container = c["container"]
        context = container.get("securityContext")
        if not isinstance(context, dict):  # (none: not privileged, adds nothing, own null)
            context = _EMPTY
        if privileged and "privileged" in context:
            value = context["privileged"]
            if not isinstance(value, bool):
                raise Fallback
            if value is True:
                runs_privileged.append(((*c["path"], "securityContext", "privileged"), None))
        if capable and "capabilities" in context:
            _capabilities(c["path"], _in(context["capabilities"], "add"), allowed,
                          capabilities)
        if non_root:
            own = _bool_or_null(context.get("runAsNonRoot"))
            pod = _bool_or_null(_in(c["pod"].get("securityContext", _MISSING), "runAsNonRoot"))
            if own is not True and not (own is None and pod is True):
                as_root.append(((*c["path"], "securityContext"), f"container "
                                f"{_str(container.get('name', _MISSING))} does not set "
                                "runAsNonRoot: true"))
    return {"security.privileged": runs_privileged, "security.capabilities": capabilities,
            "security.run-as-non-root": as_root}


def _capabilities(path: Sequence[Any], add: Any, allowed: Collection[str],
                  found: Found) -> None:
    """security.capabilities for one container's `securityContext.capabilities.add`."""
    if add is _MISSING:
        return
    if not isinstance(add, list):
        raise Fallback
    for i, cap in enumerate(add):
        if _str(cap) not in allowed:
            found.append(((*path, "securityContext", "capabilities", "add", i),
                          f"capability {cap} is not in the allowed list"))


def _pods(inp: Obj, active: Collection[str]) -> dict[str, Found]:
    """security.host-namespaces and security.host-path, in one pass over the pods."""
    namespaces = "security.host-namespaces" in active
    paths = "security.host-path" in active
    shared: Found = []
    mounted: Found = []
    for p in inp["pods"]:
        spec = p["spec"]
        if namespaces:
            for field in _HOST:
                if field not in spec:
                    continue
                value = spec[field]
                if not isinstance(value, bool):
                    raise Fallback
                if value is True:
                    shared.append(((*p["path"], field),
                                   f"{field} is set: pods must not share the node's namespaces"))
        volumes = spec.get("volumes", _MISSING) if paths else _MISSING
        if volumes is _MISSING:
            continue
        if not isinstance(volumes, list):
            raise Fallback
        for i, v in enumerate(volumes):
            if _in(v, "hostPath") is not _MISSING:
                mounted.append(((*p["path"], "volumes", i, "hostPath"),
                                f"volume {_str(_get(v, 'name'))} is a hostPath volume: pods "
                                "must not mount node paths"))
    return {"security.host-namespaces": shared, "security.host-path": mounted}


# Each built-in pack's plan and the rules it decides.
PLANS: dict[str, tuple[PackPlan, frozenset[str]]] = {
    "images": (images, frozenset({"images.tag", "images.allowed-registries"})),
    "resources": (resources, frozenset({
        "resources.trainer-requests", "resources.extended-requests-equal-limits",
        "resources.max-nodes", "resources.max-gpus"})),
    "scheduling": (scheduling, frozenset({
        "scheduling.one-pod-group-policy", "scheduling.kueue-replicated-jobs",
        "scheduling.mpi-openmpi"})),
    "security": (security, frozenset({
        "security.privileged", "security.host-namespaces", "security.host-path",
        "security.capabilities", "security.run-as-non-root"})),
}


def digest(source: bytes) -> str:
    """The sha256 of a pack file's bytes."""
    return hashlib.sha256(source).hexdigest()


def plan_for(path: Path, source: bytes, rule_ids: list[str]) -> PackPlan | None:
    """The plan of a pack, when the pack is the built-in file it was written from and it
    decides every rule of the pack; None otherwise (CUE evaluates the pack)."""
    plan = PLANS.get(path.stem)
    if plan is None or DIGESTS.get(path.stem) != digest(source) or \
            not set(rule_ids) <= plan[1]:
        return None
    return plan[0]
