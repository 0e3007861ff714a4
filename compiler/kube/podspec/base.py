"""What every pod-spec rule module shares: the `Problem` they report, the `Scope` they are run
in, and the value tests of `k8s.io/apimachinery/pkg/util/validation` that core validation
applies to pod fields (port names, environment variable names, ConfigMap keys, IDs).

A rule module reads a plain pod (or Job) spec as the API server receives it, before its
defaults: a missing or empty field that a default fills is no problem. Pure: no I/O, never
raises on malformed input (a value of the wrong type is passed over: the CRD schema reports it).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterator
from typing import Any, NamedTuple

from compiler.common.diagnostics import Path
from compiler.kube.objectmeta import is_dns1123_subdomain

MAX_INT32 = 2**31 - 1


class Problem(NamedTuple):
    """One field the API server would refuse: rule id, path below the spec handed in, and a
    message naming the value and what is expected. `pod_only` marks what only the Pod create
    path checks (the Job's template passes it; the Pods the Job controller makes do not)."""

    rule: str
    path: Path
    message: str
    pod_only: bool = False


class Scope(enum.IntEnum):
    """How complete the spec is, so that no rule fires on what a later step fills in.

    PATCH: a TrainJob's runtime patch, merged into the runtime later: only values that are
    wrong whatever they merge with. RUNTIME: a runtime's template, which the TrainJob
    (image, resourcesPerNode, patches) and the plugins (env, ports, volumes, counts) complete:
    also the shape of each item and list. PODS: the compiled JobSet, as the API server gets it:
    every rule."""

    PATCH = 0
    RUNTIME = 1
    PODS = 2


def dicts(value: Any) -> Iterator[tuple[int, dict[str, Any]]]:
    """The (index, item) pairs of a list's mapping items (nothing for a non-list)."""
    if isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, dict):
                yield index, item


def text(value: Any) -> str:
    """A string field as Go sees it after decoding: absent or null is ""."""
    return value if isinstance(value, str) else ""


def integer(value: Any) -> int | None:
    """An integer field's value, or None when absent (or not an integer)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def shown(value: Any) -> str:
    """A value for a message: short, quoted when a string."""
    out = repr(value) if isinstance(value, str) else str(value)
    return out if len(out) <= 80 else out[:77] + "..."


def in_range(value: int, low: int, high: int) -> str | None:
    """`InclusiveRangeError` when `value` lies outside low..high."""
    return None if low <= value <= high else f"must be between {low} and {high}, inclusive"


_PORT_CHARS = re.compile(r"[-a-z0-9]+", re.ASCII)
_ONE_LETTER = re.compile(r"[a-z]", re.ASCII)


def port_name_problems(value: str) -> list[str]:
    """`IsValidPortName`: an IANA_SVC_NAME, at most 15 of [-a-z0-9], a letter, no `--`, no
    hyphen at either end."""
    out = []
    if len(value) > 15:
        out.append("must be no more than 15 characters")
    if not _PORT_CHARS.fullmatch(value):
        out.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not _ONE_LETTER.search(value):
        out.append("must contain at least one letter (a-z)")
    if "--" in value:
        out.append("must not contain consecutive hyphens")
    if value.startswith("-") or value.endswith("-"):
        out.append("must not begin or end with a hyphen")
    return out


def port_problems(value: Any) -> list[str]:
    """`ValidatePortNumOrName`: 1..65535, or a port name."""
    number = integer(value)
    if number is not None:
        problem = in_range(number, 1, 65535)
        return [problem] if problem else []
    return port_name_problems(value) if isinstance(value, str) else []


_ENV_NAME = re.compile("[ -<>-~]+")  # printable ASCII (space to tilde) but '=' (0x3d)


def env_name_problems(value: str) -> list[str]:
    """`IsRelaxedEnvVarName` (the rule since RelaxedEnvironmentVariableValidation went GA in
    1.34, locked on): printable ASCII other than '='."""
    if not value:
        return ["environment variable name must be non-empty"]
    if not _ENV_NAME.fullmatch(value):
        return ["a valid environment variable name must consist only of printable ASCII "
                "characters other than '='"]
    return []


_CONFIG_KEY = re.compile(r"[-._a-zA-Z0-9]+", re.ASCII)


def config_key_problems(value: str) -> list[str]:
    """`IsConfigMapKey`: at most 253 of [-._a-zA-Z0-9], not `.`, `..` or starting `..`."""
    out = ["must be no more than 253 characters"] if len(value) > 253 else []
    if not _CONFIG_KEY.fullmatch(value):
        out.append("a valid config key must consist of alphanumeric characters, '-', '_' or '.'")
    if value == ".":
        out.append("must not be '.'")
    elif value == "..":
        out.append("must not be '..'")
    elif value.startswith(".."):
        out.append("must not start with '..'")
    return out


def object_name_problems(value: str, *, prefix: bool = False) -> list[str]:
    """`NameIsDNSSubdomain`; with `prefix`, a trailing '-' is allowed (`maskTrailingDash`)."""
    if prefix and len(value) > 1 and value.endswith("-"):
        value = value[:-2] + "a"
    return is_dns1123_subdomain(value)


def id_problem(value: Any) -> str | None:
    """`IsValidUserID` / `IsValidGroupID`: 0..2147483647."""
    number = integer(value)
    return None if number is None else in_range(number, 0, MAX_INT32)


# The sources of a volume in the order `validateVolumeSource` takes them: the first one found
# is the volume's type and is validated; every later one is refused as a second type (and its
# path is the one named, "downwarAPI" being upstream's own spelling of that path).
VOLUME_SOURCES = (
    "emptyDir", "hostPath", "gitRepo", "gcePersistentDisk", "awsElasticBlockStore", "secret",
    "nfs", "iscsi", "glusterfs", "flocker", "persistentVolumeClaim", "rbd", "cinder", "cephfs",
    "quobyte", "downwardAPI", "fc", "flexVolume", "configMap", "azureFile", "vsphereVolume",
    "photonPersistentDisk", "portworxVolume", "azureDisk", "storageos", "projected", "scaleIO",
    "csi", "ephemeral", "image")


def volume_sources(volume: dict[str, Any]) -> list[str]:
    """The sources a volume sets (not null), in `VOLUME_SOURCES` order."""
    return [key for key in VOLUME_SOURCES if volume.get(key) is not None]
