"""Upstream's webhook rules (`compiler.core.webhook`): one failing and one passing case per
rule, on the built-in runtimes (loaded, sanitized and defaulted as the API server holds them)
and TrainJobs that use them. A passing case must produce no diagnostic at all."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from compiler.common.diagnostics import Diagnostic, Severity
from compiler.common.jsondata import Obj, copy_json
from compiler.core.webhook import validate_runtime, validate_trainjob
from compiler.kube import structural
from compiler.kube.defaults import default_in_place

Edit = Callable[[Obj], None]
RUNTIMES = Path(__file__).resolve().parents[2] / "runtimes"
JOBS = ("spec", "template", "spec", "replicatedJobs")
POD = ("template", "spec", "template", "spec")
PATCH_POD = ("spec", "runtimePatches", 0, "trainingRuntimeSpec", "template", "spec",
             "replicatedJobs", 0, *POD)


@cache
def _builtin(name: str) -> Obj:
    data: Obj = yaml.safe_load((RUNTIMES / f"{name}.yaml").read_text())
    return data


def runtime(name: str, *edits: Edit) -> Obj:
    """A built-in runtime with `edits` applied to its YAML, then sanitized and defaulted."""
    raw: Obj = copy_json(_builtin(name))
    for edit in edits:
        edit(raw)
    kind = str(raw["kind"])
    doc, problems = structural.sanitize(kind, raw, subject="runtime")
    assert not problems, problems
    return default_in_place(kind, doc)


def trainjob(spec: Obj, name: str = "torch-distributed", kind: str | None = None) -> Obj:
    """A sanitized, defaulted TrainJob `demo` with `spec` and a runtimeRef to `name`."""
    ref: Obj = {"name": name}
    if kind:
        ref["kind"] = kind
    raw = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
           "metadata": {"name": "demo", "namespace": "team-a"},
           "spec": {"runtimeRef": ref, **copy_json(spec)}}
    doc, problems = structural.sanitize("TrainJob", raw, subject="trainjob")
    assert not problems, problems
    return default_in_place("TrainJob", doc)


def put(path: tuple[str | int, ...], value: Any) -> Edit:
    """An edit setting `path` (creating maps on the way; an index one past a list's end
    appends) to a copy of `value`."""
    def edit(doc: Obj) -> None:
        node: Any = doc
        for key in path[:-1]:
            node = node.setdefault(key, {}) if isinstance(key, str) else node[key]
        last = path[-1]
        if isinstance(node, list) and last == len(node):
            node.append(copy_json(value))
        else:
            node[last] = copy_json(value)
    return edit


def patch(pod_spec: Obj, job: str = "node", manager: str = "kueue.x-k8s.io/manager") -> Obj:
    """A TrainJob spec fragment with one runtime patch of one job's pod spec."""
    return {"runtimePatches": [{"manager": manager, "trainingRuntimeSpec": {"template": {
        "spec": {"replicatedJobs": [{"name": job, "template": {"spec": {"template": {
            "spec": pod_spec}}}}]}}}}]}


TUNE: Obj = {"command": ["tune", "run"]}
DEPRECATED = put(("metadata", "labels", "trainer.kubeflow.org/support"), "deprecated")
VOLCANO = put(("spec", "podGroupPolicy"), {"volcano": {}})
FLUX = put(("spec", "mlPolicy"), {"numNodes": 1, "flux": {}})
NODE_POD = (*JOBS, 0, *POD)


def renamed(name: str) -> Edit:
    return put(("metadata", "name"), name)


@dataclass(frozen=True)
class Case:
    """One TrainJob against one runtime; `rule` fires (with `path`/`message`) or nothing does."""

    id: str
    rule: str
    spec: Obj
    runtime: str | None = "torch-distributed"
    edits: tuple[Edit, ...] = ()
    fires: bool = True
    ref: str | None = None
    kind: str | None = None
    old: Obj | None = None
    path: tuple[str | int, ...] | None = None
    message: str = ""
    subject: str = "trainjob"
    severity: Severity = Severity.ERROR
    extra: tuple[str, ...] = field(default=())


