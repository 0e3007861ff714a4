"""What `tjc validate` and `tjc render` share to run over the files of the inputs.

A `FilePipeline` is built in the parent from all the files (the first pass finds the input
runtimes and labelled Namespaces) and in each `-j` worker from none of them until the parent
names the files that hold them (`with_runtimes`). It holds the runtime table, the notes of
the first pass, the policy checker and the session; a verb's subclass makes the session
(`new_session`), runs its `task` over some files' indices and adds what else it needs
(`read_more`: `--against`'s versions; compile options). The policy errors a task meets for
the first time go back with its result (`new_policy_errors`).
Imports stay lazy: validate of one file is the pre-commit path.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from compiler.cli import collect, jobs, policy_opts, release_opt, runtimes_opt
from compiler.common.diagnostics import Diagnostic
from compiler.io.loader import SourceFiles

if TYPE_CHECKING:
    from compiler.pipeline.session import Session
    from compiler.policy.check import PolicyChecker

R = TypeVar("R")


class FilePipeline(Generic[R]):
    """The runtimes, policies and session of one process of a run over `sources`
    (`runtime_files`: where to read input runtimes from, all `sources` when None)."""

    def __init__(self, args: argparse.Namespace, sources: SourceFiles,
                 runtime_files: SourceFiles | None = None, *, policies: bool = True) -> None:
        from compiler.io.builtin import builtin_runtimes
        from compiler.io.inputs import Namespaces, runtime_table
        from compiler.io.placement import in_namespace

        self.args, self.sources = args, sources
        self.versions: release_opt.Versions = args.versions
        self.builtin = [] if args.no_builtin_runtimes else \
            list(builtin_runtimes(self.versions.release.version))
        extra, unreadable = runtimes_opt.extra_runtimes(args, sources)
        self.builtin += [in_namespace(doc, args.placement) for doc in extra]
        first = sources if runtime_files is None else runtime_files
        self.namespaces = Namespaces()
        self.table, self.notes = runtime_table(first, self.builtin, args.placement,
                                               self.namespaces)
        self.notes[:0] = unreadable
        self.read_more()
        self.checker: PolicyChecker | None = policy_opts.build(args) if policies else None
        self.reported = len(self.checker.policies.errors) if self.checker else 0
        self.session = self._session()

    def read_more(self) -> None:
        """What the verb reads after the runtimes and before the policies (in that order a
        missing file is reported)."""

    def new_session(self) -> Session:
        """The verb's session over `self.table` and `self.checker`."""
        raise NotImplementedError

    def _session(self) -> Session:
        if self.checker is not None:
            self.checker.use_namespaces(self.namespaces.labels)
        return self.new_session()

    def with_runtimes(self, names: frozenset[str]) -> FilePipeline[R]:
        """A worker's pipeline with the runtimes (and labelled Namespaces) of these input
        files too."""
        from compiler.io.inputs import Namespaces, runtime_table

        if names:
            self.namespaces = Namespaces()
            self.table, _ = runtime_table(self.sources.subset(names), self.builtin,
                                          self.args.placement, self.namespaces)
            self.session = self._session()
        return self

    def plan(self) -> jobs.Plan[R]:
        """This pipeline over its files, and the files a worker reads runtimes and labelled
        Namespaces from."""
        from compiler.io.inputs import runtime_files

        shared = frozenset(runtime_files(self.table) | self.namespaces.files)
        return jobs.Plan(self.task, shared, len(self.sources))

    def task(self, indices: list[int]) -> R:
        """The verb's results for these files, in order."""
        raise NotImplementedError

    def new_policy_errors(self) -> list[Diagnostic]:
        """The policy errors met since the last call (each reported once by the parent)."""
        new = self.checker.policies.errors[self.reported:] if self.checker else []
        self.reported += len(new)
        return list(new)


def serve(pipeline: FilePipeline[Any]) -> Callable[[frozenset[str]], jobs.Task]:
    """A `-j` worker's task maker, from its pipeline built before the parent's first pass
    (everything but the input runtimes, which the parent then names)."""
    collect.started()
    return lambda names: pipeline.with_runtimes(names).task
