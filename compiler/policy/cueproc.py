"""The CUE evaluator, run in its own process and bounded in memory and time.

A pack or values file can make CUE use any amount of memory (a string doubled 35 times) or
time (a comprehension over millions of pairs); Go's out-of-memory is fatal to the process and
CUE's evaluation cannot be interrupted. So every CUE work tjc does (compiling a pack and
reading its facts, evaluating a pack on inputs, compiling a CUE values file) is sent to one
evaluator process (`cueworker`), started when the first such work comes (a run whose packs
come from the cache and are decided by compiled plans starts none) and kept for the rest of
the process's life. It runs under an address-space cap of what the CUE library maps plus
`TJC_CUE_MEMORY` (default 2Gi, a Kubernetes quantity; Go's GOMEMLIMIT is set to it too), and
each request has `TJC_CUE_TIMEOUT` seconds (default 30) before the process is killed. Work that
goes over either is a `PolicyLimitError` naming the file and the limit; the next work starts a
new process. The process's stderr (Go's crash report) is captured, never shown.

Called by `packs` (loading and evaluating packs) and the CLI's policy options (values files);
thread-safe (one request at a time; the controller's workers share the process). After a fork
the child starts its own process. Nothing here knows what a rule is.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Any, NamedTuple

from compiler.common.diagnostics import Diagnostic, Location, Severity
from compiler.common.errors import PolicyError, PolicyLimitError
from compiler.policy import cuelib

if TYPE_CHECKING:
    import subprocess

MEMORY_ENV = "TJC_CUE_MEMORY"
TIMEOUT_ENV = "TJC_CUE_TIMEOUT"
DEFAULT_MEMORY = 2 << 30
DEFAULT_SECONDS = 30.0
_START = ("import sys; sys.path.insert(0, sys.argv.pop(1)); "
          "from compiler.policy.cueworker import main; main()")
# What the end of a process that ran out of memory leaves in its stderr: Go's runtime (a
# failed allocation, mapping or thread under the cap) or Python's.
_MEMORY_SIGNS = (b"out of memory", b"cannot allocate memory", b"failed to reserve",
                 b"pthread_create failed", b"failed to create new OS thread", b"MemoryError")
_GRACE = 5.0  # seconds a process whose pipe closed has to end


class Limits(NamedTuple):
    """The evaluator's bounds: address space beyond the library's own, seconds a request.
    (Named tuples here: this module is imported by every run with packs, and a run whose
    packs need no CUE must not pay for more.)"""

    memory: int = DEFAULT_MEMORY
    seconds: float = DEFAULT_SECONDS

    def describe(self, limit: str) -> str:
        """The limit as a message shows it, with the variable that sets it."""
        if limit == "time":
            return f"time limit ({self.seconds:g} s; {TIMEOUT_ENV} sets it)"
        return f"memory limit ({_size(self.memory)}; {MEMORY_ENV} sets it)"


class PackSource(NamedTuple):
    """A pack as the evaluator compiles it: `key` names the source with its contract,
    settings and engine (`cache.key`), `file` is the name reported."""

    key: str
    file: str
    source: bytes
    contract: bytes
    settings: dict[str, Any]


def _size(amount: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if amount >= 1 << shift and amount % (1 << shift) == 0:
            return f"{amount >> shift} {unit}"
    return f"{amount} bytes"


def limits() -> Limits:
    """The bounds `TJC_CUE_MEMORY` and `TJC_CUE_TIMEOUT` set; `PolicyError` when either is
    not a positive amount."""
    memory, seconds = DEFAULT_MEMORY, DEFAULT_SECONDS
    raw = os.environ.get(MEMORY_ENV, "").strip()
    if raw:
        from compiler.kube.quantity import QuantityError, parse

        try:
            memory = int(parse(raw).value)
        except QuantityError:
            memory = 0
        if memory <= 0:
            raise _setup(f"{MEMORY_ENV}={raw!r}: expected an amount of memory such as 2Gi "
                         "or 512Mi")
    raw = os.environ.get(TIMEOUT_ENV, "").strip()
    if raw:
        try:
            seconds = float(raw)
        except ValueError:
            seconds = 0.0
        if not 0 < seconds < 1e9:
            raise _setup(f"{TIMEOUT_ENV}={raw!r}: expected a number of seconds such as 30")
    return Limits(memory, seconds)


def _setup(message: str) -> PolicyError:
    return PolicyError([Diagnostic(Severity.ERROR, "TJC-POLICY-SETUP", message,
                                   subject="policy")])


class _Stopped(Exception):
    """The process went over a limit (`limit`: "memory" or "time") or ended otherwise
    (`limit` empty, `detail` says how)."""

    def __init__(self, limit: str, detail: str = "") -> None:
        super().__init__(limit or detail)
        self.limit, self.detail = limit, detail


class _Process:
    """One evaluator process and the pipes to it."""

    def __init__(self, bounds: Limits) -> None:
        import subprocess
        import sys
        import tempfile
        from pathlib import Path

        root = str(Path(__file__).resolve().parents[2])  # the folder holding `compiler`
        # isolated (-I: no PYTHON* variables, no user site; -S: nothing but the stdlib and
        # `root`), keeping this interpreter's choices about bytecode files
        flags = ["-I", "-S"] + (["-B"] if sys.dont_write_bytecode else []) + \
            ([f"-Xpycache_prefix={sys.pycache_prefix}"] if sys.pycache_prefix else [])
        self.owner = os.getpid()
        self.errors: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (lives with it)
        env = {**os.environ, "GOMEMLIMIT": str(bounds.memory)}
        self.proc: subprocess.Popen[bytes] = subprocess.Popen(
            [sys.executable, *flags, "-c", _START, root, str(bounds.memory)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errors, env=env,
            start_new_session=True, bufsize=0)
        self.reply_limit = bounds.memory

    def hello(self, seconds: float) -> None:
        """Wait until the process has loaded the library; `EngineMissing` if it cannot."""
        kind, body = self._read(time.monotonic() + seconds)
        if kind == "missing":
            raise cuelib.EngineMissing(str(body))

    def ask(self, request: tuple[Any, ...], seconds: float) -> tuple[str, Any]:
        """Send one request and wait up to `seconds` for its reply (the process, idle
        between requests, reads a request whole before it works on it)."""
        from compiler.policy.cueworker import encode

        deadline = time.monotonic() + seconds
        assert self.proc.stdin is not None
        frame = memoryview(encode(request))
        try:
            while frame:
                frame = frame[self.proc.stdin.write(frame) or 0:]
        except (BrokenPipeError, ConnectionResetError):
            raise self._ended() from None
        kind, body = self._read(deadline)
        if kind == "memory":  # Python's MemoryError in it: a process not to use again
            raise _Stopped("memory")
        return kind, body

    def _read(self, deadline: float) -> tuple[str, Any]:
        from compiler.policy.cueworker import HEADER, decode_reply

        size = HEADER.unpack(self._exactly(HEADER.size, deadline))[0]
        if size > self.reply_limit:
            raise _Stopped("memory")
        kind, body = decode_reply(self._exactly(size, deadline))
        return str(kind), body

    def _exactly(self, size: int, deadline: float) -> bytes:
        import select

        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        data = bytearray()
        while len(data) < size:
            left = deadline - time.monotonic()
            if left <= 0 or not poller.poll(max(1, int(left * 1000))):
                if time.monotonic() >= deadline:
                    raise _Stopped("time")
                continue
            chunk = os.read(fd, min(size - len(data), 1 << 20))
            if not chunk:
                raise self._ended()
            data += chunk
        return bytes(data)

    def _ended(self) -> _Stopped:
        """Why the process ended by itself: over the memory cap, killed by the system's
        out-of-memory killer, or something else (its exit status and last line)."""
        import signal
        import subprocess

        try:
            code = self.proc.wait(_GRACE)
        except subprocess.TimeoutExpired:  # its pipe closed, yet it runs: stop it
            self.proc.kill()
            code = self.proc.wait()
        self.errors.seek(0, os.SEEK_END)
        self.errors.seek(max(0, self.errors.tell() - 65536))
        tail = self.errors.read()
        if code == -signal.SIGKILL or any(sign in tail for sign in _MEMORY_SIGNS):
            return _Stopped("memory")
        last = tail.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        return _Stopped("", f"exit status {code}" + (f": {last[0]}" if last[0] else ""))

    def stop(self) -> None:
        """Kill the process (it keeps nothing worth waiting for) and close the pipes."""
        if self.owner == os.getpid():
            self.proc.kill()
            self.proc.wait()
        self.close()

    def close(self) -> None:
        """Close this process's ends of the pipes (in a forked child: its copies only)."""
        for stream in (self.proc.stdin, self.proc.stdout, self.errors):
            if stream is not None:
                stream.close()


