"""Inputs of the second hostile review that gave a traceback, a wrong exit code or silence:
each now gives a located line (or a one-line error) and the documented exit code."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from compiler import compile_trainjob, prepare_runtime
from compiler.cli.main import main
from compiler.common.diagnostics import format_path

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = yaml.safe_load((ROOT / "compiler" / "runtimes" / "torch-distributed.yaml").read_text())
JOB = """apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {{name: {name}, namespace: {namespace}}}
spec:
  runtimeRef: {{name: torch-distributed}}
  trainer: {{image: "repo/train:1", resourcesPerNode: {{limits: {{cpu: 1}}}}}}
"""


def _job(name: str = "a", namespace: str = "team") -> str:
    return JOB.format(name=name, namespace=namespace)


def _trainjob(spec: dict[Any, Any]) -> dict[str, Any]:
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": "a", "namespace": "team"}, "spec": spec}


# --- the library: diagnostics, never exceptions ---------------------------------------------

@pytest.mark.parametrize("validate", [True, False])
@pytest.mark.parametrize("spec, path", [
    ({None: 1, "runtimeRef": {"name": "torch-distributed"}}, "spec"),
    ({"runtimeRef": {"name": "torch-distributed", None: 2}}, "spec.runtimeRef"),
    ({"runtimeRef": {"name": "torch-distributed"}, "trainer": {"env": [{True: 1}]}},
     "spec.trainer.env[0]"),
    ({"runtimeRef": {"name": "torch-distributed"}, 1: 1}, "spec"),
])
def test_a_mapping_key_that_is_not_a_string(spec: dict[Any, Any], path: str,
                                            validate: bool) -> None:
    """`~: 1` in a TrainJob's spec raised TypeError from the path formatting; kubectl refuses
    such a document (sigs.k8s.io/yaml: unsupported map key), so the library says so."""
    result = compile_trainjob(_trainjob(spec), RUNTIME, validate=validate)
    assert not result.ok
    assert [(d.rule, d.field_path) for d in result.diagnostics] == [("TJC-SCHEMA-KEY", path)]
    assert "is not a string" in result.diagnostics[0].message


def test_a_runtime_with_a_key_that_is_not_a_string() -> None:
    runtime = yaml.safe_load(yaml.safe_dump(RUNTIME))
    runtime["metadata"]["labels"] = {None: "x"}
    prepared = prepare_runtime(runtime)
    assert [(d.rule, d.field_path) for d in prepared.diagnostics] == [
        ("TJC-SCHEMA-KEY", "metadata.labels")]
    result = compile_trainjob(_trainjob({"runtimeRef": {"name": "torch-distributed"}}), runtime)
    assert not result.ok and "TJC-SCHEMA-KEY" in {d.rule for d in result.diagnostics}


def test_a_path_part_of_any_type_is_printed() -> None:
    odd: Any = ("spec", None, 2, "a.b")  # a path the type does not allow, from a caller's dict
    assert format_path(odd) == "spec[None][2][a.b]"


# --- tjc validate -----------------------------------------------------------------------------

def test_validate_runtimes_that_do_not_parse(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """`--runtimes BROKEN.yaml` was dropped without a word (exit 0): the runtime a TrainJob
    needs may be the one that does not parse."""
    (tmp_path / "broken.yaml").write_text("a: [\n")
    (tmp_path / "job.yaml").write_text(_job())
    code = main(["validate", "-q", "--no-default-policies", "--runtimes",
                 str(tmp_path / "broken.yaml"), str(tmp_path / "job.yaml")])
    out = capsys.readouterr().out
    assert code == 1
    assert f"{tmp_path / 'broken.yaml'}:2:1: error: cannot parse YAML" in out


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_validate_two_trainjobs_with_one_namespace_and_name(
        jobs: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two TrainJobs team/a in one run passed (exit 0); applied, one replaces the other. In
    worker processes the parent sees every file's TrainJobs, in input order."""
    (tmp_path / "one.yaml").write_text(_job() + "---\n" + _job("b"))
    (tmp_path / "two.yaml").write_text(_job("b", "other") + "---\n" + _job())
    code = main(["validate", "-q", "--no-default-policies", "-j", jobs,
                 str(tmp_path / "one.yaml"), str(tmp_path / "two.yaml")])
    out = capsys.readouterr().out
    assert code == 1
    assert out.splitlines()[:-1] == [
        f"{tmp_path / 'two.yaml'}:10:18: error: TrainJob team/a: metadata.name: a second "
        f"TrainJob team/a in the inputs; applied, one "
        "would replace the other [TJC-TRAINJOB-DUPLICATE]"]


