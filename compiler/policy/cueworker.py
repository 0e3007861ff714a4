"""The CUE evaluator's own process: compiles packs and values files and evaluates packs.

`cueproc` starts it (`python -I -c ...`, then `main`) and talks to it over its stdin and stdout
in frames (an 8-byte length, then a pickled tuple), one request and one reply at a time. It
loads the CUE library (`cuelib`), then lowers its own address-space limit to what the library
mapped plus the memory budget it is given (Go reserves much address space it never uses, so a
fixed limit would leave CUE little), says `ready`, and answers until its stdin ends or its
parent is gone. Going over the budget kills it (Go's out-of-memory is fatal): `cueproc` sees
the process end and reports the limit. Anything it prints goes to the captured stderr, never
into the replies.

Requests: ("pack", key, source, file, contract, settings, facts) compiles a pack against the
contract with its settings and keeps it under `key` (the last `MAX_PACKS` packs), replying with
its facts (rule index, resolved settings, read set) when `facts`; ("eval", key, items) runs
`tjc_eval_batch` on JSON text and replies JSON text, or ("unknown", None) when the pack is not
kept; ("values", source, file) compiles a values file and replies its JSON text. A CUE error is
("cue", messages); a Python MemoryError is ("memory", None). Imports nothing of tjc but
`cuelib`: it must start fast and know nothing about policies but how packs compile.
"""

from __future__ import annotations

import io
import os
import pickle
import struct
import sys
import threading
import time
from collections import OrderedDict
from typing import IO, Any

from compiler.policy import cuelib

HEADER = struct.Struct(">Q")
MAX_PACKS = 64
ORPHAN_CHECK = 0.5  # seconds between two looks at whether the parent is still there


def encode(message: tuple[Any, ...]) -> bytes:
    """A frame: the length, then the pickled message."""
    body = pickle.dumps(message, pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(body)) + body


class _Replies(pickle.Unpickler):
    """Replies hold plain data and CUE's messages: nothing else is made from them."""

    def find_class(self, module: str, name: str) -> Any:
        """Only `CueMessage`."""
        if (module, name) == (cuelib.CueMessage.__module__, "CueMessage"):
            return cuelib.CueMessage
        raise pickle.UnpicklingError(f"a reply holds {module}.{name}")


def decode_reply(body: bytes) -> tuple[Any, ...]:
    """A reply read by the parent: plain data and `CueMessage`s only."""
    return tuple(_Replies(io.BytesIO(body)).load())


class _Unknown(Exception):
    """An evaluation asked of a pack this process does not keep (it was started since)."""


class Evaluator:
    """The packs compiled in this process, and the answers to requests."""

    def __init__(self) -> None:
        self.context = cuelib.Context()
        self.packs: OrderedDict[str, cuelib.Value] = OrderedDict()
        self.contracts: dict[bytes, cuelib.Value] = {}

    def answer(self, request: tuple[Any, ...]) -> tuple[str, Any]:
        """The reply to one request."""
        try:
            return "ok", self._handle(request)
        except cuelib.CueError as err:
            return "cue", err.messages
        except _Unknown:
            return "unknown", None
        except MemoryError:
            return "memory", None

    def _handle(self, request: tuple[Any, ...]) -> Any:
        kind = request[0]
        if kind == "eval":
            _, key, items = request
            pack = self.packs.get(key)
            if pack is None:
                raise _Unknown
            self.packs.move_to_end(key)
            return pack.eval_batch_json(items)
        if kind == "pack":
            return self._pack(*request[1:])
        if kind == "values":
            _, source, file = request
            return self.context.compile(source, file).json_bytes()
        raise ValueError(f"unknown request {kind!r}")

    def _pack(self, key: str, source: bytes, file: str, contract: bytes,
              settings: dict[str, Any], facts: bool) -> dict[str, Any] | None:
        value = self.context.compile(source, file).unify(self._contract(contract))
        value.validate()
        if settings:
            value = value.fill("settings", settings)
            value.validate()
        found = {"index": value.lookup("tjcIndex").to_json(),
                 "settings": value.lookup("settings").to_json(),
                 "reads": cuelib.input_reads(source, file),
                 "syntax": cuelib.pack_syntax(source, file)} if facts else None
        self.packs[key] = value
        while len(self.packs) > MAX_PACKS:
            self.packs.popitem(last=False)
        return found

    def _contract(self, source: bytes) -> cuelib.Value:
        known = self.contracts.get(source)
        if known is None:
            known = self.contracts[source] = self.context.compile(source, "contract.cue")
        return known


def _receive(stream: IO[bytes]) -> tuple[Any, ...] | None:
    """The next request, or None when the parent closed the pipe."""
    head = stream.read(HEADER.size)
    if len(head) < HEADER.size:
        return None
    body = stream.read(HEADER.unpack(head)[0])
    return tuple(pickle.loads(body))


def _limit_memory(budget: int) -> None:
    """Cap the address space at what is mapped now plus `budget` bytes (never above a cap the
    process was started with)."""
    try:
        import resource
    except ImportError:  # not a POSIX system: no cap
        return
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            mapped = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        mapped = 0
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    limit = mapped + budget
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _watch_parent(parent: int) -> None:
    """End this process once its parent is gone (an evaluation in progress does not read
    stdin, so the pipe's end would not be seen)."""
    while os.getppid() == parent:
        time.sleep(ORPHAN_CHECK)
    os._exit(3)


def main() -> None:
    """Serve requests until stdin ends; argv[1] is the memory budget in bytes."""
    budget = int(sys.argv[1])
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever else is printed goes to the captured stderr
    try:
        cuelib.load()
    except cuelib.EngineMissing as exc:
        replies.write(encode(("missing", str(exc))))
        replies.flush()
        return
    # Go's runtime sets itself up in a thread of its own once the library is loaded; the
    # first call waits for it, and the cap is set only then, on what it has mapped
    evaluator = Evaluator()
    if budget > 0:
        _limit_memory(budget)
    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()
    replies.write(encode(("ready", None)))
    replies.flush()
    while (request := _receive(sys.stdin.buffer)) is not None:
        replies.write(encode(evaluator.answer(request)))
        replies.flush()
