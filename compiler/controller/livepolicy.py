"""The controller's policy set, built again whenever the platform's policy settings change.

The settings are files the platform team owns: the `--policy-values` file (a mounted
ConfigMap, typically) and the `--policy` folders. A projected ConfigMap is updated in place by
swapping its `..data` symlink, so each watched file is looked at through its resolved path:
that path, its device, inode, size and modification time (`signature`). They are looked at
on every admission (a few `stat` calls); when they differ, the set is built again with
`load` (the CLI's own way of building it, so start-up and reload read the files alike).

A new version that does not load (a syntax or type error, unreadable, deleted, or no pack
left) keeps the last good set, never no policies: the controller does not open up because a
file broke. It is reported once per broken version: an error log line and `report` (the
manager makes a Warning event of it). Exemption expiry is no concern of this module: the
reconcile passes the date of each decision to the checks (`admission`).

Called by `reconcile` (`current`), built by the CLI, wired to events by `manager`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from compiler.common.diagnostics import one_line
from compiler.common.errors import TjcError

if TYPE_CHECKING:
    from compiler.policy.engine import PolicySet

LOG = logging.getLogger("tjc.controller")

Signature = tuple[tuple[object, ...], ...]
Loader = Callable[[], "PolicySet | None"]


class LivePolicies:
    """The last good policy set, and the generation that counts its versions."""

    def __init__(self, policies: PolicySet, load: Loader | None = None,
                 watched: Sequence[Path] = (),
                 report: Callable[[str], None] | None = None) -> None:
        self._good, self._load, self._watched = policies, load, tuple(watched)
        self.report = report
        self.generation = 0
        self.problem: str | None = None  # why the newest version is not in use
        self._lock = threading.Lock()
        self._seen = signature(self._watched)

    def current(self) -> tuple[PolicySet, int]:
        """The policy set to judge with now, and its generation (a new one for every version
        loaded); the watched files are looked at first, and a change loads them again."""
        failed = None
        with self._lock:
            seen = signature(self._watched)
            if seen != self._seen and self._load is not None:
                self._seen = seen
                failed = self._reload(self._load)
            found = self._good, self.generation
        if failed is not None and self.report is not None:
            self.report(failed)
        return found

    def _reload(self, load: Loader) -> str | None:
        """Build the set again; what went wrong (and the last good set kept), or None."""
        try:
            loaded = load()
            why = None if loaded is not None else "no policy pack would be left"
        except TjcError as exc:
            loaded, why = None, _diagnostic_text(exc)
        except Exception as exc:  # whatever else loading raises: still never open up
            loaded, why = None, f"{type(exc).__name__}: {exc}"
        if loaded is None:
            files = ", ".join(str(p) for p in self._watched)
            message = one_line(f"policy settings not reloaded ({files}), the last good ones "
                               f"stay in use: {why}")
            self.problem = message
            LOG.error("%s", message)
            return message
        self._good, self.problem = loaded, None
        self.generation += 1
        LOG.info("policy settings reloaded (version %d)", self.generation)
        return None


def _diagnostic_text(exc: TjcError) -> str:
    diagnostics = getattr(exc, "diagnostics", None) or [exc.diagnostic]
    return "; ".join(d.text() for d in diagnostics)


def signature(paths: Sequence[Path]) -> Signature:
    """What identifies the current version of the watched files: each file (a folder's
    `*.cue` files) by its resolved path, device, inode, size and modification time; a path
    that is not there (or cannot be looked at) by the error."""
    out: list[tuple[object, ...]] = []
    for path in paths:
        files = sorted(path.glob("*.cue")) if path.is_dir() else [path]
        out.append((str(path), len(files)))
        out += [_stat(file) for file in files]
    return tuple(out)


def _stat(path: Path) -> tuple[object, ...]:
    try:
        real = path.resolve(strict=True)
        info = real.stat()
    except (OSError, RuntimeError) as exc:  # gone, unreadable, a symlink loop
        return (str(path), type(exc).__name__)
    return (str(real), info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
