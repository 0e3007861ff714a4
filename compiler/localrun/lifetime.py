"""Pod processes that do not outlive tjc, however tjc ends.

Two guards, both set up by `compiler.localrun.runner`:

- `spawn` starts a pod process in a new session (its own process group, which `stop` signals
  as a whole) with the Linux parent-death signal set to SIGKILL before it runs its command, so
  the kernel kills it when tjc dies, SIGKILL of tjc included. The signal is tied to the thread
  that started the process: the runner starts every pod from the thread that called
  `runner.run`, which outlives them all. The setting is made by `_die_with_parent` between
  fork and exec; it calls one C function through ctypes and imports nothing and takes no
  lock, so it is safe though the runner has threads (glibc's fork keeps malloc usable).
- `Watchdog` is a small process of its own session that learns every pod's process group
  through a pipe only tjc holds. When the pipe closes (tjc stopped the run, or exited in any
  way) it kills every group tjc had not released: what a pod started itself (ranks under
  mpirun, workers of torchrun) does not inherit the parent-death signal, and a second Ctrl-C
  may cut the runner's own stop short.

Linux only for the parent-death signal; elsewhere the watchdog alone does it.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

_PR_SET_PDEATHSIG = 1
_SIGKILL = int(signal.SIGKILL)
_WATCH_SECONDS = 10.0

# The watchdog: `+ pgid` and `- pgid` lines until end of input, then SIGKILL to every group
# still listed. In a session of its own, so a terminal's Ctrl-C or hangup does not reach it.
_WATCHDOG = """\
import os, signal, sys
groups = set()
for line in sys.stdin:
    verb, _, pgid = line.partition(" ")
    (groups.add if verb == "+" else groups.discard)(int(pgid))
for pgid in sorted(groups):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
"""


def _load_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl: Any = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                      ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    result: Callable[..., int] = prctl
    return result


_PRCTL = _load_prctl()


def _die_with_parent(parent: int) -> None:
    """In the child, before exec: SIGKILL when the parent dies; if it died already (between
    fork and here), die now."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, _SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os.kill(os.getpid(), _SIGKILL)


def spawn(argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> subprocess.Popen[bytes]:
    """Start a pod process: its own session and process group, killed with tjc."""
    return subprocess.Popen(list(argv), env=dict(env), cwd=cwd, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True,
                            preexec_fn=functools.partial(_die_with_parent, os.getpid()))


class Watchdog:
    """Kills the process groups it was told of and not released once the pipe from tjc
    closes. `close` closes it and waits until the watchdog has done so."""

    def __init__(self) -> None:
        read, write = os.pipe()
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _WATCHDOG], stdin=read,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        except BaseException:
            os.close(write)
            raise
        finally:
            os.close(read)
        self._pipe = os.fdopen(write, "w", buffering=1)

    def watch(self, pgid: int) -> None:
        """Kill group `pgid` if tjc ends before it releases it."""
        self._send(f"+ {pgid}")

    def release(self, pgid: int) -> None:
        """Group `pgid` was killed and its leader reaped by tjc: forget it."""
        self._send(f"- {pgid}")

    def close(self) -> None:
        """Close the pipe: the watchdog kills what is left, then exits."""
        with contextlib.suppress(OSError):
            self._pipe.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(_WATCH_SECONDS)

    def _send(self, line: str) -> None:
        with contextlib.suppress(OSError, ValueError):  # a watchdog gone: the other guard stays
            self._pipe.write(line + "\n")
