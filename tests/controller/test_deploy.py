"""The deployment manifests in `deploy/` and the Dockerfile, checked without a cluster.

Every manifest parses and is listed in the kustomization; the CRDs are the three Trainer kinds
with structural schemas; the ClusterRole grants exactly what `tjc controller` needs (the set is
written out here, so a new grant is a reviewed change); the Deployment's probes and security
context are those the restricted Pod Security Standard and the controller's flags expect.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from compiler.policy.cuelib import LIBRARY_ENV

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
NAMESPACE = "tjc-system"
ACCOUNT = "tjc-controller"
IMAGE = "ghcr.io/example/trainjob-compiler"
METRICS_PORT = 8080

READ = ("get", "list", "watch")
WRITE = ("create", "patch")
T = "trainer.kubeflow.org"
CLUSTER_GRANTS = {
    *((T, "trainjobs", v) for v in READ),
    (T, "trainjobs/status", "patch"),
    (T, "trainjobs/finalizers", "update"),
    *((T, r, "get") for r in ("trainingruntimes", "clustertrainingruntimes")),
    *(("jobset.x-k8s.io", "jobsets", v) for v in (*READ, *WRITE, "delete")),
    *(("", "configmaps", v) for v in (*READ, *WRITE)),
    *(("", "secrets", v) for v in (*READ, "create")),
    *((g, "podgroups", v) for g in ("scheduling.x-k8s.io", "scheduling.volcano.sh")
      for v in (*READ, *WRITE)),
    ("events.k8s.io", "events", "create"),
}
LEASE_GRANTS = {("coordination.k8s.io", "leases", v) for v in ("get", "create", "update")}
CRD_KINDS = {
    "TrainJob": ("trainjobs", "Namespaced"),
    "TrainingRuntime": ("trainingruntimes", "Namespaced"),
    "ClusterTrainingRuntime": ("clustertrainingruntimes", "Cluster"),
}

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the CRDs are large


@functools.cache
def documents(path: Path) -> tuple[dict[str, Any], ...]:
    docs = list(yaml.load_all(path.read_text(encoding="utf-8"), Loader=_LOADER))
    assert all(isinstance(doc, dict) for doc in docs), f"{path}: a document is not a mapping"
    return tuple(docs)


def manifests() -> list[Path]:
    return sorted(p for p in DEPLOY.rglob("*.yaml") if p.name != "kustomization.yaml"
                  and "argocd" not in p.parts  # deploy/argocd: an Argo CD component
                  and "helm" not in p.parts  # deploy/helm: Helm's post-renderer plugin
                  and "webhook" not in p.parts  # deploy/webhook: its own kustomization
                  and "policyreports" not in p.parts)  # a component: test_deploy_webhook.py


def kustomization() -> dict[str, Any]:
    return documents(DEPLOY / "kustomization.yaml")[0]


def objects(kind: str) -> list[dict[str, Any]]:
    """Every object of `kind` the kustomization installs."""
    found = []
    for resource in kustomization()["resources"]:
        found += [doc for doc in documents(DEPLOY / resource) if doc.get("kind") == kind]
    return found


def one(kind: str) -> dict[str, Any]:
    found = objects(kind)
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def grants(rules: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {(g, r, v) for rule in rules for g in rule["apiGroups"] for r in rule["resources"]
            for v in rule["verbs"]}


def schema_nodes(node: dict[str, Any], path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, node
    for name, sub in node.get("properties", {}).items():
        yield from schema_nodes(sub, f"{path}.{name}")
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            yield from schema_nodes(node[key], f"{path}[{key}]")


def test_every_yaml_parses() -> None:
    paths = [*manifests(), DEPLOY / "kustomization.yaml"]
    for path in paths:
        for doc in documents(path):
            assert doc.get("apiVersion") and doc.get("kind"), path
    assert len(paths) > 5


def test_kustomization_lists_every_manifest_once() -> None:
    config = kustomization()
    listed = [DEPLOY / name for name in config["resources"]]
    assert all(path.is_file() for path in listed), [p for p in listed if not p.is_file()]
    assert sorted(listed) == manifests()
    assert len(set(listed)) == len(listed)
    assert config["namespace"] == NAMESPACE
    assert [image["name"] for image in config["images"]] == [IMAGE]


def test_crds_are_the_trainer_kinds_with_structural_schemas() -> None:
    crds = objects("CustomResourceDefinition")
    assert {crd["spec"]["names"]["kind"] for crd in crds} == set(CRD_KINDS)
    for crd in crds:
        spec = crd["spec"]
        plural, scope = CRD_KINDS[spec["names"]["kind"]]
        assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
        assert crd["metadata"]["name"] == f"{plural}.{T}"
        assert (spec["group"], spec["names"]["plural"], spec["scope"]) == (T, plural, scope)
        [version] = spec["versions"]
        assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
        schema = version["schema"]["openAPIV3Schema"]
        for where, node in schema_nodes(schema, spec["names"]["kind"]):
            assert "description" not in node, where
            assert node.get("type") or node.get("x-kubernetes-int-or-string") or node.get(
                "x-kubernetes-preserve-unknown-fields"), f"{where}: no type (not structural)"
        text = (DEPLOY / "crds" / f"{T}_{plural}.yaml").read_text(encoding="utf-8")
        for kept in ("x-kubernetes-validations:", "default:", "x-kubernetes-list-type:"):
            assert kept in text, f"{plural}: no {kept}"


def test_trainjob_crd_has_the_status_subresource() -> None:
    """Only TrainJob has a status (upstream's runtimes have none), which the controller
    writes through trainjobs/status."""
    for crd in objects("CustomResourceDefinition"):
        [version] = crd["spec"]["versions"]
        has_status = "status" in version["schema"]["openAPIV3Schema"]["properties"]
        assert has_status == (crd["spec"]["names"]["kind"] == "TrainJob")
        assert (version.get("subresources") == {"status": {}}) == has_status


def test_cluster_role_grants_exactly_what_the_controller_needs() -> None:
    rules = one("ClusterRole")["rules"]
    for rule in rules:
        assert set(rule) == {"apiGroups", "resources", "verbs"}, rule
        assert not any("*" in value for key in rule.values() for value in key), rule
    assert grants(rules) == CLUSTER_GRANTS


def test_leases_only_in_the_controller_namespace() -> None:
    role = one("Role")
    assert role["metadata"]["namespace"] == NAMESPACE
    assert grants(role["rules"]) == LEASE_GRANTS
    assert not any(resource == "leases" for _, resource, _ in grants(one("ClusterRole")["rules"]))


@pytest.mark.parametrize("kind", ["ClusterRoleBinding", "RoleBinding"])
def test_bindings_name_the_controller_account(kind: str) -> None:
    binding = one(kind)
    role = one(binding["roleRef"]["kind"])
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": ACCOUNT,
                                    "namespace": NAMESPACE}]
    assert one("ServiceAccount")["metadata"] == {"name": ACCOUNT, "namespace": NAMESPACE}


def test_deployment_runs_the_controller_with_leader_election() -> None:
    deployment = one("Deployment")
    pod = deployment["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert deployment["spec"]["replicas"] == 1
    assert pod["serviceAccountName"] == ACCOUNT
    assert container["image"].rpartition(":")[0] == IMAGE
    assert container["args"][0] == "controller"
    assert {"--all-namespaces", "--leader-elect", f"--metrics-port={METRICS_PORT}"} <= set(
        container["args"])
    for kind in ("requests", "limits"):
        assert set(container["resources"][kind]) == {"cpu", "memory"}


def test_deployment_probes_use_the_metrics_port() -> None:
    [container] = one("Deployment")["spec"]["template"]["spec"]["containers"]
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = container[probe]["httpGet"]
        assert get["path"] == path
        assert ports.get(get["port"], get["port"]) == METRICS_PORT
    service = one("Service")
    assert [ports.get(p["targetPort"], p["targetPort"]) for p in service["spec"]["ports"]] == [
        METRICS_PORT]
    assert service["spec"]["selector"] == one("Deployment")["spec"]["selector"]["matchLabels"]


def test_deployment_security_context_is_restricted() -> None:
    pod = one("Deployment")["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    context = container["securityContext"]
    assert context["readOnlyRootFilesystem"] is True
    assert context["allowPrivilegeEscalation"] is False
    assert context["capabilities"] == {"drop": ["ALL"]}
    assert "privileged" not in context and "hostNetwork" not in pod


def test_dockerfile_matches_the_deployment() -> None:
    """The image's user is the pod's, its default command is the controller's, and the CUE
    library is the one inside the installed wheel (no variable points cuelib elsewhere)."""
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    pod = one("Deployment")["spec"]["template"]["spec"]
    assert re.search(rf"^USER {pod['securityContext']['runAsUser']}:", text, re.M)
    assert LIBRARY_ENV not in text
    assert '\nENTRYPOINT ["tjc"]\nCMD ["controller", "--all-namespaces", "--leader-elect"]' in text
    ignore = (ROOT / ".dockerignore").read_text(encoding="utf-8").split()
    copied = [n for s in re.findall(r"^COPY (?!--from)(.+) \S+$", text, re.M) for n in s.split()]
    assert "compiler/" in copied and "cuebridge/" in copied
    admitted = [entry[1:].rstrip("/") for entry in ignore if entry.startswith("!")]
    for name in copied:
        assert any(name == a or name.startswith(f"{a}/") for a in admitted), \
            f"{name} is not in the context"
