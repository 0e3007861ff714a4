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
- `runtimes/<name>`: byte copies of the release's built-in runtimes (`manifests/base/runtimes/`,
  the files its kustomization installs; names as `compiler.io.builtin.UPSTREAM_FILES` maps them);
- for every other served Trainer release (`compiler.kube.releases.RELEASES`, each pinned with
  its own JobSet and Kubernetes modules by `schemas/gotypes/releases/<release>.mod`),
  `schemas/releases/<v2_2_1>/`: `<kind>.patch.json` for the three Trainer kinds, the JSON merge
  patch that turns `schemas/<kind>.json` into that release's schema (made as above),
  `runtimes/<name>` as above, `gofacts.patch.json`, the merge patch that turns the newest
  release's Go facts (`compiler/kube/_go_facts.py`) into that release's (`schemas/gotypes
  -json` on its types), and `jobset.patch.json`, the same for the JobSet CRD of the JobSet
  release it is pinned with (`tjc --jobset-version` reads it); and
  `schemas/releases/modules.json`, every release's Trainer, JobSet and k8s.io/apimachinery
  versions. `compiler.kube.releases.release_data` reads them.

`--check` compares instead of writing and exits 1 when a generated file is stale (or is left
over in `runtimes/` or `schemas/releases/`, which only this script writes).
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

from compiler.io.builtin import UPSTREAM_FILES
from compiler.kube.releases import (
    DEFAULT,
    RELEASES,
    TRAINER_KINDS,
    data_key,
    merge_patch,
    schema_text,
)
from schemas import upstream
from schemas.upstream import JOBSET, TRAINER, UpstreamError, module_dir, pinned_dir

ROOT = Path(__file__).resolve().parent.parent
RUNTIMES = "manifests/base/runtimes"
OWNED = ("runtimes", "schemas/releases")  # folders only this script writes
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


def _older(release: str | None) -> str | None:
    """None for the release go.mod pins (the newest), else the release."""
    return None if release in (None, DEFAULT) else release


def source_name(kind: str, release: str | None = None) -> str:
    """Where the CRD of `kind` comes from: `<module>@<version>/<file>`."""
    module, rel, _ = SOURCES[kind]
    version = release if _older(release) else upstream.version(module)
    if _older(release) and module == JOBSET:  # the JobSet the release is pinned with
        version = upstream.versions(release)[JOBSET]
    return f"{module}@{version}/{rel}"


def crd_path(kind: str, release: str | None = None) -> Path:
    """The upstream CRD file of `kind` in Go's module cache (downloaded when not there)."""
    module, rel, _ = SOURCES[kind]
    return module_dir(module, _older(release)) / rel


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


def load_schema(kind: str, release: str | None = None) -> dict[str, Any]:
    """Read the openAPIV3Schema of the served version of one CRD."""
    served = SOURCES[kind][2]
    crd = read_crd(crd_path(kind, release))
    for entry in crd["spec"]["versions"]:
        if entry["name"] == served:
            schema: dict[str, Any] = entry["schema"]["openAPIV3Schema"]
            return schema
    raise SystemExit(f"{source_name(kind, release)}: no version {served}")


def schema_doc(kind: str, release: str | None = None) -> dict[str, Any]:
    """The schema of `kind` as `schemas/<kind>.json` holds it: descriptions dropped, the
    source recorded."""
    doc: dict[str, Any] = strip_descriptions(load_schema(kind, release))
    named = UPSTREAM_VERSIONS[kind]
    if _older(release) and kind == "jobset":
        named = f"kubernetes-sigs/jobset {upstream.versions(release)[JOBSET]}"
    elif _older(release):
        named = f"kubeflow/trainer {release}"
    doc["x-tjc-source"] = {"upstream": named, "crd": source_name(kind, release)}
    return doc


def diff_patch(base: Any, doc: Any) -> Any:
    """The JSON merge patch (RFC 7386) that turns `base` into `doc` (neither holds a null)."""
    if not (isinstance(base, dict) and isinstance(doc, dict)):
        return doc
    patch: dict[str, Any] = {key: None for key in base if key not in doc}
    for key, value in doc.items():
        if key not in base:
            patch[key] = value
        elif base[key] != value:
            patch[key] = diff_patch(base[key], value)
    return patch