class Work(NamedTuple):
    """What a request is for, as a message over a limit says it: the file it is about and
    what was being done ("loading the policy pack")."""

    file: str
    doing: str


class _Shared:
    """The process this one talks to (none until CUE work comes), behind a lock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.current: _Process | None = None
        self.inherited: list[_Process] = []  # a parent's, seen after a fork: never used
        self.at_exit = False

    def forget(self) -> None:
        """In a forked child: the parent's process is the parent's (the pipes are shared)."""
        self.lock = threading.Lock()
        if self.current is not None:
            self.current.close()
            self.inherited.append(self.current)
            self.current = None

    def stop(self) -> None:
        """Stop the current process (at exit)."""
        if self.current is not None:
            self.current.stop()
            self.current = None

    @contextlib.contextmanager
    def _guard(self, process: _Process, work: Work, bounds: Limits) -> Iterator[None]:
        """Kill (and forget) the process when what the body waits for does not come: over
        a limit (`PolicyLimitError`), or interrupted (the reply may still come, unread)."""
        try:
            yield
        except _Stopped as stop:
            self.current = None
            process.stop()
            raise _over(stop, work, bounds) from None
        except BaseException:
            self.current = None
            process.stop()
            raise

    def running(self, bounds: Limits, work: Work) -> _Process:
        """The current process, started (and waited for) when there is none."""
        if self.current is None:
            if not self.at_exit:
                import atexit

                atexit.register(self.stop)
                self.at_exit = True
            try:
                process = _Process(bounds)
            except OSError as exc:  # no interpreter to run it, no temporary file
                raise cuelib.EngineMissing(f"cannot start the CUE evaluator: {exc}") from None
            with self._guard(process, work, bounds):
                process.hello(bounds.seconds)
            self.current = process
        return self.current

    def ask(self, request: tuple[Any, ...], work: Work) -> tuple[str, Any]:
        """The reply to a request, from the running process (started if need be);
        `CueError` for a CUE error, `PolicyLimitError` when the process went over a limit."""
        with self.lock:
            bounds = limits()
            process = self.running(bounds, work)
            with self._guard(process, work, bounds):
                kind, body = process.ask(request, bounds.seconds)
        if kind == "cue":
            raise cuelib.CueError(list(body))
        return kind, body


_SHARED = _Shared()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=lambda: _SHARED.forget())


def _over(stop: _Stopped, work: Work, bounds: Limits) -> PolicyError:
    """The error for a process that went over a limit (or ended) during `work`."""
    where = (Location(work.file, 1, 1),) if work.file else ()
    if stop.limit:
        message = f"{work.doing} went over the CUE evaluator's {bounds.describe(stop.limit)}"
        diag = Diagnostic(Severity.ERROR, "TJC-POLICY-LIMIT", message, subject="policy")
        return PolicyLimitError(diag.at(*where), stop.limit, work.file)
    message = f"the CUE evaluator stopped while {work.doing} ({stop.detail})"
    return PolicyError([Diagnostic(Severity.ERROR, "TJC-POLICY-ERROR", message,
                                   subject="policy").at(*where)])


def start(file: str = "") -> None:
    """Start the evaluator now (`EngineMissing` when its library cannot be loaded)."""
    with _SHARED.lock:
        _SHARED.running(limits(), Work(file, "starting the CUE evaluator"))


def pack_facts(pack: PackSource) -> dict[str, Any]:
    """Compile a pack (kept for `evaluate`) and return its rule index, resolved settings
    and read set; `CueError` when it does not compile or breaks the contract."""
    _, facts = _SHARED.ask(_pack_request(pack, True), Work(pack.file, "loading the policy pack"))
    return dict(facts)


def evaluate(pack: PackSource, items: list[dict[str, Any]]) -> list[Any]:
    """`Value.eval_batch` of the pack on `items`; the pack is compiled first in a process
    that does not hold it (`CueError` if it does not compile)."""
    work = Work(pack.file, "evaluating the policy pack")
    request = ("eval", pack.key, json.dumps(items).encode())
    kind, body = _SHARED.ask(request, work)
    if kind == "unknown":
        _SHARED.ask(_pack_request(pack, False), Work(pack.file, "loading the policy pack"))
        kind, body = _SHARED.ask(request, work)
    return list(json.loads(body))


def values(source: bytes, file: str) -> Any:
    """A CUE values file's data (`CueError` when it does not compile or is not concrete)."""
    _, body = _SHARED.ask(("values", source, file), Work(file, "evaluating the policy values"))
    return json.loads(body)


def _pack_request(pack: PackSource, facts: bool) -> tuple[Any, ...]:
    return ("pack", pack.key, pack.source, pack.file, pack.contract, pack.settings, facts)
