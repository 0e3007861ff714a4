"""TrainJob status as upstream's controller keeps it: conditions, JobSet status, deadlines.

Conditions follow `meta.SetStatusCondition` (lastTransitionTime moves only when the status
flips). Only three condition types exist: Suspended, Complete, Failed. A JobSet's Completed
and Failed conditions are copied as Complete and Failed, its replicatedJobsStatus becomes
jobsStatus. Pure functions on plain dicts.
"""

from __future__ import annotations

import copy
from datetime import datetime, timezone
from typing import Any

from compiler.common.jsondata import Obj

DEADLINE_REASON = "DeadlineExceeded"


def now_text(now: float) -> str:
    """An RFC 3339 timestamp in seconds, as metav1.Time serializes."""
    return datetime.fromtimestamp(int(now), timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: Any) -> float | None:
    """Seconds since the epoch of an RFC 3339 timestamp, or None."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def condition(status: Obj, kind: str) -> Obj | None:
    """The condition of this type, or None."""
    return next((c for c in status.get("conditions") or [] if c.get("type") == kind), None)


def is_true(status: Obj, kind: str) -> bool:
    """Whether the condition of this type is True."""
    found = condition(status, kind)
    return found is not None and found.get("status") == "True"


def finished(trainjob: Obj) -> bool:
    """Complete or Failed."""
    status = trainjob.get("status") or {}
    return is_true(status, "Complete") or is_true(status, "Failed")


def set_condition(status: Obj, new: Obj, now: float) -> None:
    """meta.SetStatusCondition: add, or update keeping lastTransitionTime unless the status
    flips."""
    conditions: list[Obj] = status.setdefault("conditions", [])
    current = condition(status, str(new["type"]))
    if current is None:
        conditions.append({**new, "lastTransitionTime": new.get("lastTransitionTime")
                           or now_text(now)})
        return
    if current.get("status") != new.get("status"):
        current["status"] = new["status"]
        current["lastTransitionTime"] = new.get("lastTransitionTime") or now_text(now)
    for field in ("reason", "message", "observedGeneration"):
        if field in new:
            current[field] = new[field]


def set_suspended(status: Obj, trainjob: Obj, now: float) -> None:
    """Suspended=True while spec.suspend; Suspended=False (Resumed) once it is lifted."""
    if (trainjob.get("spec") or {}).get("suspend") is True:
        set_condition(status, {"type": "Suspended", "status": "True", "reason": "Suspended",
                               "message": "TrainJob is suspended"}, now)
    elif is_true(status, "Suspended"):
        set_condition(status, {"type": "Suspended", "status": "False", "reason": "Resumed",
                               "message": "TrainJob is resumed"}, now)


def from_jobset(status: Obj, jobset: Obj, now: float) -> Obj:
    """The TrainJob status after the JobSet's: Complete/Failed copied, jobsStatus rebuilt;
    a DeadlineExceeded Failed condition is kept as it was."""
    deadline = condition(status, "Failed")
    deadline = copy.deepcopy(deadline) if deadline and deadline.get("reason") == \
        DEADLINE_REASON else None
    out = copy.deepcopy(status)
    js_status = jobset.get("status") or {}
    for js_type, tj_type in (("Completed", "Complete"), ("Failed", "Failed")):
        found = condition(js_status, js_type)
        if found is not None and found.get("status") == "True":
            set_condition(out, {"type": tj_type, **{k: found[k] for k in (
                "status", "reason", "message", "lastTransitionTime", "observedGeneration")
                if k in found}}, now)
    jobs = [{"name": j.get("name"), **{k: j[k] for k in (
        "ready", "succeeded", "failed", "active", "suspended") if k in j}}
        for j in js_status.get("replicatedJobsStatus") or []]
    if jobs:
        out["jobsStatus"] = jobs
    else:
        out.pop("jobsStatus", None)
    if deadline is not None:
        set_condition(out, deadline, now)
    return out


def deadline_start(trainjob: Obj, status: Obj) -> float | None:
    """When the active deadline started: creation, or the last resume."""
    resumed = condition(status, "Suspended")
    if resumed is not None and resumed.get("status") == "False":
        started = parse_time(resumed.get("lastTransitionTime"))
        if started is not None:
            return started
    return parse_time((trainjob.get("metadata") or {}).get("creationTimestamp"))
