"""`--name-hash`: a TrainJob rendered as if it were named `<name>-<hash>`.

An existing JobSet cannot take most changes (`compiler.kube.jobset_update`), so a GitOps
tool cannot update it in place. Named after a hash of what no update may change
(`fixed_part` of the JobSet the TrainJob's own name gives), a changed TrainJob gets a new
JobSet, which the tool creates, and the old one is pruned; a change an update can make
(suspend, resume, the JobSet's labels and annotations) keeps the name and syncs in place. The
TrainJob is compiled again under the new name, so every name in the output (the JobSet, its
hostnames in env, the side objects) is what upstream creates for a TrainJob of that name.
Like kustomize's `configMapGenerator` suffix, but over the immutable part only.

Pure; called by `compiler.render.pipeline.render_one`, which compiles.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace

from compiler.common.diagnostics import Diagnostic
from compiler.common.jsondata import Obj
from compiler.io.loader import Document
from compiler.kube.jobset_update import fixed_part

LENGTH = 8
# kustomize's trick: no vowels or look-alikes, so a suffix never spells a word.
_SPELLING = str.maketrans("013ae", "ghkmt")


def suffix(objects: list[Obj]) -> str | None:
    """The hash of the JobSet among `objects`, or None when there is none."""
    jobset = next((o for o in objects if o.get("kind") == "JobSet"), None)
    if jobset is None:
        return None
    text = json.dumps(fixed_part(jobset), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return digest[:LENGTH].translate(_SPELLING)


def renamed(doc: Document, tag: str) -> Document:
    """The TrainJob of `doc` named `<name>-<tag>`, at the same place in the same source
    (so diagnostics point at the user's file)."""
    meta = doc.data.get("metadata")
    meta = dict(meta) if isinstance(meta, dict) else {}
    meta["name"] = f"{meta.get('name', '')}-{tag}"
    return replace(doc, data={**doc.data, "metadata": meta})


def as_original(diagnostics: list[Diagnostic], doc: Document, again: Document
                ) -> list[Diagnostic]:
    """The diagnostics of the renamed compile, about the TrainJob under its own name; those
    naming the new name (a name too long now, a Secret the job needs) say where it is from."""
    was, now = _name(doc), _name(again)
    out = []
    for diag in diagnostics:
        if diag.obj is not None and diag.obj.kind == "TrainJob" and diag.obj.name == now:
            diag = replace(diag, obj=replace(diag.obj, name=was))
        if now in diag.message:
            diag = replace(diag, message=f"{diag.message} (--name-hash renders the TrainJob "
                                         f"as {now})")
        out.append(diag)
    return out


def _name(doc: Document) -> str:
    meta = doc.data.get("metadata")
    return str(meta.get("name", "")) if isinstance(meta, dict) else ""
