"""What the controller refuses to build: the one pipeline's verdict on a TrainJob, before any apply.

The controller runs a TrainJob through the same pipeline as validate and render
(`compiler.pipeline.session`): admission as the API server would (schema, CEL and webhook
rules: the controller cannot rely on a webhook being installed), the compile, and the policy
packs the controller was started with (`tjc controller --policy`, `--no-default-policies`,
`--policy-values`, as `livepolicy` holds them at the time) on the TrainJob, its runtime and the
compiled JobSet; a deny (after the exemptions of the policy settings, whose expiry is judged on
the `today` of this decision) is a refusal too. A session is made per runtime version, settings
and day, so `reconcile` keeps it (each runtime is checked once in it). Called by `reconcile`;
pure apart from the evaluator the policy set holds.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING

from compiler.common.diagnostics import Diagnostic, Severity
from compiler.common.jsondata import Obj
from compiler.core.compile import PreparedRuntime
from compiler.core.context import CompileOptions
from compiler.io.inputs import RuntimeEntry
from compiler.io.loader import Document, Source
from compiler.pipeline.session import JobResult, Session

if TYPE_CHECKING:
    from compiler.policy.engine import PolicySet


def session(runtime: Obj, prepared: PreparedRuntime, policies: PolicySet | None,
            today: datetime.date) -> Session:
    """The pipeline session of one runtime version (its `prepared` form), with the policies
    of the time and their exemptions judged on `today`."""
    checker = None
    if policies is not None:
        from compiler.policy.check import PolicyChecker

        checker = PolicyChecker(policies, today=today)
    doc = _document(runtime, f"<{runtime.get('kind')}>")
    return Session({prepared.key(): RuntimeEntry(doc, prepared)}, policies=checker)


def judge(session: Session, trainjob: Obj, options: CompileOptions
          ) -> tuple[JobResult, list[Diagnostic]]:
    """The pipeline's result for a TrainJob, and the errors that keep it from being built:
    its own, its runtime's (admission and policies: the runtime is not in the cluster's
    view of the user, so they are said here), and the policy settings' own."""
    meta = trainjob.get("metadata") or {}
    result = session.process(_document(
        trainjob, f"<TrainJob {meta.get('namespace')}/{meta.get('name')}>"), options)
    errors = result.errors
    if errors:
        entry = next(iter(session.table.values()))
        errors = [d for d in session.runtime(entry.doc).diagnostics
                  if d.severity is Severity.ERROR] + errors
    if session.policies is not None:
        errors += [d for d in session.policies.policies.errors if d.severity is Severity.ERROR]
    return result, errors


def _document(data: Obj, name: str) -> Document:
    """An object from the API server as a pipeline input: it has no file to locate in (its
    diagnostics keep their field paths, which the condition's message gives)."""
    return Document(data, Source(name, ""), 0)


def message(errors: list[Diagnostic]) -> str:
    """The Failed condition's message: every error with its field path and rule."""
    return "; ".join(f"{d.field_path}: {d.message} [{d.rule}]" if d.field_path
                     else f"{d.message} [{d.rule}]" for d in errors)[:32000]
