"""`tjc webhook` without a cluster: the AdmissionReview wire format, the verdict against an
in-memory API (the controller's, with the same policy packs and exemptions), the serving
certificate's rotation, and the HTTPS server (the end-to-end tests register it with a real
API server)."""

from __future__ import annotations

import copy
import http.client
import json
import ssl
from pathlib import Path
from typing import Any

import pytest
import yaml

from compiler.cli.main import main
from compiler.common.diagnostics import Diagnostic, ObjectRef, Severity, Suppression, error
from compiler.common.jsondata import Obj
from compiler.controller import review, snapshot
from compiler.controller.judge import Judge, Runtimes
from compiler.controller.kube import CLUSTER_RUNTIME, CONFIGMAP, TRAINING_RUNTIME, TRAINJOB
from compiler.controller.servingcert import CertificateError, ServingCertificate
from compiler.controller.webhookserver import start
from compiler.core.plugins.base import controller_reference
from compiler.policy.engine import PolicySet
from compiler.policy.exemptions import split
from compiler.policy.packs import Loader, pack_files
from tests.controller.test_controller_units import NOW, FakeKube, _reconciler
from tests.e2e.cluster import _CertificateAuthority, _pem_cert, _pem_key

ROOT = Path(__file__).resolve().parents[2]
PRIVILEGED = [{"manager": "example.com/m", "trainingRuntimeSpec": {"template": {"spec": {
    "replicatedJobs": [{"name": "node", "template": {"spec": {"template": {"spec": {
        "containers": [{"name": "node", "securityContext": {"privileged": True}}]}}}}}]}}}}]


@pytest.fixture(scope="module")
def packs() -> list[Any]:
    return list(Loader().load_all(pack_files([], builtin=True)))


def _policies(packs: list[Any], exempt: list[str] = ()) -> PolicySet:  # type: ignore[assignment]
    values = {"exemptions": [{"rules": ["security.privileged"], "namespaces": list(exempt),
                              "reason": "NCCL tests"}]} if exempt else {}
    settings, exemptions = split(values)
    return PolicySet(packs, settings=settings, exemptions=exemptions)


def _runtime(name: str = "torch-distributed") -> Obj:
    runtime: Obj = yaml.safe_load((ROOT / "runtimes" / f"{name}.yaml").read_text())
    return runtime


def _trainjob(name: str = "j", namespace: str = "ns", **spec: Any) -> Obj:
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": name, "namespace": namespace, "uid": "u-1",
                         "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"runtimeRef": {"name": "torch-distributed"},
                     "trainer": {"numNodes": 1}, **spec}}


def _judge(kube: FakeKube, policies: PolicySet | None = None) -> Judge:
    return Judge(Runtimes(kube, watch=False), policies, clock=lambda: NOW)  # type: ignore[arg-type]


def _kube(*runtimes: Obj) -> FakeKube:
    kube = FakeKube()
    for runtime in runtimes or (_runtime(),):
        res = CLUSTER_RUNTIME if runtime["kind"] == "ClusterTrainingRuntime" \
            else TRAINING_RUNTIME
        kube.put(res, copy.deepcopy(runtime))
    return kube


def _request(obj: Obj, old: Obj | None = None) -> Obj:
    return {"uid": "req-1", "operation": "UPDATE" if old else "CREATE", "object": obj,
            "oldObject": old}


def _errors(found: list[Diagnostic]) -> list[str]:
    return [d.rule for d in found if d.severity is Severity.ERROR]


# --- the AdmissionReview ----------------------------------------------------------------


@pytest.mark.parametrize(("body", "why"), [
    (b"{", "not JSON"),
    (b'{"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1beta1", "request": '
     b'{"uid": "a"}}', "expected an AdmissionReview of admission.k8s.io/v1"),
    (b'{"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": {}}',
     "no request with a uid"),
    (b'{"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": '
     b'{"uid": "a", "object": [1]}}', "request.object is not an object"),
    (b" " * (review.MAX_BODY + 1), "over"),
])
def test_a_body_that_is_no_review_is_refused_with_why(body: bytes, why: str) -> None:
    with pytest.raises(review.ReviewError, match=why):
        review.read_request(body)


