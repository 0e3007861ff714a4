"""The compiler's small typed error hierarchy.

Only the type decides control flow (the CLI maps `InputError` and `PolicyError` to exit 2, a
compile problem to a diagnostic and exit 1); callers never match message text. Every error
carries diagnostics.
"""

from __future__ import annotations

from compiler.common.diagnostics import Diagnostic


class TjcError(Exception):
    """Base class of every error the compiler raises on purpose."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


class InputError(TjcError):
    """An input cannot be read or parsed (usage level: exit code 2)."""


class CompileError(TjcError):
    """A TrainJob cannot be compiled (exit code 1); raised inside the core, reported as data."""


class PluginGraphError(TjcError):
    """The plugin graph has a cycle or an unprovided requirement."""


class PolicyError(TjcError):
    """The policy packs or their settings cannot be used (exit code 2); `diagnostics` say
    where. A long-running caller (the controller) keeps the policies it had."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        super().__init__(diagnostics[0])
        self.diagnostics = diagnostics


class PolicyLimitError(PolicyError):
    """CUE work on a pack or a values file (`file`) went over its `limit`, "memory" or
    "time": the evaluator's process was stopped, and the next CUE work starts another."""

    def __init__(self, diagnostic: Diagnostic, limit: str, file: str) -> None:
        super().__init__([diagnostic])
        self.limit = limit
        self.file = file
