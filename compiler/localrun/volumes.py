"""A pod's volumes as folders below the run folder.

`mount` gives every volume a container mounts a folder below the run folder (a claim's is
shared by every pod; a hostPath volume is that host path, which is not written) and writes a
ConfigMap's or Secret's keys there as files, the way the kubelet projects them; it returns the
(mountPath, local path) pairs that the plan rewrites paths with. Every folder and file is
made by `compiler.localrun.safefs`, so nothing is written outside the volume's folder whatever
an item path says, and modes are chosen here: 0600 for every Secret key (SSH private keys and
the like), a ConfigMap key's mode without write access for group and others, never set-uid,
set-gid or sticky bits. The plan has already refused what the API server refuses
(`compiler.kube.podspec.volumefiles`); this module refuses it again rather than trust that.
Called by `compiler.localrun.plan`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from compiler.common.jsondata import Obj
from compiler.kube.podspec import volumefiles
from compiler.localrun import kubelet, safefs

SECRET_MODE = 0o600
_CONFIG_MODE = 0o644  # the API server's default for defaultMode


class VolumeError(ValueError):
    """A volume that cannot be made below the run folder; the message says why."""


def mount(hostname: str, pod_spec: Obj, container: Obj, side: dict[tuple[str, str], Obj],
          run_dir: Path) -> list[tuple[str, str]]:
    """Write the container's volumes below `run_dir`; (mountPath, local path) pairs."""
    volumes = {str(v.get("name")): v for v in pod_spec.get("volumes") or []}
    pairs = []
    for mount_ in container.get("volumeMounts") or []:
        volume = volumes.get(str(mount_.get("name")), {})
        try:
            local = _make(hostname, volume, side, run_dir)
        except safefs.UnsafePath as exc:
            raise VolumeError(f"volume {volume.get('name')!r}: {exc}") from exc
        target = local / str(mount_.get("subPath") or "")
        pairs.append((str(mount_["mountPath"]).rstrip("/") or "/", str(target).rstrip("/")))
    return pairs


def _make(hostname: str, volume: Obj, side: dict[tuple[str, str], Obj],
          run_dir: Path) -> Path:
    """The volume's local folder, created and filled (a hostPath is used as it is)."""
    if "hostPath" in volume:
        return Path(str(volume["hostPath"].get("path", "/")))
    names = _folder(hostname, volume)
    with safefs.open_dir(run_dir, names) as folder:
        _fill(folder, volume, side)
    return run_dir.joinpath(*names)


def _folder(hostname: str, volume: Obj) -> list[str]:
    """The volume's folder below the run folder, as plain names."""
    name = str(volume.get("name", "volume"))
    if "persistentVolumeClaim" in volume:  # shared by every pod, as a ReadWriteMany claim is
        return ["volumes", str(volume["persistentVolumeClaim"].get("claimName", name))]
    return ["pods", hostname, "volumes", name]


def _fill(folder: int, volume: Obj, side: dict[tuple[str, str], Obj]) -> None:
    """A ConfigMap or Secret volume gets its keys as files."""
    kind, source = ("ConfigMap", volume.get("configMap")) if "configMap" in volume else \
        ("Secret", volume.get("secret"))
    if not isinstance(source, dict):
        return
    ref = str(source.get("name") or source.get("secretName") or "")
    found = side.get((kind, ref))
    if found is None:
        if source.get("optional"):
            return
        raise VolumeError(f"{kind} {ref!r} mounted as volume {volume.get('name')!r} is not "
                          "among the compiled objects")
    _write_items(folder, found.get("data") or {}, source, kind)


def _write_items(folder: int, data: dict[str, Any], source: Obj, kind: str) -> None:
    items = source.get("items") or [{"key": key, "path": key} for key in sorted(data)]
    for item in items:
        raw = data.get(str(item.get("key")))
        if raw is None:
            continue
        content = kubelet.decoded(str(raw)) if kind == "Secret" else str(raw).encode()
        names = safefs.split_relative(str(item.get("path", "")), "item path")
        safefs.write_file(folder, names, content, file_mode(kind, item, source))


def file_mode(kind: str, item: Obj, source: Obj) -> int:
    """The mode a key's file gets here: 0600 for a Secret's (key material); a ConfigMap's
    asked-for mode, readable by its owner (locally the owner runs every pod) and writable by
    nobody else. A mode the API server refuses is refused."""
    asked = item.get("mode")
    if asked is None:
        asked = source.get("defaultMode")
    if asked is None:
        asked = _CONFIG_MODE
    if not volumefiles.mode_ok(asked):
        raise safefs.UnsafePath(f"mode {asked!r} is not between 0 and 0777 (octal)")
    if kind == "Secret":
        return SECRET_MODE
    return (int(asked) & 0o755) | 0o400