def test_the_answer_names_each_rule_path_and_other_object() -> None:
    request = _request(_trainjob())
    found = [error("security.privileged", "containers must not run privileged",
                   ("spec", "runtimePatches", 0, "manager"), subject="policy"),
             Diagnostic(Severity.ERROR, "security.host-network", "no host network",
                        ("spec", "template"), ObjectRef("ClusterTrainingRuntime", "rt")),
             Diagnostic(Severity.NOTICE, "TJC-MPI-SSH-SECRET", "needs a Secret")]
    answer = review.answer(request, found)
    assert answer["apiVersion"] == "admission.k8s.io/v1" and answer["kind"] == "AdmissionReview"
    assert answer["response"] == {"uid": "req-1", "allowed": False, "status": {
        "code": 403, "reason": "Forbidden", "message":
        "spec.runtimePatches[0].manager: containers must not run privileged "
        "[security.privileged]; ClusterTrainingRuntime rt: spec.template: no host network "
        "[security.host-network]"}}
    assert review.answer(request, found[2:])["response"] == {"uid": "req-1", "allowed": True}


def test_warnings_keep_their_rule_and_fit_the_api_servers_limits() -> None:
    deep: tuple[str | int, ...] = ("spec", *("template", "spec") * 40, "containers", 0)
    exempted = Suppression("external", "exemption #2 of the policy settings: NCCL tests",
                           Severity.ERROR)
    found = [Diagnostic(Severity.WARNING, f"resources.rule-{i}", "x" * 400, deep)
             for i in range(30)]
    found.insert(0, Diagnostic(Severity.NOTICE, "security.privileged", "privileged",
                               ("spec",), suppression=exempted))
    warnings = review.answer(_request(_trainjob()), found)["response"]["warnings"]
    assert warnings[0] == "exempted by exemption #2 of the policy settings: NCCL tests: " \
        "spec: privileged [security.privileged]"
    assert all(len(w) <= review.WARNING_CHARS for w in warnings)
    assert sum(map(len, warnings)) <= review.WARNINGS_TOTAL
    assert warnings[1].startswith("spec.template.spec.") and "..." in warnings[1]
    assert warnings[1].endswith("x... [resources.rule-0]")


# --- the verdict ------------------------------------------------------------------------


def test_a_privileged_patch_is_refused_as_the_controller_fails_it(packs: list[Any]) -> None:
    job = _trainjob(runtimePatches=copy.deepcopy(PRIVILEGED))
    found = _judge(_kube(), _policies(packs)).judge(_request(job))
    [refusal] = [d for d in found if d.severity is Severity.ERROR]
    assert refusal.rule == "security.privileged"
    assert refusal.path == ("spec", "runtimePatches", 0, "trainingRuntimeSpec", "template",
                            "spec", "replicatedJobs", 0, "template", "spec", "template",
                            "spec", "containers", 0, "securityContext", "privileged")
    kube = _kube()
    kube.put(TRAINJOB, copy.deepcopy(job))
    reconciler = _reconciler(kube)
    reconciler.policies = _policies(packs)
    reconciler.reconcile(("ns", "j"))
    failed = [c for c in kube.status_patches[-1]["status"]["conditions"]
              if c["type"] == "Failed"]
    assert failed and "[security.privileged]" in failed[0]["message"]


def test_an_exemption_admits_and_is_reported(packs: list[Any]) -> None:
    job = _trainjob(namespace="gpu-debug", runtimePatches=copy.deepcopy(PRIVILEGED))
    found = _judge(_kube(), _policies(packs, ["gpu-debug"])).judge(_request(job))
    assert not _errors(found)
    [used] = [d for d in found if d.suppression is not None]
    assert used.rule == "security.privileged"
    assert used.suppression is not None
    assert "exemption #1 of the policy settings: NCCL tests" in used.suppression.justification


def test_a_runtime_that_is_not_there_is_upstreams_error() -> None:
    found = _judge(_kube()).judge(_request(_trainjob(runtimeRef={"name": "nowhere"})))
    assert _errors(found) == ["TJC-WEBHOOK-RUNTIME-NOT-FOUND"]


def test_an_update_of_runtime_patches_is_refused_unless_suspended() -> None:
    old = _trainjob(runtimePatches=[{"manager": "example.com/m", "trainingRuntimeSpec": {
        "template": {"metadata": {"labels": {"team": "a"}}}}}])
    new = copy.deepcopy(old)
    new["spec"]["runtimePatches"][0]["manager"] = "example.com/n"
    judge = _judge(_kube())
    assert _errors(judge.judge(_request(new, old))) == ["TJC-WEBHOOK-PATCH-IMMUTABLE"]
    new["spec"]["suspend"] = True
    assert _errors(judge.judge(_request(new, old))) == []


