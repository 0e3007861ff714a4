"""The differential family: the same documents through `tjc validate`, `tjc render`, `tjc krm`
and the library must give one verdict (refused or not).

Runs in the fuzz worker's child (`tests.fuzz.harness`) for a case of verb `differential`:
the files are written to its scratch folder, each tool gives its exit code, and the library
its own verdict for documents that are all Trainer kinds (what a library caller holds). The
answer is a JSON object `{tool: code}`; `disagreement` names the tools that differ. Policies
are left out (`--no-default-policies`): the library applies none.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path
from typing import Any

import yaml

from compiler.cli.main import main

TRAINER_API = "trainer.kubeflow.org/v1alpha1"
KINDS = ("TrainJob", "TrainingRuntime", "ClusterTrainingRuntime")
QUIET = ["-q", "--no-default-policies"]


def verdicts(names: list[str], scratch: Path) -> dict[str, int]:
    """Each tool's exit code on the files (the library's: 1 when it refuses anything)."""
    out = {"validate": _cli(["validate", *QUIET, *names]),
           "render": _cli(["render", *QUIET, *names])}
    if out["validate"] == 2:
        return out
    docs = _documents(names, scratch)
    if docs is None:
        return out
    if _representable(docs):
        out["krm"] = _krm(docs)
    if all(isinstance(d, dict) and d.get("apiVersion") == TRAINER_API and d.get("kind") in KINDS
           for d in docs):
        out["library"] = _library(docs)
    return out


def disagreement(found: dict[str, int]) -> str:
    """A finding when the verdicts differ (exit 2 is an input error: validate's and render's
    must agree, the others are not asked then)."""
    if len(set(found.values())) <= 1:
        return ""
    return "the tools disagree: " + ", ".join(f"{tool} {code}" for tool, code in found.items())


def _cli(argv: list[str]) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            return main(argv)
        except SystemExit as exc:
            return exc.code if isinstance(exc.code, int) else 2


def _documents(names: list[str], scratch: Path) -> list[Any] | None:
    """The documents as kubectl reads them, or None when a file does not parse (then only
    validate and render are asked)."""
    from compiler.io.loader import parse_source, read_source

    docs: list[Any] = []
    for name in names:
        found, problems = parse_source(read_source(str(scratch / name)))
        if problems:
            return None
        docs += [d.data for d in found]
    return docs


def _representable(docs: list[Any]) -> bool:
    """Whether an orchestrator could hand the documents on (kyaml holds Go strings: UTF-8,
    no lone surrogate, which Python's YAML reading can give from a `\\ud800` escape)."""
    try:
        json.dumps(docs, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class _OrchestratorDumper(yaml.CSafeDumper):
    """PyYAML's writer quoting what an orchestrator's (kyaml, yaml.v3) quotes too: the
    strings YAML 1.1 reads as booleans that PyYAML's own resolver leaves plain (`y`, `Y`,
    `n`, `N`), which tjc reads as sigs.k8s.io/yaml does: booleans."""


_OrchestratorDumper.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:y|Y|n|N)$"), list("yYnN"))


def _krm(docs: list[Any]) -> int:
    resource_list = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList",
                     "items": docs,
                     "functionConfig": {"kind": "Config", "spec": {"defaultPolicies": False}}}
    # as an orchestrator writes it: astral characters raw, control characters escaped
    text = yaml.dump(resource_list, Dumper=_OrchestratorDumper, allow_unicode=True)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        stdin = io.TextIOWrapper(io.BytesIO(text.encode("utf-8", "surrogatepass")))
        with _stdin(stdin):
            try:
                return main(["krm"])
            except SystemExit as exc:
                return exc.code if isinstance(exc.code, int) else 2


@contextlib.contextmanager
def _stdin(stream: io.TextIOWrapper) -> Any:
    import sys

    saved, sys.stdin = sys.stdin, stream
    try:
        yield
    finally:
        sys.stdin = saved


def _library(docs: list[dict[str, Any]]) -> int:
    """The verdict of a library caller: each runtime admitted, each TrainJob compiled against
    the runtime it names (user runtimes first, then the built-in ones), one TrainJob per
    namespace and name, one runtime per kind, namespace and name."""
    from compiler import compile_trainjob
    from compiler.core.admission import admit_runtime
    from compiler.core.resolve import runtime_key, wanted_key
    from compiler.io.builtin import builtin_runtimes
    from compiler.kube.defaults import apply_defaults

    table = {runtime_key(d.data): d.data for d in builtin_runtimes()}
    builtin = set(table)
    refused = False
    for doc in docs:
        if doc["kind"] == "TrainJob":
            continue
        key = runtime_key(doc)
        refused |= key in table and key not in builtin
        builtin.discard(key)
        table[key] = doc
        refused |= any(d.severity.value == "error" for d in admit_runtime(doc)[1])
    seen: set[tuple[str, str]] = set()
    for doc in docs:
        if doc["kind"] != "TrainJob":
            continue
        found = doc.get("metadata")
        meta: dict[str, Any] = found if isinstance(found, dict) else {}
        name = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        refused |= name in seen
        seen.add(name)
        wanted = wanted_key(apply_defaults("TrainJob", {"metadata": meta, "spec": {
            "runtimeRef": (doc.get("spec") or {}).get("runtimeRef")
            if isinstance(doc.get("spec"), dict) else None}}))
        runtime = table.get(wanted) if not hasattr(wanted, "severity") else None
        refused |= runtime is None or not compile_trainjob(doc, runtime).ok
    return 1 if refused else 0


def names_of(files: dict[str, str]) -> list[str]:
    """The case's YAML files in a stable order."""
    return sorted(n for n in files if n.endswith((".yaml", ".yml", ".json")))
