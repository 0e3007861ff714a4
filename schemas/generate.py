"""Generate the JSON Schemas and the compiler's CRD facts from the upstream CRDs.

Run as `python -m schemas.generate` (the Makefile's `schemas` target). The CRDs come from the
pinned Go modules (Kubeflow Trainer v2.3.0's `manifests/base/crds/`, JobSet v0.12.0's
`config/components/crd/bases/`) through the Go module proxy (`schemas.upstream`), so every
machine with Go has them. It writes:

- `schemas/<kind>.json`: the v1alpha1/v1alpha2 openAPIV3Schema of each CRD with descriptions
  dropped (types, formats, enums, limits, required, defaults, list-map keys and CEL rules kept)
  and the upstream version recorded under `x-tjc-source`;
- `compiler/_crd_facts.py`: for each kind, the tree of structural defaults the API server
  applies and the tree of fields that hold resource quantities, so defaulting and quantity
  canonicalisation come from the CRDs rather than being typed by hand;
- `deploy/crds/<upstream file name>`: the TrainJob, TrainingRuntime and ClusterTrainingRuntime
  CRDs the controller's deployment installs: upstream's CRD with schema descriptions dropped
  (everything the API server acts on kept: types, defaults, list and map types, CEL rules,
  the status subresource, printer columns) and no controller-gen annotation. JobSet's CRD is
  not shipped: the JobSet release installs it;
- `tests/e2e/crds/<upstream file name>`: JobSet's CRD made the same way, for the end-to-end
  tests' own API server (which has no JobSet release installed).

`--check` compares instead of writing and exits 1 when a generated file is stale.
"""

from __future__ import annotations

import argparse
import copy
import functools
import json
import pprint
import sys
from pathlib import Path
from typing import Any

import yaml

from schemas import upstream
from schemas.upstream import JOBSET, TRAINER, UpstreamError, module_dir

ROOT = Path(__file__).resolve().parent.parent
_TRAINER_CRDS = "manifests/base/crds/trainer.kubeflow.org_"
SOURCES = {  # kind: (Go module, file in the module, served version)
    "trainjob": (TRAINER, _TRAINER_CRDS + "trainjobs.yaml", "v1alpha1"),
    "trainingruntime": (TRAINER, _TRAINER_CRDS + "trainingruntimes.yaml", "v1alpha1"),
    "clustertrainingruntime": (TRAINER, _TRAINER_CRDS + "clustertrainingruntimes.yaml",
                               "v1alpha1"),
    "jobset": (JOBSET, "config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml", "v1alpha2"),
}
UPSTREAM_VERSIONS = {
    "trainjob": "kubeflow/trainer v2.3.0",
    "trainingruntime": "kubeflow/trainer v2.3.0",
    "clustertrainingruntime": "kubeflow/trainer v2.3.0",
    "jobset": "kubernetes-sigs/jobset v0.12.0",
}
# The CRDs `deploy/` installs: the compiler's inputs. JobSet comes with its own release.
DEPLOYED_CRDS = ("trainjob", "trainingruntime", "clustertrainingruntime")
QUANTITY_PATTERN_PREFIX = "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))"
Tree = dict[str, Any]


