"""The Job a replicated job becomes, as batch validation has it (`validateJobSpec` of
`pkg/apis/batch/validation`), after JobSet's defaults (Indexed completion, restartPolicy
OnFailure) and the batch/v1 ones (parallelism and completions 1 when neither is set):

- counts and durations are 0 or more; parallelism and completions only from `Scope.PODS` on
  (the JobSet plugin sets them for the trainer from numNodes);
- completionMode NonIndexed or Indexed; an Indexed Job has completions (`Scope.PODS`), a
  maxFailedIndexes of at most completions and 100,000, and, above 100,000 completions with a
  backoffLimitPerIndex, a maxFailedIndexes and a parallelism of at most 10,000 each; a
  NonIndexed one has no backoffLimitPerIndex or maxFailedIndexes; maxFailedIndexes comes
  with backoffLimitPerIndex; a successPolicy needs Indexed;
- the pod template's restartPolicy is OnFailure or Never (Never with a podFailurePolicy);
  podReplacementPolicy Failed or TerminatingOrFailed (Failed with a podFailurePolicy).

An Indexed Job's parallelism above 100,000 is `compiler.core.limits`' TJC-JOBSET-PARALLELISM.
Called by `compiler.kube.podspec.check`; pure.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from compiler.kube.podspec.base import Problem, Scope, integer, text

RULE = "TJC-POD-JOB"
COUNTS = ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit",
          "ttlSecondsAfterFinished", "backoffLimitPerIndex", "maxFailedIndexes")
_SET_BY_TRAINER = ("parallelism", "completions")
MODES = ("NonIndexed", "Indexed")
REPLACEMENT = ("Failed", "TerminatingOrFailed")
SOFT_LIMIT, HIGH_LIMIT, MAX_FAILED = 100_000, 10_000, 100_000
RESTART = ("template", "spec", "restartPolicy")


def problems(job: dict[str, Any], scope: Scope) -> Iterator[Problem]:
    """Every Job-level problem of a replicated job's Job spec."""
    for key in COUNTS:
        value = integer(job.get(key))
        if value is not None and value < 0 and (scope >= Scope.PODS or key not in
                                                _SET_BY_TRAINER):
            yield Problem(RULE, (key,), f"{key} is {value}; expected 0 or more")
    if job.get("maxFailedIndexes") is not None and job.get("backoffLimitPerIndex") is None:
        yield Problem(RULE, ("backoffLimitPerIndex",), "maxFailedIndexes is set without "
                      "backoffLimitPerIndex")
    mode = job.get("completionMode")
    mode = "Indexed" if mode is None else mode  # JobSet's default
    if isinstance(mode, str) and mode not in MODES:
        yield Problem(RULE, ("completionMode",), f"completionMode {mode!r} is not one of "
                      f"{', '.join(MODES)}")
    elif mode == "Indexed":
        yield from _indexed(job, scope)
    else:
        for key in ("backoffLimitPerIndex", "maxFailedIndexes"):
            if job.get(key) is not None:
                yield Problem(RULE, (key,), f"{key} needs completionMode Indexed")
    if job.get("successPolicy") is not None and mode != "Indexed":
        yield Problem(RULE, ("successPolicy",), "a successPolicy needs completionMode Indexed")
    yield from _policies(job)


def _indexed(job: dict[str, Any], scope: Scope) -> Iterator[Problem]:
    completions = integer(job.get("completions"))
    if completions is None and job.get("parallelism") is None:
        completions = 1  # the batch/v1 default when neither is set
    parallelism = integer(job.get("parallelism"))
    most_failed = integer(job.get("maxFailedIndexes"))
    if completions is None and scope >= Scope.PODS:
        yield Problem(RULE, ("completions",), "an Indexed Job needs completions (parallelism "
                      "alone is not enough)")
    if most_failed is not None and completions is not None and most_failed > completions:
        yield Problem(RULE, ("maxFailedIndexes",), f"maxFailedIndexes {most_failed} is above "
                      f"completions {completions}")
    if most_failed is not None and most_failed > MAX_FAILED:
        yield Problem(RULE, ("maxFailedIndexes",), f"maxFailedIndexes {most_failed} is above "
                      f"{MAX_FAILED}")
    if completions is not None and completions > SOFT_LIMIT and \
            job.get("backoffLimitPerIndex") is not None:
        if most_failed is None:
            yield Problem(RULE, ("maxFailedIndexes",), f"completions above {SOFT_LIMIT} with "
                          "a backoffLimitPerIndex need maxFailedIndexes")
        if parallelism is not None and parallelism > HIGH_LIMIT:
            yield Problem(RULE, ("parallelism",), f"parallelism {parallelism} is above "
                          f"{HIGH_LIMIT} with completions above {SOFT_LIMIT} and a "
                          "backoffLimitPerIndex")
        if most_failed is not None and most_failed > HIGH_LIMIT:
            yield Problem(RULE, ("maxFailedIndexes",), f"maxFailedIndexes {most_failed} is "
                          f"above {HIGH_LIMIT} with completions above {SOFT_LIMIT}")


def _policies(job: dict[str, Any]) -> Iterator[Problem]:
    failure_policy = job.get("podFailurePolicy") is not None
    template = job.get("template")
    pod = template.get("spec") if isinstance(template, dict) else None
    restart = text(pod.get("restartPolicy")) if isinstance(pod, dict) else ""
    restart = restart or "OnFailure"  # JobSet's default
    if restart == "Always":
        yield Problem(RULE, RESTART, "restartPolicy Always is not allowed in a Job; expected "
                      "OnFailure or Never")
    elif restart in ("OnFailure", "Never") and failure_policy and restart != "Never":
        yield Problem(RULE, RESTART, "a Job with a podFailurePolicy needs restartPolicy Never")
    elif restart not in ("OnFailure", "Never"):
        yield Problem(RULE, RESTART, f"restartPolicy {restart!r} is not OnFailure or Never")
    replacement = job.get("podReplacementPolicy")
    if isinstance(replacement, str):
        allowed = ("Failed",) if failure_policy else REPLACEMENT
        if replacement not in allowed:
            yield Problem(RULE, ("podReplacementPolicy",), f"podReplacementPolicy "
                          f"{replacement!r} is not one of {', '.join(allowed)}")