def test_an_object_being_deleted_may_lose_its_finalizers(packs: list[Any]) -> None:
    old = _trainjob(runtimePatches=copy.deepcopy(PRIVILEGED))
    new = copy.deepcopy(old)
    new["metadata"]["deletionTimestamp"] = "2026-01-02T00:00:00Z"
    assert _judge(_kube(), _policies(packs)).judge(_request(new, old)) == []


def test_an_update_is_judged_against_the_recorded_snapshot(packs: list[Any]) -> None:
    """The controller compiles a started TrainJob with its snapshot: a runtime changed since
    (here made privileged) does not refuse an update the snapshot allows; a snapshot that no
    longer holds what was recorded is not used."""
    kube = _kube()
    old = _trainjob()
    text = snapshot.body(_runtime())
    configmap = snapshot.configmap(old, text)
    configmap["metadata"]["ownerReferences"] = [controller_reference("j", "u-1")]
    kube.put(CONFIGMAP, configmap)
    old["status"] = {"conditions": [{"type": snapshot.RECORD, "status": "True",
                                     "reason": "Recorded", "message": snapshot.digest(text)}]}
    changed = _runtime()
    changed["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"][
        "spec"]["containers"][0]["securityContext"] = {"privileged": True}
    kube.put(CLUSTER_RUNTIME, changed)
    new = copy.deepcopy(old)
    new["metadata"]["labels"] = {"team": "b"}
    judge = _judge(kube, _policies(packs))
    assert _errors(judge.judge(_request(new, old))) == []
    assert _errors(judge.judge(_request(new))) == ["security.privileged"]  # a create: live
    configmap["data"]["runtime"] = text + "# altered\n"
    assert _errors(judge.judge(_request(new, old))) == ["security.privileged"]


def test_runtimes_are_judged_by_their_admission_and_the_packs(packs: list[Any]) -> None:
    judge = _judge(_kube(), _policies(packs))
    runtime = _runtime()
    pod = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"][
        "template"]["spec"]
    pod["containers"][0]["securityContext"] = {"privileged": True}
    assert _errors(judge.judge(_request(runtime))) == ["security.privileged"]
    runtime = _runtime()
    runtime["kind"] = "TrainingRuntime"
    runtime["metadata"]["namespace"] = "ns"
    runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["replicas"] = 2
    assert _errors(judge.judge(_request(runtime))) == ["TJC-WEBHOOK-RUNTIME-REPLICAS"]
    assert _errors(judge.judge(_request(_runtime()))) == []


# --- the certificate and the server -----------------------------------------------------


def _issue(folder: Path) -> bytes:
    """A new CA and a serving certificate for 127.0.0.1 in `folder`; the CA's PEM."""
    ca = _CertificateAuthority.create("test-ca")
    key, cert = ca.issue("webhook", server_names=["localhost"], server_ips=["127.0.0.1"])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tls.key").write_bytes(_pem_key(key))
    (folder / "tls.crt").write_bytes(_pem_cert(cert))
    return _pem_cert(ca.cert)


def test_the_certificate_is_reloaded_when_rotated_and_kept_when_broken(tmp_path: Path) -> None:
    with pytest.raises(CertificateError, match=r"cannot load .*tls\.crt and .*tls\.key"):
        ServingCertificate(tmp_path)
    _issue(tmp_path)
    certificate = ServingCertificate(tmp_path)
    first = certificate.current()
    assert certificate.current() is first and certificate.loads == 1
    (tmp_path / "tls.key").write_bytes(_pem_key(_CertificateAuthority.create("x").key))
    assert certificate.current() is first  # a key of another certificate: the last good pair
    assert certificate.problem is not None and "not reloaded" in certificate.problem
    _issue(tmp_path)
    assert certificate.current() is not first and certificate.loads == 2
    assert certificate.problem is None


