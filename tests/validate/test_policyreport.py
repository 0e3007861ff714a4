"""`tjc validate -o policyreport`: PolicyReports valid against the wgpolicyk8s.io CRDs'
schemas (generated from the pinned module into deploy/policyreports/crds/; the API server
would prune any field they do not declare, so none may be written), one per namespace, with
the results the run found: fail, warn, skip for an exemption used, pass for the rules an
object met, the summary counting them. (tests/e2e/test_policyreports.py applies them to the
real API server.)"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from compiler.cli.main import main
from compiler.common.diagnostics import Diagnostic, ObjectRef, Severity
from compiler.io import policyreport
from compiler.io.policyreport import Subject

ROOT = Path(__file__).resolve().parents[2]
CRDS = ROOT / "deploy" / "policyreports" / "crds"
PRIVILEGED = """\
  runtimePatches:
  - manager: example.com/m
    trainingRuntimeSpec:
      template:
        spec:
          replicatedJobs:
          - name: node
            template: {spec: {template: {spec: {containers: [
              {name: node, securityContext: {privileged: true}}]}}}}
"""
INPUTS = f"""\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {{name: privileged, namespace: team-a}}
spec:
  runtimeRef: {{name: torch-distributed}}
  trainer: {{numNodes: 1}}
{PRIVILEGED}---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {{name: nccl-test, namespace: gpu-debug}}
spec:
  runtimeRef: {{name: torch-distributed}}
  trainer: {{numNodes: 1}}
{PRIVILEGED}---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {{name: fine, namespace: team-a}}
spec:
  runtimeRef: {{name: torch-distributed}}
  trainer: {{numNodes: 1}}
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {{name: lost}}
spec:
  runtimeRef: {{name: nowhere}}
"""
VALUES = """\
exemptions:
- rules: [security.privileged]
  namespaces: [gpu-debug]
  reason: NCCL tests need it
