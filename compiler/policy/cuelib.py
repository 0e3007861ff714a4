"""The binding to the official CUE evaluator, with the shape of cue-py.

`Context().compile(source)` gives a `Value`; values `unify`, `lookup`, `fill`, `validate` and
turn `to_json`. The evaluator is cuelang.org/go built into a shared library (`cuebridge/`,
libcue's C interface plus one batch call) when the package is built (setup.py puts it in
`compiler/_native/`; an editable checkout has it in build/cue from `make setup`) and loaded
with ctypes the first time a `Context` is made. tjc itself loads it only in the evaluator's
own process (`cueworker`, started and bounded by `cueproc`): Go's out-of-memory is fatal and
CUE's evaluation cannot be interrupted, so the library is never loaded where a run or the
controller lives. Errors come back as `CueError`, with each message's file, line and column.
Nothing here knows about policies."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from compiler.common.records import dataclass

if TYPE_CHECKING:
    import ctypes

LIBRARY_ENV = "TJC_LIBCUE"
BUILD_DIR = Path(__file__).resolve().parents[2] / "build" / "cue"
LIBRARY_NAME = "libtjccue.so"
INSTALL_HINT = "reinstall trainjob-compiler with Go installed (building the package " \
               "compiles the CUE evaluator into it; `make setup` in a checkout), point " \
               "TJC_LIBCUE at a built libtjccue.so, or pass --no-default-policies"



class EngineMissing(RuntimeError):
    """The CUE evaluator is not built or cannot be loaded."""


@dataclass(frozen=True)
class CueMessage:
    """One CUE error message and where it points, when CUE knows."""

    message: str
    file: str = ""
    line: int = 0
    column: int = 0
    path: tuple[str, ...] = ()
    positions: tuple[tuple[str, int, int], ...] = ()

    def located_in(self, file: str) -> CueMessage:
        """This message placed at its first position in `file`, when it has one there."""
        found = next((p for p in self.positions if p[0] == file), None)
        if found is None:
            return self
        return CueMessage(self.message, *found, path=self.path, positions=self.positions)


class CueError(Exception):
    """A CUE error: compile, unification or validation; `messages` keep the positions."""

    def __init__(self, messages: list[CueMessage]) -> None:
        self.messages = messages
        super().__init__("; ".join(m.message for m in messages) or "CUE error")


def library_path() -> Path:
    """Where the shared library is looked for: TJC_LIBCUE, else inside the installed package,
    else the checkout's build folder (an editable install)."""
    configured = os.environ.get(LIBRARY_ENV)
    if configured:
        return Path(configured)
    packaged = Path(__file__).resolve().parent.parent / "_native" / LIBRARY_NAME
    return packaged if packaged.is_file() else BUILD_DIR / LIBRARY_NAME


_LIB: ctypes.CDLL | None = None


def _declare(lib: ctypes.CDLL) -> ctypes.CDLL:
    import ctypes

    h, ph = ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)
    buf, size = ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t)
    signatures: dict[str, tuple[Any, list[Any]]] = {
        "cue_newctx": (h, []),
        "cue_free": (None, [h]),
        "libc_free": (None, [ctypes.c_void_p]),
        "cue_error_json": (None, [h, buf, size]),
        "cue_compile_bytes": (h, [h, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ph]),
        "cue_unify": (h, [h, h]),
        "cue_lookup_string": (h, [h, ctypes.c_char_p, ph]),
        "cue_fill_json": (h, [h, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t, ph]),
        "cue_validate": (h, [h, ctypes.c_bool]),
        "cue_dec_json": (h, [h, buf, size]),
        "tjc_eval_batch": (h, [h, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int, buf, size]),
        "tjc_input_reads": (h, [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, buf, size]),
        "tjc_pack_syntax": (h, [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, buf, size]),
    }
    for name, (restype, argtypes) in signatures.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    return lib


def present() -> None:
    """`EngineMissing` unless the library is there (without loading it: a run whose packs
    need no evaluation does not pay for the load)."""
    if _LIB is None and not library_path().is_file():
        raise EngineMissing(f"the CUE evaluator is not installed ({library_path().name} not "
                            f"found); {INSTALL_HINT}")


def load() -> ctypes.CDLL:
    """The loaded library (loaded once); `EngineMissing` with how to build it otherwise."""
    global _LIB
    if _LIB is None:
        path = library_path()
        if not path.is_file():
            raise EngineMissing(f"the CUE evaluator is not installed ({path.name} not found); "
                                f"{INSTALL_HINT}")
        try:
            import ctypes  # here: a run whose plans decide everything never loads it

            _LIB = _declare(ctypes.CDLL(str(path)))
        except (OSError, AttributeError) as exc:
            raise EngineMissing(f"cannot load the CUE evaluator {path.name}: {exc}; "
                                f"{INSTALL_HINT}") from None
    return _LIB


