"""`--trainer-version` and `--jobset-version` on every path (render, validate, explain, diff,
krm, the Argo CD plugin, the library's `validate_documents`), and the repository's pin in
`.tjc.yaml` that they all read: each renders what the chosen release's own code makes (the
torch example runs the image of that release's torch-distributed runtime)."""

from __future__ import annotations

import io
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from compiler import validate_documents
from compiler.cli.main import main
from compiler.io.builtin import builtin_runtimes

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
TORCH = EXAMPLES / "torch-mnist.yaml"
LORA = EXAMPLES / "torchtune-llama3.2-1b-lora.yaml"
V221_IMAGE = "pytorch/pytorch:2.10.0-cuda12.8-cudnn9-runtime"
V230_IMAGE = "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime"


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def _images(text: str) -> set[str]:
    return {c["image"] for d in yaml.safe_load_all(text) if d and d["kind"] == "JobSet"
            for rjob in d["spec"]["replicatedJobs"]
            for c in rjob["template"]["spec"]["template"]["spec"]["containers"]}


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository holding the torch and the LoRA examples, as the working folder."""
    (tmp_path / ".git").mkdir()
    shutil.copy(TORCH, tmp_path / "torch.yaml")
    shutil.copy(LORA, tmp_path / "lora.yaml")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_render_takes_the_release_from_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["render", str(TORCH)], capsys)
    assert code == 0 and _images(out) == {V230_IMAGE}, err
    code, out, err = run(["render", str(TORCH), "--trainer-version", "v2.2.1"], capsys)
    assert code == 0 and _images(out) == {V221_IMAGE}, err


def test_the_repository_pin_is_read_by_every_command_and_the_flag_wins(
        repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / ".tjc.yaml").write_text("trainerVersion: v2.2.1\n", encoding="utf-8")
    (repo / "sub").mkdir()
    os.chdir(repo / "sub")  # the pin is found from anywhere in the repository
    code, out, _ = run(["render", "../torch.yaml"], capsys)
    assert code == 0 and _images(out) == {V221_IMAGE}
    code, out, _ = run(["render", "../torch.yaml", "--passthrough"], capsys)
    assert code == 0 and _images(out) == {V221_IMAGE}
    code, out, _ = run(["render", "../torch.yaml", "--trainer-version", "v2.3.0"], capsys)
    assert code == 0 and _images(out) == {V230_IMAGE}
    code, out, _ = run(["explain", "../lora.yaml"], capsys)  # v2.2.1's QLoRA detection
    assert code == 0 and "llama3_2/1B_qlora_single_device" in out
    code, _, _ = run(["validate", "../torch.yaml", "--no-default-policies"], capsys)
    assert code == 0


@pytest.mark.parametrize(("config", "message"), [
    ("trainerVersion: v2.0.1\n", ".tjc.yaml: trainerVersion: Kubeflow Trainer v2.0.1 is not "
     "served: tjc reproduces v2.1.0 and later only"),
    ("trainerVersion: 2.2\n", ".tjc.yaml: trainerVersion must be a string such as v2.2.1"),
    ("trainerVersoin: v2.2.1\n", ".tjc.yaml: unknown key 'trainerVersoin'; expected "
     "trainerVersion, jobsetVersion"),
    ("jobsetVersion: v0.9.0\n", ".tjc.yaml: jobsetVersion: JobSet v0.9.0 is not known"),
])
def test_an_unusable_pin_is_a_usage_error_naming_the_file(
        repo: Path, capsys: pytest.CaptureFixture[str], config: str, message: str) -> None:
    (repo / ".tjc.yaml").write_text(config, encoding="utf-8")
    for verb in ("render", "validate"):
        code, out, err = run([verb, "torch.yaml"], capsys)
        assert code == 2 and out == "" and len(err.splitlines()) == 1, err
        assert message in err


def test_v2_0_is_refused_with_a_reason(capsys: pytest.CaptureFixture[str]) -> None:
    for verb in ("render", "validate", "explain"):
        code, out, err = run([verb, str(TORCH), "--trainer-version", "v2.0.1"], capsys)
        assert code == 2 and out == "" and len(err.splitlines()) == 1
        assert "v2.0.1 is not served: tjc reproduces v2.1.0 and later only" in err


def test_the_jobset_version_warns_where_its_api_server_drops_a_field(
        capsys: pytest.CaptureFixture[str]) -> None:
    tune = str(EXAMPLES / "torchtune-llama3.2-1b.yaml")
    runtime = str(ROOT / "schemas" / "releases" / "v2_2_1" / "runtimes" /
                  "torchtune-llama3.2-1b.yaml")  # v2.2.1's own, among the inputs
    for flags in ([], ["--trainer-version", "v2.2.1"], ["--jobset-version", "v0.12.0"]):
        code, out, _ = run(["validate", tune, "--no-default-policies", *flags], capsys)
        assert code == 0 and "TJC-JOBSET-DROPPED" not in out
    code, out, _ = run(["validate", tune, runtime, "--no-default-policies", "--trainer-version",
                        "v2.2.1", "--jobset-version", "v0.10.1"], capsys)
    dropped = [line for line in out.splitlines() if "TJC-JOBSET-DROPPED" in line]
    assert code == 0 and len(dropped) == 2, out  # the runtime's field, and the JobSet's
    assert any(line.startswith(f"{runtime}:") and "spec.template.spec.volumeClaimPolicies: "
               "JobSet v0.10.1 does not know this field" in line for line in dropped)
    assert any(line.startswith(f"{tune}:") and "spec.runtimeRef: JobSet "
               "spec.volumeClaimPolicies" in line and "install JobSet v0.11.1" in line
               for line in dropped)
    code, _, err = run(["render", tune, "--jobset-version", "v0.9.0"], capsys)
    assert code == 2 and "JobSet v0.9.0 is not known: tjc holds the API of JobSet v0.10.1, " \
        "v0.11.1, v0.12.0" in err


def _resource_list(config: dict[str, Any]) -> str:
    job = yaml.safe_load(TORCH.read_text(encoding="utf-8"))
    return json.dumps({"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList",
                       "items": [job], "functionConfig": {"apiVersion": "v1", "kind": "ConfigMap",
                                                          "data": config}})


def _stdin(text: str) -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BytesIO(text.encode()))


def test_krm_takes_the_release_from_its_function_config(
        repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    for config, image in (({}, V230_IMAGE), ({"trainerVersion": "v2.2.1"}, V221_IMAGE)):
        monkeypatch.setattr("sys.stdin", _stdin(_resource_list(config)))
        code, out, err = run(["krm"], capsys)
        items = yaml.safe_load(out)["items"]
        assert code == 0 and _images(yaml.safe_dump_all(items)) == {image}, err
    (repo / ".tjc.yaml").write_text("trainerVersion: v2.2.1\n", encoding="utf-8")
    monkeypatch.setattr("sys.stdin", _stdin(_resource_list({})))
    code, out, _ = run(["krm"], capsys)
    assert code == 0 and _images(yaml.safe_dump_all(yaml.safe_load(out)["items"])) == {
        V221_IMAGE}


def test_the_argo_cd_plugin_reads_the_pin_and_takes_the_flag(
        repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ARGOCD_ENV_TJC_ARGS", raising=False)
    (repo / "lora.yaml").unlink()
    code, out, _ = run(["argocd", "generate", "."], capsys)
    assert code == 0 and _images(out) == {V230_IMAGE}
    (repo / ".tjc.yaml").write_text("trainerVersion: v2.2.1\n", encoding="utf-8")
    code, out, _ = run(["argocd", "generate", "."], capsys)
    assert code == 0 and _images(out) == {V221_IMAGE}
    monkeypatch.setenv("ARGOCD_ENV_TJC_ARGS", "--trainer-version v2.3.0")
    code, out, _ = run(["argocd", "generate", "."], capsys)
    assert code == 0 and _images(out) == {V230_IMAGE}


def test_the_library_validates_as_the_release_given() -> None:
    """MPI's OpenMPI env names are reserved from v2.3.0 only (docs/releases.md V3)."""
    job = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
           "metadata": {"name": "mpi", "namespace": "default"},
           "spec": {"runtimeRef": {"name": "deepspeed-distributed"},
                    "trainer": {"env": [{"name": "OMPI_MCA_plm_rsh_args", "value": "-v"}]}}}
    rules = {d.rule for d in validate_documents([job]) if d.obj and d.obj.name == "mpi"}
    assert "TJC-WEBHOOK-MPI-RESERVED-ENV" in rules
    older = validate_documents([job], trainer_version="v2.2.1")
    assert not [d for d in older if d.obj and d.obj.name == "mpi" and d.severity.name == "ERROR"]
    assert len(builtin_runtimes("v2.1.0")) == 6 < len(builtin_runtimes()) == 8
