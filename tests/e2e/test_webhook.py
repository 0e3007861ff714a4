"""End to end: `tjc webhook` registered with the real API server, as deploy/webhook/ registers
it (the same ValidatingWebhookConfiguration, reached by URL on loopback instead of through
the Service, with a CA bundle made here). A TrainJob or runtime that breaks a rule is refused
at create with the rule id and field path, as `kubectl apply` shows it; an exemption of the
policy settings admits it in its namespace, and a change of the settings file is used at the
next request; an update that breaks an immutable rule is refused; a rotated certificate (new
files, a new CA bundle in the configuration) keeps the webhook answering."""

from __future__ import annotations

import base64
import contextlib
import copy
import json
import os
import re
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from compiler.cli.controller_cmd import live_policies
from compiler.cli.main import build_parser
from compiler.controller.judge import Judge, Runtimes
from compiler.controller.kube import CLUSTER_RUNTIME, TRAINJOB, ApiError, Kube
from compiler.controller.servingcert import ServingCertificate
from compiler.controller.webhookserver import WebhookServer, start
from tests.e2e import cluster as cl
from tests.e2e.poll import eventually
from tests.e2e.test_controller import cl_namespace, trainjob

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
CONFIGURATION = ROOT / "deploy" / "webhook" / "validating_webhook_configuration.yaml"
WARNING = re.compile(r'299 - "((?:[^"\\]|\\.)*)"')
CONFIGURATIONS = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
PRIVILEGED = [{"manager": "example.com/m", "trainingRuntimeSpec": {"template": {"spec": {
    "replicatedJobs": [{"name": "node", "template": {"spec": {"template": {"spec": {
        "containers": [{"name": "node", "securityContext": {"privileged": True}}]}}}}}]}}}}]
PRIVILEGED_PATH = ("spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0]"
                   ".template.spec.template.spec.containers[0].securityContext.privileged")


class Webhook:
    """The webhook serving on loopback, its certificate folder and its registration."""

    def __init__(self, workdir: Path, kube: Kube, api: Any, values: Path) -> None:
        self.workdir, self.api, self.values = workdir, api, values
        self.tls = workdir / "tls"
        self.ca = self.rotate()
        args = build_parser("webhook").parse_args(
            ["webhook", "--tls-dir", str(self.tls), "--policy-values", str(values)])
        self.certificate = ServingCertificate(Path(args.tls_dir))
        self.runtimes = Runtimes(kube)
        self.runtimes.start()
        self.server: WebhookServer = start(Judge(self.runtimes, live_policies(args)),
                                           self.certificate, 0, cl.LOOPBACK)
        self.name = f"tjc-webhook-e2e-{uuid.uuid4().hex[:6]}"

    def rotate(self) -> bytes:
        """A new CA and serving certificate, swapped in as the kubelet updates a mounted
        Secret (a new `..data` folder, one symlink renamed over the old); the CA's PEM."""
        ca = cl._CertificateAuthority.create(f"tjc-webhook-ca-{uuid.uuid4().hex[:6]}")
        key, cert = ca.issue("tjc-webhook", server_names=["localhost"],
                             server_ips=[cl.LOOPBACK])
        version = self.tls / f"..{uuid.uuid4().hex[:8]}"
        version.mkdir(parents=True)
        (version / "tls.key").write_bytes(cl._pem_key(key))
        (version / "tls.crt").write_bytes(cl._pem_cert(cert))
        link = self.tls / "..data_tmp"
        link.symlink_to(version.name)
        link.replace(self.tls / "..data")
        for name in ("tls.crt", "tls.key"):
            if not (self.tls / name).is_symlink():
                (self.tls / name).symlink_to(f"..data/{name}")
        return cl._pem_cert(ca.cert)

    def configuration(self) -> dict[str, Any]:
        """deploy/webhook's configuration, pointed at this server with this CA bundle."""
        config: dict[str, Any] = yaml.safe_load(CONFIGURATION.read_text(encoding="utf-8"))
        config["metadata"] = {"name": self.name}
        for hook in config["webhooks"]:
            hook["clientConfig"] = {
                "url": f"https://{cl.LOOPBACK}:{self.server.server_address[1]}/validate",
                "caBundle": base64.b64encode(self.ca).decode()}
        return config

    def register(self) -> None:
        cl.api_request(self.api, "POST", CONFIGURATIONS, self.configuration())

    def update_bundle(self) -> None:
        current = cl.api_request(self.api, "GET", f"{CONFIGURATIONS}/{self.name}")
        for hook in current["webhooks"]:
            hook["clientConfig"]["caBundle"] = base64.b64encode(self.ca).decode()
        cl.api_request(self.api, "PUT", f"{CONFIGURATIONS}/{self.name}", current)

    def close(self) -> None:
        with contextlib.suppress(ApiException):
            cl.api_request(self.api, "DELETE", f"{CONFIGURATIONS}/{self.name}")
        self.server.shutdown()
        self.runtimes.stop()


