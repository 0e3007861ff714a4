"""The GitOps modes without external tools: `tjc render --passthrough`, `tjc krm`, `tjc diff`,
kustomize/Helm files in a rendered folder, and the examples."""

from __future__ import annotations

import io
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from compiler.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}}
CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": "cfg", "namespace": "ml"}, "data": {"EPOCHS": "3"}}
SECRET = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ml"},
          "stringData": {"token": "x"}}


def trainjob(name: str = "mnist", nodes: Any = 2, runtime: str = "torch-distributed",
             **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": name, "namespace": "ml", **meta},
            "spec": {"runtimeRef": {"name": runtime},
                     "trainer": {"numNodes": nodes,
                                 "resourcesPerNode": {"requests": {"cpu": "1",
                                                                   "memory": "2Gi"}}}}}


def stream(*docs: dict[str, Any]) -> str:
    return "".join("---\n" + yaml.safe_dump(d) for d in docs)


def run(args: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        stdin: str | None = None) -> tuple[int, str, str]:
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def node_parallelism(jobset: dict[str, Any]) -> int:
    node = next(r for r in jobset["spec"]["replicatedJobs"] if r["name"] == "node")
    return int(node["template"]["spec"]["parallelism"])


# --- tjc render --passthrough -------------------------------------------------------------