CASES = [
    # runtime lookup and deprecation
    Case("not-found-cluster", "TJC-WEBHOOK-RUNTIME-NOT-FOUND", {"trainer": {}}, runtime=None,
         path=("spec", "runtimeRef"),
         message='clustertrainingruntimes.trainer.kubeflow.org "torch-distributed" not found: '
                 "specified clusterTrainingRuntime must be created before the TrainJob is "
                 "created"),
    Case("not-found-namespaced", "TJC-WEBHOOK-RUNTIME-NOT-FOUND", {}, runtime=None,
         kind="TrainingRuntime", path=("spec", "runtimeRef"),
         message='trainingruntimes.trainer.kubeflow.org "torch-distributed" not found: '
                 "specified trainingRuntime must be created"),
    Case("found", "TJC-WEBHOOK-RUNTIME-NOT-FOUND", {"trainer": {}}, fires=False),
    Case("deprecated-ref", "TJC-WEBHOOK-DEPRECATED-RUNTIME-REF", {"trainer": {}},
         edits=(DEPRECATED,), severity=Severity.WARNING, path=("spec", "runtimeRef"),
         message='referenced ClusterTrainingRuntime "torch-distributed" is deprecated and will '
                 "be removed in a future release of Kubeflow Trainer. See runtime deprecation "
                 "policy: https://trainer.kubeflow.org/en/latest/operator-guides/runtime.html"
                 "#runtime-deprecation-policy"),
    Case("deprecated-value-not-exact", "TJC-WEBHOOK-DEPRECATED-RUNTIME-REF", {"trainer": {}},
         edits=(put(("metadata", "labels", "trainer.kubeflow.org/support"), "Deprecated"),),
         fires=False),
    # initializers (by job name)
    Case("dataset-job-missing", "TJC-WEBHOOK-INITIALIZER-JOB",
         {"initializer": {"dataset": {"storageUri": "hf://tatsu-lab/alpaca"}}},
         path=("spec", "runtimeRef"), message="must have dataset-initializer job when trainJob "
                                             "is configured with input datasetConfig"),
    Case("model-job-missing", "TJC-WEBHOOK-INITIALIZER-JOB", {"initializer": {"model": {}}},
         message="must have model-initializer job when trainJob is configured with input "
                 "modelConfig"),
    Case("initializers-present", "TJC-WEBHOOK-INITIALIZER-JOB",
         {"initializer": {"dataset": {"storageUri": "hf://tatsu-lab/alpaca"},
                          "model": {"storageUri": "hf://meta-llama/Llama-3.2-1B-Instruct"}},
          "trainer": {}}, runtime="torchtune-llama3.2-1b", fires=False),
    Case("dataset-container-missing", "TJC-WEBHOOK-INITIALIZER-CONTAINER",
         {"initializer": {"dataset": {}}}, runtime="torchtune-llama3.2-1b",
         edits=(put((*JOBS, 0, *POD, "containers", 0, "name"), "loader"),),
         message="must have container with name - dataset-initializer in the "
                 "dataset-initializer job"),
    Case("dataset-container-present", "TJC-WEBHOOK-INITIALIZER-CONTAINER",
         {"initializer": {"dataset": {}}}, runtime="torchtune-llama3.2-1b", fires=False),
    Case("model-mount-missing", "TJC-WEBHOOK-INITIALIZER-MOUNT", {"initializer": {"model": {}}},
         runtime="torchtune-llama3.2-1b",
         edits=(put((*JOBS, 1, *POD, "containers", 0, "volumeMounts", 0, "name"), "cache"),),
         message="must have volumeMount with name - initializer in container model-initializer "
                 "of the model-initializer job"),
    Case("model-mount-present", "TJC-WEBHOOK-INITIALIZER-MOUNT", {"initializer": {"model": {}}},
         runtime="torchtune-llama3.2-1b", fires=False),
    # runtime patches
    Case("manager-not-prefixed", "TJC-WEBHOOK-PATCH-MANAGER",
         patch({"nodeSelector": {"pool": "a"}}, manager="kueue"),
         path=("spec", "runtimePatches", 0, "manager"),
         message='must be a domain-prefixed path (such as "acme.io/foo")'),
    Case("manager-bad-host", "TJC-WEBHOOK-PATCH-MANAGER",
         patch({"nodeSelector": {"pool": "a"}}, manager="Kueue.io/manager"),
         message="a lowercase RFC 1123 subdomain must consist of"),
    Case("manager-bad-path", "TJC-WEBHOOK-PATCH-MANAGER",
         patch({"nodeSelector": {"pool": "a"}}, manager="kueue.x-k8s.io/my manager"),
         message="invalid path (regex used for validation is"),
    Case("manager-ok", "TJC-WEBHOOK-PATCH-MANAGER", patch({"nodeSelector": {"pool": "a"}}),
         fires=False),
    Case("patch-job-missing", "TJC-QUIRK-PATCH-NEW-JOB",
         patch({"nodeSelector": {"pool": "a"}}, job="worker"),
         path=("spec", "runtimePatches", 0, "trainingRuntimeSpec", "template", "spec",
               "replicatedJobs", 0, "name"),
         message="is not in the runtime job template; upstream checks the template after",
         severity=Severity.WARNING),
    Case("patch-job-present", "TJC-QUIRK-PATCH-NEW-JOB",
         patch({"tolerations": [{"key": "gpu", "operator": "Exists"}]}), fires=False),
    Case("patch-init-container-missing", "TJC-QUIRK-PATCH-NEW-INIT-CONTAINER",
         patch({"initContainers": [{"name": "warmup", "env": [{"name": "A", "value": "1"}]}]}),
         path=(*PATCH_POD, "initContainers", 0),
         message="is not in the runtime job node; upstream checks the template after",
         severity=Severity.WARNING),
    Case("patch-init-container-present", "TJC-QUIRK-PATCH-NEW-INIT-CONTAINER",
         patch({"initContainers": [{"name": "warmup", "env": [{"name": "A", "value": "1"}]}]}),
         edits=(put((*NODE_POD, "initContainers"), [{"name": "warmup", "image": "busybox"}]),),
         fires=False),
    Case("patch-container-missing", "TJC-QUIRK-PATCH-NEW-CONTAINER",
         patch({"containers": [{"name": "sidecar", "securityContext": {"runAsUser": 1000}}]}),
         path=(*PATCH_POD, "containers", 0),
         message="is not in the runtime job node; upstream checks the template after",
         severity=Severity.WARNING),
    Case("patch-container-present", "TJC-QUIRK-PATCH-NEW-CONTAINER",
         patch({"containers": [{"name": "node", "securityContext": {"runAsUser": 1000}}]}),
         fires=False),
    Case("patch-env-on-node", "TJC-WEBHOOK-PATCH-ENV",
         patch({"containers": [{"name": "node", "env": [{"name": "NCCL_DEBUG",
                                                          "value": "INFO"}]}]}),
         path=(*PATCH_POD, "containers", 0, "env"),
         message="must not have envs for the dataset-initializer, model-initializer, node "
                 "containers"),
    # upstream checks the merged template, where a patched-in container exists: its env is
    # refused even though the container (or its whole job) is new
    Case("patch-env-on-new-initializer-container", "TJC-WEBHOOK-PATCH-ENV",
         patch({"containers": [{"name": "model-initializer", "env": [{"name": "A",
                                                                       "value": "1"}]}]}),
         path=(*PATCH_POD, "containers", 0, "env"),
         message="must not have envs for the dataset-initializer, model-initializer, node",
         extra=("TJC-QUIRK-PATCH-NEW-CONTAINER",)),
    Case("patch-env-on-node-of-new-job", "TJC-WEBHOOK-PATCH-ENV",
         patch({"containers": [{"name": "node", "env": [{"name": "A", "value": "1"}]}]},
               job="extra"),
         message="must not have envs for the dataset-initializer, model-initializer, node",
         extra=("TJC-QUIRK-PATCH-NEW-JOB",)),
    Case("patch-env-on-sidecar", "TJC-WEBHOOK-PATCH-ENV",
         patch({"containers": [{"name": "proxy", "env": [{"name": "PORT", "value": "80"}]}]}),
         edits=(put((*NODE_POD, "containers", 1), {"name": "proxy", "image": "envoy"}),),
         fires=False),
    Case("patch-changed-while-running", "TJC-WEBHOOK-PATCH-IMMUTABLE",
         patch({"nodeSelector": {"pool": "b"}}), old=patch({"nodeSelector": {"pool": "a"}}),
         path=("spec", "runtimePatches"),
         message="runtimePatches can only be modified when the TrainJob is suspended before or "
                 "after the update"),
    Case("patch-changed-while-suspended", "TJC-WEBHOOK-PATCH-IMMUTABLE",
         {**patch({"nodeSelector": {"pool": "b"}}), "suspend": True},
         old=patch({"nodeSelector": {"pool": "a"}}), fires=False),
    Case("patch-time-only", "TJC-WEBHOOK-PATCH-IMMUTABLE", patch({"nodeSelector": {"pool": "a"}}),
         old={"runtimePatches": [{**patch({"nodeSelector": {"pool": "a"}})["runtimePatches"][0],
                                  "time": "2026-01-01T00:00:00Z"}]}, fires=False),
    # reserved envs
    Case("torch-reserved", "TJC-WEBHOOK-TORCH-RESERVED-ENV",
         {"trainer": {"env": [{"name": "PET_NNODES", "value": "2"}, {"name": "A", "value": "1"},
                              {"name": "PET_MASTER_ADDR", "value": "x"}]}},
         path=("spec", "trainer", "env"),
         message="must not have reserved envs, invalid envs configured: "
                 "[PET_MASTER_ADDR PET_NNODES]"),
    Case("torch-free", "TJC-WEBHOOK-TORCH-RESERVED-ENV",
         {"trainer": {"env": [{"name": "NCCL_DEBUG", "value": "INFO"}]}}, fires=False),
    Case("mpi-reserved", "TJC-WEBHOOK-MPI-RESERVED-ENV",
         {"trainer": {"env": [{"name": "OMPI_MCA_plm_rsh_args", "value": "-v"}]}},
         runtime="deepspeed-distributed", path=("spec", "trainer", "env"),
         message="must not have reserved envs, invalid envs configured: "
                 "[OMPI_MCA_plm_rsh_args]"),
    Case("mpi-free", "TJC-WEBHOOK-MPI-RESERVED-ENV",
         {"trainer": {"env": [{"name": "OMPI_MCA_btl", "value": "^openib"}]}},
         runtime="deepspeed-distributed", fires=False),
    Case("xgboost-reserved", "TJC-WEBHOOK-XGBOOST-RESERVED-ENV",
         {"trainer": {"env": [{"name": "A", "value": "1"},
                              {"name": "DMLC_NUM_WORKER", "value": "9"}]}},
         runtime="xgboost-distributed", path=("spec", "trainer", "env", 1),
         message="DMLC_NUM_WORKER is reserved for the XGBoost runtime"),
    Case("xgboost-free", "TJC-WEBHOOK-XGBOOST-RESERVED-ENV",
         {"trainer": {"env": [{"name": "DMLC_LOG", "value": "1"}]}},
         runtime="xgboost-distributed", fires=False),
    Case("jax-reserves-nothing", "TJC-WEBHOOK-TORCH-RESERVED-ENV",
         {"trainer": {"env": [{"name": "JAX_NUM_PROCESSES", "value": "4"},
                              {"name": "PET_NNODES", "value": "1"}]}},
         runtime="jax-distributed", fires=False),
    # torch envInjection
    Case("env-injection-missing", "TJC-WEBHOOK-TORCH-ENV-INJECTION", {"trainer": {}},
         edits=(put(("spec", "mlPolicy", "torch", "envInjection"),
                    {"targets": [{"jobName": "node", "containerNames": ["profiler"]}]}),),
         path=("spec", "runtimeRef"),
         message='envInjection target podSet "node" container "profiler" not found in runtime '
                 "template"),
    Case("env-injection-init-container", "TJC-WEBHOOK-TORCH-ENV-INJECTION", {"trainer": {}},
         edits=(put(("spec", "mlPolicy", "torch", "envInjection"),
                    {"targets": [{"jobName": "node", "containerNames": ["profiler"]}]}),
                put((*NODE_POD, "initContainers"), [{"name": "profiler", "image": "x"}])),
         fires=False),
    # torchtune
    Case("torchtune-unknown-model", "TJC-WEBHOOK-TORCHTUNE-MODEL", {"trainer": TUNE},
         runtime="torchtune-llama3.2-1b", ref="torchtune-mistral-7b",
         edits=(renamed("torchtune-mistral-7b"),), path=("spec", "runtimeRef", "name"),
         message="must have a supported pretrained model, invalid model configured: "
                 "mistral/7B"),
    Case("torchtune-known-model", "TJC-WEBHOOK-TORCHTUNE-MODEL", {"trainer": TUNE},
         runtime="torchtune-llama3.2-1b", fires=False),
    Case("torchtune-multi-node", "TJC-WEBHOOK-TORCHTUNE-NUM-NODES",
         {"trainer": {**TUNE, "numNodes": 2}}, runtime="torchtune-llama3.2-3b",
         path=("spec", "trainer", "numNodes"), message="must be 1 for llama3_2/3B model"),
    Case("torchtune-70b-multi-node", "TJC-WEBHOOK-TORCHTUNE-NUM-NODES",
         {"trainer": {**TUNE, "numNodes": 2}}, runtime="torchtune-llama3.2-1b",
         ref="torchtune-llama3.3-70b", edits=(renamed("torchtune-llama3.3-70b"),), fires=False),
    Case("torchtune-qwen-qlora-single-device", "TJC-WEBHOOK-TORCHTUNE-QLORA-MODEL",
         {"trainer": {**TUNE, "args": ["model.quantize_base=True"],
                      "resourcesPerNode": {"limits": {"nvidia.com/gpu": 1}}}},
         runtime="torchtune-qwen2.5-1.5b", path=("spec", "runtimeRef", "name"),
         message="QLoRA is not supported for qwen2_5/1.5B model"),
    Case("torchtune-qwen-full", "TJC-WEBHOOK-TORCHTUNE-QLORA-MODEL",
         {"trainer": {**TUNE, "args": ["model.quantize_base=False"]}},
         runtime="torchtune-qwen2.5-1.5b", fires=False),
    Case("torchtune-qlora-distributed", "TJC-WEBHOOK-TORCHTUNE-QLORA-NUM-PROC",
         {"trainer": {**TUNE, "args": ["model.quantize_base=true"]}},
         runtime="torchtune-llama3.2-1b", path=("spec", "trainer", "numProcPerNode"),
         message="must be auto or 1 for llama3_2/1B model when using QLoRA",
         extra=("TJC-WEBHOOK-TORCHTUNE-QLORA-RESOURCES",)),
    Case("torchtune-qlora-one-gpu", "TJC-WEBHOOK-TORCHTUNE-QLORA-NUM-PROC",
         {"trainer": {**TUNE, "args": ["model.quantize_base=true"],
                      "resourcesPerNode": {"limits": {"nvidia.com/gpu": 1}}}},
         runtime="torchtune-llama3.2-1b", fires=False),
    Case("torchtune-qlora-resources", "TJC-WEBHOOK-TORCHTUNE-QLORA-RESOURCES",
         {"trainer": {**TUNE, "args": ["model.quantize_base= TRUE "], "numProcPerNode": 2}},
         runtime="torchtune-llama3.2-3b", path=("spec", "trainer", "resourcesPerNode"),
         message="must have gpu resource with value 1 for llama3_2/3B model when using QLoRA",
         extra=("TJC-WEBHOOK-TORCHTUNE-QLORA-NUM-PROC",)),
    Case("torchtune-dora-is-not-qlora", "TJC-WEBHOOK-TORCHTUNE-QLORA-RESOURCES",
         {"trainer": {**TUNE, "args": ["model.quantize_base=true", "model.use_dora=true"]}},
         runtime="torchtune-llama3.2-3b", fires=False),
    Case("torchtune-lora-multi-node", "TJC-WEBHOOK-TORCHTUNE-LORA-MULTI-NODE",
         {"trainer": {**TUNE, "numNodes": 2, "args": ["model.lora_attn_modules=[q_proj]"]}},
         runtime="torchtune-llama3.2-1b", ref="torchtune-llama3.3-70b",
         edits=(renamed("torchtune-llama3.3-70b"),), path=("spec", "trainer", "numNodes"),
         message="LoRA fine-tuning is not supported for multi-node training in TorchTune"),
    Case("torchtune-lora-one-node", "TJC-WEBHOOK-TORCHTUNE-LORA-MULTI-NODE",
         {"trainer": {**TUNE, "args": ["model.lora_attn_modules=[q_proj]"]}},
         runtime="torchtune-llama3.2-1b", fires=False),
    Case("torchtune-immutable-arg", "TJC-WEBHOOK-TORCHTUNE-IMMUTABLE-ARG",
         {"trainer": {**TUNE, "args": ["epochs=2", "tokenizer.path=/tmp/tok.model"]}},
         runtime="torchtune-llama3.2-1b", path=("spec", "trainer", "args", 1),
         message='must not set immutable config "tokenizer.path" in trainer args; it is '
                 "managed by the runtime"),
    Case("torchtune-mutable-arg", "TJC-WEBHOOK-TORCHTUNE-IMMUTABLE-ARG",
         {"trainer": {**TUNE, "args": ["epochs=2", "output_dir_suffix=x"]}},
         runtime="torchtune-llama3.2-1b", fires=False),
    # MPI runLauncherAsNode
    Case("mpi-launcher-missing", "TJC-WEBHOOK-MPI-LAUNCHER-AS-NODE", {"trainer": {"numNodes": 3}},
         runtime="deepspeed-distributed",
         edits=(put((*JOBS, 1, "name"), "driver"),
                put(("spec", "template", "spec", "successPolicy", "targetReplicatedJobs"),
                    ["driver"])),
         path=("spec", "trainer", "numNodes"),
         message="must have 1 when MPI trainingRuntime with enabled runLauncherAsNode does not "
                 "have either launcher and node"),
    Case("mpi-launcher-and-node", "TJC-WEBHOOK-MPI-LAUNCHER-AS-NODE",
         {"trainer": {"numNodes": 3}}, runtime="deepspeed-distributed", fires=False),
    # volcano
    Case("volcano-empty-queue-runtime", "TJC-WEBHOOK-VOLCANO-QUEUE", {"trainer": {}},
         edits=(VOLCANO, put(("spec", "template", "metadata", "annotations"),
                             {"scheduling.volcano.sh/queue-name": ""})),
         subject="runtime",
         path=("spec", "template", "metadata", "annotations", "scheduling.volcano.sh/queue-name"),
         message="volcano queue name must not be empty"),
    Case("volcano-empty-queue-patch", "TJC-WEBHOOK-VOLCANO-QUEUE",
         {"trainer": {}, "runtimePatches": [{"manager": "kueue.x-k8s.io/manager",
                                             "trainingRuntimeSpec": {"template": {"metadata": {
                                                 "annotations": {
                                                     "scheduling.volcano.sh/queue-name": ""}}}}}]},
         edits=(VOLCANO, put(("spec", "template", "metadata", "annotations"),
                             {"scheduling.volcano.sh/queue-name": "research"})),
         path=("spec", "runtimePatches", 0, "trainingRuntimeSpec", "template", "metadata",
               "annotations", "scheduling.volcano.sh/queue-name")),
    Case("volcano-queue-set", "TJC-WEBHOOK-VOLCANO-QUEUE", {"trainer": {}},
         edits=(VOLCANO, put(("spec", "template", "metadata", "annotations"),
                             {"scheduling.volcano.sh/queue-name": "research"})), fires=False),
    # flux
    Case("flux-installer-reserved", "TJC-WEBHOOK-FLUX-INSTALLER", {"trainer": {"numNodes": 2}},
         edits=(FLUX, put((*NODE_POD, "initContainers"),
                          [{"name": "flux-installer", "image": "busybox"}])),
         subject="runtime", path=(*NODE_POD, "initContainers", 0),
         message="initContainer 'flux-installer' is reserved"),
    Case("flux-other-init-container", "TJC-WEBHOOK-FLUX-INSTALLER", {"trainer": {"numNodes": 2}},
         edits=(FLUX, put((*NODE_POD, "initContainers"), [{"name": "setup", "image": "x"}])),
         fires=False),
    Case("flux-zero-procs", "TJC-WEBHOOK-FLUX-NUM-PROC-PER-NODE",
         {"trainer": {"numNodes": 2, "numProcPerNode": 0}}, edits=(FLUX,),
         path=("spec", "trainer", "numProcPerNode"),
         message="must be greater than or equal to 1 for Flux TrainJob"),
    Case("flux-one-proc", "TJC-WEBHOOK-FLUX-NUM-PROC-PER-NODE",
         {"trainer": {"numNodes": 2, "numProcPerNode": 1}}, edits=(FLUX,), fires=False),
]