def _post(port: int, ca: bytes, body: bytes, path: str = "/validate") -> tuple[int, bytes]:
    context = ssl.create_default_context(cadata=ca.decode())
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
    try:
        connection.request("POST" if body else "GET", path, body or None)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_the_server_answers_reviews_and_probes_over_tls(tmp_path: Path) -> None:
    ca = _issue(tmp_path)
    judge = _judge(_kube())
    ready = [False]
    server = start(judge, ServingCertificate(tmp_path), 0, "127.0.0.1", lambda: ready[0])
    port = server.server_address[1]
    try:
        review_body = json.dumps({"apiVersion": "admission.k8s.io/v1",
                                  "kind": "AdmissionReview",
                                  "request": _request(_trainjob(runtimeRef={"name": "x"}))})
        code, body = _post(port, ca, review_body.encode())
        response = json.loads(body)["response"]
        assert code == 200 and response["allowed"] is False
        assert "[TJC-WEBHOOK-RUNTIME-NOT-FOUND]" in response["status"]["message"]
        assert _post(port, ca, b"{}")[0] == 400
        assert _post(port, ca, b"", "/readyz")[0] == 503
        ready[0] = True
        assert _post(port, ca, b"", "/readyz") == (200, b"ok\n")
        assert _post(port, ca, b"", "/healthz") == (200, b"ok\n")
        def broken(request: Obj) -> list[Diagnostic]:
            raise ZeroDivisionError("division by zero")

        judge.judge = broken  # type: ignore[method-assign]
        code, body = _post(port, ca, review_body.encode())
        response = json.loads(body)["response"]
        assert response["allowed"] is False  # what could not be checked is not let through
        assert "could not check this object (ZeroDivisionError: division by zero)" in \
            response["status"]["message"]
        other = _issue(tmp_path / "rotated")
        for name in ("tls.crt", "tls.key"):
            (tmp_path / "rotated" / name).replace(tmp_path / name)
        assert _post(port, other, b"", "/healthz")[0] == 200  # the new pair, no restart
    finally:
        server.shutdown()


def test_a_certificate_that_does_not_load_is_a_usage_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["webhook", "--tls-dir", str(tmp_path), "--no-default-policies"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(f"tjc webhook: error: cannot load {tmp_path}/tls.crt and "
                          f"{tmp_path}/tls.key: No such file or directory")
    assert len(err.splitlines()) == 1 and "Traceback" not in err


def test_an_operation_the_webhook_does_not_judge_is_allowed_with_its_uid() -> None:
    request = {"uid": "abc", "operation": "DELETE", "object": None}
    assert not review.judged(request)
    assert json.loads(review.dumps(review.allow(request))) == {
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "response": {"uid": "abc", "allowed": True}}


# --- the controller's policy reports ----------------------------------------------------


class _Store:
    """A TrainJob informer's store."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], Obj] = {}

    def get(self, namespace: str, name: str) -> Obj | None:
        return self.objects.get((namespace, name))

    def items(self) -> list[Obj]:
        return list(self.objects.values())


def test_controller_reports_follow_trainjobs_and_the_settings(packs: list[Any],
                                                              tmp_path: Path) -> None:
    from compiler.controller.kube import POLICY_REPORT
    from compiler.controller.livepolicy import LivePolicies
    from compiler.controller.reports import PolicyReports

    values = tmp_path / "values.yaml"
    values.write_text("{}\n")
    exempt = {"now": False}
    live = LivePolicies(_policies(packs), lambda: _policies(
        packs, ["ns"] if exempt["now"] else []), [values])
    kube, store = _kube(), _Store()
    reports = PolicyReports(kube, store, live, clock=lambda: NOW)  # type: ignore[arg-type]
    for job in (_trainjob("privileged", runtimePatches=copy.deepcopy(PRIVILEGED)),
                _trainjob("fine")):
        store.objects[("ns", job["metadata"]["name"])] = job
        reports.trainjob_event("ADDED", job)
    reports.step()

    def results() -> dict[str, set[tuple[str, str]]]:
        report = kube.get(POLICY_REPORT, "ns", "trainjob-compiler")
        assert report is not None
        out: dict[str, set[tuple[str, str]]] = {}
        for r in report["results"]:
            out.setdefault(r["result"], set()).update(
                (res["name"], r["rule"]) for res in r["resources"])
        return out

    assert ("privileged", "security.privileged") in results()["fail"]
    assert ("fine", "security.privileged") in results()["pass"]
    written = reports.applied
    reports.step()  # nothing changed: nothing written
    assert reports.applied == written
    exempt["now"] = True
    values.write_text("# a new version\n{}\n")
    reports.step()  # new settings: all judged again
    assert ("privileged", "security.privileged") in results()["skip"]
    gone = store.objects.pop(("ns", "privileged"))
    reports.trainjob_event("DELETED", gone)
    reports.step()
    assert "skip" not in results() and "fail" not in results()
    assert {name for pairs in results().values() for name, _ in pairs} == {"fine"}
