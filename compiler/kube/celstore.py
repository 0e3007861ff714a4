"""The CRDs' CEL rules, compiled, kept between runs (`compiler.common.diskcache`, area `cel`).

Compiling a rule with cel-cpp costs about a millisecond; reading back its serialized checked
expression costs a few microseconds, and a one-file `tjc validate` compiles several rules.
Each CRD schema's rule plan (the schema pruned to the paths that lead to rules, which takes a
walk of the whole schema to find) is kept the same way, named by the schema file's bytes.
The programs' entry is named by the CEL environment's description and the identity of the
CEL runtime library installed (a changed runtime or environment gets a new entry) and holds,
per rule text and `optionalOldSelf`, the bytes of `Expression.serialize()`. A rule that does not
compile is never stored (its problem is reported from a fresh compile every run). Called by
`compiler.kube.cel` only.
"""

from __future__ import annotations

import marshal
from typing import Any

from compiler.common import diskcache

AREA = "cel"
Key = tuple[str, bool]


def read_plan(key: str, source: bytes) -> Any:
    """The stored rule plan of a CRD schema (`key`, with its file's bytes), or None."""
    raw = diskcache.read(AREA, diskcache.key("plan", key, source))
    try:
        return marshal.loads(raw) if raw is not None else None
    except (EOFError, ValueError, TypeError):
        return None


def write_plan(key: str, source: bytes, plan: Any) -> None:
    """Keep a CRD schema's rule plan (plain data) for the next run."""
    try:
        blob = marshal.dumps(plan)
    except ValueError:  # not plain data: not kept
        return
    diskcache.write(AREA, diskcache.key("plan", key, source), blob)


def library_stamp(module: Any) -> str:
    """The CEL runtime library's identity: its file, size and modification time."""
    return diskcache.file_stamp(str(getattr(module, "__file__", "") or ""))


class ProgramStore:
    """Serialized programs by rule: read on first use, written back when a run added any."""

    def __init__(self, environment: str, library: str) -> None:
        self.name = diskcache.key(AREA, environment, library)
        self._programs: dict[Key, bytes] | None = None
        self._added = False

    def _load(self) -> dict[Key, bytes]:
        if self._programs is None:
            self._programs = _decode(diskcache.read(AREA, self.name))
        return self._programs

    def get(self, key: Key) -> bytes | None:
        """The serialized program of a rule, if stored."""
        return self._load().get(key)

    def put(self, key: Key, blob: bytes) -> None:
        """Remember a newly compiled program (written by `save`)."""
        self._load()[key] = blob
        self._added = True

    def save(self) -> None:
        """Write the entry back when programs were added since it was read."""
        if self._added and self._programs is not None:
            self._added = False
            diskcache.write(AREA, self.name, marshal.dumps(self._programs))


def _decode(raw: bytes | None) -> dict[Key, bytes]:
    """The programs of an entry; an entry of another shape counts as empty."""
    if raw is None:
        return {}
    try:
        data = marshal.loads(raw)
    except (EOFError, ValueError, TypeError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items()
            if isinstance(k, tuple) and len(k) == 2 and isinstance(k[0], str)
            and isinstance(k[1], bool) and isinstance(v, bytes)}
