"""The start-up cache: entries are checked before use, and what is read back from it gives
the same results as doing the work again (CEL programs)."""

from __future__ import annotations

import marshal
from pathlib import Path

import pytest

from compiler.common import diskcache
from compiler.kube import cel, celstore

BAD_NAME = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": "Bad_Name"}, "spec": {"runtimeRef": {"name": "torch"}}}


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(diskcache.CACHE_ENV, str(tmp_path))
    return tmp_path


def test_entry_round_trip_and_checksum(cache_dir: Path) -> None:
    diskcache.write("t", "entry", b"payload")
    assert diskcache.read("t", "entry") == b"payload"
    raw = (cache_dir / "t" / "entry").read_bytes()
    (cache_dir / "t" / "entry").write_bytes(raw[:-1] + b"X")  # one byte changed
    assert diskcache.read("t", "entry") is None
    (cache_dir / "t" / "entry").write_bytes(raw[:10])  # truncated
    assert diskcache.read("t", "entry") is None
    assert diskcache.read("t", "absent") is None


def test_cache_off_and_unwritable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(diskcache.CACHE_ENV, "off")
    diskcache.write("t", "entry", b"x")
    assert diskcache.read("t", "entry") is None
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(diskcache.CACHE_ENV, str(blocker))
    diskcache.write("t", "entry", b"x")  # cannot be written: silently nothing
    assert diskcache.read("t", "entry") is None


def test_key_depends_on_every_part() -> None:
    assert diskcache.key("a", "b") != diskcache.key("ab")
    assert diskcache.key("a", b"b") == diskcache.key("a", "b")


def _fresh_cel(monkeypatch: pytest.MonkeyPatch) -> None:
    """A new process's CEL state: no runtime, no programs, no memo."""
    monkeypatch.setattr(cel, "_RUNTIME", [])
    monkeypatch.setattr(cel, "_PROGRAMS", {})
    monkeypatch.setattr(cel, "_MEMO", {})


def test_cel_programs_stored_and_reused(cache_dir: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    _fresh_cel(monkeypatch)
    first = cel.validate("TrainJob", BAD_NAME)
    assert [d.rule for d in first] == ["TJC-CEL-NAME-FORMAT"]
    assert (cache_dir / celstore.AREA / cel._RUNTIME[2].name).is_file()
    _fresh_cel(monkeypatch)
    compiled: list[str] = []
    env_compile = cel._runtime()[1].compile

    def counting(source: str) -> object:
        compiled.append(source)
        return env_compile(source)

    monkeypatch.setattr(cel, "_RUNTIME", [cel._RUNTIME[0], _Env(cel._RUNTIME[1], counting),
                                          cel._RUNTIME[2]])
    again = cel.validate("TrainJob", BAD_NAME)
    assert again == first
    assert compiled == []  # every program came from the cache


def test_cel_corrupt_entry_compiles_again(cache_dir: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    _fresh_cel(monkeypatch)
    first = cel.validate("TrainJob", BAD_NAME)
    entry = cache_dir / celstore.AREA / cel._RUNTIME[2].name
    programs = marshal.loads(entry.read_bytes()[32:])
    diskcache.write(celstore.AREA, entry.name,
                    marshal.dumps({k: b"garbage" for k in programs}))  # a valid checksum
    _fresh_cel(monkeypatch)
    assert cel.validate("TrainJob", BAD_NAME) == first
    entry.write_bytes(b"\x00" * 40)  # a bad checksum
    _fresh_cel(monkeypatch)
    assert cel.validate("TrainJob", BAD_NAME) == first


class _Env:
    """A CEL environment whose `compile` is observed."""

    def __init__(self, env: object, compile_fn: object) -> None:
        self._env = env
        self.compile = compile_fn

    def deserialize(self, blob: bytes) -> object:
        return self._env.deserialize(blob)  # type: ignore[attr-defined]


def test_builtin_runtimes_from_the_cache_are_the_parsed_ones(
        cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from compiler.io import builtin

    def fresh() -> list[tuple[object, ...]]:
        builtin.builtin_runtimes.cache_clear()
        return [(d.data, d.index, d.base, d.source.name, d.source.text, d.locate(("spec",)))
                for d in builtin.builtin_runtimes()]

    try:
        parsed = fresh()  # parses, and stores the entry
        entry = next((cache_dir / builtin.CACHE_AREA).iterdir())
        monkeypatch.setattr(builtin, "_parse", _must_not_parse)
        assert fresh() == parsed
        raw = bytearray(entry.read_bytes())
        raw[-1] ^= 1
        entry.write_bytes(bytes(raw))  # corrupt: parsed again
        monkeypatch.undo()
        monkeypatch.setenv(diskcache.CACHE_ENV, str(cache_dir))
        assert fresh() == parsed
    finally:
        builtin.builtin_runtimes.cache_clear()


def _must_not_parse(source: object) -> list[object]:
    raise AssertionError("parsed although the cache holds the runtimes")


def test_cel_plans_from_the_cache_are_the_built_ones(cache_dir: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cel, "_PLANS", {})
    built = cel._plan("ClusterTrainingRuntime")
    assert isinstance(built, cel._Node)
    monkeypatch.setattr(cel, "_PLANS", {})
    monkeypatch.setattr(cel, "_build", _must_not_build)
    stored = cel._plan("ClusterTrainingRuntime")
    assert isinstance(stored, cel._Node) and stored is not built
    assert cel._encode_plan(stored) == cel._encode_plan(built)
    assert stored.rules == built.rules and stored.root


def _must_not_build(schema: object) -> None:
    raise AssertionError("built although the cache holds the plan")


def test_no_home_folder_means_no_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(diskcache.CACHE_ENV, raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    assert diskcache.folder("cel") is None
    assert diskcache.read("cel", "x") is None
    diskcache.write("cel", "x", b"y")  # silently nothing
