"""The API server's rules for the files a Pod's volumes put in its containers.

What Kubernetes' core validation (`pkg/apis/core/validation/validation.go`) refuses in a Pod
spec's `volumes` and in its containers' mounts, checked before anything acts on them:

- a volume's `name` is a DNS-1123 label (`ValidateVolumes`);
- every item of a ConfigMap or Secret volume, or of a projected ConfigMap or Secret source
  (`validateKeyToPath`), has a non-empty `key` and `path`; every downward API item
  (`validateDownwardAPIVolumeFile`) a non-empty `path`;
- such a `path`, a projected service account token's or cluster trust bundle's `path`
  (`ValidateLocalNonReservedPath`) is not absolute, has no `..` element and does not start
  with `..` (the kubelet keeps its own `..data` links there);
- every `mode` and the `defaultMode` of a ConfigMap, Secret, downward API or projected volume
  is a number between 0 and 0777 octal (511), both inclusive;
- a mount's `subPath` and `subPathExpr` (`validateLocalDescendingPath`) are not absolute and
  have no `..` element.

`problems` returns them for one Pod spec as (field path below the spec, message) pairs, the
message naming the volume and what is expected. Pure: data in, pairs out; it writes nothing
and never raises on malformed input. Called by `compiler.localrun.plan`, which refuses to run
a JobSet whose pods the API server would refuse, before it writes any file, and by
`compiler.kube.podspec.check` (rule `RULE`), which admission and the compile run.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from compiler.common.diagnostics import Path
from compiler.kube.objectmeta import is_dns1123_label
from compiler.kube.podspec.base import volume_sources

Problem = tuple[Path, str]
RULE = "TJC-POD-VOLUME"

MAX_MODE = 0o777
_MODE_EXPECTED = "expected a number between 0 and 0777 (octal), both inclusive"
_CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")


def problems(pod_spec: Any) -> list[Problem]:
    """Every volume field of `pod_spec` the API server would refuse, in spec order."""
    if not isinstance(pod_spec, dict):
        return []
    out: list[Problem] = []
    for index, volume in enumerate(_list(pod_spec.get("volumes"))):
        if isinstance(volume, dict):
            out += _volume(volume, ("volumes", index))
    for key in _CONTAINER_LISTS:
        for c_index, container in enumerate(_list(pod_spec.get(key))):
            if isinstance(container, dict):
                out += _mounts(container, (key, c_index))
    return out


def path_problems(value: str, *, reserved: bool = True) -> list[str]:
    """What is wrong with a file path below a volume (`ValidateLocalNonReservedPath`; with
    `reserved=False` `validateLocalDescendingPath`, which lets a path start with `..x`)."""
    found = []
    if value.startswith("/"):
        found.append("is an absolute path")
    if ".." in value.split("/"):
        found.append("has a '..' element")
    elif reserved and value.startswith(".."):
        found.append("starts with '..'")
    return found


def mode_ok(value: Any) -> bool:
    """Whether `value` is a file mode the API server takes: an integer in 0..0777."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_MODE


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _volume(volume: dict[str, Any], at: Path) -> Iterator[Problem]:
    name = volume.get("name")
    shown = repr(name) if isinstance(name, str) else repr(str(name))
    if not isinstance(name, str) or not name:
        yield (*at, "name"), "a volume has no name; expected a DNS-1123 label"
    else:
        for msg in is_dns1123_label(name):
            yield (*at, "name"), f"volume {shown} is not a DNS-1123 label: {msg}"
    sources = volume_sources(volume)  # only the first is the volume's (`validateVolumeSource`)
    source = sources[0] if sources else ""
    if source in ("configMap", "secret", "downwardAPI", "projected") and \
            isinstance(volume[source], dict):
        yield from _source(volume[source], source, shown, (*at, source))


def _source(source: dict[str, Any], kind: str, volume: str, at: Path) -> Iterator[Problem]:
    yield from _mode(source, "defaultMode", volume, at)
    if kind == "projected":
        for index, item in enumerate(_list(source.get("sources"))):
            if isinstance(item, dict):
                yield from _projection(item, volume, (*at, "sources", index))
        return
    for index, item in enumerate(_list(source.get("items"))):
        if isinstance(item, dict):
            yield from _item(item, volume, (*at, "items", index), keyed=kind != "downwardAPI")


def _projection(source: dict[str, Any], volume: str, at: Path) -> Iterator[Problem]:
    for kind in ("configMap", "secret", "downwardAPI"):
        if isinstance(source.get(kind), dict):
            for index, item in enumerate(_list(source[kind].get("items"))):
                if isinstance(item, dict):
                    yield from _item(item, volume, (*at, kind, "items", index),
                                     keyed=kind != "downwardAPI")
    for kind in ("serviceAccountToken", "clusterTrustBundle"):
        if isinstance(source.get(kind), dict):
            yield from _path(source[kind], volume, (*at, kind))


def _item(item: dict[str, Any], volume: str, at: Path, *, keyed: bool) -> Iterator[Problem]:
    key = item.get("key")
    if keyed and (not isinstance(key, str) or not key):
        yield (*at, "key"), (f"an item of volume {volume} has no key; expected the key "
                              "of the ConfigMap or Secret to write")
    yield from _path(item, volume, at)
    yield from _mode(item, "mode", volume, at)


def _path(holder: dict[str, Any], volume: str, at: Path) -> Iterator[Problem]:
    value = holder.get("path")
    if not isinstance(value, str) or not value:
        yield (*at, "path"), (f"an item of volume {volume} has no path; expected a file path "
                               "relative to the volume")
        return
    for fact in path_problems(value):
        yield (*at, "path"), (f"{value!r} of volume {volume} {fact}; expected a relative path "
                               "inside the volume")


def _mode(holder: dict[str, Any], key: str, volume: str, at: Path) -> Iterator[Problem]:
    if key not in holder or holder[key] is None:
        return
    value = holder[key]
    if not mode_ok(value):
        octal = f" (octal {value:#o})" if isinstance(value, int) else ""
        yield (*at, key), f"{key} {value!r}{octal} of volume {volume}: {_MODE_EXPECTED}"


def _mounts(container: dict[str, Any], at: Path) -> Iterator[Problem]:
    for index, mount in enumerate(_list(container.get("volumeMounts"))):
        if not isinstance(mount, dict):
            continue
        volume = repr(str(mount.get("name")))
        for key in ("subPath", "subPathExpr"):
            value = mount.get(key)
            if isinstance(value, str) and value:
                for fact in path_problems(value, reserved=False):
                    yield (*at, "volumeMounts", index, key), (
                        f"{value!r} of the mount of volume {volume} {fact}; expected a "
                        "relative path inside the volume")
