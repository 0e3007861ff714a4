"""When the cycle collector runs: rarely while a command starts, as usual once it works.

Start-up allocates hundreds of thousands of objects that live as long as the process does
(modules, schema trees, the packs' plans); the collector would walk them again and again for
nothing (6 young collections, about 5 ms, of a one-file `tjc validate`). `starting()` (the
console entry) makes young collections rare; a command calls `started()` once it is set up
and before its inputs: what is alive then is frozen (never walked again, shared untouched with
forked workers) and young collections come every `THRESHOLD` allocations. A command that
never calls it still collects, every `STARTING` allocations.
"""

from __future__ import annotations

import gc

STARTING = 200_000  # allocations between young collections while starting
THRESHOLD = 20_000  # then (CPython's default: 700); older generations keep their defaults


def starting() -> None:
    """Young collections rare, for the start-up."""
    gc.set_threshold(STARTING)


def started() -> None:
    """The start-up's objects frozen, young collections every `THRESHOLD` allocations."""
    gc.freeze()
    gc.set_threshold(THRESHOLD)