def _run(case: Case) -> list[Diagnostic]:
    rt = runtime(case.runtime, *case.edits) if case.runtime else None
    tj = trainjob(case.spec, case.ref or (case.runtime or "torch-distributed"), case.kind)
    old = trainjob(case.old, case.ref or (case.runtime or "torch-distributed")) \
        if case.old is not None else None
    return validate_trainjob(tj, rt, old=old)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_trainjob_rule(case: Case) -> None:
    found = _run(case)
    if not case.fires:
        assert found == [], [d.text() for d in found]
        return
    hits = [d for d in found if d.rule == case.rule]
    assert len(hits) == 1, [d.text() for d in found]
    hit = hits[0]
    assert hit.severity is case.severity
    assert hit.subject == case.subject
    assert case.message in hit.message
    if case.path is not None:
        assert hit.path == case.path
    assert {d.rule for d in found} == {case.rule, *case.extra}, [d.text() for d in found]


def test_deprecation_warning_comes_first() -> None:
    tj = trainjob({"trainer": {"env": [{"name": "PET_NNODES", "value": "2"}]}})
    found = validate_trainjob(tj, runtime("torch-distributed", DEPRECATED))
    assert [d.rule for d in found] == ["TJC-WEBHOOK-DEPRECATED-RUNTIME-REF",
                                       "TJC-WEBHOOK-TORCH-RESERVED-ENV"]