def strip_descriptions(node: Any) -> Any:
    """Return the schema without `description` keys, recursively."""
    if isinstance(node, dict):
        return {k: strip_descriptions(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [strip_descriptions(v) for v in node]
    return node


def strip_schema_descriptions(node: Any, in_properties: bool = False) -> Any:
    """The schema without its `description` keywords; a field named `description` stays."""
    if isinstance(node, dict):
        return {
            k: strip_schema_descriptions(v, not in_properties and k == "properties")
            for k, v in node.items()
            if in_properties or k != "description"
        }
    if isinstance(node, list):
        return [strip_schema_descriptions(v) for v in node]
    return node


class _CrdDumper(yaml.SafeDumper):
    """Block style throughout, multi-line strings (CEL rules) as literal blocks."""


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_CrdDumper.add_representer(str, _represent_str)


def source_name(kind: str) -> str:
    """Where the CRD of `kind` comes from: `<module>@<version>/<file>`."""
    module, rel, _ = SOURCES[kind]
    return f"{module}@{upstream.version(module)}/{rel}"


def crd_path(kind: str) -> Path:
    """The upstream CRD file of `kind` in Go's module cache (downloaded when not there)."""
    module, rel, _ = SOURCES[kind]
    return module_dir(module) / rel


def deploy_crd(kind: str) -> str:
    """The text of one CRD as `deploy/crds/` ships it, from upstream's CRD of that kind."""
    rel = source_name(kind)
    crd = copy.deepcopy(read_crd(crd_path(kind)))
    crd["metadata"] = {"name": crd["metadata"]["name"]}
    for version in crd["spec"]["versions"]:
        version["schema"] = strip_schema_descriptions(version["schema"])
        for column in version.get("additionalPrinterColumns", []):
            column.pop("description", None)
    header = (
        f"# Generated by `python -m schemas.generate` from {rel}\n"
        f"# ({UPSTREAM_VERSIONS[kind]}, Apache-2.0), schema descriptions dropped. Do not edit.\n"
    )
    return header + yaml.dump(crd, Dumper=_CrdDumper, sort_keys=False, width=100)


def is_quantity(node: dict[str, Any]) -> bool:
    """True for an int-or-string field constrained by the Kubernetes quantity pattern."""
    pattern = node.get("pattern", "")
    return bool(node.get("x-kubernetes-int-or-string")) and pattern.startswith(
        QUANTITY_PATTERN_PREFIX
    )


def fact_tree(node: dict[str, Any], leaf: str) -> Tree | None:
    """Keep only the branches of a schema that lead to a `default` or a quantity field.

    Tree keys: `d` default value, `q` quantity marker, `p` properties, `i` items,
    `a` additionalProperties.
    """
    out: Tree = {}
    if leaf == "default" and "default" in node:
        out["d"] = node["default"]
    if leaf == "quantity" and is_quantity(node):
        out["q"] = True
    props = {}
    for name, sub in sorted(node.get("properties", {}).items()):
        subtree = fact_tree(sub, leaf)
        if subtree is not None:
            props[name] = subtree
    if props:
        out["p"] = props
    if isinstance(node.get("items"), dict):
        items = fact_tree(node["items"], leaf)
        if items is not None:
            out["i"] = items
    if isinstance(node.get("additionalProperties"), dict):
        extra = fact_tree(node["additionalProperties"], leaf)
        if extra is not None:
            out["a"] = extra
    return out or None


def type_tree(node: dict[str, Any]) -> Tree:
    """The types, required properties and open maps of a schema, nothing else.

    Keys: `t` type (`ios` for int-or-string), `q` a resource quantity, `r` required, `x`
    unknown fields preserved, plus `p`, `i`, `a` as in `fact_tree`.
    """
    out: Tree = {}
    if is_quantity(node):
        out["t"], out["q"] = "ios", 1
    elif node.get("x-kubernetes-int-or-string"):
        out["t"] = "ios"
    elif "type" in node:
        out["t"] = node["type"]
    if node.get("required"):
        out["r"] = sorted(node["required"])
    if node.get("x-kubernetes-preserve-unknown-fields"):
        out["x"] = 1
    if node.get("properties"):
        out["p"] = {k: type_tree(v) for k, v in sorted(node["properties"].items())}
    if isinstance(node.get("items"), dict):
        out["i"] = type_tree(node["items"])
    if isinstance(node.get("additionalProperties"), dict):
        out["a"] = type_tree(node["additionalProperties"])
    return out


@functools.cache
def read_crd(path: Path) -> dict[str, Any]:
    """One upstream CRD, parsed once (with libyaml when PyYAML has it: they are large)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    crd: dict[str, Any] = yaml.load(path.read_text(encoding="utf-8"), Loader=loader)
    return crd


def load_schema(kind: str) -> dict[str, Any]:
    """Read the openAPIV3Schema of the served version of one CRD."""
    served = SOURCES[kind][2]
    crd = read_crd(crd_path(kind))
    for entry in crd["spec"]["versions"]:
        if entry["name"] == served:
            schema: dict[str, Any] = entry["schema"]["openAPIV3Schema"]
            return schema
    raise SystemExit(f"{source_name(kind)}: no version {served}")


def render_outputs() -> dict[Path, str]:
    """Compute every generated file's path and text."""
    outputs: dict[Path, str] = {}
    defaults: dict[str, Tree | None] = {}
    quantities: dict[str, Tree | None] = {}
    types: dict[str, Tree] = {}
    for kind in SOURCES:
        schema = load_schema(kind)
        doc = strip_descriptions(schema)
        doc["x-tjc-source"] = {"upstream": UPSTREAM_VERSIONS[kind], "crd": source_name(kind)}
        text = json.dumps(doc, indent=1, sort_keys=True) + "\n"
        outputs[ROOT / "schemas" / f"{kind}.json"] = text
        defaults[kind] = fact_tree(schema, "default")
        quantities[kind] = fact_tree(schema, "quantity")
        if kind != "jobset":
            types[kind] = type_tree(schema)
    module = [
        '"""CRD facts generated by `python -m schemas.generate`; do not edit.',
        "",
        "DEFAULTS holds, per kind, the structural defaults of the upstream CRD schema; QUANTITIES",
        "marks the fields that hold resource quantities. Tree keys: d default, q quantity,",
        "p properties, i items, a additionalProperties.",
        '"""',
        "",
        "from typing import Any",
        "",
        "DEFAULTS: dict[str, Any] = " + pprint.pformat(defaults, width=99, sort_dicts=True),
        "",
        "QUANTITIES: dict[str, Any] = " + pprint.pformat(quantities, width=99, sort_dicts=True),
        "",
    ]
    outputs[ROOT / "compiler" / "_crd_facts.py"] = "\n".join(module)
    outputs[ROOT / "compiler" / "_crd_types.py"] = "\n".join([
        '"""CRD type trees generated by `python -m schemas.generate`; do not edit.',
        "",
        "TYPES holds, per input kind, each field's type, the required properties and where",
        "unknown fields are kept. Keys: t type (ios = int-or-string), q quantity, r required,",
        "x preserve-unknown-fields, p properties, i items, a additionalProperties.",
        '"""',
        "",
        "from typing import Any",
        "",
        "TYPES: dict[str, Any] = " + repr(types),
        "",
    ])
    for kind in DEPLOYED_CRDS:
        name = Path(SOURCES[kind][1]).name
        outputs[ROOT / "deploy" / "crds" / name] = deploy_crd(kind)
    name = Path(SOURCES["jobset"][1]).name
    outputs[ROOT / "tests" / "e2e" / "crds" / name] = deploy_crd("jobset")
    return outputs


def main(argv: list[str] | None = None) -> int:
    """Write (or with --check compare) every generated file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail when a file is stale")
    args = parser.parse_args(argv)
    try:
        outputs = render_outputs()
    except UpstreamError as exc:
        print(f"schemas.generate: {exc}", file=sys.stderr)
        return 2
    stale = []
    for path, text in outputs.items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        if args.check:
            stale.append(str(path.relative_to(ROOT)))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    for name in stale:
        print(f"stale generated file: {name}", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