"""


@functools.cache
def schema(kind: str) -> dict[str, Any]:
    for path in CRDS.glob("*.yaml"):
        crd = yaml.safe_load(path.read_text(encoding="utf-8"))
        if crd["spec"]["names"]["kind"] == kind:
            [version] = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha2"]
            found: dict[str, Any] = version["schema"]["openAPIV3Schema"]
            return found
    raise AssertionError(f"no CRD of {kind} in {CRDS}")


def undeclared(value: Any, node: dict[str, Any], path: str = "") -> list[str]:
    """The fields of `value` its structural schema does not declare (the API server prunes
    them)."""
    out: list[str] = []
    if isinstance(value, dict) and not node.get("x-kubernetes-preserve-unknown-fields"):
        props, extra = node.get("properties"), node.get("additionalProperties")
        for key, sub in value.items():
            if props is not None and key in props:
                out += undeclared(sub, props[key], f"{path}.{key}")
            elif isinstance(extra, dict):
                out += undeclared(sub, extra, f"{path}.{key}")
            elif path != ".metadata":  # (ObjectMeta: the API server's own schema)
                out.append(f"{path}.{key}")
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        for i, item in enumerate(value):
            out += undeclared(item, node["items"], f"{path}[{i}]")
    return out


def check(report: dict[str, Any]) -> None:
    """The report is valid against its CRD's schema, and writes no field it lacks."""
    node = schema(report["kind"])
    jsonschema.Draft4Validator(node).validate(report)
    assert undeclared(report, node) == []


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A folder of inputs: the TrainJobs, a ClusterTrainingRuntime, the policy values."""
    folder = tmp_path_factory.mktemp("policyreport")
    (folder / "jobs.yaml").write_text(INPUTS, encoding="utf-8")
    (folder / "values.yaml").write_text(VALUES, encoding="utf-8")
    cluster = yaml.safe_load((ROOT / "runtimes" / "torch-distributed.yaml").read_text())
    cluster["metadata"]["name"] = "team-torch"
    (folder / "runtime.yaml").write_text(yaml.safe_dump(cluster), encoding="utf-8")
    return folder.as_posix()


def _run(folder: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[dict[str, Any]]]:
    code = main(["validate", f"{folder}/jobs.yaml", f"{folder}/runtime.yaml",
                 "--policy-values", f"{folder}/values.yaml", "-o", "policyreport"])
    out = capsys.readouterr().out
    return code, [doc for doc in yaml.safe_load_all(out) if doc]


def _results(report: dict[str, Any], name: str) -> dict[str, list[str]]:
    """rule ids by result, of the object `name`."""
    out: dict[str, list[str]] = {}
    for r in report["results"]:
        if any(res["name"] == name for res in r["resources"]):
            out.setdefault(r["result"], []).append(r["rule"])
    return out


def test_reports_are_schema_valid_one_per_namespace(
        written: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, reports = _run(written, capsys)
    assert code == 1  # the privileged TrainJob and the lost one
    assert [(r["kind"], r["metadata"].get("namespace")) for r in reports] == [
        ("PolicyReport", "default"), ("PolicyReport", "gpu-debug"), ("PolicyReport", "team-a"),
        ("ClusterPolicyReport", None)]
    for report in reports:
        check(report)
        assert report["apiVersion"] == "wgpolicyk8s.io/v1alpha2"
        assert report["metadata"]["name"] == "trainjob-compiler"
        counted = {k: 0 for k in report["summary"]}
        for r in report["results"]:
            counted[r["result"]] += len(r["resources"])
            assert r["source"] == "trainjob-compiler"
            assert r["policy"] == (r["rule"].split(".")[0] if "." in r["rule"]
                                   else "admission")
        assert counted == report["summary"]


def test_results_say_fail_warn_skip_and_pass(written: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    _, reports = _run(written, capsys)
    lost, exempted, team, cluster = reports
    privileged = _results(team, "privileged")
    assert privileged["fail"] == ["security.privileged"]
    assert "security.privileged" not in _results(team, "fine").get("fail", [])
    assert "security.privileged" in _results(team, "fine")["pass"]
    [fail] = [r for r in team["results"] if r["result"] == "fail"]
    assert fail["severity"] == "high"
    assert fail["message"] == "containers must not run privileged"
    assert fail["resources"] == [{"apiVersion": "trainer.kubeflow.org/v1alpha1",
                                  "kind": "TrainJob", "name": "privileged",
                                  "namespace": "team-a"}]
    assert fail["properties"]["jobSetFieldPath"].endswith("securityContext.privileged")
    assert fail["properties"]["location"].endswith("jobs.yaml:15:58")  # privileged: true
    [skip] = [r for r in exempted["results"] if r["result"] == "skip"]
    assert skip["rule"] == "security.privileged"
    assert skip["properties"]["exemption"] == \
        "exemption #1 of the policy settings: NCCL tests need it"
    assert _results(lost, "lost") == {"fail": ["TJC-WEBHOOK-RUNTIME-NOT-FOUND"]}  # not compiled
    [missing] = lost["results"]
    assert (missing["policy"], missing["severity"]) == ("admission", "high")
    assert missing["properties"]["fieldPath"] == "spec.runtimeRef"
    runtime = _results(cluster, "team-torch")
    assert "security.run-as-non-root" in runtime["warn"]
    assert "security.privileged" in runtime["pass"]
    assert [r["resources"][0].get("namespace") for r in cluster["results"]] == \
        [None] * len(cluster["results"])


def test_the_output_is_the_same_bytes_every_run(written: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    main(["validate", f"{written}/jobs.yaml", "-o", "policyreport"])
    first = capsys.readouterr().out
    main(["validate", f"{written}/jobs.yaml", "-o", "policyreport"])
    assert capsys.readouterr().out == first


def test_a_report_too_large_for_etcd_keeps_its_first_results(
        monkeypatch: pytest.MonkeyPatch) -> None:
    subjects = [Subject(ObjectRef("TrainJob", f"job-{i:03}", "ns"), rules=("images.tag",))
                for i in range(300)]
    found = [Diagnostic(Severity.ERROR, "security.privileged", "x" * 200, ("spec",),
                        ObjectRef("TrainJob", f"job-{i:03}", "ns"), subject="policy")
             for i in range(300)]
    whole = policyreport.report("ns", subjects, found)
    monkeypatch.setattr(policyreport, "MAX_BYTES", 20_000)
    cut = policyreport.report("ns", subjects, found)
    check(cut)
    kept = len(cut["results"])
    assert 0 < kept < len(whole["results"])
    assert cut["results"] == whole["results"][:kept]
    assert cut["metadata"]["annotations"] == {
        "trainjob-compiler/results-left-out": str(len(whole["results"]) - kept)}
    assert cut["summary"] == whole["summary"] == {"pass": 300, "fail": 300, "warn": 0,
                                                  "error": 0, "skip": 0}
