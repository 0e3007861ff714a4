"""What the controller refuses to build: admission errors and policy denies, before any apply.

The compile has already admitted the TrainJob (schema, CEL and webhook rules, as the API
server would: the controller cannot rely on a webhook being installed). Then the policy packs
(on the TrainJob as the compile admitted and defaulted it, which its record keeps) the
controller was started with (`tjc controller --policy`, `--no-default-policies`,
`--policy-values`, as `livepolicy` holds them at the time) run on the TrainJob, its runtime
and the compiled JobSet; a deny (after the exemptions of the policy settings, whose expiry is
judged on the `today` of this decision) is a refusal too. Called by `reconcile` and, for the
admission webhook, by `judge` (`findings`: the warnings too); pure apart from the evaluator
the policy set holds.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING

from compiler.common.diagnostics import Diagnostic, ObjectRef, Severity, with_object
from compiler.common.jsondata import Obj
from compiler.core.admission import admit_runtime, check_object
from compiler.core.compile import CompileResult

if TYPE_CHECKING:
    from compiler.policy.engine import PolicySet


def runtime_findings(runtime: Obj, policies: PolicySet,
                     today: datetime.date) -> list[Diagnostic]:
    """What the policy packs say of the runtime (admitted and defaulted, as they see it
    elsewhere): the same for every TrainJob of one runtime version, settings and day, so
    `reconcile` keeps it per snapshot digest, settings and day."""
    rt = admit_runtime(runtime)[0]
    return [v.diagnostic() for v in policies.check(str(rt.get("kind", "")), rt, today=today)]


def refusals(result: CompileResult, trainjob: Obj, runtime: Obj | list[Diagnostic],
             policies: PolicySet | None, today: datetime.date) -> list[Diagnostic]:
    """The errors that keep the TrainJob from being built: the compile's own, else the
    policy denies (none when no policy set is configured), exemptions judged on `today`.
    `runtime` is the runtime, or what `runtime_findings` said of it."""
    return [d for d in findings(result, trainjob, runtime, policies, today)
            if d.severity is Severity.ERROR]


def findings(result: CompileResult, trainjob: Obj, runtime: Obj | list[Diagnostic],
             policies: PolicySet | None, today: datetime.date) -> list[Diagnostic]:
    """Everything said of the TrainJob, of which `refusals` are the errors: the compile's
    diagnostics, then (when it has no error) the policy packs' of the TrainJob, its runtime
    and the compiled JobSet (these naming the JobSet as their object), warnings and the
    notices of exemptions used among them (what the admission webhook answers with)."""
    found = list(result.diagnostics)
    if policies is None or any(d.severity is Severity.ERROR for d in found):
        return found
    # the TrainJob the compile admitted and defaulted (as validate's policies see it): not
    # admitted a second time
    admitted = result.origins.input("trainjob") if result.origins is not None else None
    tj = admitted if admitted is not None else check_object("TrainJob", trainjob)[0]
    found += [v.diagnostic() for v in policies.check("TrainJob", tj, today=today)]
    found += runtime if isinstance(runtime, list) else \
        runtime_findings(runtime, policies, today)
    for obj in result.objects:
        if obj.get("kind") == "JobSet":
            found += with_object([v.diagnostic() for v in policies.check(
                "JobSet", obj, tj, today=today)], _ref(obj))
    return found + policies.errors


def _ref(obj: Obj) -> ObjectRef:
    meta = obj.get("metadata") or {}
    return ObjectRef(str(obj.get("kind", "")), str(meta.get("name", "")),
                     str(meta.get("namespace") or ""))


def message(errors: list[Diagnostic]) -> str:
    """The Failed condition's message: every error with its field path and rule."""
    return "; ".join(f"{d.field_path}: {d.message} [{d.rule}]" if d.field_path
                     else f"{d.message} [{d.rule}]" for d in errors)[:32000]
