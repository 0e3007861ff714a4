"""Where in its inputs a TrainJob's findings are to be fixed, for a message a person reads.

A policy finding on the compiled JobSet names a field the user never wrote. Its compile
recorded who wrote each field (`compiler.core.provenance`), as `tjc validate` uses it to point
at a line: a value the runtime's template made is shown at the runtime (`spec.template...`),
one the TrainJob gave (a runtime patch, the trainer's image) at the TrainJob's own field,
one a plugin made stays at the JobSet. A runtime's violation found again in the JobSet it
templates is then said once. The verdict is not changed: only each finding's object and path.
Pure. Called by `judge`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from compiler.common.diagnostics import Diagnostic, ObjectRef
from compiler.core.compile import CompileResult
from compiler.core.provenance import root_of


def in_inputs(found: Sequence[Diagnostic], result: CompileResult, trainjob: ObjectRef,
              runtime: ObjectRef) -> list[Diagnostic]:
    """The findings with those about the JobSet moved to the input that wrote the field,
    each finding once."""
    jobset = next((o for o in result.objects if o.get("kind") == "JobSet"), None)
    out: list[Diagnostic] = []
    seen: set[tuple[object, ...]] = set()
    for d in found:
        if jobset is not None and result.origins is not None and d.obj is not None and \
                d.obj.kind == "JobSet":
            d = _moved(d, result, (*root_of(jobset), *d.path), trainjob, runtime)
        key = (d.severity, d.rule, d.obj, d.path, d.message)
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


def _moved(d: Diagnostic, result: CompileResult, at: tuple[str | int, ...],
           trainjob: ObjectRef, runtime: ObjectRef) -> Diagnostic:
    origins = result.origins
    assert origins is not None
    if origins.template_made(at):
        return replace(d, obj=runtime, path=("spec", "template", *d.path))
    writer = origins.lookup(at)
    if writer is None or writer.default_note or not writer.path:
        return d
    if writer.input == "trainjob":
        return replace(d, obj=trainjob, path=writer.path)
    if writer.input == "runtime":
        return replace(d, obj=runtime, path=writer.path)
    return d