def _values(path: Path, namespaces: list[str]) -> None:
    """The policy settings: security.privileged exempted in these namespaces (written to a
    new file renamed over the old, as a ConfigMap update swaps it)."""
    text = yaml.safe_dump({"exemptions": [{
        "rules": ["security.privileged"], "namespaces": namespaces,
        "reason": "NCCL tests need it"}]})
    new = path.with_suffix(".new")
    new.write_text(text, encoding="utf-8")
    new.replace(path)


@pytest.fixture(scope="module")
def kube(e2e_api: Any) -> Kube:
    client = Kube(e2e_api)
    for path in sorted((ROOT / "runtimes").glob("*.yaml")):
        client.apply(yaml.safe_load(path.read_text()))
    return client


def _namespace(kube: Kube) -> str:
    name = f"e2e-wh-{uuid.uuid4().hex[:8]}"
    kube.create(cl_namespace(), None, {"apiVersion": "v1", "kind": "Namespace",
                                       "metadata": {"name": name}})
    return name


@pytest.fixture(scope="module")
def exempt(kube: Kube) -> str:
    return _namespace(kube)


@pytest.fixture
def namespace(kube: Kube) -> str:
    return _namespace(kube)


@pytest.fixture(scope="module")
def webhook(kube: Kube, e2e_api: Any, e2e_cluster: cl.Cluster, exempt: str,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[Webhook]:
    workdir = tmp_path_factory.mktemp("webhook")
    values = workdir / "values.yaml"
    _values(values, [exempt])
    running = Webhook(workdir, Kube(e2e_cluster.api_client()), e2e_api, values)
    try:
        eventually(running.runtimes.synced, what="runtime informers synced")
        running.register()
        yield running
    finally:
        running.close()


def _create(api: Any, path: str, body: dict[str, Any]) -> tuple[int, str, list[str]]:
    """POST an object: the status code, the error message (if any) and the warnings."""
    try:
        response = api.call_api(
            path, "POST", header_params={"Content-Type": "application/json",
                                         "Accept": "application/json"},
            body=body, auth_settings=["BearerToken"], _preload_content=False,
            _return_http_data_only=True, _request_timeout=30)
    except ApiException as exc:
        return exc.status, json.loads(exc.body or "{}").get("message", ""), []
    headers = response.headers.getlist("Warning")
    assert response.data  # (read whole before the connection goes back to the pool)
    response.release_conn()
    # RFC 7234 warn-values, `299 - "text"`, several to a header line
    return response.status, "", [re.sub(r'\\(.)', r"\1", text) for header in headers
                                 for text in WARNING.findall(header)]


def _trainjobs(namespace: str) -> str:
    return TRAINJOB.path(namespace)


def _privileged(namespace: str, name: str) -> dict[str, Any]:
    job = trainjob(namespace, name, "torch-distributed", trainer={"numNodes": 1})
    job["spec"]["runtimePatches"] = copy.deepcopy(PRIVILEGED)
    return job


def _accepted(api: Any, namespace: str, name: str) -> bool:
    code, _, _ = _create(api, _trainjobs(namespace), trainjob(
        namespace, name, "torch-distributed", trainer={"numNodes": 1}))
    return code == 201


def test_privileged_trainjob_is_refused_with_the_rule(
        kube: Kube, e2e_api: Any, webhook: Webhook, namespace: str) -> None:
    code, message, _ = _create(e2e_api, _trainjobs(namespace), _privileged(namespace, "priv"))
    assert code == 403
    assert message.startswith('admission webhook "validate.trainjob-compiler.io" denied the '
                              "request: ")
    assert f"{PRIVILEGED_PATH}: containers must not run privileged [security.privileged]" \
        in message
    assert kube.get(TRAINJOB, namespace, "priv") is None
    code, _, warnings = _create(e2e_api, _trainjobs(namespace), trainjob(
        namespace, "fine", "torch-distributed", trainer={"numNodes": 1}))
    assert code == 201
    assert any("[security.run-as-non-root]" in w for w in warnings), warnings


def test_kubectl_apply_shows_the_refusal(kube: Kube, e2e_cluster: cl.Cluster,
                                         webhook: Webhook) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed")
    namespace = "ml-team"  # (a fixed name: README quotes this output)
    with contextlib.suppress(ApiError):
        kube.create(cl_namespace(), None, {"apiVersion": "v1", "kind": "Namespace",
                                           "metadata": {"name": namespace}})
    done = subprocess.run([kubectl, "apply", "-f", "-"], capture_output=True, text=True,
                          input=yaml.safe_dump(_privileged(namespace, "gpu-debug")),
                          timeout=60, check=False,
                          env={**os.environ, "KUBECONFIG": e2e_cluster.kubeconfig})
    print(done.stderr)  # (the README quotes it)
    assert done.returncode == 1
    assert 'Error from server (Forbidden): error when creating "STDIN": admission webhook ' \
        '"validate.trainjob-compiler.io" denied the request: ' \
        f"{PRIVILEGED_PATH}: containers must not run privileged [security.privileged]" \
        in done.stderr
    assert "Warning: " in done.stderr  # (the warnings come first, one line each)


def test_exempted_namespace_is_admitted_and_told(e2e_api: Any, webhook: Webhook,
                                                 exempt: str) -> None:
    code, _, warnings = _create(e2e_api, _trainjobs(exempt), _privileged(exempt, "nccl"))
    assert code == 201
    assert any(w.startswith("exempted by exemption #1 of the policy settings: NCCL tests need "
                            "it: ") and w.endswith("[security.privileged]") for w in warnings), \
        warnings


def test_new_policy_settings_are_used_at_once(e2e_api: Any, webhook: Webhook, exempt: str,
                                              namespace: str) -> None:
    code, _, _ = _create(e2e_api, _trainjobs(namespace), _privileged(namespace, "before"))
    assert code == 403
    _values(webhook.values, [exempt, namespace])
    code, message, _ = _create(e2e_api, _trainjobs(namespace), _privileged(namespace, "after"))
    assert code == 201, message


def test_update_that_breaks_an_immutable_rule_is_refused(
        kube: Kube, e2e_api: Any, webhook: Webhook, namespace: str) -> None:
    job = trainjob(namespace, "patched", "torch-distributed", trainer={"numNodes": 1})
    job["spec"]["runtimePatches"] = [{"manager": "example.com/m", "trainingRuntimeSpec": {
        "template": {"metadata": {"labels": {"team": "a"}}}}}]
    created = kube.create(TRAINJOB, namespace, job)
    changed = copy.deepcopy(created)
    changed["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["metadata"][
        "labels"]["team"] = "b"
    with pytest.raises(Exception) as refused:
        kube.update(TRAINJOB, namespace, changed)
    assert getattr(refused.value, "status", None) == 403
    assert "spec.runtimePatches: runtimePatches can only be modified when the TrainJob is " \
        "suspended before or after the update [TJC-WEBHOOK-PATCH-IMMUTABLE]" in str(refused.value)
    changed["spec"]["suspend"] = True  # suspended, the same change is allowed
    updated = kube.update(TRAINJOB, namespace, changed)
    assert updated["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"][
        "metadata"]["labels"] == {"team": "b"}


def test_privileged_cluster_runtime_is_refused(kube: Kube, e2e_api: Any,
                                               webhook: Webhook) -> None:
    runtime = yaml.safe_load((ROOT / "runtimes" / "torch-distributed.yaml").read_text())
    runtime["metadata"] = {"name": f"privileged-{uuid.uuid4().hex[:6]}"}
    pod = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"][
        "template"]["spec"]
    pod["containers"][0]["securityContext"] = {"privileged": True}
    code, message, _ = _create(e2e_api, CLUSTER_RUNTIME.path(), runtime)
    assert code == 403
    assert "securityContext.privileged: containers must not run privileged " \
        "[security.privileged]" in message
    assert kube.get(CLUSTER_RUNTIME, None, runtime["metadata"]["name"]) is None


def test_rotated_certificate_keeps_serving(e2e_api: Any, webhook: Webhook,
                                           namespace: str) -> None:
    before = webhook.certificate.loads
    webhook.ca = webhook.rotate()
    webhook.update_bundle()  # the API server trusts only the new CA from now on
    eventually(lambda: _accepted(e2e_api, namespace, f"after-{uuid.uuid4().hex[:6]}")
               and webhook.certificate.loads > before,
               what="a TrainJob admitted through the rotated certificate")
    assert webhook.certificate.loads == before + 1 and webhook.certificate.problem is None
    code, message, _ = _create(e2e_api, _trainjobs(namespace), _privileged(namespace, "p2"))
    assert code == 403
    assert "[security.privileged]" in message
