"""AdmissionReview (admission.k8s.io/v1) in and out: the admission webhook's wire format.

`read_request` takes the body the API server posts and returns its `request` (`ReviewError`,
an HTTP 400, for a body that is no AdmissionReview); `answer` turns the diagnostics the webhook
reached for it into the AdmissionReview to send back: allowed unless one is an error; the
errors in the status message, each with its field path and rule id as the controller's
Failed condition writes them (and the object, when the finding is about another: the
runtime, or the JobSet); warnings (and the exemptions used) as the response's `warnings`,
each short enough that the API server passes it on whole.
Pure: bytes and dicts in, dicts out. Called by `webhookserver`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from compiler.common.diagnostics import Diagnostic, ObjectRef, Severity, one_line
from compiler.common.jsondata import Obj

API_VERSION = "admission.k8s.io/v1"
MAX_BODY = 16 << 20  # two objects of the API server's 3 MiB request limit, with room
# The API server may cut a warning over 256 characters, and drops those past 4096 in all.
WARNING_CHARS = 256
WARNINGS_TOTAL = 4096
OPERATIONS = ("CREATE", "UPDATE")


class ReviewError(ValueError):
    """The body is not an AdmissionReview request this webhook can answer."""


def read_request(body: bytes) -> Obj:
    """The `request` of an AdmissionReview; ReviewError when the body is none."""
    if len(body) > MAX_BODY:
        raise ReviewError(f"request body over {MAX_BODY} bytes")
    try:
        review = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ReviewError(f"request body is not JSON: {exc}") from None
    if not isinstance(review, dict) or review.get("kind") != "AdmissionReview" or \
            review.get("apiVersion") != API_VERSION:
        raise ReviewError(f"expected an AdmissionReview of {API_VERSION}")
    request = review.get("request")
    if not isinstance(request, dict) or not isinstance(request.get("uid"), str):
        raise ReviewError("the AdmissionReview has no request with a uid")
    for key in ("object", "oldObject"):
        if request.get(key) is not None and not isinstance(request[key], dict):
            raise ReviewError(f"request.{key} is not an object")
    return request


def judged(request: Obj) -> bool:
    """Whether the request is one the webhook judges: a create or update of an object (any
    other operation, or a request without one, is allowed as it is)."""
    return request.get("operation") in OPERATIONS and isinstance(request.get("object"), dict)


def answer(request: Obj, diagnostics: Sequence[Diagnostic]) -> Obj:
    """The AdmissionReview answering `request` with what was found of its object."""
    errors = [d for d in diagnostics if d.severity is Severity.ERROR]
    response: Obj = {"uid": request["uid"], "allowed": not errors}
    subject = subject_of(request)
    if errors:
        text = "; ".join(_where(d, subject) + f"{one_line(d.message)} [{d.rule}]"
                         for d in errors)
        response["status"] = {"code": 403, "reason": "Forbidden", "message": text[:32000]}
    notes = warnings(diagnostics, subject)
    if notes:
        response["warnings"] = notes
    return {"apiVersion": API_VERSION, "kind": "AdmissionReview", "response": response}


def allow(request: Obj) -> Obj:
    """The AdmissionReview allowing `request` without a word."""
    return answer(request, ())


def subject_of(request: Obj) -> ObjectRef:
    """The object the request is about."""
    obj = request.get("object")
    obj = obj if isinstance(obj, dict) else {}
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    return ObjectRef(str(obj.get("kind", "")), str(meta.get("name", "")),
                     str(meta.get("namespace") or ""))


def _where(d: Diagnostic, subject: ObjectRef) -> str:
    """`object: path: `, the object only when it is not the one reviewed."""
    obj = f"{d.obj}: " if d.obj is not None and d.obj != subject else ""
    return one_line(f"{obj}{d.field_path}: " if d.path else obj)


def warnings(diagnostics: Sequence[Diagnostic], subject: ObjectRef) -> list[str]:
    """The warnings, then the exemptions used (suppressed violations), one line each of at
    most `WARNING_CHARS`, as many as fit in `WARNINGS_TOTAL`."""
    out: list[str] = []
    total = 0
    for d in diagnostics:
        if d.severity is Severity.WARNING:
            text = _line(d, "", _where(d, subject))
        elif d.suppression is not None:
            lead = one_line(f"exempted by {d.suppression.justification}: ")
            text = _line(d, _squeeze(lead, WARNING_CHARS // 3), _where(d, subject))
        else:
            continue
        total += len(text)
        if total > WARNINGS_TOTAL:
            break
        out.append(text)
    return out


def _line(d: Diagnostic, lead: str, where: str) -> str:
    """`lead where message [rule]` in at most `WARNING_CHARS`: a long `where` (a deep field
    path) loses its middle, then the message its end; the lead and the rule id stay whole."""
    tail = one_line(f" [{d.rule}]")[:WARNING_CHARS // 4]
    text = one_line(d.message)
    head = lead + _squeeze(where, WARNING_CHARS - len(lead) - len(tail) - min(len(text), 64))
    room = WARNING_CHARS - len(head) - len(tail)
    if len(text) > room:
        text = text[:room - 3] + "..."
    return head + text + tail


def _squeeze(text: str, size: int) -> str:
    """`text` in `size` characters, its middle given up for `...`."""
    if len(text) <= size:
        return text
    start = size // 3
    return text[:start] + "..." + text[len(text) - (size - start - 3):]


def dumps(review: Any) -> bytes:
    """The answer as the response body."""
    return json.dumps(review, separators=(",", ":")).encode()
