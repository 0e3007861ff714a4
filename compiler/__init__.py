"""trainjob-compiler: Kubeflow Trainer v2 TrainJob + runtime in, the JobSet upstream creates out.

The library API: `compile_trainjob(trainjob, runtime)` admits the TrainJob as the API server
would (`admit`: schema, CEL and webhook rules) and compiles it, returning a `CompileResult`
with the objects as plain dicts and the diagnostics as data (`ok=False` and no objects when the
cluster would refuse it); `validate_documents` checks whole sets of documents as `tjc validate`
does. Errors the library raises on purpose derive from `TjcError`. See README.md for the CLI.

The names are imported on first use (PEP 562), so `import compiler.<module>` (every `tjc`
command does) pays only for the modules that command needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from compiler.version import __version__

if TYPE_CHECKING:
    from compiler.common.diagnostics import Diagnostic, Location, ObjectRef, Severity
    from compiler.common.errors import CompileError, InputError, PluginGraphError, TjcError
    from compiler.core.admission import admit
    from compiler.core.compile import (
        CompileResult,
        PreparedRuntime,
        compile_trainjob,
        prepare_runtime,
    )
    from compiler.core.context import CompileOptions, SSHKeyPair
    from compiler.core.release import Release, UnservedRelease, release_of
    from compiler.validate.documents import validate_documents

_LAZY = {
    "CompileError": "compiler.common.errors",
    "InputError": "compiler.common.errors",
    "PluginGraphError": "compiler.common.errors",
    "TjcError": "compiler.common.errors",
    "admit": "compiler.core.admission",
    "CompileResult": "compiler.core.compile",
    "PreparedRuntime": "compiler.core.compile",
    "compile_trainjob": "compiler.core.compile",
    "prepare_runtime": "compiler.core.compile",
    "CompileOptions": "compiler.core.context",
    "SSHKeyPair": "compiler.core.context",
    "Release": "compiler.core.release",
    "UnservedRelease": "compiler.core.release",
    "release_of": "compiler.core.release",
    "Diagnostic": "compiler.common.diagnostics",
    "Location": "compiler.common.diagnostics",
    "ObjectRef": "compiler.common.diagnostics",
    "Severity": "compiler.common.diagnostics",
    "validate_documents": "compiler.validate.documents",
}

__all__ = [
    "CompileError",
    "CompileOptions",
    "CompileResult",
    "Diagnostic",
    "InputError",
    "Location",
    "ObjectRef",
    "PluginGraphError",
    "PreparedRuntime",
    "Release",
    "SSHKeyPair",
    "Severity",
    "TjcError",
    "UnservedRelease",
    "__version__",
    "admit",
    "compile_trainjob",
    "prepare_runtime",
    "release_of",
    "validate_documents",
]


def __getattr__(name: str) -> object:
    """A public name of the library, imported from its module on first use."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names too, before they are first used."""
    return sorted({*globals(), *__all__})
