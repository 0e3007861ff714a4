"""Volume mounts as core validation has them (`ValidateVolumeMounts`,
`validateMountPropagation`, `validateMountRecursiveReadOnly`; subPaths are `volumefiles`'):

- a mount names a volume of the pod (`Scope.PODS` only: a TrainJob's patch or a plugin may add
  the volume) that core validation kept (a volume with an error of its own cannot be mounted);
- a mountPath, unique in the container (from `Scope.RUNTIME` on);
- subPath and subPathExpr not both;
- mountPropagation None, HostToContainer or Bidirectional, the last only in a privileged
  container (`Scope.PODS`: a patch may set the security context);
- recursiveReadOnly Disabled, IfPossible or Enabled, the last two only on a readOnly mount
  without propagation.

Called by `compiler.kube.podspec.check`; pure.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from compiler.kube.podspec.base import Problem, Scope, dicts, text

RULE = "TJC-POD-MOUNT"
PROPAGATIONS = ("None", "HostToContainer", "Bidirectional")
RECURSIVE_READ_ONLY = ("Disabled", "IfPossible", "Enabled")


def problems(pod: dict[str, Any], volumes: set[str], scope: Scope) -> Iterator[Problem]:
    """Every mount problem of the pod spec's containers; `volumes` the names mounts may use."""
    for key in ("containers", "initContainers"):
        for index, container in dicts(pod.get(key)):
            context = container.get("securityContext")
            privileged = isinstance(context, dict) and context.get("privileged") is True
            paths: set[str] = set()
            for m_index, mount in dicts(container.get("volumeMounts")):
                at = (key, index, "volumeMounts", m_index)
                yield from _mount(mount, at, volumes, scope)
                yield from _propagation(mount, at, privileged, scope)
                path = text(mount.get("mountPath"))
                if path in paths and scope >= Scope.RUNTIME:
                    yield Problem(RULE, (*at, "mountPath"), f"mountPath {path!r} is used "
                                  "twice in the container; expected unique mount paths")
                paths.add(path)


def _mount(mount: dict[str, Any], at: tuple[Any, ...], volumes: set[str], scope: Scope
           ) -> Iterator[Problem]:
    name = text(mount.get("name"))
    if not name:
        yield Problem(RULE, (*at, "name"), "a volume mount has no name; expected a volume's "
                      "name")
    if scope >= Scope.PODS and name not in volumes:
        yield Problem(RULE, (*at, "name"), f"volume mount names volume {name!r}, which the pod "
                      "does not have (or which is itself invalid); expected a volume of the pod")
    if not text(mount.get("mountPath")):
        yield Problem(RULE, (*at, "mountPath"), f"the mount of volume {name!r} has no "
                      "mountPath; expected the path in the container")
    if text(mount.get("subPath")) and text(mount.get("subPathExpr")):
        yield Problem(RULE, (*at, "subPathExpr"), f"the mount of volume {name!r} sets subPath "
                      "and subPathExpr; expected at most one")


def _propagation(mount: dict[str, Any], at: tuple[Any, ...], privileged: bool, scope: Scope
                 ) -> Iterator[Problem]:
    name = text(mount.get("name"))
    mode = mount.get("mountPropagation")
    if isinstance(mode, str):
        if mode not in PROPAGATIONS:
            yield Problem(RULE, (*at, "mountPropagation"), f"mountPropagation {mode!r} of the "
                          f"mount of volume {name!r} is not one of {', '.join(PROPAGATIONS)}")
        elif mode == "Bidirectional" and not privileged and scope >= Scope.PODS:
            yield Problem(RULE, (*at, "mountPropagation"), f"the mount of volume {name!r} is "
                          "Bidirectional in a container that is not privileged")
    recursive = mount.get("recursiveReadOnly")
    if not isinstance(recursive, str) or recursive == "Disabled":
        return
    if recursive not in RECURSIVE_READ_ONLY:
        yield Problem(RULE, (*at, "recursiveReadOnly"), f"recursiveReadOnly {recursive!r} of "
                      f"the mount of volume {name!r} is not one of "
                      f"{', '.join(RECURSIVE_READ_ONLY)}")
        return
    if mount.get("readOnly") is not True:
        yield Problem(RULE, (*at, "recursiveReadOnly"), f"recursiveReadOnly {recursive} of the "
                      f"mount of volume {name!r} needs readOnly: true")
    if isinstance(mode, str) and mode != "None":
        yield Problem(RULE, (*at, "recursiveReadOnly"), f"recursiveReadOnly {recursive} of the "
                      f"mount of volume {name!r} needs mountPropagation None or unset")
