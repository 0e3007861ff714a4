"""The KRM function: a `ResourceList` in, the transformed `items` and the `results` out.

Follows the KRM Functions Specification (kustomize's exec and container functions, kpt):
every item comes out in order, each TrainJob replaced by (with `keepTrainJobs`, followed by)
the objects Kubeflow Trainer would create (with `namespace` or `defaultNamespace`, as placed
in that namespace: `tjc render --namespace` or `--default-namespace`); each diagnostic becomes
a result with severity (error, warning, info), message, resourceRef, field path, the file the
item came from (its `config.kubernetes.io/path` and `index` annotations) and the rule id as a
tag. Pure: the CLI (`compiler.cli.krm_cmd`) reads and writes the streams and builds the policy
set.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import field
from typing import Any

from compiler.common.diagnostics import Diagnostic, Severity
from compiler.common.jsondata import Obj
from compiler.common.records import dataclass
from compiler.core.admission import FIELD_VALIDATION
from compiler.gitops.passthrough import PassOptions, transform
from compiler.io import emit
from compiler.io.loader import Document, Source, parse_source
from compiler.io.placement import TRAINER_API, Placement
from compiler.kube.objectmeta import is_dns1123_label

RESOURCE_LIST_APIS = ("config.kubernetes.io/v1", "config.kubernetes.io/v1alpha1")
PATH_KEYS = ("internal.config.kubernetes.io/path", "config.kubernetes.io/path")
_DIGITS = re.compile(r"[0-9]{1,9}")  # str.isdigit takes "²", which int() refuses
INDEX_KEYS = ("internal.config.kubernetes.io/index", "config.kubernetes.io/index")
# Annotations the orchestrator puts on items for its own bookkeeping: not the TrainJob's.
TOOL_PREFIXES = ("config.kubernetes.io/", "internal.config.kubernetes.io/", "config.k8s.io/")
SEVERITY = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTICE: "info"}
TRAINER_KINDS = ("TrainJob", "TrainingRuntime", "ClusterTrainingRuntime")


class ConfigError(ValueError):
    """The ResourceList or its functionConfig is not usable."""


@dataclass
class FunctionConfig:
    """The options a functionConfig carries (a ConfigMap's `data` or any kind's `spec`)."""

    keep_trainjobs: bool = False
    validate: bool = True
    builtin_runtimes: bool = True
    default_policies: bool = True
    name_hash: bool = False
    policies: list[str] = field(default_factory=list)
    skip: list[str] = field(default_factory=list)
    policy_values: Obj = field(default_factory=dict)
    field_validation: str = "strict"
    placement: Placement | None = None  # `namespace` or `defaultNamespace`
    trainer_version: str | None = None  # else the repository's .tjc.yaml, else the newest
    jobset_version: str | None = None  # else .tjc.yaml's, else the Trainer release's own


def parse_config(config: Any) -> FunctionConfig:
    """Options from the functionConfig; an unknown key is an error (a typo must not pass)."""
    if config is None:
        return FunctionConfig()
    if not isinstance(config, dict):
        raise ConfigError("functionConfig must be a mapping")
    body = config.get("data") if config.get("kind") == "ConfigMap" else config.get("spec")
    if body is None:
        return FunctionConfig()
    if not isinstance(body, dict):
        raise ConfigError("functionConfig data/spec must be a mapping")
    out = FunctionConfig()
    for key, value in body.items():
        _set_option(out, str(key), value)
    return out


_BOOLS = {"keepTrainJobs": "keep_trainjobs", "validate": "validate",
          "builtinRuntimes": "builtin_runtimes", "defaultPolicies": "default_policies",
          "nameHash": "name_hash"}
_OTHERS = ("policies", "skip", "policyValues", "fieldValidation", "namespace", "defaultNamespace",
           "trainerVersion", "jobsetVersion")


def _set_option(out: FunctionConfig, key: str, value: Any) -> None:
    if key in _BOOLS:
        setattr(out, _BOOLS[key], _bool(key, value))
    elif key in ("policies", "skip"):
        setattr(out, key, _strings(key, value))
    elif key == "policyValues":
        out.policy_values = _mapping(key, value)
    elif key == "fieldValidation":
        if value not in FIELD_VALIDATION:
            raise ConfigError(f"functionConfig: fieldValidation must be one of "
                              f"{', '.join(FIELD_VALIDATION)}, got {value!r}")
        out.field_validation = value
    elif key in ("trainerVersion", "jobsetVersion"):
        if not isinstance(value, str) or not value:
            raise ConfigError(f"functionConfig: {key} must be a version such as v2.2.1, got "
                              f"{value!r}")
        setattr(out, "trainer_version" if key == "trainerVersion" else "jobset_version", value)
    elif key in ("namespace", "defaultNamespace"):
        if out.placement is not None:
            raise ConfigError("functionConfig: give namespace or defaultNamespace, not both")
        out.placement = Placement(_namespace(key, value), strict=key == "namespace")
    else:
        raise ConfigError(f"functionConfig: unknown option {key!r} (known: "
                          f"{', '.join([*_BOOLS, *_OTHERS])})")


def _bool(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ConfigError(f"functionConfig: {key} must be true or false, got {value!r}")


def _namespace(key: str, value: Any) -> str:
    """A namespace name: the TrainJobs and TrainingRuntimes without one are placed there."""
    problems = is_dns1123_label(value) if isinstance(value, str) else ["not a string"]
    if problems:
        raise ConfigError(f"functionConfig: {key} must be a namespace name, got {value!r}: "
                          f"{problems[0]}")
    return str(value)


def _strings(key: str, value: Any) -> list[str]:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise ConfigError(f"functionConfig: {key} must be a list of strings or a comma-separated "
                      "string")


def _mapping(key: str, value: Any) -> Obj:
    if isinstance(value, str):  # YAML text, read as an input file is (bounded aliases, depth)
        docs, problems = parse_source(Source(f"functionConfig {key}", value))
        if problems:
            raise ConfigError(f"functionConfig: {key}: {problems[0].message}")
        value = docs[0].data if docs else {}
    if isinstance(value, dict):
        return value
    raise ConfigError(f"functionConfig: {key} must be a mapping (or YAML text of one)")


def items_of(resource_list: Any) -> tuple[list[Obj], Any]:
    """The items and the functionConfig of a ResourceList."""
    if not isinstance(resource_list, dict) or resource_list.get("kind") != "ResourceList" \
            or resource_list.get("apiVersion") not in RESOURCE_LIST_APIS:
        raise ConfigError("input is not a ResourceList of config.kubernetes.io/v1")
    items = resource_list.get("items") or []
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise ConfigError("ResourceList items must be a list of objects")
    return items, resource_list.get("functionConfig")


def _annotation(item: Obj, keys: Sequence[str]) -> str | None:
    meta = item.get("metadata")
    notes = meta.get("annotations") if isinstance(meta, dict) else None
    if not isinstance(notes, dict):
        return None
    return next((str(notes[k]) for k in keys if k in notes), None)


def _without_tool_annotations(item: Obj) -> Obj:
    """A TrainJob as its author wrote it: the orchestrator's annotations would otherwise
    reach the JobSet through the TrainJob's own."""
    meta = item.get("metadata")
    notes = meta.get("annotations") if isinstance(meta, dict) else None
    if not isinstance(meta, dict) or not isinstance(notes, dict):
        return item
    kept = {k: v for k, v in notes.items() if not str(k).startswith(TOOL_PREFIXES)}
    new_meta = {k: v for k, v in meta.items() if k != "annotations"}
    if kept:
        new_meta["annotations"] = kept
    return {**item, "metadata": new_meta}


