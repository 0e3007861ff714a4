"""A pod's volumes as core validation has them beyond their files (`ValidateVolumes`,
`validateVolumeSource`; the files, names and modes are `volumefiles`): names unique, one source
per volume (a volume with none is given `emptyDir: {}` by the v1 defaults), and the fields the
source needs (`validateHostPathVolumeSource`, `validateSecretVolumeSource`,
`validateConfigMapVolumeSource`, `validatePersistentClaimVolumeSource`,
`validateNFSVolumeSource`, the emptyDir size limit, the projected sources' names), and which
volumes a mount may name. Called by `compiler.kube.podspec.check`; pure.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from typing import Any

from compiler.kube.podspec.base import Problem, Scope, dicts, shown, text, volume_sources
from compiler.kube.podspec.volumefiles import RULE
from compiler.kube.quantity import QuantityError, parse

HOST_PATH_TYPES = ("", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket",
                   "CharDevice", "BlockDevice")
# (source, field) pairs that must not be empty
_REQUIRED = {"secret": "secretName", "configMap": "name", "persistentVolumeClaim": "claimName"}


def problems(pod: dict[str, Any]) -> Iterator[Problem]:
    """Every volume of the pod spec: extra sources and what the source lacks."""
    for index, volume in dicts(pod.get("volumes")):
        at = ("volumes", index)
        name = text(volume.get("name"))
        sources = volume_sources(volume)
        for extra in sources[1:]:
            yield Problem(RULE, (*at, "downwarAPI" if extra == "downwardAPI" else extra),
                          f"volume {name!r} sets both {sources[0]} and {extra}; expected one "
                          "volume type")
        if sources and isinstance(volume[sources[0]], dict):
            yield from _source(sources[0], volume[sources[0]], name, (*at, sources[0]))


def usable(pod: dict[str, Any], found: list[Problem], scope: Scope
           ) -> tuple[list[Problem], set[str]]:
    """The duplicate names (from RUNTIME on: a patch's volumes merge by name) and the names of
    the volumes a mount can use: as `ValidateVolumes` keeps them, the volumes without any
    problem in `found`, each name once (a name repeats the first such volume's)."""
    bad = {p.path[1] for p in found if p.path[:1] == ("volumes",)}
    out: list[Problem] = []
    names: set[str] = set()
    for index, volume in dicts(pod.get("volumes")):
        name = text(volume.get("name"))
        if name in names:
            if scope >= Scope.RUNTIME:
                out.append(Problem(RULE, ("volumes", index, "name"), f"volume name {name!r} "
                                   "is used twice; expected unique volume names"))
        elif index not in bad:
            names.add(name)
    return out, names


def _source(kind: str, source: dict[str, Any], volume: str, at: tuple[Any, ...]
            ) -> Iterator[Problem]:
    required = _REQUIRED.get(kind)
    if required and not text(source.get(required)):
        yield Problem(RULE, (*at, required), f"volume {volume!r} has no {kind}.{required}; "
                      "expected the name of the object it mounts")
    if kind == "emptyDir":
        yield from _size_limit(source.get("sizeLimit"), volume, at)
    elif kind == "hostPath":
        yield from _host_path(source, volume, at)
    elif kind == "nfs":
        yield from _nfs(source, volume, at)
    elif kind == "projected":
        yield from _projected(source, volume, at)


def _size_limit(value: Any, volume: str, at: tuple[Any, ...]) -> Iterator[Problem]:
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        try:
            negative = parse(value).value < 0
        except QuantityError:
            return
        if negative:
            yield Problem(RULE, (*at, "sizeLimit"), f"emptyDir sizeLimit {shown(value)} of "
                          f"volume {volume!r} is negative; expected a quantity of 0 or more")


def _host_path(source: dict[str, Any], volume: str, at: tuple[Any, ...]) -> Iterator[Problem]:
    path = text(source.get("path"))
    if not path:
        yield Problem(RULE, (*at, "path"), f"hostPath volume {volume!r} has no path; "
                      "expected a path on the node")
        return
    if ".." in path.split("/"):
        yield Problem(RULE, (*at, "path"), f"hostPath {path!r} of volume {volume!r} has a "
                      "'..' element; expected a path without one")
    kind = source.get("type")
    if isinstance(kind, str) and kind not in HOST_PATH_TYPES:
        yield Problem(RULE, (*at, "type"), f"hostPath type {kind!r} of volume {volume!r} is "
                      f"not one of {', '.join(repr(t) for t in HOST_PATH_TYPES)}")


def _nfs(source: dict[str, Any], volume: str, at: tuple[Any, ...]) -> Iterator[Problem]:
    if not text(source.get("server")):
        yield Problem(RULE, (*at, "server"), f"nfs volume {volume!r} has no server; expected "
                      "the NFS server's host")
    path = text(source.get("path"))
    if not path:
        yield Problem(RULE, (*at, "path"), f"nfs volume {volume!r} has no path; expected the "
                      "exported path")
    if not posixpath.isabs(path):
        yield Problem(RULE, (*at, "path"), f"nfs path {path!r} of volume {volume!r} is not "
                      "absolute; expected an absolute path")


def _projected(source: dict[str, Any], volume: str, at: tuple[Any, ...]) -> Iterator[Problem]:
    for index, item in dicts(source.get("sources")):
        kinds = [k for k in ("secret", "configMap", "downwardAPI", "serviceAccountToken",
                             "clusterTrustBundle", "podCertificate") if item.get(k) is not None]
        if len(kinds) > 1:
            yield Problem(RULE, (*at, "sources", index), f"a source of projected volume "
                          f"{volume!r} sets {' and '.join(kinds)}; expected one per source")
        for kind in ("secret", "configMap"):
            ref = item.get(kind)
            if isinstance(ref, dict) and not text(ref.get("name")):
                yield Problem(RULE, (*at, "sources", index, kind, "name"), f"a {kind} source "
                              f"of projected volume {volume!r} has no name; expected the "
                              f"{kind}'s name")
