"""Files of the GitOps tools that sit beside Kubernetes manifests but are not objects.

A folder that kustomize or Helm builds holds a `kustomization.yaml`, a `Chart.yaml`, a
`values.yaml` and templates that are not YAML until Helm renders them. Reading such a folder
skips these files with a notice instead of failing on them. Decided by the file's name (and,
for a template, its `{{`), never by reading the disk. Pure.
"""

from __future__ import annotations

import re
from pathlib import PurePath

from compiler.common.diagnostics import Diagnostic, Location, Severity
from compiler.io.loader import Source

RULE = "TJC-INPUT-TOOL-FILE"
KUSTOMIZE_FILES = frozenset({"kustomization.yaml", "kustomization.yml", "Kustomization"})
HELM_FILES = frozenset({"Chart.yaml", "values.schema.json", "requirements.yaml"})
_TOP_LEVEL_KIND = re.compile(r"^kind:", re.MULTILINE)
_NAMES = KUSTOMIZE_FILES | HELM_FILES | {"values.yaml"}


def tool_of(source: Source) -> str | None:
    """`kustomize` or `Helm` when the source is one of their files, else None."""
    if source.name.startswith("<"):
        return None
    parts = _parts(source.name)
    name = parts[-1] if parts else ""
    if name in KUSTOMIZE_FILES:
        return "kustomize"
    if name in HELM_FILES or ("templates" in parts[:-1] and "{{" in source.text):
        return "Helm"
    if name == "values.yaml" and not _TOP_LEVEL_KIND.search(source.text):
        return "Helm"  # a values.yaml that holds objects (any top-level kind:) is read
    return None


def _parts(name: str) -> list[str]:
    """The parts of a path, as PurePath gives them, without interning them (a run over
    100,000 files would keep every name)."""
    return [p for p in name.split("/") if p not in ("", ".")]


def skipped(source: Source) -> Diagnostic | None:
    """A notice that the source is skipped, or None to read it as manifests."""
    tool = tool_of(source)
    if tool is None:
        return None
    hint = " (render `kustomize build` output with --passthrough)" if tool == "kustomize" \
        else " (render `helm template` output with --passthrough)"
    return Diagnostic(Severity.NOTICE, RULE, f"skipped {PurePath(source.name).name}: a {tool} "
                      f"file, not a Kubernetes object{hint}").at(Location(source.name, 1, 1))
