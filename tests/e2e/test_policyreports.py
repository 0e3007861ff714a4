"""End to end: PolicyReports on the real API server, with the wgpolicyk8s.io CRDs generated
into deploy/policyreports/crds/. What `tjc validate -o policyreport` writes is taken as it is
(the API server validates it against the CRD's schema and would prune any field it does not
declare: read back, every report is what was sent); `tjc controller --policy-reports` keeps a
report per namespace current as TrainJobs and runtimes come, change and go."""

from __future__ import annotations

import copy
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from compiler.cli.main import main
from compiler.controller.kube import (
    CLUSTER_POLICY_REPORT,
    CLUSTER_RUNTIME,
    POLICY_REPORT,
    TRAINJOB,
    Kube,
)
from compiler.controller.manager import Controller, Options
from compiler.policy.engine import PolicySet
from compiler.policy.packs import Loader, pack_files
from tests.e2e import cluster as cl
from tests.e2e.poll import eventually
from tests.e2e.test_controller import cl_namespace, trainjob

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
CRDS = ROOT / "deploy" / "policyreports" / "crds"
PRIVILEGED = [{"manager": "example.com/m", "trainingRuntimeSpec": {"template": {"spec": {
    "replicatedJobs": [{"name": "node", "template": {"spec": {"template": {"spec": {
        "containers": [{"name": "node", "securityContext": {"privileged": True}}]}}}}}]}}}}]


@pytest.fixture(scope="module")
def kube(e2e_api: Any) -> Kube:
    cl.install_crds(e2e_api, [CRDS])
    client = Kube(e2e_api)
    for path in sorted((ROOT / "runtimes").glob("*.yaml")):
        client.apply(yaml.safe_load(path.read_text()))
    return client


@pytest.fixture
def namespace(kube: Kube) -> str:
    name = f"e2e-pr-{uuid.uuid4().hex[:8]}"
    kube.create(cl_namespace(), None, {"apiVersion": "v1", "kind": "Namespace",
                                       "metadata": {"name": name}})
    return name


def _privileged(namespace: str, name: str) -> dict[str, Any]:
    job = trainjob(namespace, name, "torch-distributed", trainer={"numNodes": 1})
    job["spec"]["runtimePatches"] = copy.deepcopy(PRIVILEGED)
    return job


def _by_result(report: dict[str, Any] | None) -> dict[str, set[tuple[str, str]]]:
    """(object name, rule) pairs by result."""
    out: dict[str, set[tuple[str, str]]] = {}
    for r in (report or {}).get("results") or []:
        for res in r["resources"]:
            out.setdefault(r["result"], set()).add((res["name"], r["rule"]))
    return out


def test_validate_reports_are_taken_as_written(kube: Kube, e2e_api: Any, namespace: str,
                                               tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    runtime = yaml.safe_load((ROOT / "runtimes" / "torch-distributed.yaml").read_text())
    runtime["metadata"]["name"] = f"e2e-pr-{uuid.uuid4().hex[:6]}"
    docs = [_privileged(namespace, "privileged"),
            trainjob(namespace, "fine", "torch-distributed", trainer={"numNodes": 1}),
            trainjob(namespace, "lost", "nowhere"), runtime]
    (tmp_path / "in.yaml").write_text(yaml.safe_dump_all(docs), encoding="utf-8")
    assert main(["validate", str(tmp_path / "in.yaml"), "-o", "policyreport"]) == 1
    reports = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]
    assert [r["kind"] for r in reports] == ["PolicyReport", "ClusterPolicyReport"]
    for report in reports:
        res = POLICY_REPORT if report["kind"] == "PolicyReport" else CLUSTER_POLICY_REPORT
        stored = kube.apply(report)
        again = kube.get(res, report["metadata"].get("namespace"), report["metadata"]["name"])
        for got in (stored, again):
            assert got is not None
            assert got["results"] == report["results"]  # nothing pruned
            assert got["summary"] == report["summary"]
    found = _by_result(reports[0])
    assert ("privileged", "security.privileged") in found["fail"]
    assert ("lost", "TJC-WEBHOOK-RUNTIME-NOT-FOUND") in found["fail"]
    assert ("fine", "security.privileged") in found["pass"]


def test_a_report_the_schema_refuses_is_refused(kube: Kube, namespace: str) -> None:
    """(The CRD's schema is enforced: a result must be pass, fail, warn, error or skip.)"""
    bad = {"apiVersion": "wgpolicyk8s.io/v1alpha2", "kind": "PolicyReport",
           "metadata": {"name": "bad", "namespace": namespace},
           "results": [{"policy": "security", "rule": "security.privileged",
                        "result": "denied"}]}
    with pytest.raises(Exception, match="Unsupported value"):
        kube.apply(bad)


@pytest.fixture(scope="module")
def controller(e2e_cluster: cl.Cluster, kube: Kube) -> Iterator[Controller]:
    """`tjc controller --policy-reports` with the built-in packs."""
    policies = PolicySet(Loader().load_all(pack_files([], builtin=True)))
    running = Controller(Kube(e2e_cluster.api_client()),
                         Options(metrics_port=-1, workers=2, policies=policies,
                                 policy_reports=True))
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    yield running
    running.stop.set()
    thread.join(10)


def _report(kube: Kube, namespace: str | None) -> dict[str, Any] | None:
    res = POLICY_REPORT if namespace else CLUSTER_POLICY_REPORT
    return kube.get(res, namespace, "trainjob-compiler")


def test_controller_keeps_a_report_per_namespace(kube: Kube, controller: Controller,
                                                 namespace: str) -> None:
    kube.create(TRAINJOB, namespace, _privileged(namespace, "privileged"))
    kube.create(TRAINJOB, namespace, trainjob(namespace, "fine", "torch-distributed",
                                              trainer={"numNodes": 1}))

    def both() -> dict[str, set[tuple[str, str]]] | None:
        found = _by_result(_report(kube, namespace))
        names = {n for pairs in found.values() for n, _ in pairs}
        return found if {"privileged", "fine"} <= names else None

    found = eventually(both, timeout=60, what="the namespace's report with both TrainJobs")
    assert ("privileged", "security.privileged") in found["fail"]
    assert ("fine", "security.privileged") in found["pass"]
    assert not {n for n, _ in found.get("fail", set())} - {"privileged"}
    report = _report(kube, namespace)
    assert report is not None and report["summary"]["fail"] == 1
    uids = {res.get("uid") for r in report["results"] for res in r["resources"]}
    assert None not in uids  # objects in the cluster are named by uid too
    kube.delete(TRAINJOB, namespace, "privileged")
    eventually(lambda: "fail" not in _by_result(_report(kube, namespace)), timeout=60,
               what="the report without the deleted TrainJob's failure")


def test_controller_reports_cluster_runtimes(kube: Kube, controller: Controller) -> None:
    runtime = yaml.safe_load((ROOT / "runtimes" / "torch-distributed.yaml").read_text())
    name = f"privileged-{uuid.uuid4().hex[:6]}"
    runtime["metadata"] = {"name": name}
    pod = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"][
        "template"]["spec"]
    pod["containers"][0]["securityContext"] = {"privileged": True}
    kube.create(CLUSTER_RUNTIME, None, runtime)
    found = eventually(lambda: _by_result(_report(kube, None)).get("fail"), timeout=60,
                       what="the ClusterPolicyReport's failure")
    assert (name, "security.privileged") in found
    assert (_report(kube, None) or {}).get("metadata", {}).get("namespace") is None
