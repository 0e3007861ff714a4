"""The upgrade preview: what moving from one Kubeflow Trainer release to another does to each
TrainJob (`tjc diff --trainer-version A --to-trainer-version B PATH...`).

Every TrainJob of the inputs is rendered under both releases, each with its own built-in runtimes,
CRDs, webhook rules and controller (`compiler.core.release`). Per TrainJob the report says which
fields of its objects change (objects matched by kind and name, list items by their `name` where
they have one, so a reordered list shows as its order changing), whether it stops (or starts)
being valid, and what caused each change. Causes are found by trial: each gate whose value
differs between the releases is set back alone (B with that one gate as in A), and a change the
trial touches is that gate's; the release's data is tried the same way: the built-in runtimes
(B with A's files) and the CRDs, Go types and Flux templates (A's data with B's gates). Text and
Markdown (a pull-request comment, kept under the comment size). Pure: sources in, report out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import field, replace
from typing import Any

from compiler.common.diagnostics import Severity
from compiler.common.records import dataclass
from compiler.core.context import CompileOptions
from compiler.core.release import GATE_DOCS, GATES, Release
from compiler.io.inputs import runtime_table
from compiler.io.loader import Document, Source
from compiler.pipeline.session import JobResult, Session
from compiler.render.pipeline import render_source

RUNTIMES_CAUSE = "built-in runtimes (R1-R5)"
DATA_CAUSE = "CRDs, Go types and Flux templates (V10)"
COMMENT_LIMIT = 65_536
_SHOWN = 96  # characters of a value shown in a report


@dataclass(frozen=True)
class Rendered:
    """One TrainJob under one release: its objects by `Kind name`, and its error lines."""

    objects: dict[str, Any]
    errors: tuple[str, ...]


@dataclass(frozen=True)
class Change:
    """One field of one object that differs: where, the values (None: absent), the causes."""

    where: str
    before: Any
    after: Any
    causes: tuple[str, ...] = ()


@dataclass(frozen=True)
class JobReport:
    """One TrainJob that the upgrade changes."""

    name: str
    status: str  # changed, stops being valid, starts being valid, errors change
    changes: tuple[Change, ...] = ()
    errors: tuple[str, ...] = ()  # the new release's (or, when it starts, the old one's)
    causes: tuple[str, ...] = ()  # of the validity change


@dataclass
class Side:
    """How to render one side: the release (maybe a trial of one gate), its built-ins, and
    kubectl's field validation (a trial prunes what the other release's CRD lacks, as the API
    server does, so that the fields it keeps still show)."""

    release: Release
    builtin: Sequence[Document]
    label: str = ""
    fields: str = "strict"


@dataclass(frozen=True)
class Preview:
    """The whole preview: both versions and each TrainJob it changes, by name."""

    old: str
    new: str
    jobs: tuple[JobReport, ...] = field(default_factory=tuple)


def render_all(sources: Sequence[Source], side: Side) -> dict[str, Rendered]:
    """`<namespace>/<name>` -> each TrainJob of the sources as `side` renders it."""
    table, _ = runtime_table(sources, side.builtin)
    session = Session(table, release=side.release, fields=side.fields)
    options = CompileOptions(trainer_version=side.release.version)
    out: dict[str, Rendered] = {}
    for source in sources:
        for item in render_source(source, session, options):
            if isinstance(item, JobResult):
                errors = tuple(d.text() for d in item.diagnostics
                               if d.severity is Severity.ERROR)
                objects = {f"{o.get('kind')} {o.get('metadata', {}).get('name')}": o
                           for o in item.objects}
                out[item.name] = Rendered({} if errors else objects, errors)
    return out


def trials(old: Side, new: Side) -> Iterator[Side]:
    """The new side with one cause set back as in the old: each differing gate, then the
    built-in runtimes, then the release data."""
    for gate in GATES:
        if getattr(old.release, gate) != getattr(new.release, gate):
            ids = GATE_DOCS[gate][0]
            yield Side(replace(new.release, **{gate: getattr(old.release, gate)}), new.builtin,
                       f"{gate} ({ids})")
    if [d.data for d in old.builtin] != [d.data for d in new.builtin]:
        yield Side(new.release, old.builtin, RUNTIMES_CAUSE)
    gates = {gate: getattr(new.release, gate) for gate in GATES}
    if old.release.version != new.release.version:
        yield Side(replace(old.release, **gates), new.builtin, DATA_CAUSE)


def preview(sources: Sequence[Source], old: Side, new: Side) -> Preview:
    """Render both sides (and the trials, when a TrainJob changes: as the sides, for the
    verdicts, and pruning, for the objects) and report."""
    before, after = render_all(sources, old), render_all(sources, new)
    changed = sorted(name for name in before.keys() | after.keys()
                     if before.get(name) != after.get(name))
    sides = list(trials(old, new)) if changed else []
    verdicts = [(trial.label, render_all(sources, trial)) for trial in sides]
    pruned = [(trial.label, render_all(sources, replace(trial, fields="warn")))
              for trial in sides]
    return Preview(old.release.version, new.release.version, tuple(
        _job(name, before.get(name), after.get(name), verdicts, pruned) for name in changed))


def _job(name: str, old: Rendered | None, new: Rendered | None,
         verdicts: list[tuple[str, dict[str, Rendered]]],
         tried: list[tuple[str, dict[str, Rendered]]]) -> JobReport:
    old = old or Rendered({}, ("not in the inputs",))
    new = new or Rendered({}, ("not in the inputs",))
    if bool(old.errors) != bool(new.errors):
        starts = bool(old.errors)
        causes = tuple(label for label, found in verdicts
                       if bool(found.get(name, new).errors) == starts)
        return JobReport(name, "starts being valid" if starts else "stops being valid",
                         errors=old.errors if starts else new.errors, causes=causes)
    if old.errors:
        causes = tuple(label for label, found in verdicts
                       if found.get(name, new).errors != new.errors)
        return JobReport(name, "errors change", errors=new.errors, causes=causes)
    touched = [(label, _touched(found.get(name, new), new)) for label, found in tried]
    return JobReport(name, "changed", tuple(
        Change(where, before, after, tuple(
            label for label, paths in touched
            if paths is None or any(_related(where, p) for p in paths)))
        for where, before, after in object_changes(old.objects, new.objects)))


def _touched(trial: Rendered, new: Rendered) -> list[str] | None:
    """Where a trial's objects differ from the new release's (None: everywhere, as the
    trial does not render)."""
    if trial.errors:
        return None
    return [where for where, _, _ in object_changes(trial.objects, new.objects)]


def _related(where: str, other: str) -> bool:
    """Whether two places are one, or one holds the other."""
    short, long = sorted((where, other), key=len)
    return long.startswith(short) and (len(long) == len(short) or long[len(short)] in ".[ ")


def object_changes(old: dict[str, Any], new: dict[str, Any]
                   ) -> Iterator[tuple[str, Any, Any]]:
    """(where, before, after) of every field that differs between two object sets."""
    for key in [*old, *(k for k in new if k not in old)]:
        yield from _diff(old.get(key), new.get(key), key + ":")


def _diff(a: Any, b: Any, at: str) -> Iterator[tuple[str, Any, Any]]:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in [*a, *(k for k in b if k not in a)]:
            yield from _diff(a.get(key), b.get(key), _join(at, str(key)))
    elif _named(a) and _named(b):
        yield from _diff_named(a, b, at)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            yield from _diff(x, y, f"{at}[{i}]")
    elif a != b:
        yield at, a, b


def _diff_named(a: list[Any], b: list[Any], at: str) -> Iterator[tuple[str, Any, Any]]:
    """Lists of named items: compared by name; a new order is a change of its own."""
    left = {item["name"]: item for item in a}
    right = {item["name"]: item for item in b}
    order_a = [n for n in left if n in right]
    order_b = [n for n in right if n in left]
    if order_a != order_b:
        yield f"{at} (order)", ", ".join(order_a), ", ".join(order_b)
    for name in [*left, *(n for n in right if n not in left)]:
        yield from _diff(left.get(name), right.get(name), f"{at}[{name}]")


def _named(value: Any) -> bool:
    """A list of mappings each with a distinct string `name` (containers, env, jobs ...)."""
    if not isinstance(value, list) or not value:
        return False
    names = [item.get("name") if isinstance(item, dict) else None for item in value]
    return all(isinstance(n, str) for n in names) and len(set(names)) == len(names)


def _join(at: str, key: str) -> str:
    if at.endswith(":"):
        return f"{at} {key}"
    return f"{at}[{key}]" if "." in key or "/" in key else f"{at}.{key}"


def shown(value: Any) -> str:
    """A value as a report shows it: JSON, shortened; `(absent)` for none."""
    if value is None:
        return "(absent)"
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= _SHOWN else text[:_SHOWN - 1] + "…"


def summary(found: Preview) -> str:
    """`3 TrainJob(s) change, 1 stops being valid ... (v2.2.1 -> v2.3.0)`."""
    count = {status: sum(j.status == status for j in found.jobs)
             for status in ("changed", "stops being valid", "starts being valid",
                            "errors change")}
    text = (f"{count['changed']} TrainJob(s) change, {count['stops being valid']} stop(s) being "
            f"valid, {count['starts being valid']} start(s) being valid")
    if count["errors change"]:
        text += f", {count['errors change']} with other errors"
    return f"{text} (Kubeflow Trainer {found.old} -> {found.new})"


def as_text(found: Preview) -> str:
    """A header per TrainJob, then each change with its values and causes."""
    out: list[str] = []
    for job in found.jobs:
        out.append(f"# {job.status} TrainJob {job.name} ({found.old} -> {found.new})\n")
        for change in job.changes:
            out += [f"  {change.where}\n", f"    {found.old}: {shown(change.before)}\n",
                    f"    {found.new}: {shown(change.after)}\n",
                    f"    caused by: {_causes(change.causes)}\n"]
        if job.status != "changed":
            out += [f"  {line}\n" for line in job.errors]
            out.append(f"  caused by: {_causes(job.causes)}\n")
    out.append(f"# {summary(found)}\n")
    return "".join(out)


def _causes(causes: Iterable[str]) -> str:
    found = list(causes)
    return ", ".join(found) if found else "several gates together (no single one alone)"


def as_markdown(found: Preview, limit: int = COMMENT_LIMIT) -> str:
    """A pull-request comment: the summary, then a table per TrainJob (field, both values,
    cause); sections past `limit` characters are counted, not shown."""
    head = f"**tjc upgrade preview**: {summary(found)}\n"
    parts, size = [head], len(head)
    for shown_jobs, job in enumerate(found.jobs):
        section = _section(found, job)
        if size + len(section) > limit - 1_000:
            parts.append(f"\n**{len(found.jobs) - shown_jobs} more TrainJob(s) not shown**: "
                         f"this comment stays under {limit:,} characters; run `tjc diff "
                         "--to-trainer-version` without `-o markdown` for all of it.\n")
            break
        parts.append(section)
        size += len(section)
    return "".join(parts)


def _section(found: Preview, job: JobReport) -> str:
    title = f"{job.status.capitalize()}: TrainJob <code>{job.name}</code>"
    if job.status != "changed":
        body = "".join(f"    {line}\n" for line in job.errors)
        return (f"\n<details open><summary>{title}</summary>\n\n{body}\ncaused by: "
                f"{_cell(_causes(job.causes))}\n\n</details>\n")
    rows = [f"| field | {found.old} | {found.new} | caused by |\n|---|---|---|---|\n"]
    rows += [f"| {_cell(c.where)} | {_cell(shown(c.before))} | {_cell(shown(c.after))} | "
             f"{_cell(_causes(c.causes))} |\n" for c in job.changes]
    return f"\n<details open><summary>{title}</summary>\n\n{''.join(rows)}\n</details>\n"


def _cell(text: str) -> str:
    return "`" + text.replace("`", "'").replace("|", "\\|") + "`" if text else ""
