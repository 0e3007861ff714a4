"""Files of the GitOps tools that sit beside Kubernetes manifests but are not objects.

A folder that kustomize or Helm builds holds a `kustomization.yaml`, a `Chart.yaml`, a
`values.yaml` and templates that are not YAML until Helm renders them. Reading such a folder
skips these files with a notice instead of failing on them. Decided by the file's name (and,
for a template, its `{{`), never by reading the disk. Pure.
"""

from __future__ import annotations

import re
from pathlib import PurePath

from compiler.diagnostics import Diagnostic, Location, Severity
from compiler.loader import Source

RULE = "TJC-INPUT-TOOL-FILE"
KUSTOMIZE_FILES = frozenset({"kustomization.yaml", "kustomization.yml", "Kustomization"})
HELM_FILES = frozenset({"Chart.yaml", "values.schema.json", "requirements.yaml"})
_TOP_LEVEL_KIND = re.compile(r"^kind:", re.MULTILINE)
_NAMES = KUSTOMIZE_FILES | HELM_FILES | {"values.yaml"}


def tool_of(source: Source) -> str | None:
    """`kustomize` or `Helm` when the source is one of their files, else None."""
    if source.name.startswith("<"):
        return None
    base = source.name.rsplit("/", 1)[-1]
    if base not in _NAMES and base not in ("", ".") and "{{" not in source.text:
        return None  # the common case, decided without parsing the path
    path = PurePath(source.name)
    if path.name in KUSTOMIZE_FILES:
        return "kustomize"
    if path.name in HELM_FILES or ("templates" in path.parts[:-1] and "{{" in source.text):
        return "Helm"
    if path.name == "values.yaml" and not _TOP_LEVEL_KIND.search(source.text):
        return "Helm"  # a values.yaml that holds objects (any top-level kind:) is read
    return None


def skipped(source: Source) -> Diagnostic | None:
    """A notice that the source is skipped, or None to read it as manifests."""
    tool = tool_of(source)
    if tool is None:
        return None
    hint = " (render `kustomize build` output with --passthrough)" if tool == "kustomize" \
        else " (render `helm template` output with --passthrough)"
    return Diagnostic(Severity.NOTICE, RULE, f"skipped {PurePath(source.name).name}: a {tool} "
                      f"file, not a Kubernetes object{hint}").at(Location(source.name, 1, 1))
