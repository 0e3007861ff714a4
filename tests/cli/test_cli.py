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

ROOT = Path(__file__).resolve().parents[2]
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
    *lines, summary = err.splitlines()
    assert len(lines) == 3, err
    assert summary == "0 of 2 TrainJobs rendered: 3 errors, 0 warnings, 0 notices"
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
    assert proc.stdout.rstrip().splitlines()[-1].strip().startswith("tjc render -j 4 ")
    assert "examples (run from the repository's top folder):" in proc.stdout


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


# --- --namespace: the namespace the inputs are applied into -------------------------------

FLUX_RUNTIME = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata:
  name: flux-distributed
spec:
  mlPolicy:
    numNodes: 1
    flux:
      numProcPerNode: 2
  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            metadata:
              labels:
                trainer.kubeflow.org/trainjob-ancestor-step: trainer
            spec:
              template:
                spec:
                  containers:
                    - name: node
                      image: ubuntu:jammy
"""
FLUX_TRAINJOB = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: lammps
{namespace}  uid: 3f1e2d4c-5b6a-4789-9abc-def012345678
spec:
  runtimeRef:
    name: flux-distributed
  trainer:
    numNodes: 2
    command: ["lmp", "-in", "in.reaxff.hns"]
"""
CONNECT = 'default_connect = \\"tcp://%h.lammps.{}.svc.cluster.local:%p\\"'


def flux_files(folder: Path, namespace: str | None) -> list[str]:
    """The Flux runtime and a TrainJob, with `namespace` or without one."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "runtime.yaml").write_text(FLUX_RUNTIME)
    line = f"  namespace: {namespace}\n" if namespace else ""
    (folder / "job.yaml").write_text(FLUX_TRAINJOB.format(namespace=line))
    return [str(folder / "runtime.yaml"), str(folder / "job.yaml")]


def test_namespace_places_a_trainjob_that_names_none(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A Flux TrainJob without a namespace, rendered --namespace hpc, is the same TrainJob
    with namespace: hpc (the broker address and every object's namespace); so with
    --default-namespace and in two worker processes."""
    named = flux_files(tmp_path / "named", "hpc")
    code, want, err = run(["render", "-q", "--no-default-policies", *named], capsys)
    assert code == 0, err
    assert CONNECT.format("hpc") in want
    assert {d["metadata"]["namespace"] for d in yaml.safe_load_all(want)} == {"hpc"}
    bare = flux_files(tmp_path / "bare", None)
    for flags in (["--namespace", "hpc"], ["-n", "hpc"], ["--default-namespace", "hpc"],
                  ["--namespace", "hpc", "-j", "2"]):
        code, out, err = run(["render", "-q", "--no-default-policies", *flags, *bare], capsys)
        assert (code, out, err) == (0, want, ""), flags


def test_namespace_places_training_runtimes_too(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A TrainingRuntime and a TrainJob without namespaces are both in NS (the TrainJob uses
    it); a TrainingRuntime of namespace default is not the TrainJob's, which is in NS."""
    runtime = yaml.safe_load((ROOT / "runtimes" / "torch-distributed.yaml").read_text())
    runtime["kind"] = "TrainingRuntime"
    runtime["metadata"] = {"name": "mine"}
    (tmp_path / "runtime.yaml").write_text(yaml.safe_dump(runtime))
    job = tmp_path / "job.yaml"
    job.write_text(TRAINJOB.format(name="x", runtime="mine\n    kind: TrainingRuntime", nodes=2)
                   .replace("  namespace: default\n", ""))
    code, out, err = run(["render", "-q", "--no-default-policies", "--namespace", "team-a",
                          str(tmp_path)], capsys)
    assert code == 0, err
    assert yaml.safe_load(out)["metadata"] == {"name": "x", "namespace": "team-a"}
    runtime["metadata"]["namespace"] = "default"
    (tmp_path / "runtime.yaml").write_text(yaml.safe_dump(runtime))
    code, out, err = run(["render", "--no-default-policies", "--default-namespace", "team-a",
                          str(tmp_path)], capsys)
    assert code == 1 and out == ""
    assert f"{job}:7:5: error: TrainJob team-a/x: spec.runtimeRef: " in err
    assert "exists in namespace default" in err


def test_namespace_refuses_a_trainjob_of_another_namespace(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """As kubectl apply -n hpc: an error at metadata.namespace, no objects; validate says the
    same; --default-namespace (as Argo CD and Helm apply) keeps the TrainJob's own."""
    files = flux_files(tmp_path, "other")
    line = (f"{files[1]}:5:14: error: TrainJob other/lammps: metadata.namespace: namespace "
            "other does not match hpc, the namespace the inputs are applied into (--namespace)")
    code, out, err = run(["render", "-q", "--no-default-policies", "--namespace", "hpc",
                          *files], capsys)
    assert (code, out) == (1, "")
    assert err.startswith(line) and err.splitlines()[0].endswith(
        "[TJC-INPUT-NAMESPACE-MISMATCH]")
    code, out, _ = run(["validate", "--no-default-policies", "--namespace", "hpc", *files],
                       capsys)
    assert code == 1 and out.startswith(line)
    code, out, err = run(["render", "-q", "--no-default-policies", "--default-namespace", "hpc",
                          *files], capsys)
    assert code == 0, err
    assert CONNECT.format("other") in out
    code, out, err = run(["render", "-q", "--no-default-policies", "--default-namespace", "hpc",
                          "--namespace", "hpc", *files], capsys)  # the last one given counts
    assert (code, out) == (1, "") and err.startswith(line)
    with pytest.raises(SystemExit) as exc:
        main(["render", "--namespace", "Not_A_Namespace", *files])
    assert exc.value.code == 2
    assert "'Not_A_Namespace' is not a namespace name" in capsys.readouterr().err


def test_a_flux_trainjob_without_a_namespace_needs_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Its broker address names the namespace: without metadata.namespace or --namespace it
    is an error at metadata, in render and validate alike (it was `tcp://%h.lammps..svc`).
    A TrainJob whose objects name no namespace still renders without one."""
    files = flux_files(tmp_path, None)
    line = (f"{files[1]}:4:3: error: TrainJob lammps: metadata: this Flux TrainJob has no "
            "namespace, but its broker config names it")
    code, out, err = run(["render", "-q", "--no-default-policies", *files], capsys)
    assert (code, out) == (1, "")
    assert err.startswith(line) and "set metadata.namespace" in err and "--namespace" in err
    assert err.splitlines()[0].endswith("[TJC-FLUX-NO-NAMESPACE]")
    code, out, _ = run(["validate", "--no-default-policies", *files], capsys)
    assert code == 1 and out.startswith(line)
    torch = tmp_path / "torch.yaml"
    torch.write_text(TRAINJOB.format(name="t", runtime="torch-distributed", nodes=2)
                     .replace("  namespace: default\n", ""))
    code, out, err = run(["render", "-q", "--no-default-policies", str(torch)], capsys)
    assert code == 0, err
    assert all("namespace" not in d["metadata"] for d in yaml.safe_load_all(out))