def patch_text(base: Any, doc: Any, what: str) -> str:
    """The text of a merge patch file that turns `base` into `doc`."""
    patch = diff_patch(base, doc)
    if merge_patch(base, patch) != doc:  # a null in `doc` would be lost: say so
        raise SystemExit(f"{what}: not expressible as a merge patch")
    return schema_text(patch)


def runtime_files(release: str | None = None) -> dict[str, str]:
    """tjc's name -> upstream text of each built-in runtime of a release: the files the
    kustomization of `manifests/base/runtimes/` installs, followed into its folders."""
    top = module_dir(TRAINER, _older(release)) / RUNTIMES
    names = {path: name for name, path in UPSTREAM_FILES.items()}
    found: dict[str, str] = {}
    for path in _kustomized(top):
        rel = path.relative_to(top).as_posix()
        if rel not in names:
            raise SystemExit(f"{TRAINER}@{release or DEFAULT}/{RUNTIMES}/{rel}: a built-in "
                             "runtime compiler.io.builtin.UPSTREAM_FILES does not name")
        found[names[rel]] = path.read_text(encoding="utf-8")
    return found


def _kustomized(folder: Path) -> list[Path]:
    """The resource files a kustomization installs, its folders' kustomizations followed."""
    kustomization = read_crd(folder / "kustomization.yaml")
    out: list[Path] = []
    for entry in kustomization.get("resources", []):
        path = folder / entry
        out.extend(_kustomized(path) if path.is_dir() else [path])
    return out


def release_outputs(base: dict[str, dict[str, Any]]) -> dict[Path, str]:
    """The files of every older release under `schemas/releases/`."""
    outputs: dict[Path, str] = {}
    modules = {DEFAULT: upstream.versions()}
    newest_facts = json.loads(upstream.go_facts())
    for release in RELEASES:
        if release == DEFAULT:
            continue
        folder = ROOT / "schemas" / "releases" / data_key(release)
        for kind in TRAINER_KINDS:
            outputs[folder / f"{kind}.patch.json"] = patch_text(
                base[kind], schema_doc(kind, release), source_name(kind, release))
        for name, text in runtime_files(release).items():
            outputs[folder / "runtimes" / name] = text
        outputs[folder / "gofacts.patch.json"] = patch_text(
            newest_facts, json.loads(upstream.go_facts(release)), f"Go facts of {release}")
        outputs[folder / "jobset.patch.json"] = patch_text(
            base["jobset"], schema_doc("jobset", release), source_name("jobset", release))
        modules[release] = upstream.versions(release)
    ordered = {release: modules[release] for release in RELEASES}
    outputs[ROOT / "schemas" / "releases" / "modules.json"] = \
        json.dumps(ordered, indent=1) + "\n"
    return outputs


def render_outputs() -> dict[Path, str]:
    """Compute every generated file's path and text."""
    outputs: dict[Path, str] = {}
    base: dict[str, dict[str, Any]] = {}
    for kind in SOURCES:
        base[kind] = schema_doc(kind)
        outputs[ROOT / "schemas" / f"{kind}.json"] = schema_text(base[kind])
    for kind in DEPLOYED_CRDS:
        name = Path(SOURCES[kind][1]).name
        outputs[ROOT / "deploy" / "crds" / name] = deploy_crd(kind)
    name = Path(SOURCES["jobset"][1]).name
    outputs[ROOT / "tests" / "e2e" / "crds" / name] = deploy_crd("jobset")
    outputs.update(policy_report_crds())
    for name, text in runtime_files().items():
        outputs[ROOT / "runtimes" / name] = text
    outputs.update(release_outputs(base))
    return outputs


def leftovers(outputs: dict[Path, str]) -> list[Path]:
    """Files in the folders only this script writes that it would not write now."""
    found = []
    for folder in OWNED:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and path not in outputs:
                found.append(path)
    return found


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
            stale.append(f"stale generated file: {path.relative_to(ROOT)}")
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    for path in leftovers(outputs):
        if args.check:
            stale.append(f"left-over generated file: {path.relative_to(ROOT)}")
        else:
            path.unlink()
    for line in stale:
        print(line, file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
