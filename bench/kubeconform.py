"""kubeconform for the benchmark: the pinned binary and JSON Schemas made from our CRDs.

The schemas are the CRDs' openAPIV3Schema as openapi2jsonschema makes them for kubeconform
(the layout of the CRDs catalog, `<group>/<kind>_<version>.json`): int-or-string fields
accept a string or an integer, nullable fields null, and objects with declared properties
reject others (kubeconform's strict schemas) unless they preserve unknown fields.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
CRDS = [*sorted((ROOT / "deploy" / "crds").glob("*.yaml")),
        *sorted((ROOT / "tests" / "e2e" / "crds").glob("*.yaml"))]
LOCATION = "{{ .Group }}/{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json"


def binary() -> Path:
    """The pinned kubeconform, built into the user's cache when not there yet."""
    out = subprocess.run([str(ROOT / "bench" / "kubeconform.sh")], check=True,
                         capture_output=True, text=True).stdout
    return Path(out.strip().splitlines()[-1])


def to_json_schema(node: Any) -> Any:
    """One openAPIV3Schema node as a JSON Schema for kubeconform."""
    if isinstance(node, list):
        return [to_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: to_json_schema(value) for key, value in node.items()
           if not key.startswith("x-kubernetes-") and key not in ("nullable", "format")}
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["oneOf"] = [{"type": "string"}, {"type": "integer"}]
    if node.get("nullable") and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    if "properties" in node and "additionalProperties" not in node and \
            not node.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    return out


def write_schemas(folder: Path) -> Path:
    """Every served version of every CRD, as `folder/<group>/<kind>_<version>.json`."""
    for crd_file in CRDS:
        crd = yaml.safe_load(crd_file.read_text(encoding="utf-8"))
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"].lower()
        for version in crd["spec"]["versions"]:
            schema = to_json_schema(version["schema"]["openAPIV3Schema"])
            path = folder / group / f"{kind}_{version['name']}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(schema), encoding="utf-8")
    return folder


def command(kubeconform: Path, schemas: Path, *paths: str) -> list[str]:
    """kubeconform checking `paths` against the schemas only (no network)."""
    return [str(kubeconform), "-strict", "-summary", "-schema-location",
            str(schemas / LOCATION), *paths]
