"""What loading a pack learns from CUE, kept on disk so the next run need not load CUE.

A pack's rule index, resolved settings, read set and syntax tree are a pure function of the
pack file, the contract, the settings given and the evaluator library: they are stored as
JSON in the start-up cache's `packs` area (`compiler.common.diskcache`: one folder, one
checksum per entry, `TJC_CACHE_DIR` to move it or turn it off), named by a digest of all of
these. Only packs that loaded without a problem are stored, so a broken pack is always
reported by CUE; an entry that does not read back whole, or lacks a part, counts as absent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from compiler.common import diskcache

CACHE_ENV = diskcache.CACHE_ENV
AREA = "packs"
_PARTS = frozenset({"index", "settings", "reads", "syntax"})


def engine_stamp(library: Path) -> str:
    """The evaluator library's identity (path, size and modification time): a rebuilt
    evaluator, whose read sets may differ, gets new entries."""
    return diskcache.file_stamp(str(library))


def key(source: bytes, contract: bytes, settings: dict[str, Any], engine: str) -> str:
    """The name of a pack's entry: its source, the contract, the settings, the evaluator
    and the version."""
    return diskcache.key(engine, contract, source, json.dumps(settings, sort_keys=True)) + ".json"


def read(name: str) -> dict[str, Any] | None:
    """A stored entry, or None."""
    raw = diskcache.read(AREA, name)
    if raw is None:
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    return data if isinstance(data, dict) and set(data) >= _PARTS else None


def write(name: str, facts: dict[str, Any]) -> None:
    """Store an entry (atomically; silently not when the folder is not writable)."""
    diskcache.write(AREA, name, json.dumps(facts).encode())
