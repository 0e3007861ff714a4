"""Probes and lifecycle hooks as core validation has them (`validateLivenessProbe`,
`validateReadinessProbe`, `validateStartupProbe`, `validateProbe`, `validateLifecycle`,
`validateHandler`, `validateHTTPGetAction`, `ValidatePortNumOrName`, `validateSleepAction`):

- each names exactly one handler (exec, httpGet, tcpSocket or grpc for a probe; exec,
  httpGet, tcpSocket or sleep for a hook); exec has a command, ports are 1..65535 or a port
  name, an httpGet scheme is HTTP or HTTPS and its header names are tokens, a sleep lasts 0 to
  the pod's termination grace period (30 s by default);
- no count is negative (a 0 is defaulted); a liveness or startup probe's successThreshold is 1;
  a readiness probe has no terminationGracePeriodSeconds, any other probe's is above 0.

Containers and sidecar init containers (restartPolicy: Always) only: `containers` refuses them
on other init containers. Called by `compiler.kube.podspec.check` from `Scope.RUNTIME` on (a
runtime patch holds no probes); pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from compiler.kube.podspec.base import Problem, dicts, integer, port_problems, shown, text

RULE = "TJC-POD-PROBE"
PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
PROBE_HANDLERS = ("exec", "httpGet", "tcpSocket", "grpc")
HOOK_HANDLERS = ("exec", "httpGet", "tcpSocket", "sleep")
COUNTS = ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold",
          "failureThreshold")
DEFAULT_GRACE = 30
_HEADER = re.compile(r"[-A-Za-z0-9]+", re.ASCII)


def problems(pod: dict[str, Any]) -> Iterator[Problem]:
    """Every probe and hook problem of the pod spec."""
    grace = integer(pod.get("terminationGracePeriodSeconds"))
    grace = DEFAULT_GRACE if grace is None else grace
    for key in ("containers", "initContainers"):
        for index, container in dicts(pod.get(key)):
            if key == "initContainers" and container.get("restartPolicy") != "Always":
                continue
            at = (key, index)
            for probe in PROBES:
                if isinstance(container.get(probe), dict):
                    yield from _probe(container[probe], probe, (*at, probe))
            hooks = container.get("lifecycle")
            for hook in ("postStart", "preStop"):
                if isinstance(hooks, dict) and isinstance(hooks.get(hook), dict):
                    yield from _handler(hooks[hook], HOOK_HANDLERS, grace,
                                        (*at, "lifecycle", hook))


def _probe(probe: dict[str, Any], kind: str, at: tuple[Any, ...]) -> Iterator[Problem]:
    yield from _handler(probe, PROBE_HANDLERS, DEFAULT_GRACE, at)
    for key in COUNTS:
        value = integer(probe.get(key))
        if value is not None and value < 0:
            yield Problem(RULE, (*at, key), f"{kind} {key} is {value}; expected 0 or more")
    success = integer(probe.get("successThreshold")) or 1  # (0 is defaulted to 1)
    if kind != "readinessProbe" and success != 1:
        yield Problem(RULE, (*at, "successThreshold"), f"{kind} successThreshold is {success}; "
                      "expected 1")
    grace = integer(probe.get("terminationGracePeriodSeconds"))
    if probe.get("terminationGracePeriodSeconds") is not None and kind == "readinessProbe":
        yield Problem(RULE, (*at, "terminationGracePeriodSeconds"), "a readinessProbe may not "
                      "set terminationGracePeriodSeconds")
    elif grace is not None and grace <= 0:
        yield Problem(RULE, (*at, "terminationGracePeriodSeconds"), f"{kind} "
                      f"terminationGracePeriodSeconds is {grace}; expected more than 0")


def _handler(holder: dict[str, Any], kinds: tuple[str, ...], grace: int, at: tuple[Any, ...]
             ) -> Iterator[Problem]:
    used = [k for k in kinds if isinstance(holder.get(k), dict)]
    if not used:
        yield Problem(RULE, at, f"{at[-1]} names no handler; expected one of {', '.join(kinds)}")
        return
    for extra in used[1:]:
        yield Problem(RULE, (*at, extra), f"{at[-1]} names {used[0]} and {extra}; expected one "
                      "handler")
    first, action = used[0], holder[used[0]]
    where = (*at, first)
    if first == "exec" and not action.get("command"):
        yield Problem(RULE, (*where, "command"), "an exec handler has no command")
    elif first in ("httpGet", "tcpSocket", "grpc"):
        for msg in port_problems(action.get("port", 0)):
            yield Problem(RULE, (*where, "port"), f"port {shown(action.get('port', 0))} of "
                          f"{first}: {msg}")
    if first == "httpGet":
        yield from _http_get(action, where)
    elif first == "sleep":
        seconds = integer(action.get("seconds")) or 0
        if not 0 <= seconds <= grace:
            yield Problem(RULE, where, f"sleep of {seconds} seconds; expected 0 to the "
                          f"termination grace period ({grace})")


def _http_get(action: dict[str, Any], at: tuple[Any, ...]) -> Iterator[Problem]:
    scheme = text(action.get("scheme"))
    if scheme and scheme not in ("HTTP", "HTTPS"):
        yield Problem(RULE, (*at, "scheme"), f"httpGet scheme {scheme!r} is not HTTP or HTTPS")
    for _, header in dicts(action.get("httpHeaders")):
        name = text(header.get("name"))
        if not _HEADER.fullmatch(name):
            yield Problem(RULE, (*at, "httpHeaders"), f"HTTP header name {name!r} is not "
                          "valid: expected letters, digits and '-'")
