"""`-j N`: the files of an input spread over worker processes, results in input order.

The inputs are cut into runs of consecutive files; each worker process (started fresh, not
forked: the CUE evaluator's Go runtime does not survive a fork) sets itself up as the parent
did, from the same options and the files holding runtimes, and returns what each run of files
gave. The parent takes the results in input order and prints them as it would its own, so the
output is the same for every N. Only a few runs are in flight at once, so memory does not grow
with the input. Without `-j`, inputs of MIN_BYTES or more in more than one file use every
usable core.
"""

from __future__ import annotations

import argparse
import os
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, Generic, TypeVar

from compiler.cli.policy_opts import PolicySetupError
from compiler.common.diagnostics import Diagnostic
from compiler.common.errors import InputError, TjcError
from compiler.io.loader import SourceFiles

MIN_BYTES = 1_000_000
MAX_RUN = 32  # files per task
IN_FLIGHT = 4  # tasks per worker not yet taken by the parent

R = TypeVar("R")
Task = Callable[[list[int]], Any]


def add_argument(parser: argparse.ArgumentParser) -> None:
    """Add -j/--jobs."""
    parser.add_argument("-j", "--jobs", type=_count, metavar="N",
                        help="worker processes over the input files, with the same output as "
                        "one (default: every usable core when the inputs are 1 MB or more "
                        "in several files, else 1)")


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number of processes (1 or more), got "
                                         f"{text!r}")
    return value


def usable_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        return os.cpu_count() or 1


def workers(requested: int | None, sources: SourceFiles) -> int:
    """How many processes: as asked (no more than files), or by the inputs' size."""
    if requested is not None:
        return max(1, min(requested, len(sources)))
    if len(sources) < 2 or sources.size() < MIN_BYTES:
        return 1
    return max(1, min(usable_cores(), len(sources)))


@dataclass
class Failure:
    """A worker's input or setup error, carried back to be raised in the parent."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    setup: bool = False

    def raise_it(self) -> None:
        """Raise what the worker met, as the parent would have."""
        if self.setup:
            raise PolicySetupError(self.diagnostics)
        raise InputError(self.diagnostics[0])


_TASK: Task | Failure | None = None


def _init(factory: Callable[[Any], Task], payload: Any) -> None:
    global _TASK
    try:
        _TASK = factory(payload)
    except TjcError as exc:
        _TASK = _failure(exc)


def _failure(exc: TjcError) -> Failure:
    if isinstance(exc, PolicySetupError):
        return Failure(exc.diagnostics, setup=True)
    return Failure([exc.diagnostic])


def _run(indices: list[int]) -> Any:
    if _TASK is None or isinstance(_TASK, Failure):
        return _TASK or Failure()
    try:
        return _TASK(indices)
    except TjcError as exc:
        return _failure(exc)


@dataclass
class Plan(Generic[R]):
    """How to process `count` files: `task` in this process; in a worker, the task
    `factory(payload)` builds."""

    task: Callable[[list[int]], R]
    factory: Callable[[Any], Callable[[list[int]], R]]
    payload: Any
    count: int


def ordered(plan: Plan[R], processes: int) -> Iterator[R]:
    """The task's result for each run of consecutive files, in input order."""
    size = max(1, min(MAX_RUN, plan.count // max(1, processes * IN_FLIGHT)))
    runs = (list(range(i, min(i + size, plan.count))) for i in range(0, plan.count, size))
    if processes <= 1:
        yield from map(plan.task, runs)
        return
    import multiprocessing  # only when there are workers to start

    context = multiprocessing.get_context("spawn")
    with context.Pool(processes, initializer=_init, initargs=(plan.factory, plan.payload)) \
            as pool:
        pending = deque(pool.apply_async(_run, (run,))
                        for run in islice(runs, processes * IN_FLIGHT))
        while pending:
            result = pending.popleft().get()
            following = next(runs, None)
            if following is not None:
                pending.append(pool.apply_async(_run, (following,)))
            if isinstance(result, Failure):
                result.raise_it()
            yield result
