"""A work queue of object keys, as controllers use them.

A key is handed to one worker at a time; adding it again while it is being processed makes
it come back once the worker is done (no key is ever processed twice at once, and a burst of
events for one key is one reconcile). Failed keys come back after an exponential backoff per
key; `add_after` schedules a key (an active deadline). Thread-safe.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections import deque

Key = tuple[str, str]


class WorkQueue:
    """Deduplicating, per-key serialized queue with delayed and rate-limited adds."""

    def __init__(self, base_delay: float = 0.005, max_delay: float = 60.0) -> None:
        self._cond = threading.Condition()
        self._queue: deque[Key] = deque()
        self._queued: set[Key] = set()
        self._processing: set[Key] = set()
        self._dirty: set[Key] = set()
        self._delayed: list[tuple[float, int, Key]] = []
        self._failures: dict[Key, int] = {}
        self._counter = 0
        self._shutdown = False
        self.base_delay, self.max_delay = base_delay, max_delay

    def add(self, key: Key) -> None:
        """Queue a key (once, however often it is added before a worker takes it)."""
        with self._cond:
            self._add_locked(key)

    def _add_locked(self, key: Key) -> None:
        if self._shutdown:
            return
        if key in self._processing:
            self._dirty.add(key)
        elif key not in self._queued:
            self._queued.add(key)
            self._queue.append(key)
            self._cond.notify()

    def add_after(self, key: Key, delay: float) -> None:
        """Queue a key after `delay` seconds."""
        if delay <= 0:
            self.add(key)
            return
        with self._cond:
            self._counter += 1
            heapq.heappush(self._delayed, (time.monotonic() + delay, self._counter, key))
            self._cond.notify()

    def add_rate_limited(self, key: Key) -> float:
        """Queue a key after its backoff (doubling with each failure); the delay used."""
        with self._cond:
            failures = self._failures.get(key, 0)
            self._failures[key] = failures + 1
        delay = float(min(self.base_delay * (2.0 ** failures), self.max_delay))
        self.add_after(key, delay)
        return delay

    def forget(self, key: Key) -> None:
        """Reset a key's backoff (it succeeded)."""
        with self._cond:
            self._failures.pop(key, None)

    def get(self, timeout: float | None = None) -> Key | None:
        """The next key to process (None on shutdown or timeout); call `done` after."""
        end = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                self._promote_locked()
                if self._queue:
                    key = self._queue.popleft()
                    self._queued.discard(key)
                    self._processing.add(key)
                    return key
                if self._shutdown:
                    return None
                wait = self._next_wait_locked(end)
                if wait is not None and wait <= 0:
                    return None
                self._cond.wait(wait)

    def _promote_locked(self) -> None:
        now = time.monotonic()
        while self._delayed and self._delayed[0][0] <= now:
            self._add_locked(heapq.heappop(self._delayed)[2])

    def _next_wait_locked(self, end: float | None) -> float | None:
        now = time.monotonic()
        waits = [t - now for t in ([self._delayed[0][0]] if self._delayed else [])]
        if end is not None:
            if end - now <= 0:
                return 0
            waits.append(end - now)
        return max(min(waits), 0.001) if waits else None

    def done(self, key: Key) -> None:
        """A worker finished `key`; if it was added meanwhile, queue it again."""
        with self._cond:
            self._processing.discard(key)
            if key in self._dirty:
                self._dirty.discard(key)
                self._add_locked(key)

    def depth(self) -> int:
        """Keys waiting (not counting delayed ones)."""
        with self._cond:
            return len(self._queue)

    def shutdown(self) -> None:
        """Wake every waiting worker; `get` returns None from now on."""
        with self._cond:
            self._shutdown = True
            self._cond.notify_all()