def test_namespaced_runtime_is_never_deprecated() -> None:
    rt = runtime("torch-distributed", DEPRECATED, put(("kind",), "TrainingRuntime"),
                 put(("metadata", "namespace"), "team-a"))
    assert validate_trainjob(trainjob({"trainer": {}}, kind="TrainingRuntime"), rt) == []


def test_unsupported_runtime_kind() -> None:
    tj = trainjob({"trainer": {}}, kind="Runtime")
    [found] = validate_trainjob(tj, None)
    assert found.rule == "TJC-RUNTIME-UNSUPPORTED"
    assert "unsupported runtime: Runtime.trainer.kubeflow.org" in found.message


def test_existing_patch_container_sees_patched_spec_for_initializers() -> None:
    # upstream checks initializers on the spec after the patches: a patch that mounts the
    # initializer volume into the dataset-initializer container satisfies the mount rule.
    tj = trainjob({"initializer": {"dataset": {}}, **patch(
        {"containers": [{"name": "dataset-initializer",
                         "volumeMounts": [{"name": "initializer", "mountPath": "/data"}]}]},
        job="dataset-initializer")}, "torchtune-llama3.2-1b")
    rt = runtime("torchtune-llama3.2-1b",
                 put((*JOBS, 0, *POD, "containers", 0, "volumeMounts", 0, "name"), "cache"))
    assert validate_trainjob(tj, rt) == []


