"""What the controller refuses to build: the one pipeline's verdict on a TrainJob, before any apply.

The controller runs a TrainJob through the same pipeline as validate and render
(`compiler.pipeline.session`): admission as the API server would (schema, CEL and webhook
rules: the controller cannot rely on a webhook being installed), the compile, and the policy
packs the controller was started with (`tjc controller --policy`, `--no-default-policies`,
`--policy-values`, as `livepolicy` holds them at the time) on the TrainJob, its runtime and the
compiled JobSet; a deny (after the exemptions of the policy settings, whose expiry is judged on
the `today` of this decision) is a refusal too. A session is made per runtime version, settings
and day, so `reconcile` keeps it (each runtime is checked once in it). Called by `reconcile`
and, for the admission webhook and the policy reports, by `judge` (which answers with the
warnings too); pure apart from the evaluator the policy set holds.
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


def judge(session: Session, trainjob: Obj, options: CompileOptions, old: Obj | None = None
          ) -> tuple[JobResult, list[Diagnostic]]:
    """The pipeline's result for a TrainJob (`old`: its previous version, on an update), and
    everything said of it: its runtime's own problems and warnings (admission and policies:
    its user may not see the runtime), the TrainJob's, and the policy settings' errors. The
    errors among them keep it from being built (`errors`)."""
    meta = trainjob.get("metadata") or {}
    result = session.process(_document(
        trainjob, f"<TrainJob {meta.get('namespace')}/{meta.get('name')}>"), options, old=old)
    entry = next(iter(session.table.values()))
    said = [d for d in session.runtime(entry.doc).diagnostics
            if d.severity is not Severity.NOTICE or d.suppression is not None]
    said += result.diagnostics
    if session.policies is not None:
        said += session.policies.policies.errors
    return result, list(dict.fromkeys(said))  # (a runtime's finding, met again in its JobSet)


def errors(said: list[Diagnostic]) -> list[Diagnostic]:
    """The errors of what `judge` said."""
    return [d for d in said if d.severity is Severity.ERROR]


def runtime_verdict(runtime: Obj, old: Obj | None, policies: PolicySet | None,
                    today: datetime.date) -> list[Diagnostic]:
    """Everything said of a runtime created or changed (`old`: its previous version): the
    pipeline's own judgement of a runtime (`Session.runtime`: admission and the policy
    packs, exemptions judged on `today`), and the policy settings' errors."""
    from compiler.core.resolve import object_key

    checker = None
    if policies is not None:
        from compiler.policy.check import PolicyChecker

        checker = PolicyChecker(policies, today=today)
    previous = {object_key(runtime): old} if old is not None else None
    doc = _document(runtime, f"<{runtime.get('kind')}>")
    found = Session({}, previous, policies=checker).runtime(doc).diagnostics
    return found + (policies.errors if policies is not None else [])


def _document(data: Obj, name: str) -> Document:
    """An object from the API server as a pipeline input: it has no file to locate in (its
    diagnostics keep their field paths, which the condition's message gives)."""
    return Document(data, Source(name, ""), 0)


def message(errors: list[Diagnostic]) -> str:
    """The Failed condition's message: every error with its field path and rule."""
    return "; ".join(f"{d.field_path}: {d.message} [{d.rule}]" if d.field_path
                     else f"{d.message} [{d.rule}]" for d in errors)[:32000]
