"""The upgrade preview: `tjc diff --trainer-version A --to-trainer-version B PATH...` renders
every TrainJob under both releases and names, for each change, the gate (or the release's data)
that causes it (`compiler.gitops.upgrade`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.cli.main import main
from compiler.core.release import release_of
from compiler.gitops import upgrade
from compiler.io.builtin import builtin_runtimes
from compiler.io.loader import Source, read_sources

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
PREVIEW = ["diff", "--trainer-version", "v2.2.1", "--to-trainer-version", "v2.3.0"]


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def _side(version: str) -> upgrade.Side:
    return upgrade.Side(release_of(version), builtin_runtimes(version))


def _changes(preview: upgrade.Preview, job: str) -> dict[str, upgrade.Change]:
    found = next(j for j in preview.jobs if j.name == job)
    return {change.where: change for change in found.changes}


def test_the_examples_from_v2_2_1_to_v2_3_0() -> None:
    """The torch image (the built-in runtimes), DeepSpeed's job order, dependsOn, fsGroup (its
    runtime) and SSH file modes (gate mpi_ssh_modes), and TorchTune's LoRA config (gate
    torchtune_bool_args: the LoRA example's `model.quantize_base=False`)."""
    preview = upgrade.preview(read_sources([str(EXAMPLES)]), _side("v2.2.1"), _side("v2.3.0"))
    assert {j.name for j in preview.jobs} == {
        "default/torch-mnist", "default/deepspeed-bert", "default/mlx-mnist",
        "default/xgboost-higgs", "default/tune-llama3-2-1b-lora", "ml-team/mnist"}
    assert all(j.status == "changed" and all(c.causes for c in j.changes) for j in preview.jobs)
    torch = _changes(preview, "default/torch-mnist")
    image = torch["JobSet torch-mnist: spec.replicatedJobs[node].template.spec.template.spec."
                  "containers[node].image"]
    assert (image.before, image.after, image.causes) == (
        "pytorch/pytorch:2.10.0-cuda12.8-cudnn9-runtime",
        "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime", (upgrade.RUNTIMES_CAUSE,))
    deepspeed = _changes(preview, "default/deepspeed-bert")
    order = deepspeed["JobSet deepspeed-bert: spec.replicatedJobs (order)"]
    assert (order.before, order.after, order.causes) == ("launcher, node", "node, launcher",
                                                         (upgrade.RUNTIMES_CAUSE,))
    launcher = "JobSet deepspeed-bert: spec.replicatedJobs[launcher]"
    assert deepspeed[f"{launcher}.dependsOn"].after == [{"name": "node", "status": "Ready"}]
    mode = deepspeed[f"{launcher}.template.spec.template.spec.volumes[mpi-ssh-auth].secret."
                     "defaultMode"]
    assert (mode.before, mode.after, mode.causes) == (None, 256, ("mpi_ssh_modes (C2)",))
    hostfile = deepspeed["ConfigMap deepspeed-bert-mpi-hostfile: data.hostfile"]
    assert hostfile.after.startswith("deepspeed-bert-node-0-0")
    lora = _changes(preview, "default/tune-llama3-2-1b-lora")
    config = lora["JobSet tune-llama3-2-1b-lora: spec.replicatedJobs[node].template.spec."
                  "template.spec.containers[node].command[4]"]
    assert (config.before, config.after, config.causes) == (
        "llama3_2/1B_qlora_single_device", "llama3_2/1B_lora_single_device",
        ("torchtune_bool_args (C4)",))


def test_what_stops_being_valid_names_its_gate() -> None:
    """An OpenMPI env name in trainer.env: taken by v2.2.1, reserved from v2.3.0 (V3)."""
    job = Source("job.yaml", """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: mpi, namespace: default}
spec:
  runtimeRef: {name: deepspeed-distributed}
  trainer:
    env: [{name: OMPI_MCA_plm_rsh_args, value: -v}]
""")
    preview = upgrade.preview([job], _side("v2.2.1"), _side("v2.3.0"))
    [found] = preview.jobs
    assert found.status == "stops being valid" and found.causes == ("mpi_reserved_envs (V3)",)
    assert any("TJC-WEBHOOK-MPI-RESERVED-ENV" in line for line in found.errors)
    back = upgrade.preview([job], _side("v2.3.0"), _side("v2.2.1"))
    assert back.jobs[0].status == "starts being valid"


def test_the_cli_prints_text_and_markdown(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run([*PREVIEW, str(EXAMPLES)], capsys)
    assert code == 1, err
    assert "# changed TrainJob default/deepspeed-bert (v2.2.1 -> v2.3.0)\n" in out
    assert "    caused by: mpi_ssh_modes (C2)\n" in out
    assert out.endswith("# 6 TrainJob(s) change, 0 stop(s) being valid, 0 start(s) being valid "
                        "(Kubeflow Trainer v2.2.1 -> v2.3.0)\n")
    code, out, _ = run([*PREVIEW, str(EXAMPLES), "-o", "markdown"], capsys)
    assert code == 1 and out.startswith("**tjc upgrade preview**: 6 TrainJob(s) change")
    assert "| field | v2.2.1 | v2.3.0 | caused by |" in out
    assert "`torchtune_bool_args (C4)`" in out
    code, out, _ = run([*PREVIEW[:3], "--to-trainer-version", "v2.2.1",
                        str(EXAMPLES / "jax-mnist.yaml")], capsys)
    assert code == 0 and out.startswith("# 0 TrainJob(s) change")
    code, _, err = run([*PREVIEW[:3], "--to-trainer-version", "v2.0.0", str(EXAMPLES)], capsys)
    assert code == 2 and "v2.0.0 is not served" in err


def test_every_change_from_v2_1_0_has_a_cause() -> None:
    """From v2.1.0 the runtimePatches of the custom-runtime example start being valid (v2.1's
    CRD has no such field: the release data), the jax examples too (v2.1.0 has no JAX runtime
    or plugin), and the torchtune runtimes' PVC becomes volumeClaimPolicies (R3)."""
    preview = upgrade.preview(read_sources([str(EXAMPLES)]), _side("v2.1.0"), _side("v2.3.0"))
    jobs = {j.name: j for j in preview.jobs}
    assert all(j.causes for j in jobs.values() if j.status != "changed")
    assert all(c.causes for j in jobs.values() for c in j.changes)
    assert jobs["team-vision/resnet50"].status == "starts being valid"
    assert jobs["team-vision/resnet50"].causes == (upgrade.DATA_CAUSE,)
    assert upgrade.RUNTIMES_CAUSE in jobs["default/jax-mnist"].causes
    claims = _changes(preview, "default/tune-llama3-2-1b")["JobSet tune-llama3-2-1b: spec."
                                                           "volumeClaimPolicies"]
    assert claims.before is None and upgrade.RUNTIMES_CAUSE in claims.causes
