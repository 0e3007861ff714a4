"""A pod's containers as core validation has them, apart from what they hold (ports, env,
resources, probes and mounts have modules of their own): `validateContainers`,
`validateInitContainers`, `validateContainerCommon` and the pod template's
`ValidatePodTemplateSpec` (no ephemeral containers in a template).

- at least one container; each named with a DNS-1123 label, unique across containers and init
  containers (an init container that repeats a name is the one refused);
- an image (`Scope.PODS` only: the TrainJob's `spec.trainer.image` may give it), without
  leading or trailing whitespace (the Pod create path, `validateContainerOnlyForPod`);
- `imagePullPolicy`, `terminationMessagePolicy` and a container's `restartPolicy` among their
  values (empty ones are defaulted);
- an init container that is not a sidecar (`restartPolicy: Always`) has no lifecycle and no
  probes;
- no two ports of the pod's containers take one host port (`checkHostPortConflicts`; an init
  container only against itself, as init containers run one by one).

Called by `compiler.kube.podspec.check`; pure.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from compiler.kube.objectmeta import is_dns1123_label
from compiler.kube.podspec.base import Problem, Scope, dicts, integer, shown, text

RULE = "TJC-POD-CONTAINER"
LISTS = ("containers", "initContainers")
PULL_POLICIES = ("Always", "IfNotPresent", "Never")
MESSAGE_POLICIES = ("File", "FallbackToLogsOnError")
RESTART_POLICIES = ("Always", "Never", "OnFailure")
_INIT_ONLY_SIDECAR = ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe")


def problems(pod: dict[str, Any], scope: Scope) -> Iterator[Problem]:
    """Every container problem of the pod spec, containers first."""
    if scope >= Scope.RUNTIME and not any(True for _ in dicts(pod.get("containers"))):
        yield Problem(RULE, ("containers",), "the pod has no containers; expected at least one")
    if pod.get("ephemeralContainers"):
        yield Problem(RULE, ("ephemeralContainers",), "ephemeral containers are not allowed "
                      "in a pod template; remove them")
    for key in LISTS:
        for index, container in dicts(pod.get(key)):
            yield from _common(container, (key, index), scope)
            if key == "initContainers" and scope >= Scope.RUNTIME:
                yield from _init_only(container, (key, index))
    if scope >= Scope.RUNTIME:
        yield from _unique_names(pod)
        yield from _host_ports(pod)


def _common(container: dict[str, Any], at: tuple[str, int], scope: Scope) -> Iterator[Problem]:
    name = text(container.get("name"))
    if not name:
        yield Problem(RULE, (*at, "name"), "a container has no name; expected a DNS-1123 label")
    for msg in is_dns1123_label(name) if name else []:
        yield Problem(RULE, (*at, "name"), f"container name {name!r} is not a DNS-1123 label: "
                      f"{msg}")
    image = text(container.get("image"))
    if scope >= Scope.PODS and not image:
        yield Problem(RULE, (*at, "image"), f"container {name!r} has no image; expected the "
                      "image to run (in the runtime or the TrainJob's spec.trainer.image)")
    if image != image.strip():
        yield Problem(RULE, (*at, "image"), f"image {image!r} of container {name!r} has "
                      "leading or trailing whitespace; Pods are refused for it", pod_only=True)
    for key, allowed in (("imagePullPolicy", PULL_POLICIES),
                         ("terminationMessagePolicy", MESSAGE_POLICIES),
                         ("restartPolicy", RESTART_POLICIES)):
        value = container.get(key)
        if isinstance(value, str) and value and value not in allowed:
            yield Problem(RULE, (*at, key), f"{key} {value!r} of container {name!r} is not one "
                          f"of {', '.join(allowed)}")


def _init_only(container: dict[str, Any], at: tuple[str, int]) -> Iterator[Problem]:
    if container.get("restartPolicy") == "Always":
        return
    for key in _INIT_ONLY_SIDECAR:
        if container.get(key) is not None:
            yield Problem(RULE, (*at, key), f"init container {text(container.get('name'))!r} "
                          f"sets {key}; only a sidecar (restartPolicy: Always) may")


def _unique_names(pod: dict[str, Any]) -> Iterator[Problem]:
    names: set[str] = set()
    for index, container in dicts(pod.get("containers")):
        name = text(container.get("name"))
        if name in names:
            yield Problem(RULE, ("containers", index, "name"), f"container name {name!r} is "
                          "used twice; expected unique container names")
        names.add(name)
    for index, container in dicts(pod.get("initContainers")):
        name = text(container.get("name"))
        if name in names:
            yield Problem(RULE, ("initContainers", index, "name"), f"init container name "
                          f"{name!r} is already used; expected names unique across containers "
                          "and init containers")
        elif name:
            names.add(name)


def _host_ports(pod: dict[str, Any]) -> Iterator[Problem]:
    """`AccumulateUniqueHostPorts`: protocol, host IP and host port taken once."""
    yield from _host_port_set(pod.get("containers"), "containers")
    for index, container in dicts(pod.get("initContainers")):
        yield from _host_port_set([container], "initContainers", index)


def _host_port_set(containers: Any, key: str, offset: int = 0) -> Iterator[Problem]:
    taken: set[str] = set()
    for c_index, container in dicts(containers):
        for p_index, port in dicts(container.get("ports")):
            host_port = integer(port.get("hostPort"))
            if not host_port:
                continue
            protocol = text(port.get("protocol")) or "TCP"
            taken_as = f"{protocol}/{text(port.get('hostIP'))}/{host_port}"
            if taken_as in taken:
                yield Problem(RULE, (key, c_index + offset, "ports", p_index, "hostPort"),
                              f"host port {shown(taken_as)} is taken twice in the pod; expected "
                              "each host port once")
            taken.add(taken_as)
