"""Polling helpers of the end-to-end tests: wait for a state, read a status condition."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from compiler.common.jsondata import Obj


def eventually(check: Callable[[], Any], timeout: float = 30.0, what: str = "",
               interval: float = 0.2) -> Any:
    """The first truthy value of `check`, polled every `interval`; fails after `timeout`."""
    end = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > end:
            pytest.fail(f"not true after {timeout}s: {what or check}")
        time.sleep(interval)


def condition(obj: Obj | None, kind: str, status: str | None = None) -> Obj | None:
    """A status condition of an object (with this status, when given), or None."""
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == kind and status in (None, c.get("status")):
            return dict(c)
    return None