def test_unbuildable_context_is_reported_with_the_other_rules() -> None:
    # a runtime mount without its merge key (mountPath) breaks the patch merge; upstream's
    # validator then has no runtime info, here the merge error is reported and the rules that
    # need no context still run.
    rt = runtime("torch-distributed", put((*NODE_POD, "containers", 0, "volumeMounts"),
                                          [{"name": "data", "mountPath": "/data"}]))
    del rt["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"][
        "spec"]["containers"][0]["volumeMounts"][0]["mountPath"]
    tj = trainjob({"trainer": {"env": [{"name": "PET_NNODES", "value": "2"}]}, **patch(
        {"containers": [{"name": "node", "volumeMounts": [{"name": "x", "mountPath": "/x"}]}]})})
    rules = [d.rule for d in validate_trainjob(tj, rt)]
    assert rules == ["TJC-PATCH-MERGE-KEY", "TJC-WEBHOOK-TORCH-RESERVED-ENV"]


def test_inputs_are_not_mutated() -> None:
    tj = trainjob({"trainer": {**TUNE, "args": ["output_dir=/x"]},
                   **patch({"nodeSelector": {"a": "b"}})}, "torchtune-llama3.2-1b")
    rt = runtime("torchtune-llama3.2-1b")
    before = (copy_json(tj), copy_json(rt))
    validate_trainjob(tj, rt, old=copy_json(tj))
    assert (tj, rt) == before


