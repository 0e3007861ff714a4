"""Compiled plans of the built-in rules: the same violations as CUE, without the evaluator.

A CUE evaluation costs about a millisecond per pack, and in a real repository every JobSet is
new where the rules look (each job has its own image tag), so the memo cannot help. Each
built-in rule's `violations` comprehension is a pure function of a few fields; here it is
written as a Python plan over the same `input` and settings, giving the same paths and
messages in the same order; a plan reads it as `views.plan_input` builds it (the parts only a
few plans read are asked for, not built for every document).

A plan is used only for the exact pack file it was written from (`DIGESTS`: a changed pack
is evaluated by CUE), and whenever an input has a shape the plan does not decide as CUE does
(a field of an unexpected type, which CUE would report as an evaluation error), it raises
`Fallback` and the engine evaluates that input with CUE. `tests/test_native_plans.py` checks
every plan against CUE on the policy test cases and a generated corpus.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

from compiler.common.jsondata import Obj
from compiler.policy.views import canonical, gpus, resource_lists, trainjob_label

Found = list[tuple[list[Any], str | None]]  # (path, message or None for the rule's message)
Plan = Callable[[Obj, Obj], Found]

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


@lru_cache(maxsize=4096)
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


def _images(inp: Obj) -> list[tuple[Obj, str]]:
    out = []
    for c in inp["containers"]:
        image = _get(c["container"], "image")
        if image is not _MISSING:
            out.append((c, _str(image)))
    return out


def images_tag(inp: Obj, settings: Obj) -> Found:
    """images.tag"""
    found: Found = []
    for c, image in _images(inp):
        _, _, digest, tag = _ref(image)
        if not digest and tag in ("", "latest"):
            how = "untagged" if tag == "" else "tagged latest"
            found.append(([*c["path"], "image"],
                          f"image {image} is {how}: pin a version tag or a digest"))
    return found


def images_allowed_registries(inp: Obj, settings: Obj) -> Found:
    """images.allowed-registries"""
    allowed = settings["images"]["allowedRegistries"]
    if allowed is None:
        return []
    found: Found = []
    for c, image in _images(inp):
        registry, name, _, _ = _ref(image)
        if registry not in allowed and not any(name.startswith(a + "/") for a in allowed):
            found.append(([*c["path"], "image"], f"image {image} comes from {registry}, "
                                                 "which is not in the allowed registries"))
    return found


@lru_cache(maxsize=4096)
def _extended(name: str) -> bool:
    return "/" in name and not name.startswith("kubernetes.io/") and \
        ".kubernetes.io" not in name.split("/")[0]


def resources_trainer_requests(inp: Obj, settings: Obj) -> Found:
    """resources.trainer-requests"""
    found: Found = []
    for c in inp["containers"]:
        if c["ancestor"] == "trainer" and not c["init"] and \
                _str(_get(c["container"], "name")) == "node" and \
                not any(resource_lists(c["container"])):
            found.append((list(c["path"]), f"the trainer container of {c['job']} sets no "
                          "resource requests or limits (set spec.trainer.resourcesPerNode)"))
    return found


def resources_extended_requests_equal_limits(inp: Obj, settings: Obj) -> Found:
    """resources.extended-requests-equal-limits"""
    found: Found = []
    for c in inp["containers"]:
        requests, limits = resource_lists(c["container"])
        names = sorted(name for name in map(str, requests) if _extended(name))
        if not names:
            continue
        requests = {str(k): v for k, v in requests.items()}  # as `policy_input` keys them
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
            found.append(([*c["path"], "resources", "requests", name], message))
    return found


def _over(inp: Obj, total: Callable[[Obj], int], bound: Any, tail: list[str],
          what: str) -> Found:
    if bound is None:
        return []
    value = total(inp)
    if value <= bound:
        return []
    return [([*p["jobPath"], *tail], f"{value} {what} {bound}")
            for p in inp["pods"] if p["ancestor"] == "trainer"]


def resources_max_nodes(inp: Obj, settings: Obj) -> Found:
    """resources.max-nodes"""
    return _over(inp, lambda i: i["summary"]["numNodes"], settings["resources"]["maxNumNodes"],
                 ["template", "spec", "parallelism"], "trainer nodes, more than the allowed")


def resources_max_gpus(inp: Obj, settings: Obj) -> Found:
    """resources.max-gpus"""
    return _over(inp, gpus, settings["resources"]["maxGPUs"],
                 ["template", "spec", "template", "spec", "containers"],
                 "GPUs in all, more than the allowed")


def scheduling_one_pod_group_policy(inp: Obj, settings: Obj) -> Found:
    """scheduling.one-pod-group-policy"""
    policy = _get(inp["object"], "spec", "podGroupPolicy")
    if _get(policy, "coscheduling") is _MISSING or _get(policy, "volcano") is _MISSING:
        return []
    return [(["spec", "podGroupPolicy"], None)]


def scheduling_kueue_replicated_jobs(inp: Obj, settings: Obj) -> Found:
    """scheduling.kueue-replicated-jobs"""
    queue = trainjob_label(inp, "kueue.x-k8s.io/queue-name")
    count = inp["summary"]["replicatedJobs"]
    if queue is None or count <= 8:
        return []
    return [(["spec", "replicatedJobs"], f"{count} replicatedJobs in a job queued by Kueue "
             f"({_str(queue)}); Kueue admits at most 8")]


def scheduling_mpi_openmpi(inp: Obj, settings: Obj) -> Found:
    """scheduling.mpi-openmpi"""
    impl = _get(inp["object"], "spec", "mlPolicy", "mpi", "mpiImplementation")
    if impl is _MISSING or impl == "OpenMPI":
        return []
    return [(["spec", "mlPolicy", "mpi", "mpiImplementation"],
             f"mpiImplementation {_str(impl)} is not supported; use OpenMPI")]


def _security(container: Obj) -> Any:
    """The container's securityContext: `_MISSING` when it has none, None when null."""
    return container.get("securityContext", _MISSING)