def test_validate_trainjobs_without_namespace_in_two_folders(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Without a namespace a TrainJob gets the one of the application its folder belongs to,
    so only two of one folder are the same object."""
    for folder in ("dev", "prod"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "job.yaml").write_text(_job().replace(", namespace: team", ""))
    assert main(["validate", "-q", "--no-default-policies", str(tmp_path)]) == 0
    (tmp_path / "dev" / "again.yaml").write_text(_job().replace(", namespace: team", ""))
    assert main(["validate", "-q", "--no-default-policies", str(tmp_path)]) == 1
    assert "TJC-TRAINJOB-DUPLICATE" in capsys.readouterr().out


# --- tjc krm ------------------------------------------------------------------------------------

def test_krm_an_index_annotation_of_unicode_digits(capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """`config.kubernetes.io/index: "²"` passed str.isdigit and crashed int(): a traceback
    and an empty stdout. An index that is not a number is left out of the result's file."""
    import io

    item = yaml.safe_load(_job())
    item["metadata"]["annotations"] = {"config.kubernetes.io/index": "²",
                                       "config.kubernetes.io/path": "jobs/a.yaml"}
    del item["spec"]["trainer"]  # a warning located in the item
    resource_list = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList",
                     "items": [item], "functionConfig": {"kind": "X",
                                                         "spec": {"defaultPolicies": False}}}
    stdin = yaml.safe_dump(resource_list, allow_unicode=True).encode()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    code = main(["krm"])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    files = [r.get("file") for r in yaml.safe_load(out)["results"]]
    assert files and all(f == {"path": "jobs/a.yaml"} for f in files)


# --- tjc diff --git REV --kustomize -----------------------------------------------------------

