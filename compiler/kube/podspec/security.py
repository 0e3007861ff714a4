"""Security contexts as core validation has them (`ValidateSecurityContext` for a container,
`validatePodSpecSecurityContext` for the pod): user and group IDs 0 to 2^31-1, a container
that is privileged may not also refuse privilege escalation (nor add CAP_SYS_ADMIN while
refusing it), procMount Default or Unmasked (the latter only without host user namespaces),
fsGroupChangePolicy OnRootMismatch or Always, shareProcessNamespace not with hostPID, a seccomp
profile's type among its values with a localhost profile exactly for Localhost. Privileged
containers are allowed: clusters run the API server with --allow-privileged. Called by
`compiler.kube.podspec.check`; pure.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from compiler.kube.podspec.base import Problem, dicts, id_problem, text

RULE = "TJC-POD-SECURITY"
SECCOMP_TYPES = ("Localhost", "RuntimeDefault", "Unconfined")


def problems(pod: dict[str, Any]) -> Iterator[Problem]:
    """Every security context problem of the pod spec and its containers."""
    host_users = pod.get("hostUsers") is not False
    if isinstance(pod.get("securityContext"), dict):
        yield from _pod(pod["securityContext"], ("securityContext",))
    if pod.get("shareProcessNamespace") is True and pod.get("hostPID") is True:
        yield Problem(RULE, ("shareProcessNamespace",), "shareProcessNamespace and hostPID "
                      "cannot both be enabled")
    for key in ("containers", "initContainers"):
        for index, container in dicts(pod.get(key)):
            context = container.get("securityContext")
            if isinstance(context, dict):
                yield from _container(context, host_users, (key, index, "securityContext"))


def _ids(context: dict[str, Any], keys: tuple[str, ...], at: tuple[Any, ...]
         ) -> Iterator[Problem]:
    for key in keys:
        if (problem := id_problem(context.get(key))) is not None:
            yield Problem(RULE, (*at, key), f"{key} {context[key]} {problem}")


def _container(context: dict[str, Any], host_users: bool, at: tuple[Any, ...]
               ) -> Iterator[Problem]:
    yield from _ids(context, ("runAsUser", "runAsGroup"), at)
    proc = context.get("procMount")
    if isinstance(proc, str):
        if proc not in ("Default", "Unmasked"):
            yield Problem(RULE, (*at, "procMount"), f"procMount {proc!r} is not Default or "
                          "Unmasked")
        elif proc == "Unmasked" and host_users:
            yield Problem(RULE, (*at, "procMount"), "procMount Unmasked needs hostUsers: false")
    yield from _seccomp(context.get("seccompProfile"), (*at, "seccompProfile"))
    if context.get("allowPrivilegeEscalation") is not False:
        return
    if context.get("privileged") is True:
        yield Problem(RULE, at, "a container may not be privileged and refuse privilege "
                      "escalation (allowPrivilegeEscalation: false)")
    caps = context.get("capabilities")
    added = caps.get("add") if isinstance(caps, dict) else None
    if isinstance(added, list) and "CAP_SYS_ADMIN" in added:
        yield Problem(RULE, at, "a container may not add CAP_SYS_ADMIN and refuse privilege "
                      "escalation (allowPrivilegeEscalation: false)")


def _pod(context: dict[str, Any], at: tuple[Any, ...]) -> Iterator[Problem]:
    yield from _ids(context, ("fsGroup", "runAsUser", "runAsGroup"), at)
    groups = context.get("supplementalGroups")
    for index, gid in enumerate(groups if isinstance(groups, list) else []):
        if (problem := id_problem(gid)) is not None:
            yield Problem(RULE, (*at, "supplementalGroups", index), f"supplemental group {gid} "
                          f"{problem}")
    policy = context.get("fsGroupChangePolicy")
    if isinstance(policy, str) and policy not in ("OnRootMismatch", "Always"):
        yield Problem(RULE, (*at, "fsGroupChangePolicy"), f"fsGroupChangePolicy {policy!r} is "
                      "not OnRootMismatch or Always")
    yield from _seccomp(context.get("seccompProfile"), (*at, "seccompProfile"))


def _seccomp(profile: Any, at: tuple[Any, ...]) -> Iterator[Problem]:
    """`validateSeccompProfileField`."""
    if not isinstance(profile, dict):
        return
    kind = text(profile.get("type"))
    localhost = profile.get("localhostProfile")
    if kind not in SECCOMP_TYPES:
        yield Problem(RULE, (*at, "type"), f"seccomp profile type {kind!r} is not one of "
                      f"{', '.join(SECCOMP_TYPES)}")
    if kind == "Localhost":
        if localhost is None:
            yield Problem(RULE, (*at, "localhostProfile"), "a Localhost seccomp profile needs a "
                          "localhostProfile")
        elif isinstance(localhost, str) and (localhost.startswith("/") or
                                             ".." in localhost.split("/")):
            yield Problem(RULE, (*at, "localhostProfile"), f"localhostProfile {localhost!r} is "
                          "not a relative path without '..'")
    elif localhost is not None:
        yield Problem(RULE, (*at, "localhostProfile"), f"localhostProfile is set with seccomp "
                      f"profile type {kind!r}; only Localhost takes one")
