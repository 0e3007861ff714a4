"""Pack facts cached on disk: a second load needs no CUE; other settings or no cache do."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.policy import cache
from compiler.policy.packs import Loader, pack_files


def test_second_load_uses_the_cache_and_not_cue(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path))
    files = pack_files([], builtin=True)
    first = Loader()
    cold = first.load_all(files)
    entries = sorted((tmp_path / cache.AREA).glob("*.json"))
    assert first.compiled == len(files) and len(entries) == len(files)
    second = Loader()
    warm = second.load_all(files)
    assert second.compiled == 0  # nothing was compiled
    assert [(p.name, p.rules, p.settings) for p in warm] == \
        [(p.name, p.rules, p.settings) for p in cold]
    other = Loader({"resources": {"maxNumNodes": 4}})
    packs = other.load_all(files)
    assert other.compiled == len(files)
    assert next(p for p in packs if p.name == "resources").settings["resources"][
        "maxNumNodes"] == 4


def test_an_entry_that_does_not_read_back_whole_is_not_used(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each entry carries its checksum (the one disk cache module): a truncated or edited
    entry is loaded from CUE again, and the pack is the same."""
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path))
    files = pack_files([], builtin=True)
    cold = Loader().load_all(files)
    for entry in (tmp_path / cache.AREA).glob("*.json"):
        raw = entry.read_bytes()
        entry.write_bytes(raw[:-10] if "a" < entry.name < "8" else
                          raw.replace(b"deny", b"warn"))
    again = Loader()
    warm = again.load_all(files)
    assert again.compiled == len(files)
    assert [(p.rules, p.settings, p.plan.compiled) for p in warm] == \
        [(p.rules, p.settings, p.plan.compiled) for p in cold]


def test_cache_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cache.CACHE_ENV, "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    loader, files = Loader(), pack_files([], builtin=True)
    loader.load_all(files)
    assert loader.compiled == len(files) and not list(tmp_path.rglob("*.json"))
