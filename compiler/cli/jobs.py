"""`-j N`: the files of an input spread over worker processes, results in input order.

The inputs are cut into runs of consecutive files. The worker processes are started before
the parent's first pass over the inputs (forked when that is safe, else started fresh: see
`Workers`) and meanwhile set themselves up from the same options; the names of the files
holding runtimes, which that pass finds, come with each run of files (a worker reads those
files once), and a worker returns what each run gave. The parent takes the results in input
order and prints them as it would its own, so the output is the same for every N. Only a few
runs are in flight at once, so memory does not grow with the input. Without `-j`, inputs of
MIN_BYTES or more in more than one file use every usable core.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from collections import deque
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import field
from itertools import islice
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from compiler.common.diagnostics import Diagnostic
from compiler.common.errors import InputError, PolicyError, TjcError
from compiler.common.records import dataclass

if TYPE_CHECKING:
    import multiprocessing.pool

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
    if len(sources) < 2 or sources.size(enough=MIN_BYTES) < MIN_BYTES:
        return 1
    return max(1, min(usable_cores(), len(sources)))


@dataclass
class Failure:
    """A worker's input or setup error, carried back to be raised in the parent."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    setup: bool = False

    def raise_it(self) -> None:
        """Raise what the worker met, as the parent would have."""
        from compiler.cli.policy_opts import PolicySetupError

        if self.setup:
            raise PolicySetupError(self.diagnostics)
        raise InputError(self.diagnostics[0])


Setup = Callable[[Any], Task]  # in a worker: the task for what the parent's first pass found

_SETUP: Setup | Failure | None = None
_TASK: tuple[Hashable, Task | Failure] | None = None  # the last task set up, by what for


def _init(pickled: bytes) -> None:
    """Set a worker up: `pickled` holds the factory and its payload, pickled in the parent so
    that the new process reads them off its pipe at once, before the imports they need."""
    import pickle

    _setup(*pickle.loads(pickled))


def _setup(factory: Callable[[Any], Setup], payload: Any) -> None:
    global _SETUP, _TASK
    _TASK = None
    try:
        _SETUP = factory(payload)
    except TjcError as exc:
        _SETUP = _failure(exc)


def _failure(exc: TjcError) -> Failure:
    if isinstance(exc, PolicyError):  # a pack or values file, or the evaluator's limits
        return Failure(exc.diagnostics, setup=True)
    return Failure([exc.diagnostic])


def _task(shared: Hashable) -> Task | Failure:
    """The task set up for `shared` (the same for every task of a run: set up once)."""
    global _TASK
    if _SETUP is None or isinstance(_SETUP, Failure):
        return _SETUP or Failure()
    if _TASK is None or _TASK[0] != shared:
        try:
            _TASK = (shared, _SETUP(shared))
        except TjcError as exc:
            _TASK = (shared, _failure(exc))
    return _TASK[1]


def _run(shared: Hashable, indices: list[int]) -> Any:
    task = _task(shared)
    if isinstance(task, Failure):
        return task
    try:
        return task(indices)
    except TjcError as exc:
        return _failure(exc)


def _can_fork() -> bool:
    """Whether a forked worker would work: the CUE library's Go runtime does not survive
    a fork (tjc loads it only in the evaluator's own process, `cueproc`, whose pipes a
    forked worker leaves to the parent, but a library user may have loaded it here), nor
    another thread's locks, a native library's included; and only Linux forks safely with
    the libraries loaded."""
    cuelib = sys.modules.get("compiler.policy.cuelib")
    return sys.platform == "linux" and getattr(cuelib, "_LIB", None) is None \
        and threading.active_count() == 1 and _os_threads() == 1


def _os_threads() -> int:
    """The threads of this process, those native code started included."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 0  # unknown: do not fork


@dataclass
class Plan(Generic[R]):
    """How to process `count` files: `task` in this process; in a worker, the task its setup
    builds for `shared` (what the parent's first pass found: the files holding runtimes)."""

    task: Callable[[list[int]], R]
    shared: Hashable
    count: int


class Workers:
    """The worker processes of a run (none for one process), started before the parent's
    first pass so that their start-up overlaps it; stopped when the run ends or fails.

    On Linux, while this process has loaded no CUE evaluator and runs no other thread, they
    are forked once the `preload` modules are imported: nothing to import again, no
    interpreter to start. Otherwise they are spawned, from a thread: starting one writes the
    payload (the input's file names) into a pipe and waits while the new process, which
    imports what the payload needs, has not read it all."""

    def __init__(self, processes: int, factory: Callable[[Any], Setup], payload: Any,
                 preload: Sequence[str] = ()) -> None:
        self.processes = processes
        self._pool: multiprocessing.pool.Pool | None = None
        self._started: threading.Thread | None = None
        self._error: BaseException | None = None
        if processes <= 1:
            return
        if _can_fork():
            self._fork(factory, payload, preload)
        else:
            self._started = threading.Thread(target=self._spawn, args=(factory, payload),
                                             name="tjc-workers", daemon=True)
            self._started.start()

    def _fork(self, factory: Callable[[Any], Setup], payload: Any,
              preload: Sequence[str]) -> None:
        import importlib
        import multiprocessing

        for name in preload:
            importlib.import_module(name)
        sys.stdout.flush()  # a worker flushes what it inherited when it ends
        sys.stderr.flush()
        self._pool = multiprocessing.get_context("fork").Pool(
            self.processes, initializer=_setup, initargs=(factory, payload))

    def _spawn(self, factory: Callable[[Any], Setup], payload: Any) -> None:
        import multiprocessing
        import pickle

        try:
            context = multiprocessing.get_context("spawn")
            pickled = pickle.dumps((factory, payload), pickle.HIGHEST_PROTOCOL)
            self._pool = context.Pool(self.processes, initializer=_init, initargs=(pickled,))
        except BaseException as exc:  # raised where the pool is used
            self._error = exc

    def _ready(self) -> multiprocessing.pool.Pool | None:
        if self._started is not None:
            self._started.join()
            self._started = None
        if self._error is not None:
            raise self._error
        return self._pool

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._started is not None:
            self._started.join()
        if self._pool is not None:
            self._pool.terminate()

    def ordered(self, plan: Plan[R]) -> Iterator[R]:
        """The task's result for each run of consecutive files, in input order."""
        size = max(1, min(MAX_RUN, plan.count // max(1, self.processes * IN_FLIGHT)))
        runs = (list(range(i, min(i + size, plan.count)))
                for i in range(0, plan.count, size))
        pool = self._ready()
        if pool is None:
            yield from map(plan.task, runs)
            return
        pending = deque(pool.apply_async(_run, (plan.shared, run))
                        for run in islice(runs, self.processes * IN_FLIGHT))
        while pending:
            result = pending.popleft().get()
            following = next(runs, None)
            if following is not None:
                pending.append(pool.apply_async(_run, (plan.shared, following)))
            if isinstance(result, Failure):
                result.raise_it()
            yield result
