"""A JobSet written directly in the inputs meets the packs' JobSet rules, as a compiled one
does: it passed `tjc validate` with a notice, privileged and mounting the node's root."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml

from compiler.cli.main import main

JOBSET = """apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: direct, namespace: team}
spec:
  replicatedJobs:
  - name: node
    template:
      spec:
        template:
          spec:
            containers:
            - name: node
              image: "busybox:1"
              securityContext: {privileged: true, runAsNonRoot: true}
            volumes:
            - name: root
              hostPath: {path: /}
"""
DENIES = [
    "14:45: error: JobSet team/direct: spec.replicatedJobs[0].template.spec.template.spec."
    "containers[0].securityContext.privileged: containers must not run privileged "
    "[security.privileged]",
    "17:25: error: JobSet team/direct: spec.replicatedJobs[0].template.spec.template.spec."
    "volumes[0].hostPath: volume root is a hostPath volume: pods must not mount node paths "
    "[security.host-path]"]


@pytest.mark.parametrize("verb", [["validate"], ["render"], ["render", "--passthrough"]])
def test_a_jobset_in_the_inputs_meets_the_packs(verb: list[str], tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "jobset.yaml"
    path.write_text(JOBSET)
    code = main([*verb, "-q", str(path)])
    out, err = capsys.readouterr()
    found = [line for line in (out + err).splitlines() if ": error: " in line]
    assert code == 1 and found == [f"{path}:{line}" for line in DENIES]


def test_without_policies_it_is_skipped(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "jobset.yaml"
    path.write_text(JOBSET)
    assert main(["validate", "--no-default-policies", str(path)]) == 0
    assert "[TJC-INPUT-SKIPPED]" in capsys.readouterr().out


def test_an_exemption_by_namespace_holds_for_it(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    path, values = tmp_path / "jobset.yaml", tmp_path / "values.yaml"
    path.write_text(JOBSET)
    values.write_text("exemptions:\n- rules: [security]\n  namespaces: [team]\n"
                      "  reason: node diagnostics\n")
    assert main(["validate", "-q", "--policy-values", str(values), str(path)]) == 0


def test_krm_checks_it_too(capsys: pytest.CaptureFixture[str],
                           monkeypatch: pytest.MonkeyPatch) -> None:
    resource_list = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList",
                     "items": [yaml.safe_load(JOBSET)]}
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(
        yaml.safe_dump(resource_list).encode())))
    assert main(["krm"]) == 1
    result = yaml.safe_load(capsys.readouterr().out)
    assert sorted(r["tags"]["rule"] for r in result["results"] if r["severity"] == "error") \
        == ["security.host-path", "security.privileged"]
    assert [i["kind"] for i in result["items"]] == ["JobSet"]