def _take_bytes(fill: Any) -> bytes:
    """Call `fill(out, size)` and return the C buffer it wrote, freeing it."""
    import ctypes

    lib, out, size = load(), ctypes.c_void_p(), ctypes.c_size_t()
    err = fill(ctypes.byref(out), ctypes.byref(size))
    if err:
        raise _error(err)
    try:
        return ctypes.string_at(out, size.value)
    finally:
        lib.libc_free(out)


def _error(handle: int) -> CueError:
    import ctypes

    lib, out, size = load(), ctypes.c_void_p(), ctypes.c_size_t()
    lib.cue_error_json(handle, ctypes.byref(out), ctypes.byref(size))
    raw = json.loads(ctypes.string_at(out, size.value) or b"null") or []
    lib.libc_free(out)
    lib.cue_free(handle)
    return CueError([_message(m) for m in raw])


def _message(raw: dict[str, Any]) -> CueMessage:
    positions = tuple((str(p["file"]), int(p["line"]), int(p["column"]))
                      for p in raw.get("positions") or ())
    return CueMessage(str(raw.get("message", "")), str(raw.get("file", "")),
                      int(raw.get("line", 0)), int(raw.get("column", 0)),
                      tuple(raw.get("path") or ()), positions)


def input_reads(source: bytes, filename: str) -> dict[str, list[list[str | None]]]:
    """The parts of `input` a CUE file can read: `paths` (whole subtrees) and `shapes`
    (iterated: keys and elements only); None in a path is any key or element."""
    lib = load()
    return dict(json.loads(_take_bytes(lambda out, size: lib.tjc_input_reads(
        source, len(source), filename.encode(), out, size))))


def pack_syntax(source: bytes, filename: str) -> Any:
    """A CUE file's syntax tree as the official parser reads it, as JSON data (the nodes
    the policy compiler reads; others as {"t": "Unsupported"})."""
    lib = load()
    return json.loads(_take_bytes(lambda out, size: lib.tjc_pack_syntax(
        source, len(source), filename.encode(), out, size)))


class Value:
    """A CUE value held by the evaluator; freed when garbage collected."""

    def __init__(self, context: Context, handle: int) -> None:
        self.context, self.handle = context, handle

    def __del__(self) -> None:
        if _LIB is not None and self.handle:
            _LIB.cue_free(self.handle)
            self.handle = 0

    def _made(self, call: Any, *args: Any) -> Value:
        import ctypes

        out = ctypes.c_size_t()
        err = call(self.handle, *args, ctypes.byref(out))
        if err:
            raise _error(err)
        return Value(self.context, out.value)

    def unify(self, other: Value) -> Value:
        """The meet of two values (may be bottom: see `validate`)."""
        return Value(self.context, load().cue_unify(self.handle, other.handle))

    def lookup(self, path: str) -> Value:
        """The value at a CUE path such as `rules."a.b".severity`."""
        return self._made(load().cue_lookup_string, path.encode())

    def fill(self, path: str, data: Any) -> Value:
        """This value with JSON data unified in at `path`."""
        raw = json.dumps(data).encode()
        return self._made(load().cue_fill_json, path.encode(), raw, len(raw))

    def validate(self, concrete: bool = False) -> None:
        """Raise `CueError` when the value has errors (or, if `concrete`, is incomplete)."""
        err = load().cue_validate(self.handle, concrete)
        if err:
            raise _error(err)

    def to_json(self) -> Any:
        """The value as JSON data; `CueError` if it is not concrete."""
        return json.loads(self.json_bytes())

    def json_bytes(self) -> bytes:
        """The value as JSON text; `CueError` if it is not concrete."""
        lib = load()
        return _take_bytes(lambda out, size: lib.cue_dec_json(self.handle, out, size))

    def eval_batch(self, items: list[dict[str, Any]], workers: int = 1) -> list[Any]:
        """For each {"rules": [...], "input": {...}}: fill `input`, read each
        `rules.<id>.violations` (or its errors). One call for the whole batch."""
        return list(json.loads(self.eval_batch_json(json.dumps(items).encode(), workers)))

    def eval_batch_json(self, items: bytes, workers: int = 1) -> bytes:
        """`eval_batch` on the batch as JSON text, giving JSON text."""
        lib = load()
        return _take_bytes(lambda out, size: lib.tjc_eval_batch(
            self.handle, items, len(items), workers, out, size))


class Context:
    """An evaluator context: values compiled in one context unify with each other."""

    def __init__(self) -> None:
        self.handle = load().cue_newctx()

    def compile(self, source: str | bytes, filename: str | None = None) -> Value:
        """Compile CUE source (standard library imports allowed); `CueError` with positions."""
        raw = source.encode() if isinstance(source, str) else source
        import ctypes

        out = ctypes.c_size_t()
        err = load().cue_compile_bytes(self.handle, raw, len(raw),
                                       filename.encode() if filename else None, ctypes.byref(out))
        if err:
            raise _error(err)
        return Value(self, out.value)
