"""CLI acceptance tests for `tjc render`: output, formats, exit codes, error lines."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from compiler.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
LOCATED = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+):(?P<col>\d+): (error|warning|notice): ")

TRAINJOB = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: {name}
  namespace: default
spec:
  runtimeRef:
    name: {runtime}
  trainer:
    numNodes: {nodes}
"""


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_examples_render_the_jax_jobset(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["render", str(EXAMPLES)], capsys)
    assert code == 0, err
    jobsets = [d for d in yaml.safe_load_all(out) if d["kind"] == "JobSet"]
    jax = next(j for j in jobsets if j["metadata"]["name"] == "jax-mnist")
    node = jax["spec"]["replicatedJobs"][0]["template"]["spec"]
    assert node["parallelism"] == node["completions"] == 2
    container = node["template"]["spec"]["containers"][0]
    env = {e["name"]: e for e in container["env"]}
    assert env["JAX_NUM_PROCESSES"]["value"] == "2"
    assert env["JAX_PROCESS_ID"]["valueFrom"]["fieldRef"]["fieldPath"] == (
        "metadata.annotations['batch.kubernetes.io/job-completion-index']")
    assert env["JAX_COORDINATOR_ADDRESS"]["value"] == "jax-mnist-node-0-0.jax-mnist:29500"
    assert container["ports"] == [{"containerPort": 29500}]


def test_broken_documents_give_one_located_line_each(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(TRAINJOB.format(name="a", runtime="jax-distributed", nodes='"two"')
                   + "---\n" + TRAINJOB.format(name="b", runtime="missing", nodes=1)
                   + "---\nkind: [unclosed\n")
    code, out, err = run(["render", str(bad)], capsys)
    assert code == 1
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 3, err
    for line in lines:
        match = LOCATED.match(line)
        assert match and match["file"] == str(bad), line
    assert any(":10:15: error:" in ln and "spec.trainer.numNodes" in ln for ln in lines), err
    assert "Traceback" not in err


def test_other_trainjobs_still_render(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "ok.yaml").write_text(TRAINJOB.format(name="ok", runtime="jax-distributed",
                                                      nodes=1))
    (tmp_path / "bad.yaml").write_text(TRAINJOB.format(name="bad", runtime="nope", nodes=1))
    code, out, _ = run(["render", str(tmp_path)], capsys)
    assert code == 1
    assert [d["metadata"]["name"] for d in yaml.safe_load_all(out)] == ["ok"]


def test_json_output_is_a_list(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["render", str(EXAMPLES), "-o", "json"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert doc["kind"] == "List" and doc["items"]


def test_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    text = TRAINJOB.format(name="piped", runtime="jax-distributed", nodes=3)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    code, out, _ = run(["render", "-"], capsys)
    assert code == 0
    assert yaml.safe_load(out)["metadata"]["name"] == "piped"


def test_no_builtin_runtimes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(TRAINJOB.format(name="x", runtime="jax-distributed", nodes=1))
    code, _, err = run(["render", str(job), "--no-builtin-runtimes"], capsys)
    assert code == 1
    assert "clusterTrainingRuntime must be created before the TrainJob" in err
    assert f"{job}:8:5: error: TrainJob default/x: spec.runtimeRef: " in err


def test_output_dir_never_overwrites_user_files(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = tmp_path / "out"
    code, out, _ = run(["render", str(EXAMPLES), "--output-dir", str(out_dir)], capsys)
    assert code == 0 and out == ""
    written = out_dir / "default" / "jax-mnist.yaml"
    assert yaml.safe_load(written.read_text())["kind"] == "JobSet"
    code, _, _ = run(["render", str(EXAMPLES), "--output-dir", str(out_dir)], capsys)
    assert code == 0, "files tjc wrote may be rewritten"
    written.write_text("mine\n")
    (out_dir / ".tjc-render-manifest").unlink()
    code, _, err = run(["render", str(EXAMPLES), "--output-dir", str(out_dir)], capsys)
    assert code == 1 and "not overwritten" in err
    assert written.read_text() == "mine\n"


def test_skipped_kinds_are_noticed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
    (tmp_path / "odd.yaml").write_text(
        "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainThing\nmetadata: {name: t}\n")
    code, _, err = run(["render", str(tmp_path)], capsys)
    assert code == 1
    assert "notice: skipped ConfigMap" in err
    assert "odd.yaml:2:7: error: kind: unknown kind TrainThing" in err
    code, _, err = run(["render", str(tmp_path / "cm.yaml"), "-q"], capsys)
    assert code == 0 and err == ""


@pytest.mark.parametrize("args", [["render"], ["render", "x", "-o", "xml"], ["frobnicate"]])
def test_usage_errors_exit_2(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 2


def test_unreadable_input_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["render", "/no/such/file.yaml"], capsys)
    assert code == 2 and "cannot read /no/such/file.yaml" in err


def test_help_ends_with_examples() -> None:
    proc = subprocess.run([sys.executable, "-m", "compiler", "render", "--help"],
                          capture_output=True, text=True, check=True)
    assert proc.stdout.rstrip().splitlines()[-1].strip().startswith("kubectl get trainjob")
    assert "examples:" in proc.stdout


def test_json_input_and_kubectl_lists(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = yaml.safe_load(TRAINJOB.format(name="from-json", runtime="jax-distributed", nodes=2))
    (tmp_path / "job.json").write_text(json.dumps(job, indent=2))
    listed = {"apiVersion": "v1", "kind": "List", "items": [
        {**job, "metadata": {"name": "listed", "namespace": "default"}},
        {**job, "metadata": {"name": "bad", "namespace": "default"},
         "spec": {"runtimeRef": {"name": "jax-distributed"}, "trainer": {"numNodes": "x"}}}]}
    (tmp_path / "list.yaml").write_text(yaml.safe_dump(listed))
    code, out, err = run(["render", str(tmp_path)], capsys)
    assert code == 1
    assert [d["metadata"]["name"] for d in yaml.safe_load_all(out)] == ["from-json", "listed"]
    line = f"{tmp_path / 'list.yaml'}:"
    assert line in err and "items" not in err.split("error:")[1].split(":")[0]
    assert "spec.trainer.numNodes: expected an integer, got string" in err


def test_mpi_secret_only_on_request(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = tmp_path / "mpi.yaml"
    job.write_text(TRAINJOB.format(name="ds", runtime="deepspeed-distributed", nodes=2))
    code, out, err = run(["render", str(job)], capsys)
    assert code == 0
    assert [d["kind"] for d in yaml.safe_load_all(out)] == ["ConfigMap", "JobSet"]
    assert "needs Secret ds-mpi-ssh-auth" in err and "PRIVATE" not in out
    code, out, _ = run(["render", str(job), "--mpi-ssh-key", "generate"], capsys)
    assert code == 0
    secret = next(d for d in yaml.safe_load_all(out) if d["kind"] == "Secret")
    assert secret["type"] == "kubernetes.io/ssh-auth" and secret["immutable"] is True
    code, _, err = run(["render", str(job), "--mpi-ssh-key", str(tmp_path / "nokey")], capsys)
    assert code == 2 and "cannot read SSH key" in err