@dataclass
class Outcome:
    """The ResourceList to print and whether an error was found (exit 1)."""

    resource_list: Obj
    failed: bool


def run(items: list[Obj], opts: PassOptions, builtin: Sequence[Document] = ()) -> Outcome:
    """Transform the items; one source per item so a diagnostic names the item it is about."""
    sources, origins = [], {}
    for i, item in enumerate(items):
        data = _without_tool_annotations(item) if item.get("kind") == "TrainJob" else item
        name = f"items[{i}]"
        sources.append(Source(name, emit.to_yaml(data)))
        origins[name] = item
    out_items: list[Obj] = []
    results: list[Obj] = []
    for entry in transform(sources, builtin, opts):
        if entry.obj is not None:
            out_items.append(_original(entry.obj, entry.source, origins))
        results.extend(result(d, origins) for d in entry.diagnostics)
    failed = any(r["severity"] == "error" for r in results)
    return Outcome({"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList",
                    "items": out_items, "results": results}, failed)


def _original(obj: Obj, doc: Document | None, origins: dict[str, Obj]) -> Obj:
    """An item passed through (a kept TrainJob too) is given back exactly as it came, the
    orchestrator's annotations included; the objects made for a TrainJob are new."""
    if doc is not None and obj is doc.data:
        return origins.get(doc.source.name, obj)
    return obj


def result(diag: Diagnostic, origins: dict[str, Obj]) -> Obj:
    """A diagnostic as a KRM result."""
    out: Obj = {"message": diag.message, "severity": SEVERITY[diag.severity],
                "tags": {"rule": diag.rule}}
    item = origins.get(diag.locations[0].file) if diag.locations else None
    ref = _resource_ref(diag, item)
    if ref:
        out["resourceRef"] = ref
    if diag.path:
        out["field"] = {"path": diag.field_path}
    path = _annotation(item, PATH_KEYS) if item is not None else None
    if path:
        index = _annotation(item, INDEX_KEYS) if item is not None else None
        out["file"] = {"path": path, "index": int(index)} if index and _DIGITS.fullmatch(index) \
            else {"path": path}
    return out


def _resource_ref(diag: Diagnostic, item: Obj | None) -> Obj | None:
    if diag.obj is not None:
        api = TRAINER_API if diag.obj.kind in TRAINER_KINDS else \
            str((item or {}).get("apiVersion", ""))
        ref = {"apiVersion": api, "kind": diag.obj.kind, "name": diag.obj.name}
        return {**ref, "namespace": diag.obj.namespace} if diag.obj.namespace else ref
    if item is None:
        return None
    meta = item.get("metadata") if isinstance(item.get("metadata"), dict) else {}
    ref = {"apiVersion": str(item.get("apiVersion", "")), "kind": str(item.get("kind", "")),
           "name": str((meta or {}).get("name", ""))}
    namespace = (meta or {}).get("namespace")
    return {**ref, "namespace": str(namespace)} if namespace else ref
