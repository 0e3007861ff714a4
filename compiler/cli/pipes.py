"""Output streams that survive a reader going away (`tjc render | head`).

When the reader of stdout or stderr closes its end, a write raises BrokenPipeError. If that
ended the command, errors found after that point would be lost and the exit code would say
nothing about them. `guarded` swaps both streams for wrappers that, on a broken pipe, point
the file descriptor at /dev/null and drop the rest of the output, so the command runs to its
end and returns its real exit code. Called by `compiler.cli.main` only.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import TextIO


class _Guard:
    """A text stream that turns a broken pipe into silence."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner
        self.broken = False

    def write(self, text: str) -> int:
        """Write, or drop the text once the reader is gone."""
        if not self.broken:
            try:
                self.inner.write(text)
            except BrokenPipeError:
                self._silence()
        return len(text)

    def flush(self) -> None:
        """Flush, unless the reader is gone."""
        if not self.broken:
            try:
                self.inner.flush()
            except BrokenPipeError:
                self._silence()

    def _silence(self) -> None:
        self.broken = True
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.inner.fileno())
            os.close(devnull)

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


@contextlib.contextmanager
def guarded() -> Iterator[None]:
    """Run the body with broken-pipe-safe stdout and stderr, then flush and restore them."""
    saved = sys.stdout, sys.stderr
    out, err = _Guard(sys.stdout), _Guard(sys.stderr)
    sys.stdout, sys.stderr = out, err
    try:
        yield
    finally:
        out.flush()
        err.flush()
        sys.stdout, sys.stderr = saved
