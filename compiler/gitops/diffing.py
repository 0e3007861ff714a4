"""What a change does to the rendered objects, per TrainJob: added, removed, changed.

Both sides are rendered the same way (`compiler.render.pipeline`); the objects of each TrainJob are
compared as canonical YAML text, so a one-line TrainJob change shows as the JobSet lines it
changes; a change an existing JobSet cannot take in place is marked where it is
(`compiler.gitops.updates`). A TrainJob of the new side that does not render is shown with its
errors, not as an empty change. Text (unified diff) and Markdown (for a pull-request comment,
kept under the comment size limit with a note where the full report is). Pure.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from compiler.common.diagnostics import Diagnostic, Severity
from compiler.common.records import dataclass
from compiler.gitops import updates
from compiler.io import emit
from compiler.pipeline.session import JobResult


@dataclass(frozen=True)
class JobDiff:
    """One TrainJob that differs between the sides, and the unified diff of its objects
    (with marks: `refused` of them say the cluster's JobSet refuses a change)."""

    name: str
    status: str  # added, removed, changed, or error (the new side does not render)
    lines: tuple[str, ...]
    refused: int = 0


# A GitHub pull-request comment holds at most 65,536 characters.
COMMENT_LIMIT = 65_536
_NOTE_ROOM = 1_000  # kept free for the note that says what was left out


def rendered(results: Iterable[JobResult | Diagnostic]
             ) -> tuple[dict[str, str], list[Diagnostic], dict[str, tuple[str, ...]]]:
    """`<namespace>/<name>` -> the YAML of its objects, every diagnostic on the way, and
    `<namespace>/<name>` -> the error lines of each TrainJob that does not render."""
    texts: dict[str, str] = {}
    diagnostics: list[Diagnostic] = []
    failed: dict[str, tuple[str, ...]] = {}
    for item in results:
        if isinstance(item, Diagnostic):
            diagnostics.append(item)
            continue
        diagnostics.extend(item.diagnostics)
        errors = [d.text() for d in item.diagnostics if d.severity is Severity.ERROR]
        if errors:
            failed[item.name] = (*failed.get(item.name, ()), *errors)
            continue
        texts[item.name] = texts.get(item.name, "") + emit.yaml_stream(item.objects)
    return texts, diagnostics, failed


def compare(old: dict[str, str], new: dict[str, str], labels: tuple[str, str] = ("a", "b"),
            context: int = 3, failed: dict[str, tuple[str, ...]] | None = None
            ) -> list[JobDiff]:
    """The TrainJobs whose objects differ, and those of `failed` (the new side's TrainJobs
    that do not render, with their error lines), sorted by name."""
    out = [JobDiff(name, "error", lines) for name, lines in (failed or {}).items()]
    for name in sorted((old.keys() | new.keys()) - out_names(out)):
        before, after = old.get(name), new.get(name)
        if before == after:
            continue
        status = "added" if before is None else "removed" if after is None else "changed"
        lines = difflib.unified_diff(
            (before or "").splitlines(keepends=True), (after or "").splitlines(keepends=True),
            f"{labels[0]}/{name}" if before is not None else "/dev/null",
            f"{labels[1]}/{name}" if after is not None else "/dev/null", n=context)
        if status == "changed":
            marked, refused = updates.mark(before or "", after or "", lines)
            out.append(JobDiff(name, status, tuple(marked), refused))
        else:
            out.append(JobDiff(name, status, tuple(lines)))
    return sorted(out, key=lambda d: d.name)


def out_names(diffs: list[JobDiff]) -> set[str]:
    """The TrainJob names these diffs are about."""
    return {d.name for d in diffs}


def summary(diffs: list[JobDiff]) -> str:
    """`1 changed, 0 added, 2 removed TrainJobs` (and how many do not render)."""
    count = {s: sum(d.status == s for d in diffs)
             for s in ("changed", "added", "removed", "error")}
    text = (f"{count['changed']} changed, {count['added']} added, {count['removed']} removed "
            "TrainJob(s)")
    if count["error"]:
        text += f"; {count['error']} with errors (not rendered)"
    refusing = sum(d.refused > 0 for d in diffs)
    if refusing:
        text += (f"; {refusing} with a change the existing JobSet refuses (marked "
                 f"{updates.MARK.strip()})")
    return text


def as_text(diffs: list[JobDiff]) -> str:
    """A header line per TrainJob, then its unified diff."""
    parts = []
    for diff in diffs:
        header = "does not render" if diff.status == "error" else ""
        parts.append(f"# {diff.status} TrainJob {diff.name}{' ' + header if header else ''}\n")
        parts.extend(line if line.endswith("\n") else line + "\n" for line in diff.lines)
    return "".join(parts) + (f"# {summary(diffs)}\n" if diffs else "")


def as_markdown(diffs: list[JobDiff], limit: int = COMMENT_LIMIT, report: str | None = None
                ) -> str:
    """A pull-request comment: a summary, then a section with a diff block per TrainJob (the
    errors of one that does not render); sections that would take it over `limit` characters
    are left out, and a note says how many and where the full report is (`report`)."""
    if not diffs:
        return "**tjc diff**: no TrainJob renders differently.\n"
    head = f"**tjc diff**: {summary(diffs)}\n"
    parts, size = [head], len(head)
    for shown, diff in enumerate(diffs):
        section = _section(diff)
        if size + len(section) > limit - _NOTE_ROOM:
            parts.append(_left_out(len(diffs) - shown, limit, report))
            break
        parts.append(section)
        size += len(section)
    return "".join(parts)


def _section(diff: JobDiff) -> str:
    fence = "````" if any("```" in line for line in diff.lines) else "```"
    body = "".join(line if line.endswith("\n") else line + "\n" for line in diff.lines)
    if diff.status == "error":
        return (f"\n<details open><summary>:x: Error: TrainJob <code>{diff.name}</code> does "
                f"not render</summary>\n\n{fence}\n{body}{fence}\n\n</details>\n")
    warn = (f"The JobSet in the cluster refuses {diff.refused} of these changes: see "
            f"the lines starting with `{updates.MARK.strip()}`.\n\n") if diff.refused else ""
    return (f"\n<details open><summary>{diff.status.capitalize()}: TrainJob "
            f"<code>{diff.name}</code></summary>\n\n{warn}{fence}diff\n{body}{fence}"
            "\n\n</details>\n")


def _left_out(count: int, limit: int, report: str | None) -> str:
    where = (f"the full report is in `{report}`" if report else
             "run `tjc diff` with `--report FILE` to write the full report")
    return (f"\n**{count} more TrainJob(s) not shown**: this comment stays under {limit:,} "
            f"characters; {where}.\n")
