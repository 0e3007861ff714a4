"""trainjob-compiler: Kubeflow Trainer v2 TrainJob + runtime in, the JobSet upstream creates out.

The library API is `compile_trainjob(trainjob, runtime)`, which returns a `CompileResult` with
the objects as plain dicts and the diagnostics as data. See README.md for the CLI (`tjc`).
"""

from compiler.compile import CompileResult, PreparedRuntime, compile_trainjob, prepare_runtime
from compiler.context import CompileOptions, SSHKeyPair
from compiler.diagnostics import Diagnostic, Location, ObjectRef, Severity

__all__ = [
    "CompileOptions",
    "CompileResult",
    "Diagnostic",
    "Location",
    "ObjectRef",
    "PreparedRuntime",
    "SSHKeyPair",
    "Severity",
    "compile_trainjob",
    "prepare_runtime",
]
__version__ = "0.1.0"
