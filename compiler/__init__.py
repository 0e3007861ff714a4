"""trainjob-compiler: Kubeflow Trainer v2 TrainJob + runtime in, the JobSet upstream creates out.

The library API: `compile_trainjob(trainjob, runtime)` admits the TrainJob as the API server
would (`admit`: schema, CEL and webhook rules) and compiles it, returning a `CompileResult`
with the objects as plain dicts and the diagnostics as data (`ok=False` and no objects when the
cluster would refuse it); `validate_documents` checks whole sets of documents as `tjc validate`
does. Errors the library raises on purpose derive from `TjcError`. See README.md for the CLI.
"""

from compiler.admission import admit
from compiler.compile import CompileResult, PreparedRuntime, compile_trainjob, prepare_runtime
from compiler.context import CompileOptions, SSHKeyPair
from compiler.diagnostics import Diagnostic, Location, ObjectRef, Severity
from compiler.errors import CompileError, InputError, PluginGraphError, TjcError
from compiler.validation import validate_documents
from compiler.version import __version__

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
    "SSHKeyPair",
    "Severity",
    "TjcError",
    "__version__",
    "admit",
    "compile_trainjob",
    "prepare_runtime",
    "validate_documents",
]
