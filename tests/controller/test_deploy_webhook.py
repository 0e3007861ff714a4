"""The webhook's manifests in `deploy/webhook/`, and the policy reports' component in
`deploy/policyreports/`, checked without a cluster: every file listed once; the configuration
sends creates and updates of the three Trainer kinds to the Service's /validate, failing
closed, within a timeout, skipping opted-out namespaces; the Service, the Deployment's port
and arguments (parsed by `tjc webhook`'s own parser), the Secret mounted at --tls-dir and
cert-manager's Certificate and CA injection agree; the ClusterRole grants exactly what the
webhook reads; the component turns on `--policy-reports` and grants what it writes.
(tests/e2e/test_webhook.py registers this configuration.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from compiler.cli.main import build_parser
from tests.controller.test_deploy import IMAGE, NAMESPACE, documents, grants

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
WEBHOOK = DEPLOY / "webhook"
REPORTS = DEPLOY / "policyreports"
ACCOUNT = "tjc-webhook"
GRANTS = {
    *(("trainer.kubeflow.org", r, v) for r in ("trainingruntimes", "clustertrainingruntimes")
      for v in ("get", "list", "watch")),
    ("", "configmaps", "get"),
}


def kustomization() -> dict[str, Any]:
    return documents(WEBHOOK / "kustomization.yaml")[0]


def objects(kind: str) -> list[dict[str, Any]]:
    return [doc for resource in kustomization()["resources"]
            for doc in documents(WEBHOOK / resource) if doc.get("kind") == kind]


def one(kind: str) -> dict[str, Any]:
    found = objects(kind)
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def test_kustomization_lists_every_manifest_once() -> None:
    config = kustomization()
    listed = sorted(WEBHOOK / name for name in config["resources"])
    assert listed == sorted(p for p in WEBHOOK.glob("*.yaml") if p.name != "kustomization.yaml")
    assert len(set(listed)) == len(listed)
    assert config["namespace"] == NAMESPACE
    assert [image["name"] for image in config["images"]] == [IMAGE]


def test_configuration_sends_trainer_kinds_to_the_service() -> None:
    config = one("ValidatingWebhookConfiguration")
    [hook] = config["webhooks"]
    assert (hook["failurePolicy"], hook["matchPolicy"], hook["sideEffects"]) == (
        "Fail", "Equivalent", "None")
    assert hook["admissionReviewVersions"] == ["v1"]
    assert 1 <= hook["timeoutSeconds"] <= 10
    [rule] = hook["rules"]
    assert rule["apiGroups"] == ["trainer.kubeflow.org"]
    assert set(rule["operations"]) == {"CREATE", "UPDATE"}
    assert set(rule["resources"]) == {"trainjobs", "trainingruntimes", "clustertrainingruntimes"}
    assert {"key": "trainjob-compiler/webhook", "operator": "NotIn", "values": ["disabled"]} in \
        hook["namespaceSelector"]["matchExpressions"]
    service = one("Service")
    target = hook["clientConfig"]["service"]
    assert (target["name"], target["namespace"], target["path"]) == (
        service["metadata"]["name"], NAMESPACE, "/validate")
    assert [p["port"] for p in service["spec"]["ports"]] == [target["port"]]
    certificate = one("Certificate")
    assert config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == \
        f"{NAMESPACE}/{certificate['metadata']['name']}"
    assert f"{service['metadata']['name']}.{NAMESPACE}.svc" in certificate["spec"]["dnsNames"]


def test_deployment_serves_the_certificate_on_the_services_port() -> None:
    deployment = one("Deployment")
    pod = deployment["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert container["image"].rpartition(":")[0] == IMAGE
    assert pod["serviceAccountName"] == ACCOUNT
    args = build_parser("webhook").parse_args(container["args"])
    assert args.verb == "webhook"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    service = one("Service")
    assert [ports[p["targetPort"]] for p in service["spec"]["ports"]] == [args.port]
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes[mounts[args.tls_dir]]["secret"]["secretName"] == \
        one("Certificate")["spec"]["secretName"]
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = container[probe]["httpGet"]
        assert (get["path"], get["scheme"], ports[get["port"]]) == (path, "HTTPS", args.port)
    assert deployment["spec"]["replicas"] >= 2
    assert one("PodDisruptionBudget")["spec"]["selector"] == deployment["spec"]["selector"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert pod["securityContext"]["runAsNonRoot"] is True


def test_cluster_role_grants_exactly_what_the_webhook_reads() -> None:
    role = one("ClusterRole")
    assert grants(role["rules"]) == GRANTS
    binding = one("ClusterRoleBinding")
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": ACCOUNT,
                                    "namespace": NAMESPACE}]
    assert one("ServiceAccount")["metadata"] == {"name": ACCOUNT, "namespace": NAMESPACE}


def test_policy_reports_component_turns_them_on_with_their_grants() -> None:
    component = documents(REPORTS / "kustomization.yaml")[0]
    assert component["kind"] == "Component"
    listed = sorted(REPORTS / name for name in component["resources"])
    assert listed == sorted(p for p in REPORTS.rglob("*.yaml") if p.name != "kustomization.yaml")
    kinds = {doc["spec"]["names"]["kind"] for name in component["resources"]
             for doc in documents(REPORTS / name) if doc["kind"] == "CustomResourceDefinition"}
    assert kinds == {"PolicyReport", "ClusterPolicyReport"}
    [patch] = component["patches"]
    assert patch["target"] == {"kind": "Deployment", "name": "tjc-controller"}
    [op] = yaml.safe_load(patch["patch"])
    assert op["value"] == "--policy-reports"
    assert build_parser("controller").parse_args(["controller", op["value"]]).policy_reports
    [role] = [d for name in component["resources"] for d in documents(REPORTS / name)
              if d["kind"] == "ClusterRole"]
    assert grants(role["rules"]) == {
        *(("trainer.kubeflow.org", r, v) for r in ("trainingruntimes", "clustertrainingruntimes")
          for v in ("get", "list", "watch")),
        *(("wgpolicyk8s.io", r, v) for r in ("policyreports", "clusterpolicyreports")
          for v in ("get", "create", "patch"))}
    [binding] = [d for name in component["resources"] for d in documents(REPORTS / name)
                 if d["kind"] == "ClusterRoleBinding"]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "tjc-controller",
                                    "namespace": NAMESPACE}]
