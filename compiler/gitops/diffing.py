"""What a change does to the rendered objects, per TrainJob: added, removed, changed.

Both sides are rendered the same way (`compiler.render.pipeline`); the objects of each TrainJob are
compared as canonical YAML text, so a one-line TrainJob change shows as the JobSet lines it
changes; a change an existing JobSet cannot take in place is marked where it is
(`compiler.gitops.updates`). Text (unified diff) and Markdown (for a pull-request comment). Pure.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass

from compiler.common.diagnostics import Diagnostic
from compiler.gitops import updates
from compiler.io import emit
from compiler.render.pipeline import JobResult


@dataclass(frozen=True)
class JobDiff:
    """One TrainJob that differs between the sides, and the unified diff of its objects
    (with marks: `refused` of them say the cluster's JobSet refuses a change)."""

    name: str
    status: str  # added, removed or changed
    lines: tuple[str, ...]
    refused: int = 0


def rendered(results: Iterable[JobResult | Diagnostic]) -> tuple[dict[str, str],
                                                                 list[Diagnostic]]:
    """`<namespace>/<name>` -> the YAML of its objects, and every diagnostic on the way."""
    texts: dict[str, str] = {}
    diagnostics: list[Diagnostic] = []
    for item in results:
        if isinstance(item, Diagnostic):
            diagnostics.append(item)
            continue
        diagnostics.extend(item.diagnostics)
        texts[item.name] = texts.get(item.name, "") + emit.yaml_stream(item.objects)
    return texts, diagnostics


def compare(old: dict[str, str], new: dict[str, str], labels: tuple[str, str] = ("a", "b"),
            context: int = 3) -> list[JobDiff]:
    """The TrainJobs whose objects differ, sorted by name."""
    out = []
    for name in sorted(old.keys() | new.keys()):
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
    return out


def summary(diffs: list[JobDiff]) -> str:
    """`1 changed, 0 added, 2 removed TrainJobs`."""
    count = {s: sum(d.status == s for d in diffs) for s in ("changed", "added", "removed")}
    text = (f"{count['changed']} changed, {count['added']} added, {count['removed']} removed "
            "TrainJob(s)")
    refusing = sum(d.refused > 0 for d in diffs)
    if refusing:
        text += (f"; {refusing} with a change the existing JobSet refuses (marked "
                 f"{updates.MARK.strip()})")
    return text


def as_text(diffs: list[JobDiff]) -> str:
    """A header line per TrainJob, then its unified diff."""
    parts = []
    for diff in diffs:
        parts.append(f"# {diff.status} TrainJob {diff.name}\n")
        parts.extend(line if line.endswith("\n") else line + "\n" for line in diff.lines)
    return "".join(parts) + (f"# {summary(diffs)}\n" if diffs else "")


def as_markdown(diffs: list[JobDiff]) -> str:
    """A pull-request comment: a summary, then a section with a diff block per TrainJob."""
    if not diffs:
        return "**tjc diff**: no TrainJob renders differently.\n"
    parts = [f"**tjc diff**: {summary(diffs)}\n"]
    for diff in diffs:
        fence = "````" if any("```" in line for line in diff.lines) else "```"
        body = "".join(line if line.endswith("\n") else line + "\n" for line in diff.lines)
        warn = (f"The JobSet in the cluster refuses {diff.refused} of these changes: see "
                f"the lines starting with `{updates.MARK.strip()}`.\n\n") if diff.refused else ""
        parts.append(f"\n<details open><summary>{diff.status.capitalize()}: TrainJob "
                     f"<code>{diff.name}</code></summary>\n\n{warn}{fence}diff\n{body}{fence}"
                     "\n\n</details>\n")
    return "".join(parts)
