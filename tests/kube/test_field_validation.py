"""kubectl's strictness: an unknown field in a Trainer kind is an error by default (kubectl
apply's strict field validation makes the API server refuse the object), with the declared
field it most likely means; `--field-validation=warn|ignore` relaxes it as kubectl's
`--validate` does, on validate, render, krm and the library alike."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml

from compiler import CompileOptions, compile_trainjob
from compiler.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = yaml.safe_load((ROOT / "compiler" / "runtimes" / "torch-distributed.yaml").read_text())
TYPO = """apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: typo, namespace: team}
spec:
  runtimeRef: {name: torch-distributed}
  trainer:
    numNode: 4
    image: "repo/x:1"
    comand: [python, train.py]
"""


@pytest.mark.parametrize("verb", ["validate", "render"])
def test_a_typo_is_an_error_with_the_field_it_means(
        verb: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`numNode: 4` and `comand:` gave a JobSet with parallelism 1 and no command, exit 0."""
    job = tmp_path / "job.yaml"
    job.write_text(TYPO)
    code = main([verb, "-q", "--no-default-policies", str(job)])
    out, err = capsys.readouterr()
    lines = [line for line in (out + err).splitlines() if "TJC-UNKNOWN-FIELD" in line]
    assert code == 1 and "kind: JobSet" not in out
    assert lines == [
        f"{job}:7:14: error: TrainJob team/typo: spec.trainer.numNode: unknown field (did you "
        "mean 'numNodes'?); kubectl apply refuses it (strict field validation); with "
        "--field-validation=warn or ignore it is dropped and has no effect [TJC-UNKNOWN-FIELD]",
        f"{job}:9:13: error: TrainJob team/typo: spec.trainer.comand: unknown field (did you "
        "mean 'command'?); kubectl apply refuses it (strict field validation); with "
        "--field-validation=warn or ignore it is dropped and has no effect [TJC-UNKNOWN-FIELD]"]


@pytest.mark.parametrize("mode, code, severity", [("warn", 0, "warning"), ("ignore", 0, None)])
@pytest.mark.parametrize("verb", ["validate", "render"])
def test_field_validation_relaxed(mode: str, code: int, severity: str | None, verb: str,
                                  tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(TYPO)
    assert main([verb, "-q", "--no-default-policies", "--field-validation", mode,
                 str(job)]) == code
    out, err = capsys.readouterr()
    found = [line for line in (out + err).splitlines() if "TJC-UNKNOWN-FIELD" in line]
    assert len(found) == (2 if severity else 0)
    assert all(f": {severity}: " in line for line in found)
    if verb == "render":
        assert "kind: JobSet" in out


def test_unknown_metadata_and_runtime_fields(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """ObjectMeta is not detailed in the CRDs, but the API server knows its fields; a
    runtime's pod template is checked as deep as the CRD declares it."""
    runtime = yaml.safe_load(yaml.safe_dump(RUNTIME))
    runtime["metadata"]["lables"] = {"a": "b"}
    node = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]
    node["template"]["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    path = tmp_path / "rt.yaml"
    path.write_text(yaml.safe_dump(runtime))
    assert main(["validate", "-q", "--no-default-policies", "--no-builtin-runtimes",
                 str(path)]) == 1
    out = capsys.readouterr().out
    assert "metadata.lables: unknown field (did you mean 'labels'?)" in out
    assert "containers[0].imagePullPolicyy: unknown field (did you mean 'imagePullPolicy'?)" \
        in out


def test_the_library_is_strict_too() -> None:
    job = yaml.safe_load(TYPO)
    result = compile_trainjob(job, RUNTIME)
    assert not result.ok and {d.rule for d in result.diagnostics} == {"TJC-UNKNOWN-FIELD"}
    relaxed = compile_trainjob(job, RUNTIME, options=CompileOptions(field_validation="warn"))
    assert relaxed.ok and relaxed.objects
    runtime = yaml.safe_load(yaml.safe_dump(RUNTIME))
    runtime["spec"]["mlPolicyy"] = {}
    fixed = yaml.safe_load(TYPO.replace("numNode", "numNodes").replace("comand", "command"))
    assert not compile_trainjob(fixed, runtime).ok
    assert compile_trainjob(fixed, runtime, validate=False).ok  # upstream's controller


def test_krm_field_validation(capsys: pytest.CaptureFixture[str],
                              monkeypatch: pytest.MonkeyPatch) -> None:
    def krm(config: dict[str, object]) -> int:
        resource_list = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList",
                         "items": [yaml.safe_load(TYPO)],
                         "functionConfig": {"kind": "X", "spec": {"defaultPolicies": False,
                                                                  **config}}}
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(
            yaml.safe_dump(resource_list).encode())))
        return main(["krm"])

    assert krm({}) == 1
    assert krm({"fieldValidation": "warn"}) == 0
    capsys.readouterr()
    assert krm({"fieldValidation": "lenient"}) == 2
    assert "fieldValidation must be one of strict, warn, ignore" in capsys.readouterr().err


def test_an_object_without_apiversion_and_kind(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A document with metadata or spec but no apiVersion and kind was skipped with a notice
    (exit 0); kubectl refuses it. Other YAML files (no metadata, no spec) stay skipped."""
    (tmp_path / "job.yaml").write_text("metadata: {name: a}\nspec: {runtimeRef: {name: x}}\n")
    (tmp_path / "ci.yaml").write_text("on: push\njobs: {test: {runs-on: x}}\n")
    assert main(["validate", "-q", "--no-default-policies", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"{tmp_path / 'job.yaml'}:1:1: error: document has no " \
        "apiVersion and kind; expected a TrainJob, TrainingRuntime or ClusterTrainingRuntime " \
        "[TJC-INPUT-NO-KIND]"
    assert "ci.yaml" not in out
