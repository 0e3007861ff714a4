"""Generate the JSON Schemas and the compiler's CRD facts from the upstream CRDs.

Run as `python -m schemas.generate UPSTREAM_DIR` (the Makefile's `schemas` target) with the
folder that holds `kubeflow-trainer-v2.3.0/crds/` and `jobset-v0.12.0/`. It writes:

- `schemas/<kind>.json`: the v1alpha1/v1alpha2 openAPIV3Schema of each CRD with descriptions
  dropped (types, formats, enums, limits, required, defaults, list-map keys and CEL rules kept)
  and the upstream version recorded under `x-tjc-source`;
- `compiler/_crd_facts.py`: for each kind, the tree of structural defaults the API server
  applies and the tree of fields that hold resource quantities, so defaulting and quantity
  canonicalisation come from the CRDs rather than being typed by hand.

`--check` compares instead of writing and exits 1 when a generated file is stale.
"""

from __future__ import annotations

import argparse
import json
import pprint
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
SOURCES = {
    "trainjob": ("kubeflow-trainer-v2.3.0/crds/trainer.kubeflow.org_trainjobs.yaml", "v1alpha1"),
    "trainingruntime": (
        "kubeflow-trainer-v2.3.0/crds/trainer.kubeflow.org_trainingruntimes.yaml",
        "v1alpha1",
    ),
    "clustertrainingruntime": (
        "kubeflow-trainer-v2.3.0/crds/trainer.kubeflow.org_clustertrainingruntimes.yaml",
        "v1alpha1",
    ),
    "jobset": ("jobset-v0.12.0/jobset.x-k8s.io_jobsets.yaml", "v1alpha2"),
}
UPSTREAM_VERSIONS = {
    "trainjob": "kubeflow/trainer v2.3.0",
    "trainingruntime": "kubeflow/trainer v2.3.0",
    "clustertrainingruntime": "kubeflow/trainer v2.3.0",
    "jobset": "kubernetes-sigs/jobset v0.12.0",
}
QUANTITY_PATTERN_PREFIX = "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))"
Tree = dict[str, Any]


def strip_descriptions(node: Any) -> Any:
    """Return the schema without `description` keys, recursively."""
    if isinstance(node, dict):
        return {k: strip_descriptions(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [strip_descriptions(v) for v in node]
    return node


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


def load_schema(upstream: Path, kind: str) -> dict[str, Any]:
    """Read the openAPIV3Schema of the served version of one CRD."""
    rel, version = SOURCES[kind]
    crd = yaml.safe_load((upstream / rel).read_text(encoding="utf-8"))
    for entry in crd["spec"]["versions"]:
        if entry["name"] == version:
            schema: dict[str, Any] = entry["schema"]["openAPIV3Schema"]
            return schema
    raise SystemExit(f"{rel}: no version {version}")


def render_outputs(upstream: Path) -> dict[Path, str]:
    """Compute every generated file's path and text."""
    outputs: dict[Path, str] = {}
    defaults: dict[str, Tree | None] = {}
    quantities: dict[str, Tree | None] = {}
    types: dict[str, Tree] = {}
    for kind in SOURCES:
        schema = load_schema(upstream, kind)
        doc = strip_descriptions(schema)
        doc["x-tjc-source"] = {"upstream": UPSTREAM_VERSIONS[kind], "crd": SOURCES[kind][0]}
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
    return outputs


def main(argv: list[str] | None = None) -> int:
    """Write (or with --check compare) every generated file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("upstream", type=Path, help="folder with the upstream CRDs")
    parser.add_argument("--check", action="store_true", help="fail when a file is stale")
    args = parser.parse_args(argv)
    stale = []
    for path, text in render_outputs(args.upstream).items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        if args.check:
            stale.append(str(path.relative_to(ROOT)))
        else:
            path.write_text(text, encoding="utf-8")
    for name in stale:
        print(f"stale generated file: {name}", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