# ----------------------------------------------------------------------------- runtimes


@dataclass(frozen=True)
class RuntimeCase:
    """One runtime create (or update, with `old`); `rule` fires at `path` or nothing does."""

    id: str
    rule: str
    name: str
    edits: tuple[Edit, ...] = ()
    fires: bool = True
    old: bool = False
    path: tuple[str | int, ...] | None = None
    message: str = ""
    severity: Severity = Severity.ERROR


RUNTIME_CASES = [
    RuntimeCase("trainer-replicas", "TJC-WEBHOOK-RUNTIME-REPLICAS", "torch-distributed",
                (put((*JOBS, 0, "replicas"), 2),), path=(*JOBS, 0, "replicas"),
                message="always must be 1"),
    RuntimeCase("trainer-replicas-ok", "TJC-WEBHOOK-RUNTIME-REPLICAS", "torch-distributed",
                fires=False),
    RuntimeCase("other-ancestor-replicas", "TJC-WEBHOOK-RUNTIME-REPLICAS", "torch-distributed",
                (put((*JOBS, 0, "replicas"), 2),
                 put((*JOBS, 0, "template", "metadata", "labels",
                      "trainer.kubeflow.org/trainjob-ancestor-step"), "evaluator")),
                fires=False),
    RuntimeCase("model-container-missing", "TJC-WEBHOOK-RUNTIME-CONTAINER",
                "torchtune-llama3.2-1b",
                (put((*JOBS, 1, *POD, "containers", 0, "name"), "downloader"),),
                path=(*JOBS, 1, *POD, "containers"),
                message="must contain the required container for the ancestor: "
                        "model-initializer"),
    RuntimeCase("model-container-present", "TJC-WEBHOOK-RUNTIME-CONTAINER",
                "torchtune-llama3.2-1b", fires=False),
    RuntimeCase("deprecated-create", "TJC-WEBHOOK-DEPRECATED-RUNTIME", "jax-distributed",
                (DEPRECATED,), severity=Severity.WARNING,
                path=("metadata", "labels", "trainer.kubeflow.org/support"),
                message='ClusterTrainingRuntime "jax-distributed" is deprecated and will be '
                        "removed in a future release of Kubeflow Trainer. See runtime "
                        "deprecation policy: https://trainer.kubeflow.org/"),
    RuntimeCase("deprecated-update", "TJC-WEBHOOK-DEPRECATED-RUNTIME", "jax-distributed",
                (DEPRECATED,), fires=False, old=True),
    RuntimeCase("cluster-update-checked", "TJC-WEBHOOK-RUNTIME-REPLICAS", "torch-distributed",
                (put((*JOBS, 0, "replicas"), 3),), old=True, path=(*JOBS, 0, "replicas")),
    RuntimeCase("namespaced-update-unchecked", "TJC-WEBHOOK-RUNTIME-REPLICAS",
                "torch-distributed", (put((*JOBS, 0, "replicas"), 3),
                                      put(("kind",), "TrainingRuntime")),
                fires=False, old=True),
    RuntimeCase("namespaced-create-checked", "TJC-WEBHOOK-RUNTIME-REPLICAS", "torch-distributed",
                (put((*JOBS, 0, "replicas"), 3), put(("kind",), "TrainingRuntime")),
                path=(*JOBS, 0, "replicas")),
    RuntimeCase("validation-disabled", "TJC-WEBHOOK-RUNTIME-REPLICAS", "torch-distributed",
                (put((*JOBS, 0, "replicas"), 3), DEPRECATED,
                 put(("metadata", "labels", "trainer.kubeflow.org/webhook-validation"),
                     "disabled")), fires=False),
]


@pytest.mark.parametrize("case", RUNTIME_CASES, ids=[c.id for c in RUNTIME_CASES])
def test_runtime_rule(case: RuntimeCase) -> None:
    doc = runtime(case.name, *case.edits)
    found = validate_runtime(doc, old=copy_json(doc) if case.old else None)
    if not case.fires:
        assert found == [], [d.text() for d in found]
        return
    assert [d.rule for d in found] == [case.rule], [d.text() for d in found]
    hit = found[0]
    assert hit.severity is case.severity
    assert hit.subject == "runtime"
    assert case.message in hit.message
    if case.path is not None:
        assert hit.path == case.path


@pytest.mark.parametrize("path", sorted(p.stem for p in RUNTIMES.glob("*.yaml")))
def test_builtin_runtimes_are_valid(path: str) -> None:
    assert validate_runtime(runtime(path)) == []
    assert validate_trainjob(trainjob({"trainer": {}}, path), runtime(path)) == []
