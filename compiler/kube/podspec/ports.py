"""Container ports as core validation has them (`validateContainerPorts`, and
`validatePodHostNetworkDeps` for a pod on the host network): a name, when given, is an
IANA_SVC_NAME (`IsValidPortName`) used once in the container; `containerPort` is 1..65535,
`hostPort` 0..65535 (0: none) and equal to the container port on the host network; the
protocol is TCP, UDP or SCTP (empty: TCP). Called by `compiler.kube.podspec.check`; pure.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from compiler.kube.podspec.base import (
    Problem,
    Scope,
    dicts,
    in_range,
    integer,
    port_name_problems,
    text,
)

RULE = "TJC-POD-PORT"
PROTOCOLS = ("TCP", "UDP", "SCTP")
LISTS = ("containers", "initContainers")


def problems(pod: dict[str, Any], scope: Scope) -> Iterator[Problem]:
    """Every port problem of the pod spec's containers and init containers."""
    host_network = pod.get("hostNetwork") is True
    for key in LISTS:
        for c_index, container in dicts(pod.get(key)):
            names: set[str] = set()
            for p_index, port in dicts(container.get("ports")):
                at = (key, c_index, "ports", p_index)
                yield from _port(port, at, names, scope)
                if host_network and key == "containers":
                    yield from _host_network(port, at)


def _port(port: dict[str, Any], at: tuple[Any, ...], names: set[str], scope: Scope
          ) -> Iterator[Problem]:
    name = text(port.get("name"))
    if name:
        msgs = port_name_problems(name)
        for msg in msgs:
            yield Problem(RULE, (*at, "name"), f"port name {name!r} is not valid: {msg}")
        if not msgs and name in names and scope >= Scope.RUNTIME:
            yield Problem(RULE, (*at, "name"), f"port name {name!r} is used twice in the "
                          "container; expected unique port names")
        names.add(name)
    number = integer(port.get("containerPort"))
    if number == 0:
        yield Problem(RULE, (*at, "containerPort"), "a port has containerPort 0; expected the "
                      "port the container listens on, 1 to 65535")
    elif number is not None and (problem := in_range(number, 1, 65535)):
        yield Problem(RULE, (*at, "containerPort"), f"containerPort {number} {problem}")
    host = integer(port.get("hostPort"))
    if host and (problem := in_range(host, 1, 65535)):
        yield Problem(RULE, (*at, "hostPort"), f"hostPort {host} {problem} (or 0 for none)")
    protocol = text(port.get("protocol"))
    if protocol and protocol not in PROTOCOLS:
        yield Problem(RULE, (*at, "protocol"), f"protocol {protocol!r} is not one of "
                      f"{', '.join(PROTOCOLS)}")


def _host_network(port: dict[str, Any], at: tuple[Any, ...]) -> Iterator[Problem]:
    host, number = integer(port.get("hostPort")), integer(port.get("containerPort"))
    if host and host != number:
        yield Problem(RULE, (*at, "hostPort"), f"hostPort {host} differs from containerPort "
                      f"{number} in a pod on the host network; expected them equal")