def test_passthrough_keeps_every_resource_in_input_order(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = run(["render", "--passthrough", "--no-default-policies", "-"], capsys,
                         monkeypatch, stream(NAMESPACE, CONFIGMAP, trainjob(), SECRET))
    assert code == 0, err
    docs = list(yaml.safe_load_all(out))
    assert [d["kind"] for d in docs] == ["Namespace", "ConfigMap", "JobSet", "Secret"]
    assert docs[0] == NAMESPACE and docs[1] == CONFIGMAP and docs[3] == SECRET
    assert docs[2]["metadata"]["name"] == "mnist" and node_parallelism(docs[2]) == 2
    assert "TJC-INPUT-SKIPPED" not in err  # what tjc does not own passes without a word


def test_keep_trainjobs_puts_the_objects_after_their_trainjob(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = run(["render", "--passthrough", "--keep-trainjobs", "-o", "json",
                          "--no-default-policies", "-"], capsys, monkeypatch,
                         stream(CONFIGMAP, trainjob(), trainjob("b", runtime="jax-distributed")))
    assert code == 0, err
    items = yaml.safe_load(out)["items"]
    assert [(i["kind"], i["metadata"]["name"]) for i in items] == [
        ("ConfigMap", "cfg"), ("TrainJob", "mnist"), ("JobSet", "mnist"), ("TrainJob", "b"),
        ("JobSet", "b")]


def test_passthrough_fails_on_a_broken_trainjob_and_still_prints_the_rest(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = run(["render", "--passthrough", "--no-default-policies", "-"], capsys,
                         monkeypatch, stream(CONFIGMAP, trainjob(nodes="two"), trainjob("ok")))
    assert code == 1
    assert [d["kind"] for d in yaml.safe_load_all(out)] == ["ConfigMap", "JobSet"]
    assert "<stdin>:" in err and "spec.trainer.numNodes" in err and "[TJC-SCHEMA-TYPE]" in err


TAGGED_CONFIGMAP = """apiVersion: v1
kind: ConfigMap
metadata: {name: tagged, namespace: ml}
data:
  count: ! 1
  greeting: !!binary aGVsbG8=
  hex: "0X1F"
  mode: !!str yes
  level: !custom 3
"""
# kubectl reads the data above as these strings; printed plain, "0X1F" would be 31 to it
TAGGED_DATA = ['  count: "1"', "  greeting: hello", '  hex: "0X1F"', "  level: \"3\"",
               '  mode: "yes"']


def test_passthrough_prints_tagged_values_as_kubectl_read_them(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A ConfigMap's `! 1` is the string "1" to kubectl: printed as the number 1, the API
    server would refuse it; `!!binary` is decoded, and a string that looks like a number to
    kubectl stays quoted."""
    code, out, err = run(["render", "--passthrough", "--no-default-policies", "-"], capsys,
                         monkeypatch, TAGGED_CONFIGMAP)
    assert code == 0, err
    assert out.splitlines()[3:8] == TAGGED_DATA


def test_krm_prints_tagged_values_as_kubectl_read_them(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    item = "- " + TAGGED_CONFIGMAP.rstrip("\n").replace("\n", "\n  ") + "\n"
    code, out, err = run(["krm"], capsys, monkeypatch,
                         "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"
                         + item)
    assert code == 0, err
    assert [line[2:] for line in out.splitlines() if line.startswith("    ")][:5] == TAGGED_DATA


@pytest.mark.parametrize(("head", "where"), [
    ("%YAML 1.2\n---\n", "<stdin>:1:1: error: cannot parse YAML: found incompatible YAML"),
    ("--- # the config\n--- {apiVersion: v1}\n", "<stdin>:2:5: error: cannot parse YAML: a line"),
])
def test_passthrough_refuses_what_kubectl_refuses(
        head: str, where: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = run(["render", "--passthrough", "--no-default-policies", "-"], capsys,
                         monkeypatch, head + TAGGED_CONFIGMAP)
    assert code == 1 and out == "" and err.startswith(where), err


def test_passthrough_and_output_dir_do_not_mix(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    code, _, err = run(["render", "--passthrough", "--output-dir", str(tmp_path), "-"], capsys,
                       monkeypatch, stream(trainjob()))
    assert code == 2 and "--output-dir" in err
    code, _, err = run(["render", "--keep-trainjobs", "-"], capsys, monkeypatch,
                       stream(trainjob()))
    assert code == 2 and "--keep-trainjobs needs --passthrough" in err


def test_passthrough_renders_in_the_namespace_and_passes_the_inputs_as_they_came(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """--namespace ml: the objects of a TrainJob without a namespace are in ml, the kept
    TrainJob (and what tjc does not own) comes out as it came; a TrainJob of another
    namespace is refused, as kubectl apply -n refuses it."""
    bare = trainjob()
    del bare["metadata"]["namespace"]
    other_cm = {**CONFIGMAP, "metadata": {"name": "cfg", "namespace": "elsewhere"}}
    code, out, err = run(["render", "--passthrough", "--keep-trainjobs", "--namespace", "ml",
                          "--no-default-policies", "-"], capsys, monkeypatch,
                         stream(other_cm, bare))
    assert code == 0, err
    docs = list(yaml.safe_load_all(out))
    assert docs[:2] == [other_cm, bare]
    assert docs[2]["kind"] == "JobSet" and docs[2]["metadata"] == {"name": "mnist",
                                                                   "namespace": "ml"}
    code, out, err = run(["render", "--passthrough", "--namespace", "team-b",
                          "--no-default-policies", "-"], capsys, monkeypatch,
                         stream(bare, trainjob("b")))
    assert code == 1
    assert [(d["kind"], d["metadata"]) for d in yaml.safe_load_all(out)] == [
        ("JobSet", {"name": "mnist", "namespace": "team-b"})]
    assert "<stdin>:" in err and "error: TrainJob ml/b: metadata.namespace: namespace ml " \
        "does not match team-b" in err and "[TJC-INPUT-NAMESPACE-MISMATCH]" in err


# --- folders that kustomize or Helm build ------------------------------------------------

def test_a_folder_with_a_kustomization_renders(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "kustomization.yaml").write_text("resources:\n  - job.yaml\n")
    (tmp_path / "job.yaml").write_text(stream(trainjob()))
    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: c\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("nodes: 2\n")
    (chart / "templates" / "job.yaml").write_text("kind: TrainJob\n{{- if .Values.x }}\n")
    code, out, err = run(["render", "--no-default-policies", str(tmp_path)], capsys,
                         monkeypatch)
    assert code == 0, err
    assert [d["kind"] for d in yaml.safe_load_all(out)] == ["JobSet"]
    assert err.count("[TJC-INPUT-TOOL-FILE]") == 4
    assert f"{tmp_path / 'kustomization.yaml'}:1:1: notice: skipped kustomization.yaml: " \
        "a kustomize file" in err


def test_a_values_yaml_that_holds_objects_is_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "values.yaml").write_text(stream(trainjob()))
    code, out, err = run(["render", "--no-default-policies", str(tmp_path)], capsys,
                         monkeypatch)
    assert code == 0, err
    assert [d["kind"] for d in yaml.safe_load_all(out)] == ["JobSet"]


def test_yaml_that_is_no_object_is_a_notice_but_a_missing_kind_is_an_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A file with neither apiVersion nor kind (a tool's settings, a workflow) is skipped with
    a notice; one that names an apiVersion but no kind is a broken object, an error."""
    (tmp_path / "settings.yaml").write_text("resources:\n  - job.yaml\n")
    code, _, err = run(["render", str(tmp_path)], capsys, monkeypatch)
    assert code == 0 and "[TJC-INPUT-NOT-KUBERNETES]" in err
    (tmp_path / "broken.yaml").write_text("apiVersion: trainer.kubeflow.org/v1alpha1\n"
                                          "metadata:\n  name: a\n")
    code, _, err = run(["render", str(tmp_path)], capsys, monkeypatch)
    assert code == 1 and "[TJC-INPUT-NO-KIND]" in err


# --- tjc krm ------------------------------------------------------------------------------

def resource_list(items: list[dict[str, Any]], config: dict[str, Any] | None = None) -> str:
    rl: dict[str, Any] = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList",
                          "items": items}
    if config is not None:
        rl["functionConfig"] = config
    return yaml.safe_dump(rl)


def annotated(obj: dict[str, Any], path: str, index: int) -> dict[str, Any]:
    meta = {**obj["metadata"], "annotations": {
        **obj["metadata"].get("annotations", {}), "config.kubernetes.io/path": path,
        "config.kubernetes.io/index": str(index),
        "internal.config.kubernetes.io/path": path}}
    return {**obj, "metadata": meta}


def test_krm_transforms_items_and_keeps_the_others_as_given(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    cm = annotated(CONFIGMAP, "base/config.yaml", 0)
    tj = annotated(trainjob(annotations={"team": "a"}), "base/job.yaml", 0)
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
              "data": {"defaultPolicies": "false"}}
    code, out, err = run(["krm"], capsys, monkeypatch, resource_list([cm, tj], config))
    assert code == 0, err
    result = yaml.safe_load(out)
    assert result["apiVersion"] == "config.kubernetes.io/v1"
    assert result["kind"] == "ResourceList"
    assert result["items"][0] == cm
    jobset = result["items"][1]
    assert jobset["kind"] == "JobSet" and node_parallelism(jobset) == 2
    assert "config.kubernetes.io" not in out.split("kind: JobSet")[1]
    assert len(result["items"]) == 2


def test_krm_results_locate_each_problem_and_fail_with_exit_1(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    bad = annotated(trainjob("bad", runtime="nope"), "jobs/bad.yaml", 1)
    config = {"apiVersion": "trainjob-compiler/v1alpha1", "kind": "RenderTrainJobs",
              "metadata": {"name": "c"},
              "spec": {"policyValues": {"resources": {"maxNumNodes": 8}},
                       "skip": ["security.run-as-non-root", "images"]}}
    big = annotated(trainjob("big", nodes=16), "jobs/big.yaml", 0)
    code, out, err = run(["krm"], capsys, monkeypatch, resource_list([big, bad], config))
    assert code == 1
    results = yaml.safe_load(out)["results"]
    by_rule = {r["tags"]["rule"]: r for r in results}
    max_nodes = by_rule["resources.max-nodes"]
    assert max_nodes["severity"] == "error"
    assert max_nodes["resourceRef"] == {"apiVersion": "trainer.kubeflow.org/v1alpha1",
                                        "kind": "TrainJob", "name": "big", "namespace": "ml"}
    assert max_nodes["file"] == {"path": "jobs/big.yaml", "index": 0}
    assert "field" in max_nodes and "8" in max_nodes["message"]
    missing = by_rule["TJC-WEBHOOK-RUNTIME-NOT-FOUND"]
    assert missing["field"] == {"path": "spec.runtimeRef"}
    assert missing["file"] == {"path": "jobs/bad.yaml", "index": 1}
    assert all(r["severity"] in ("error", "warning", "info") for r in results)
    assert "jobs/big.yaml: error: TrainJob ml/big" in err


@pytest.mark.parametrize(("stdin", "message"), [
    ("apiVersion: v1\nkind: List\nitems: []\n", "not a ResourceList"),
    (resource_list([], {"kind": "ConfigMap", "data": {"keepTrainjobs": "true"}}),
     "unknown option 'keepTrainjobs'"),
    (resource_list([], {"kind": "X", "spec": {"validate": "maybe"}}), "true or false"),
])
def test_krm_refuses_what_it_cannot_use(stdin: str, message: str,
                                        capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = run(["krm"], capsys, monkeypatch, stdin)
    assert code == 2 and message in err and out == ""


def test_krm_keep_trainjobs_from_the_function_config(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    config = {"kind": "X", "spec": {"keepTrainJobs": True, "defaultPolicies": False}}
    tj = annotated(trainjob(), "job.yaml", 0)
    code, out, err = run(["krm"], capsys, monkeypatch, resource_list([tj], config))
    assert code == 0, err
    items = yaml.safe_load(out)["items"]
    assert [i["kind"] for i in items] == ["TrainJob", "JobSet"]
    assert items[0] == tj  # as it came, with the orchestrator's annotations
    assert "annotations" not in items[1]["metadata"]


def test_krm_namespace_from_the_function_config(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """spec.namespace places the items as tjc render --namespace does (another namespace is
    an error result at metadata.namespace); spec.defaultNamespace keeps a TrainJob's own."""
    bare = annotated(trainjob(), "base/job.yaml", 0)
    del bare["metadata"]["namespace"]
    other = annotated(trainjob("b"), "base/b.yaml", 0)
    spec: dict[str, Any] = {"keepTrainJobs": True, "defaultPolicies": False,
                            "namespace": "team-a"}
    config = {"kind": "RenderTrainJobs", "spec": spec}
    code, out, err = run(["krm"], capsys, monkeypatch, resource_list([bare, other], config))
    assert code == 1
    result = yaml.safe_load(out)
    assert [(i["kind"], i["metadata"].get("namespace")) for i in result["items"]] == [
        ("TrainJob", None), ("JobSet", "team-a"), ("TrainJob", "ml")]
    assert result["items"][0] == bare
    problem = next(r for r in result["results"] if r["severity"] == "error")
    assert problem["tags"] == {"rule": "TJC-INPUT-NAMESPACE-MISMATCH"}
    assert problem["field"] == {"path": "metadata.namespace"}
    assert problem["resourceRef"]["namespace"] == "ml"
    assert problem["file"] == {"path": "base/b.yaml", "index": 0}
    assert "base/b.yaml: error: TrainJob ml/b: metadata.namespace: namespace ml does not " \
        "match team-a" in err
    del spec["namespace"]
    spec["defaultNamespace"] = "team-a"
    code, out, err = run(["krm"], capsys, monkeypatch, resource_list([bare, other], config))
    assert code == 0, err
    assert [(i["kind"], i["metadata"].get("namespace")) for i in yaml.safe_load(out)[
        "items"]] == [("TrainJob", None), ("JobSet", "team-a"), ("TrainJob", "ml"),
                      ("JobSet", "ml")]
    for wrong, message in (({"namespace": "a", "defaultNamespace": "a"}, "not both"),
                           ({"namespace": "Team_A"}, "namespace must be a namespace name")):
        code, out, err = run(["krm"], capsys, monkeypatch,
                             resource_list([bare], {"kind": "X", "spec": wrong}))
        assert code == 2 and message in err and out == ""


# --- tjc diff -----------------------------------------------------------------------------

def write_jobs(folder: Path, *jobs: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for job in jobs:
        (folder / f"{job['metadata']['name']}.yaml").write_text(stream(job))
    return folder


def test_diff_names_changed_added_and_removed_trainjobs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    old = write_jobs(tmp_path / "old", trainjob("a"), trainjob("gone"))
    new = write_jobs(tmp_path / "new", trainjob("a", nodes=3), trainjob("fresh"))
    code, out, err = run(["diff", str(old), str(new)], capsys, monkeypatch)
    assert code == 1, err
    assert "# changed TrainJob ml/a\n" in out
    assert "-        parallelism: 2\n" in out and "+        parallelism: 3\n" in out
    assert "# added TrainJob ml/fresh\n--- /dev/null\n" in out
    assert f"# removed TrainJob ml/gone\n--- {old}/ml/gone\n+++ /dev/null\n" in out
    assert out.endswith("# 1 changed, 1 added, 1 removed TrainJob(s); 1 with a change the "
                        "existing JobSet refuses (marked !)\n")


def test_diff_markdown_for_a_pull_request(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    old = write_jobs(tmp_path / "old", trainjob("a"))
    new = write_jobs(tmp_path / "new", trainjob("a", nodes=4))
    code, out, _ = run(["diff", "-f", "markdown", str(old), str(new)], capsys, monkeypatch)
    assert code == 1
    assert out.startswith("**tjc diff**: 1 changed, 0 added, 0 removed TrainJob(s); 1 with a "
                          "change the existing JobSet refuses (marked !)\n")
    assert "<summary>Changed: TrainJob <code>ml/a</code></summary>\n\nThe JobSet in the " \
        "cluster refuses 2 of these changes: see the lines starting with `!`.\n\n```diff\n" in out
    assert "+        parallelism: 4\n" in out and out.rstrip().endswith("</details>")


def test_diff_of_the_same_objects_is_exit_0(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    old = write_jobs(tmp_path / "old", trainjob("a"))
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / "a.yaml").write_text("# reformatted\n" + yaml.safe_dump(
        trainjob("a"), default_flow_style=True))
    assert run(["diff", str(old), str(tmp_path / "new")], capsys, monkeypatch)[:2] == (0, "")


def test_diff_errors_are_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                monkeypatch: pytest.MonkeyPatch) -> None:
    old = write_jobs(tmp_path / "old", trainjob("a"))
    new = write_jobs(tmp_path / "new", trainjob("a", nodes="x"))
    code, _, err = run(["diff", str(old), str(new)], capsys, monkeypatch)
    assert code == 2 and "[TJC-SCHEMA-TYPE]" in err
    code, _, err = run(["diff", str(old), str(tmp_path / "missing")], capsys, monkeypatch)
    assert code == 2 and "cannot read" in err


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                    *args], check=True, capture_output=True)


def test_diff_of_two_git_revisions(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    git(tmp_path, "init", "-q")
    write_jobs(tmp_path / "jobs", trainjob("a"))
    (tmp_path / "notes.txt").write_text("not rendered\n")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "one")
    write_jobs(tmp_path / "jobs", trainjob("a", nodes=5))
    git(tmp_path, "commit", "-qam", "two")
    monkeypatch.chdir(tmp_path)
    code, out, err = run(["diff", "--git", "HEAD~1", "HEAD", "jobs"], capsys, monkeypatch)
    assert code == 1, err
    assert "--- HEAD~1/ml/a\n+++ HEAD/ml/a\n" in out and "+        parallelism: 5\n" in out
    assert run(["diff", "--git", "HEAD", "HEAD"], capsys, monkeypatch)[0] == 0
    code, _, err = run(["diff", "--git", "no-such-rev", "HEAD"], capsys, monkeypatch)
    assert code == 2 and "no-such-rev is not a revision" in err


# --- examples -----------------------------------------------------------------------------

def test_every_builtin_runtime_has_an_example() -> None:
    builtin = {yaml.safe_load(p.read_text())["metadata"]["name"]
               for p in (ROOT / "runtimes").glob("*.yaml")}
    used = {doc["spec"]["runtimeRef"]["name"] for p in EXAMPLES.rglob("*.yaml")
            if "templates" not in p.parts
            for doc in yaml.safe_load_all(p.read_text())
            if isinstance(doc, dict) and doc.get("kind") == "TrainJob"}
    assert len(builtin) == 8 and builtin <= used


def test_every_example_renders(capsys: pytest.CaptureFixture[str],
                               monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = run(["render", str(EXAMPLES)], capsys, monkeypatch)
    assert code == 0, err
    kinds = [(d["kind"], d["metadata"]["name"]) for d in yaml.safe_load_all(out)]
    names = {n for k, n in kinds if k == "JobSet"}
    assert {"jax-mnist", "jax-psum", "torch-mnist", "deepspeed-bert", "mlx-mnist", "xgboost-higgs",
            "tune-llama3-2-1b", "tune-llama3-2-1b-lora", "tune-llama3-2-3b", "tune-qwen2-5-1-5b",
            "resnet50", "mnist"} == names
    assert ("PodGroup", "resnet50") in kinds  # the custom runtime's gang scheduling
    assert ("ConfigMap", "deepspeed-bert-mpi-hostfile") in kinds


def test_the_custom_runtime_example_gangs_its_pods(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = run(["render", str(EXAMPLES / "custom-runtime")], capsys, monkeypatch)
    assert code == 0, err
    podgroup, jobset = yaml.safe_load_all(out)
    # coscheduling: minMember = every pod, minResources = per-pod requests x pods (4 x 4 cpu)
    assert podgroup["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
    assert podgroup["spec"] == {"minMember": 4, "minResources": {"cpu": "16", "memory": "64Gi"},
                                "scheduleTimeoutSeconds": 120}
    assert jobset["metadata"]["labels"] == {"cost-center": "vision"}
    pod = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    assert pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "resnet50"
    assert pod["spec"]["nodeSelector"] == {"pool": "gpu-a100"}


def test_the_argocd_plugin_passes_the_destination_namespace() -> None:
    """generate's render options: the Application's destination namespace
    (ARGOCD_APP_NAMESPACE, Argo CD's build environment) is --default-namespace (Argo CD applies
    what names no namespace there, and the rest into its own); none without one."""
    from compiler.cli.argocd_cmd import render_options
    from compiler.gitops.argocd import app_options
    from compiler.io.placement import Placement

    options = app_options("--keep-trainjobs")
    assert render_options(options, {"ARGOCD_APP_NAMESPACE": "ml-team"}, ".").placement == \
        Placement("ml-team", strict=False)
    assert render_options(options, {}, ".").placement is None
    assert render_options(options, {"ARGOCD_APP_NAMESPACE": ""}, ".").placement is None


# --- the images -----------------------------------------------------------------------------

def stages() -> dict[str, list[str]]:
    """The Dockerfile's stages by name (the last, unnamed one as ''), their lines."""
    found: dict[str, list[str]] = {}
    current: list[str] = []
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        if line.startswith("FROM "):
            parts = line.split()
            current = found.setdefault(parts[3] if len(parts) > 3 else "", [line])
        elif line and not line.startswith("#"):
            current.append(line)
    return found


def test_the_image_targets_run_the_function_and_the_plugin() -> None:
    found = stages()
    assert found["krm"] == ["FROM tjc AS krm", 'CMD ["krm"]']  # kustomize/kpt pass no args
    cmp = found["argocd-cmp"]
    assert "COPY --from=kustomize /out/kustomize /usr/local/bin/kustomize" in cmp
    assert "USER 999:999" in cmp  # Argo CD runs plugin sidecars as its own uid
    assert found[""] == ["FROM tjc"]  # the default image stays the controller's
    pin = re.search(r"sigs\.k8s\.io/kustomize/kustomize/v5 (v\S+)",
                    (ROOT / "e2e" / "tools" / "go.mod").read_text())
    assert pin is not None
    assert any(f"kustomize/v5@{pin.group(1)}" in line for line in found["kustomize"])
    patch = yaml.safe_load((ROOT / "deploy" / "argocd" / "repo-server-patch.yaml").read_text())
    image = patch["spec"]["template"]["spec"]["containers"][0]["image"]
    assert f"--target argocd-cmp -t {image} ." in (ROOT / "Dockerfile").read_text()