def test_diff_git_kustomize_with_a_symlink_to_an_absolute_path(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A revision holding a symlink to an absolute path gave tarfile's AbsoluteLinkError as a
    traceback and exit 1 ("objects differ"). The export leaves such a link out; the diff of
    the folders that do not need it works, and one that needs it is a one-line error."""
    repo, bin_dir = tmp_path / "repo", tmp_path / "bin"
    (repo / "app").mkdir(parents=True)
    bin_dir.mkdir()
    fake = bin_dir / "kustomize"  # `kustomize build DIR`: the folder's job.yaml, or fail
    fake.write_text('#!/bin/sh\ncat "$2/job.yaml" || { echo "Error: missing" >&2; exit 1; }\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                        *args], check=True, capture_output=True)

    (repo / "app" / "job.yaml").write_text(_job())
    (repo / "outside").symlink_to("/etc")
    (repo / "linked").mkdir()
    (repo / "linked" / "job.yaml").symlink_to("/etc/hostname")
    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "one")
    monkeypatch.chdir(repo)
    assert main(["diff", "--git", "--kustomize", "HEAD", "HEAD", "app"]) == 0
    capsys.readouterr()
    assert main(["diff", "--git", "--kustomize", "HEAD", "HEAD", "linked"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "not exported: 2 symlinks that point outside the repository: " in err


# --- one verdict: what the compile refuses, every tool refuses ------------------------------

MPI_JOB = """apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {{name: big, namespace: team}}
spec:
  runtimeRef: {{name: deepspeed-distributed}}
  trainer: {{numNodes: {nodes}, image: "repo/train:1"}}
"""


@pytest.mark.parametrize("nodes, rule", [(40000, "TJC-MPI-HOSTFILE-TOO-LARGE"),
                                         (2**31 - 1, "TJC-MPI-HOSTFILE-TOO-LARGE"),
                                         (200_000, "TJC-MPI-HOSTFILE-TOO-LARGE")])
@pytest.mark.parametrize("verb", ["validate", "render"])
def test_what_the_compile_refuses_validate_refuses_too(
        nodes: int, rule: str, verb: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """An MPI TrainJob with numNodes 40000: validate exited 0 with no output while render
    exited 1 and the controller marked it Failed."""
    job = tmp_path / "job.yaml"
    job.write_text(MPI_JOB.format(nodes=nodes))
    for policies in ([], ["--no-default-policies"]):
        code = main([verb, "-q", *policies, str(job)])
        out, err = capsys.readouterr()
        assert code == 1
        assert f"{job}:6:23: error: TrainJob team/big: spec.trainer.numNodes: " in out + err
        assert f"[{rule}]" in out + err


@pytest.mark.parametrize("verb", ["validate", "render"])
def test_a_name_whose_pod_names_jobset_refuses(verb: str, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Pod host names over 63 characters passed validate and render; only the controller
    refused them."""
    job = tmp_path / "job.yaml"
    job.write_text(_job("n" * 50))
    code = main([verb, "-q", "--no-default-policies", str(job)])
    out, err = capsys.readouterr()
    assert code == 1 and "[TJC-JOBSET-NAME-TOO-LONG]" in out + err
    assert f"{job}:3:18: error: TrainJob team/{'n' * 50}: metadata.name: JobSet name is too " \
        "long, pod names generated for this JobSet will exceed 63 characters" in out + err


def test_the_library_refuses_a_jobset_no_cluster_could_run() -> None:
    job = yaml.safe_load(_job())
    job["spec"]["trainer"]["numNodes"] = 150_001
    result = compile_trainjob(job, RUNTIME)
    assert not result.ok and not result.objects
    assert [d.rule for d in result.diagnostics if d.severity.value == "error"] == [
        "TJC-JOBSET-PARALLELISM"]
    kept = compile_trainjob(job, RUNTIME, validate=False)  # as upstream's controller builds it
    assert kept.ok and kept.objects


def test_render_and_krm_refuse_a_second_trainjob_of_one_name(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    (tmp_path / "jobs.yaml").write_text(_job() + "---\n" + _job())
    code = main(["render", "-q", "--no-default-policies", str(tmp_path / "jobs.yaml")])
    out, err = capsys.readouterr()
    assert code == 1 and out.count("kind: JobSet") == 1 and "[TJC-TRAINJOB-DUPLICATE]" in err
    items = [yaml.safe_load(_job()), yaml.safe_load(_job())]
    resource_list = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList",
                     "items": items, "functionConfig": {"kind": "X",
                                                        "spec": {"defaultPolicies": False}}}
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(
        yaml.safe_dump(resource_list).encode())))
    assert main(["krm"]) == 1
    result = yaml.safe_load(capsys.readouterr().out)
    assert [r["tags"]["rule"] for r in result["results"]] == ["TJC-TRAINJOB-DUPLICATE"]
    assert [o["kind"] for o in result["items"]].count("JobSet") == 1


BAD_VOLUME_RUNTIME = """apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {{name: badvol}}
spec:
  mlPolicy: {{numNodes: 1}}
  template:
    spec:
      replicatedJobs:
      - name: node
        template:
          metadata: {{labels: {{trainer.kubeflow.org/trainjob-ancestor-step: trainer}}}}
          spec:
            template:
              spec:
                containers:
                - name: node
                  image: "busybox:1"
                volumes:
                - name: cfg
                  configMap:
                    name: cfg
                    {field}
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {{name: usesbad, namespace: team}}
spec:
  runtimeRef: {{name: badvol}}
"""


@pytest.mark.parametrize("field, path", [
    ("items: [{key: a, path: ../../x}]", "volumes[0].configMap.items[0].path"),
    ("items: [{key: a, path: /etc/x}]", "volumes[0].configMap.items[0].path"),
    ("items: [{key: a, path: x, mode: 3583}]", "volumes[0].configMap.items[0].mode"),
    ("defaultMode: 512", "volumes[0].configMap.defaultMode")])
