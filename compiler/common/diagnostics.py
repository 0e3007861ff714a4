"""Diagnostics: the one type every layer reports problems with.

A diagnostic names its severity, a stable rule id, the object it is about, the field path and
the `file:line:col` of each contributing input. The core creates diagnostics with paths only;
the loader's source maps fill in locations (see `compiler.io.loader.locate`). Pure data, no I/O.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Sequence
from dataclasses import field, replace

from compiler.common.records import dataclass


class Severity(enum.Enum):
    """How bad a diagnostic is; `error` makes the exit code 1."""

    ERROR = "error"
    WARNING = "warning"
    NOTICE = "notice"


@dataclass(frozen=True, order=True)
class Location:
    """A place in an input file (1-based line and column)."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


@dataclass(frozen=True)
class ObjectRef:
    """The Kubernetes object a diagnostic is about."""

    kind: str
    name: str
    namespace: str = ""

    def __str__(self) -> str:
        scope = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {scope}{self.name}"


Path = tuple[str | int, ...]


@dataclass(frozen=True)
class Suppression:
    """Why a policy violation does not count: an exemption was used. `kind` is SARIF's
    (`external`: the policy settings; `inSource`: the object's own annotation); `severity` is
    what the diagnostic would have been."""

    kind: str
    justification: str
    severity: Severity


def format_path(path: Path) -> str:
    """Render a field path the Kubernetes way: `spec.trainer.env[2].name`."""
    out: list[str] = []
    for part in path:
        if not isinstance(part, (int, str)):  # never in a valid document; said, not raised
            out.append(f"[{part!r}]")
        elif isinstance(part, int) or (out and ("." in part or "/" in part)):
            out.append(f"[{part}]")
        else:
            out.append(f".{part}" if out else part)
    return "".join(out)


@dataclass(frozen=True)
class Diagnostic:
    """One problem or remark about an input, with where it comes from.

    `subject` says which input document `path` points into (`trainjob` or `runtime`) so a
    caller holding the source maps can turn the path into `locations`.
    """

    severity: Severity
    rule: str
    message: str
    path: Path = ()
    obj: ObjectRef | None = None
    subject: str = "trainjob"
    locations: tuple[Location, ...] = field(default=())
    suppression: Suppression | None = None

    @property
    def field_path(self) -> str:
        """The dotted field path, or an empty string for a whole-document problem."""
        return format_path(self.path)

    def at(self, *locations: Location) -> Diagnostic:
        """Return a copy carrying these source locations."""
        return replace(self, locations=tuple(locations))

    def text(self) -> str:
        """One line: `file:line:col: severity: object: path: message [rule]`."""
        where = str(self.locations[0]) + ": " if self.locations else ""
        obj = f"{self.obj}: " if self.obj else ""
        path = f"{self.field_path}: " if self.path else ""
        extra = "".join(f" (also {loc})" for loc in self.locations[1:])
        if self.suppression is not None:
            extra += f" (exempted by {self.suppression.justification})"
        return one_line(f"{where}{self.severity.value}: {obj}{path}{self.message} "
                        f"[{self.rule}]{extra}")


# Characters that would break a diagnostic's line (or the terminal) if printed raw: controls,
# line and paragraph separators, and lone surrogates (which no encoder accepts).
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def one_line(text: str) -> str:
    """`text` with every unsafe character escaped (`\\n`, `\\x85`), so one diagnostic is
    always one line and a field name cannot forge another."""
    return _UNSAFE.sub(lambda m: repr(m.group())[1:-1], text)


def error(rule: str, message: str, path: Path = (), *, subject: str = "trainjob") -> Diagnostic:
    """Shorthand for an error diagnostic."""
    return Diagnostic(Severity.ERROR, rule, message, path, subject=subject)


def has_errors(diagnostics: Iterable[Diagnostic]) -> bool:
    """True when any diagnostic is an error."""
    return any(d.severity is Severity.ERROR for d in diagnostics)


def refused(diagnostics: Iterable[Diagnostic]) -> bool:
    """True when an error is one the cluster would refuse the object for: any error but a
    policy's (a policy deny fails the command, the cluster would still take the object) or
    one about the Pods (subject `pods`: the object is taken, its Pods are refused later)."""
    return any(d.severity is Severity.ERROR and d.subject not in ("policy", "pods")
               for d in diagnostics)


def with_object(diagnostics: Sequence[Diagnostic], obj: ObjectRef) -> list[Diagnostic]:
    """Attach an object reference to diagnostics that have none."""
    return [d if d.obj else replace(d, obj=obj) for d in diagnostics]


# A rule whose finding another rule states better, at the same object and field path: the
# schema's raw quantity pattern and the quantity check; the ObjectMeta name check and the
# CRD's stricter name rule (an RFC 1035 label is also an RFC 1123 subdomain, so a name that
# fails the first always fails the second). The layers keep both, as the API server would
# list both; what a person reads says each problem once.
COVERED_BY = {"TJC-SCHEMA-PATTERN": "TJC-SCHEMA-QUANTITY",
              "TJC-META-NAME": "TJC-CEL-NAME-FORMAT"}


def one_per_problem(diagnostics: Sequence[Diagnostic]) -> list[Diagnostic]:
    """The diagnostics without those another one of the list states better (`COVERED_BY`):
    one line per problem. Order is kept."""
    better = {(d.rule, d.obj, d.path) for d in diagnostics if d.rule in _BETTER}
    if not better:
        return list(diagnostics)
    return [d for d in diagnostics
            if (COVERED_BY.get(d.rule), d.obj, d.path) not in better]


_BETTER = frozenset(COVERED_BY.values())
