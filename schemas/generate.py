"""Generate the JSON Schemas and the deployed CRDs from the upstream CRDs.

Run as `python -m schemas.generate` (the Makefile's `schemas` target). The CRDs come from the
pinned Go modules (Kubeflow Trainer v2.3.0's `manifests/base/crds/`, JobSet v0.12.0's
`config/components/crd/bases/`) through the Go module proxy (`schemas.upstream`), so every
machine with Go has them. It writes:

- `schemas/<kind>.json`: the v1alpha1/v1alpha2 openAPIV3Schema of each CRD with descriptions
  dropped (types, formats, enums, limits, required, defaults, list-map keys and CEL rules kept)
  and the upstream version recorded under `x-tjc-source`. `compiler.kube.schematree` compiles them
  into the one tree per kind that pruning, defaulting, typing and validation walk;
- `deploy/crds/<upstream file name>`: the TrainJob, TrainingRuntime and ClusterTrainingRuntime
  CRDs the controller's deployment installs: upstream's CRD with schema descriptions dropped
  (everything the API server acts on kept: types, defaults, list and map types, CEL rules,
  the status subresource, printer columns) and no controller-gen annotation. JobSet's CRD is
  not shipped: the JobSet release installs it;
- `tests/e2e/crds/<upstream file name>`: JobSet's CRD made the same way, for the end-to-end
  tests' own API server (which has no JobSet release installed);
- `deploy/policyreports/crds/<upstream file name>`: the PolicyReport and ClusterPolicyReport
  CRDs (`wgpolicyk8s.io/v1alpha2`) that `tjc validate -o policyreport` and `tjc controller
  --policy-reports` write to, made the same way from Kyverno's module (the policy working
  group's own module is not on the proxy), pinned here by version and checksum
  (`POLICY_REPORTS`); the tests check the reports against their schemas.

`--check` compares instead of writing and exits 1 when a generated file is stale.
"""

from __future__ import annotations

import argparse
import copy
import functools
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from schemas import upstream
from schemas.upstream import JOBSET, TRAINER, UpstreamError, module_dir, pinned_dir

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
# The PolicyReport CRDs: (module, version, go.sum checksum), and their files in it.
POLICY_REPORTS = ("github.com/kyverno/kyverno", "v1.13.4",
                  "h1:2zUi+eszlisLdCir+WIf2NtuUfFPvJtjUNpewdtLjVw=")
POLICY_REPORT_CRDS = ("config/crds/policyreport/wgpolicyk8s.io_policyreports.yaml",
                      "config/crds/policyreport/wgpolicyk8s.io_clusterpolicyreports.yaml")
POLICY_REPORT_DIR = ROOT / "deploy" / "policyreports" / "crds"


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
    return crd_text(read_crd(crd_path(kind)), source_name(kind), UPSTREAM_VERSIONS[kind])


def crd_text(upstream_crd: dict[str, Any], rel: str, upstream_version: str) -> str:
    """A CRD as this repository ships it: schema descriptions and annotations dropped."""
    crd = copy.deepcopy(upstream_crd)
    crd["metadata"] = {"name": crd["metadata"]["name"]}
    for version in crd["spec"]["versions"]:
        version["schema"] = strip_schema_descriptions(version["schema"])
        for column in version.get("additionalPrinterColumns", []):
            column.pop("description", None)
    header = (
        f"# Generated by `python -m schemas.generate` from {rel}\n"
        f"# ({upstream_version}, Apache-2.0), schema descriptions dropped. Do not edit.\n"
    )
    return header + yaml.dump(crd, Dumper=_CrdDumper, sort_keys=False, width=100)


def policy_report_crds() -> dict[Path, str]:
    """The PolicyReport CRDs' files, from the pinned module."""
    module, version, checksum = POLICY_REPORTS
    folder = pinned_dir(module, version, checksum)
    return {POLICY_REPORT_DIR / Path(rel).name: crd_text(
        read_crd(folder / rel), f"{module}@{version}/{rel}", f"kyverno/kyverno {version}")
        for rel in POLICY_REPORT_CRDS}


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
    for kind in SOURCES:
        schema = load_schema(kind)
        doc = strip_descriptions(schema)
        doc["x-tjc-source"] = {"upstream": UPSTREAM_VERSIONS[kind], "crd": source_name(kind)}
        text = json.dumps(doc, indent=1, sort_keys=True) + "\n"
        outputs[ROOT / "schemas" / f"{kind}.json"] = text
    for kind in DEPLOYED_CRDS:
        name = Path(SOURCES[kind][1]).name
        outputs[ROOT / "deploy" / "crds" / name] = deploy_crd(kind)
    name = Path(SOURCES["jobset"][1]).name
    outputs[ROOT / "tests" / "e2e" / "crds" / name] = deploy_crd("jobset")
    outputs.update(policy_report_crds())
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