def _in(value: Any, key: str) -> Any:
    """`_get(value, key)`, for the one key."""
    return value.get(key, _MISSING) if isinstance(value, dict) else _MISSING


def security_privileged(inp: Obj, settings: Obj) -> Found:
    """security.privileged"""
    found: Found = []
    for c in inp["containers"]:
        privileged = _in(_security(c["container"]), "privileged")
        if privileged is not _MISSING and not isinstance(privileged, bool):
            raise Fallback
        if privileged is True:
            found.append(([*c["path"], "securityContext", "privileged"], None))
    return found


_HOST = ("hostNetwork", "hostPID", "hostIPC")


def security_host_namespaces(inp: Obj, settings: Obj) -> Found:
    """security.host-namespaces"""
    found: Found = []
    for p in inp["pods"]:
        spec = p["spec"]
        for field in _HOST:
            if field not in spec:
                continue
            value = spec[field]
            if not isinstance(value, bool):
                raise Fallback
            if value is True:
                found.append(([*p["path"], field],
                              f"{field} is set: pods must not share the node's namespaces"))
    return found


def security_host_path(inp: Obj, settings: Obj) -> Found:
    """security.host-path"""
    found: Found = []
    for p in inp["pods"]:
        volumes = p["spec"].get("volumes", _MISSING)
        if volumes is _MISSING:
            continue
        if not isinstance(volumes, list):
            raise Fallback
        for i, v in enumerate(volumes):
            if _in(v, "hostPath") is not _MISSING:
                found.append(([*p["path"], "volumes", i, "hostPath"],
                              f"volume {_str(_get(v, 'name'))} is a hostPath volume: pods "
                              "must not mount node paths"))
    return found


def security_capabilities(inp: Obj, settings: Obj) -> Found:
    """security.capabilities"""
    allowed = settings["security"]["allowedCapabilities"]
    found: Found = []
    for c in inp["containers"]:
        add = _in(_in(_security(c["container"]), "capabilities"), "add")
        if add is _MISSING:
            continue
        if not isinstance(add, list):
            raise Fallback
        for i, cap in enumerate(add):
            if _str(cap) not in allowed:
                found.append(([*c["path"], "securityContext", "capabilities", "add", i],
                              f"capability {cap} is not in the allowed list"))
    return found


def security_run_as_non_root(inp: Obj, settings: Obj) -> Found:
    """security.run-as-non-root"""
    found: Found = []
    for c in inp["containers"]:
        container = c["container"]
        own = _bool_or_null(_in(_security(container), "runAsNonRoot"))
        pod = _bool_or_null(_in(c["pod"].get("securityContext", _MISSING), "runAsNonRoot"))
        if own is not True and not (own is None and pod is True):
            found.append(([*c["path"], "securityContext"], f"container "
                          f"{_str(container.get('name', _MISSING))} does not set "
                          "runAsNonRoot: true"))
    return found


PLANS: dict[str, Plan] = {
    "images.tag": images_tag,
    "images.allowed-registries": images_allowed_registries,
    "resources.trainer-requests": resources_trainer_requests,
    "resources.extended-requests-equal-limits": resources_extended_requests_equal_limits,
    "resources.max-nodes": resources_max_nodes,
    "resources.max-gpus": resources_max_gpus,
    "scheduling.one-pod-group-policy": scheduling_one_pod_group_policy,
    "scheduling.kueue-replicated-jobs": scheduling_kueue_replicated_jobs,
    "scheduling.mpi-openmpi": scheduling_mpi_openmpi,
    "security.privileged": security_privileged,
    "security.host-namespaces": security_host_namespaces,
    "security.host-path": security_host_path,
    "security.capabilities": security_capabilities,
    "security.run-as-non-root": security_run_as_non_root,
}


def digest(source: bytes) -> str:
    """The sha256 of a pack file's bytes."""
    return hashlib.sha256(source).hexdigest()


def plans_for(path: Path, source: bytes, rule_ids: list[str]) -> dict[str, Plan] | None:
    """The plans of a pack's rules, when the pack is the built-in file they were written
    from and every rule has one; None otherwise (CUE evaluates the pack)."""
    if DIGESTS.get(path.stem) != digest(source) or not all(r in PLANS for r in rule_ids):
        return None
    return {r: PLANS[r] for r in rule_ids}
