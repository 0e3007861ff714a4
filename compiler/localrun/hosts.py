"""Pod host names and ports on one machine.

Every pod host name (`<jobset>-<job>-<replica>-<index>` and its `.<subdomain>` form) becomes
127.0.0.1, and every container port a pod declares becomes a free local port of its own, so
that several "nodes" listening on the same port share this host. `HostTable.rewrite` applies
the mapping to an env value or argument; `remap_port_vars` moves a bare port value too when
the same container names that pod's host in another variable (a master or tracker address
beside its port, whatever the framework calls them). Called by the plan.
"""

from __future__ import annotations

import functools
import re
import socket
from collections.abc import Mapping, Sequence

from compiler.common.jsondata import Obj
from compiler.common.records import dataclass
from compiler.localrun.kubelet import PodIdentity

LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class HostTable:
    """Host names of the pods and their port mapping."""

    aliases: dict[str, str]  # every name of a pod -> its short host name
    ports: dict[tuple[str, int], int]  # (short host name, container port) -> local port

    @classmethod
    def build(cls, pods: Sequence[tuple[PodIdentity, Obj]], subdomain: str,
              declared: Mapping[str, list[int]]) -> HostTable:
        """Host names of every pod; a free local port for every port a pod declares."""
        aliases = {}
        for ident, _ in pods:
            full = f"{ident.hostname}.{subdomain}"
            service = f"{full}.{ident.namespace}.svc"
            for name in (ident.hostname, full, service, f"{service}.cluster.local"):
                aliases[name] = ident.hostname
        ports = {(ident.hostname, port): free_port() for ident, _ in pods
                 for port in declared.get(ident.replicated_job, [])}
        return cls(aliases, ports)

    def names(self) -> list[str]:
        """Every name a pod is reachable by, longest first."""
        return sorted(self.aliases, key=lambda n: (-len(n), n))

    def host_of(self, name: str) -> str | None:
        """The short host name `name` stands for, if it names a pod."""
        return self.aliases.get(name)

    def rewrite(self, text: str) -> str:
        """`host:port` -> `127.0.0.1:local port`, then every other pod host name -> 127.0.0.1."""
        if not any(short in text for short in self._shorts):
            return text

        def with_port(match: re.Match[str]) -> str:
            short = self.host_of(match.group(1)) or ""
            port = int(match.group(2))
            return f"{LOOPBACK}:{self.ports.get((short, port), port)}"

        text = self._with_port.sub(with_port, text)
        return self._bare.sub(LOOPBACK, text)

    # Built once per table: every env value and argument of every pod is rewritten, and with
    # thousands of pods building them per call made planning quadratic (minutes).
    @functools.cached_property
    def _shorts(self) -> frozenset[str]:
        return frozenset(self.aliases.values())

    @functools.cached_property
    def _with_port(self) -> re.Pattern[str]:
        return self._pattern(r":(\d+)\b")

    @functools.cached_property
    def _bare(self) -> re.Pattern[str]:
        return self._pattern("")

    def _pattern(self, tail: str) -> re.Pattern[str]:
        names = "|".join(re.escape(name) for name in self.names())
        return re.compile(rf"(?<![\w.-])({names})(?![\w-]|\.\w){tail}")


def remap_port_vars(env: dict[str, str], table: HostTable) -> dict[str, str]:
    """A variable whose value is a port declared by a pod whose host another variable of the
    same container names gets that pod's local port."""
    named = {short for value in env.values() if (short := table.host_of(value)) is not None}
    out = dict(env)
    for key, value in env.items():
        owners = [short for short in named if value.isascii() and value.isdigit()
                  and (short, int(value)) in table.ports]  # ASCII: "²" is a digit too
        if len(owners) == 1:  # a port of one named pod; with several it is ambiguous
            out[key] = str(table.ports[(owners[0], int(value))])
    return out


def remap_paths(text: str, mounts: Sequence[tuple[str, str]]) -> str:
    """Mount paths in a value -> where the volume lives below the run folder."""
    for mount_path, local in sorted(mounts, key=lambda pair: -len(pair[0])):
        pattern = re.compile(rf"(?<![\w./-]){re.escape(mount_path)}(?=/|$|[^\w.-])")
        text = pattern.sub(local.replace("\\", "\\\\"), text)
    return text


def free_port() -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        port: int = sock.getsockname()[1]
        return port
