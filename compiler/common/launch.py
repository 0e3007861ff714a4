"""The local runner's hook: what a framework's pods need to run as processes on one machine.

`tjc run --local` (`compiler.localrun`) knows no framework. A plugin that needs more than a
`python` on the PATH implements `LocalLaunch` (one method): given where and how the pods run
(`LaunchSite`), it returns a `Launcher`: stand-in programs for the bin folder put first on
every pod's PATH (a `torchrun` that runs the given interpreter, an ssh that runs the command
here), the programs whose pods are not run because a stand-in replaces them (an SSH server),
and the env every other pod then gets. The types live here, below both the plugins
(`compiler.core.plugins.hooks` re-exports them) and the runner, which may not import the core;
the CLI hands the runner the registry's launchers. Data only: nothing here runs or writes.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import field
from typing import Protocol, runtime_checkable

from compiler.common.records import dataclass


@dataclass(frozen=True)
class LaunchSite:
    """Where the pods run: the interpreter standing in for the image's `python`, every name a
    pod is reachable by (each is this machine), the folder the stand-in programs are written
    to, and whether the runner runs as root."""

    python: str
    hosts: tuple[str, ...]
    bin_dir: str
    as_root: bool = False


@dataclass(frozen=True)
class Launcher:
    """What one framework adds: `programs` (name -> script text) written to the bin folder;
    `replaced` (a pod whose command is one of these programs is not run; the value says what
    stands in for it); `client_env`, given to every pod that is run when a replaced pod is
    in the JobSet (a pod's own env wins)."""

    programs: Mapping[str, str] = field(default_factory=dict)
    replaced: Mapping[str, str] = field(default_factory=dict)
    client_env: Mapping[str, str] = field(default_factory=dict)


@runtime_checkable
class LocalLaunch(Protocol):
    """The hook: a framework's launcher knowledge for `tjc run --local`."""

    def local_launch(self, site: LaunchSite) -> Launcher:
        """What this framework's pods need on `site`."""
        ...


def python_script(python: str, *args: str) -> str:
    """A stand-in program that runs `python` with `args`, then its own arguments."""
    head = " ".join(shlex.quote(part) for part in (python, *args))
    return f'#!/bin/sh\nexec {head} "$@"\n'