@pytest.mark.parametrize("verb", ["validate", "render", "library"])
def test_a_volume_item_the_api_server_refuses(field: str, path: str, verb: str,
                                             tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """A ConfigMap/Secret volume item with `path: ../../x`, an absolute path or `mode: 3583`
    passed validate; the API server refuses the Pods of the Job JobSet creates from it, so the
    TrainJob hangs. Now the runtime has an error at the field, and its TrainJobs fail."""
    text = BAD_VOLUME_RUNTIME.format(field=field)
    full = "spec.template.spec.replicatedJobs[0].template.spec.template.spec." + path
    if verb == "library":
        runtime, job = yaml.safe_load_all(text)
        result = compile_trainjob(job, runtime)
        assert not result.ok and [(d.rule, d.field_path) for d in result.diagnostics][:1] == [
            ("TJC-POD-VOLUME", full)]
        return
    (tmp_path / "in.yaml").write_text(text)
    code = main([verb, "-q", "--no-default-policies", str(tmp_path / "in.yaml")])
    out, err = capsys.readouterr()
    assert code == 1 and f"error: ClusterTrainingRuntime badvol: {full}: " in out + err
    assert "[TJC-RUNTIME-INVALID]" in out + err and "kind: JobSet" not in out


def test_local_run_with_unicode_digits_for_ports(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """An env value or a readiness probe port of "²" passed str.isdigit and crashed int()
    with a traceback while the local run was planned. The probe port is no port name the API
    server takes (TJC-POD-PROBE): refused before planning; the env value alone runs."""
    runtime = """apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata: {name: tiny, namespace: team}
spec:
  template:
    spec:
      replicatedJobs:
      - name: node
        template:
          metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
          spec:
            template:
              spec:
                containers:
                - name: node
                  image: "busybox:1"
                  command: [sh, -c, "echo port=$PORT_X"]
                  env: [{name: PORT_X, value: "²"}, {name: HOST, value: "tiny-node-0-0.tiny"}]
                  readinessProbe: {tcpSocket: {port: "²"}}
"""
    job = ("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
           "metadata: {name: tiny, namespace: team}\n"
           "spec: {runtimeRef: {name: tiny, kind: TrainingRuntime}}\n")
    (tmp_path / "rt.yaml").write_text(runtime)
    (tmp_path / "job.yaml").write_text(job)
    (tmp_path / "run").mkdir()
    code = main(["run", "--local", "--workdir", str(tmp_path / "run"), "--runtime",
                 str(tmp_path / "rt.yaml"), str(tmp_path / "job.yaml")])
    out, err = capsys.readouterr()
    assert code == 1 and "tcpSocket.port: port '²'" in out + err and "Traceback" not in err
    (tmp_path / "rt.yaml").write_text(runtime.replace(
        '                  readinessProbe: {tcpSocket: {port: "²"}}\n', ""))
    code = main(["run", "--local", "--workdir", str(tmp_path / "run"), "--runtime",
                 str(tmp_path / "rt.yaml"), str(tmp_path / "job.yaml")])
    out, err = capsys.readouterr()
    assert code == 0 and "port=²" in out + err and "Traceback" not in err, out + err


def test_the_names_met_take_a_few_bytes_each() -> None:
    """`Names` keeps one 64-bit digest per TrainJob (memory flat in the number of TrainJobs:
    a dict of names and locations took 47 MiB at 100,000), and still finds every repeat."""
    from compiler.pipeline.names import Digests

    seen = Digests()
    assert all(seen.add(n * 0x9E3779B97F4A7C15 % 2**64 or 1) for n in range(1, 50_000))
    assert not any(seen.add(n * 0x9E3779B97F4A7C15 % 2**64 or 1) for n in range(1, 50_000, 7))
    assert seen.count == 49_999 and len(seen.slots) * 8 <= 16 * 65_536 * 2


@pytest.mark.parametrize("policies", [[], ["--no-default-policies"]])
@pytest.mark.parametrize("verb", ["validate", "render"])
def test_a_trainjob_env_name_the_pods_refuse(verb: str, policies: list[str], tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """An env name `A=B` in spec.trainer.env: validate checked the refusals on its policy view
    of the JobSet, which leaves out the env the plugins write, and passed (exit 0) what render
    refused (TJC-POD-ENV). Both check the whole JobSet."""
    job = tmp_path / "job.yaml"
    job.write_text(_job().replace('image: "repo/train:1"',
                                  'image: "repo/train:1", env: [{name: "A=B", value: "1"}]'))
    code = main([verb, "-q", *policies, str(job)])
    out, err = capsys.readouterr()
    assert code == 1 and "[TJC-POD-ENV]" in out + err
