"""The marks of `tjc diff`: which changed lines an existing JobSet cannot take in place.

A changed TrainJob changes its rendered JobSet; whether a GitOps tool can then update the
JobSet already in the cluster is JobSet's decision (`compiler.kube.jobset_update`). Each block
of changed lines that touches a refused field gets a line after it, starting with `!`, saying
what is refused, why and how the change syncs instead; a JobSet whose name changed (`--name-hash`)
gets a line saying the new one replaces the old one. The paths of the lines come from the YAML
text itself (PyYAML's node marks), so a mark sits next to the field it is about.

Pure; called by `compiler.gitops.diffing`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import field
from typing import Any

import yaml

from compiler.common.jsondata import Obj
from compiler.common.records import dataclass
from compiler.kube.jobset_update import RJOBS, Refusal, refusals

MARK = "! "
WAY = "tjc render --name-hash (README: Changing a TrainJob)"
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
Path = tuple[str | int, ...]
Key = tuple[str, str]  # namespace, name of a JobSet


@dataclass
class Side:
    """One side's rendered text: its objects, and for each line the object and field."""

    objects: list[Obj]
    lines: dict[int, tuple[int, Path]]

    @classmethod
    def of(cls, text: str) -> Side:
        objects = [d for d in yaml.load_all(text, Loader=_LOADER) if isinstance(d, dict)]
        lines: dict[int, tuple[int, Path]] = {}
        for index, node in enumerate(n for n in yaml.compose_all(text, Loader=_LOADER)
                                     if isinstance(n, yaml.MappingNode)):
            _walk(node, (), index, lines)
        return cls(objects, lines)

    def where(self, line: int) -> tuple[Obj, Path] | None:
        """The object at a 0-based line and the field path there, a replicated job named by
        its name (`spec.replicatedJobs[node]...`), as `Refusal.path` has it."""
        found = self.lines.get(line)
        if found is None or found[0] >= len(self.objects):
            return None
        obj, path = self.objects[found[0]], found[1]
        if path[:2] == RJOBS and len(path) > 2 and isinstance(path[2], int):
            rjobs = obj["spec"]["replicatedJobs"]
            name = rjobs[path[2]].get("name") if isinstance(rjobs[path[2]], dict) else None
            path = (*RJOBS, str(name), *path[3:])
        return obj, path


@dataclass
class Verdicts:
    """Per JobSet of the new side: what updating the old one to it is refused for; and the
    old and new key of a JobSet whose name changed (the TrainJob's only JobSet)."""

    refused: dict[Key, list[Refusal]] = field(default_factory=dict)
    renamed: tuple[Key, Key] | None = None

    @classmethod
    def of(cls, old: Side, new: Side) -> Verdicts:
        before = {_key(o): o for o in old.objects if o.get("kind") == "JobSet"}
        after = {_key(o): o for o in new.objects if o.get("kind") == "JobSet"}
        out = cls({k: refusals(before[k], js) for k, js in after.items() if k in before})
        gone, came = list(before.keys() - after.keys()), list(after.keys() - before.keys())
        if len(gone) == 1 and len(came) == 1:
            out.renamed = gone[0], came[0]
        return out

    def notes(self, obj: Obj, path: Path) -> Iterator[Note]:
        """The marks a changed line of `obj` at `path` calls for."""
        if obj.get("kind") != "JobSet":
            return
        key = _key(obj)
        if self.renamed and key in self.renamed and path == ("metadata", "name"):
            text = (f"a new JobSet {_show(self.renamed[1])} replaces "
                    f"{_show(self.renamed[0])}: the GitOps tool creates it and, with pruning "
                    "on, deletes the old one, whose run stops; the new run starts from the "
                    "beginning")
            yield Note(text, text, refused=False)
        for refusal in self.refused.get(key, []):
            if _related(path, refusal.path):
                yield _note(key, refusal)


@dataclass(frozen=True)
class Note:
    """A mark: its text, its shorter text when it was said before, whether it is a refusal."""

    text: str
    again: str
    refused: bool = True


def mark(before: str, after: str, lines: Iterable[str]) -> tuple[list[str], int]:
    """The unified diff `lines` of `before` -> `after` with a mark after each block of
    changes that asks for one; and how many marks say a change is refused."""
    old, new = Side.of(before), Side.of(after)
    verdicts = Verdicts.of(old, new)
    out: list[str] = []
    block: list[Note] = []
    said: set[Note] = set()
    refused, at, in_hunk = 0, [0, 0], False
    for line in lines:
        text = line if line.endswith("\n") else line + "\n"
        if in_hunk and line[:1] in ("-", "+"):
            side, index = (old, 0) if line[:1] == "-" else (new, 1)
            found = side.where(at[index])
            at[index] += 1
            block.extend(n for n in (verdicts.notes(*found) if found else ()) if n not in block)
        else:
            refused += _flush(block, out, said)
            hunk = _HUNK.match(line)
            in_hunk = in_hunk or hunk is not None
            if hunk:
                at = [int(hunk.group(1)) - 1, int(hunk.group(2)) - 1]
            elif in_hunk and line[:1] == " ":
                at = [at[0] + 1, at[1] + 1]
        out.append(text)
    refused += _flush(block, out, said)
    return out, refused


def _flush(block: list[Note], out: list[str], said: set[Note]) -> int:
    """Write the marks of a finished block of changes (shorter when said before); how many
    say a change is refused."""
    out.extend(f"{MARK}{note.again if note in said else note.text}\n" for note in block)
    said.update(block)
    count = sum(note.refused for note in block)
    block.clear()
    return count


def _note(key: Key, refusal: Refusal) -> Note:
    where = f"the existing JobSet {_show(key)}"
    if refusal.client_side:
        why = "through a client-side apply"
        return Note(f"JobSet webhook refuses this change to {where} {why} (kubectl apply, "
                    "helm upgrade: spec.replicatedJobs arrives without the completionMode and "
                    "restartPolicy the webhook set at creation); a server-side apply syncs it "
                    f"while the JobSet is suspended, and so does {WAY}",
                    f"JobSet webhook refuses this change too, {why}")
    why = f"{refusal.field} is immutable"
    if refusal.while_suspended:
        why += ("; its pod templates' labels, annotations, nodeSelector, tolerations and "
                "schedulingGates only while the JobSet is suspended")
    return Note(f"JobSet webhook refuses this change to {where} ({why}); it syncs with {WAY}",
                f"JobSet webhook refuses this change too ({why})")


def _walk(node: yaml.Node, path: Path, index: int, out: dict[int, tuple[int, Path]]) -> None:
    """Record, for each line of `node`, the deepest field path it holds."""
    if isinstance(node, yaml.MappingNode):
        items: list[tuple[Path, yaml.Node, yaml.Node]] = [
            ((*path, str(k.value)), k, v) for k, v in node.value]
    elif isinstance(node, yaml.SequenceNode):
        items = [((*path, i), v, v) for i, v in enumerate(node.value)]
    else:
        return
    for sub, first, value in items:
        for line in range(first.start_mark.line, _last_line(value) + 1):
            out[line] = (index, sub)
        _walk(value, sub, index, out)


def _last_line(node: yaml.Node) -> int:
    end = node.end_mark
    return end.line - 1 if end.column == 0 and end.line > node.start_mark.line else end.line


def _related(a: Path, b: Path) -> bool:
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def _key(obj: Obj) -> Key:
    meta: Any = obj.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    return str(meta.get("namespace") or ""), str(meta.get("name", ""))


def _show(key: Key) -> str:
    return f"{key[0]}/{key[1]}" if key[0] else key[1]
