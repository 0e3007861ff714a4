"""What loading a pack learns from CUE, kept on disk so the next run need not load CUE.

A pack's rule index, resolved settings, read set and syntax tree are a pure function of the
pack file, the contract, the settings given and the evaluator library: they are stored as JSON
under the user's cache folder (`$XDG_CACHE_HOME` or `~/.cache`, then
`trainjob-compiler/<version>/packs/`), named by the sha256 of all of these. Only packs that
loaded without a problem are stored, so a broken pack is always reported by CUE.
`TJC_CACHE_DIR` moves the folder; `TJC_CACHE_DIR=off` turns the cache off. A cache that
cannot be read or written is ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from compiler.version import __version__

CACHE_ENV = "TJC_CACHE_DIR"


def folder() -> Path | None:
    """Where pack facts are kept (None: the cache is off)."""
    configured = os.environ.get(CACHE_ENV)
    if configured == "off":
        return None
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "trainjob-compiler" / __version__ / "packs"


def engine_stamp(library: Path) -> str:
    """The evaluator library's identity (size and modification time): a rebuilt evaluator,
    whose read sets may differ, gets new entries."""
    try:
        stat = library.stat()
    except OSError:
        return "absent"
    return f"{stat.st_size}:{stat.st_mtime_ns}"


def key(source: bytes, contract: bytes, settings: dict[str, Any], engine: str) -> str:
    """The name of a pack's entry: its source, the contract, the settings, the evaluator
    and the version."""
    digest = hashlib.sha256()
    for part in (__version__.encode(), engine.encode(), contract, source,
                 json.dumps(settings, sort_keys=True).encode()):
        digest.update(hashlib.sha256(part).digest())
    return digest.hexdigest()


def read(name: str) -> dict[str, Any] | None:
    """A stored entry, or None."""
    where = folder()
    if where is None:
        return None
    try:
        data = json.loads((where / f"{name}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    wanted = {"index", "settings", "reads", "syntax"}
    return data if isinstance(data, dict) and wanted <= set(data) else None


def write(name: str, facts: dict[str, Any]) -> None:
    """Store an entry (atomically; silently not when the folder is not writable)."""
    import tempfile  # here: a run that only reads the cache does not pay for it

    where = folder()
    if where is None:
        return
    try:
        where.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=where, suffix=".tmp", delete=False,
                                         encoding="utf-8") as out:
            json.dump(facts, out)
        os.replace(out.name, where / f"{name}.json")
    except OSError:
        return
