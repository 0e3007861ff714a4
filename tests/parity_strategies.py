"""Hypothesis strategies for the parity tests: runtimes with every plugin (torch, MPI, JAX,
XGBoost, Flux, plain), both PodGroup kinds, initializers and sidecars, and TrainJobs with
numNodes, resourcesPerNode, env (reserved names too), runtimePatches, initializers,
managedBy, labels and annotations and suspend. Valid and invalid inputs both: the cluster's
accept/reject is compared too. Object names stay valid (ObjectMeta rules are tested apart).
"""

from __future__ import annotations

from hypothesis import strategies as st

from compiler.common.jsondata import Obj

API = "trainer.kubeflow.org/v1alpha1"
ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
ENV = ["A", "LR", "PET_NNODES", "PET_NODE_RANK", "JAX_NUM_PROCESSES", "OMPI_MCA_x",
       "FLUX_VIEW_IMAGE", "FLUX_QUEUE_POLICY", "DMLC_NUM_WORKER", "MASTER_ADDR"]
QUANTITY = ["1", "2", "500m", "1.5", "1Gi", "1024Mi", "100M", "2e3", "0", "1k", "3"]
RESOURCE = ["cpu", "memory", "nvidia.com/gpu", "amd.com/gpu", "example.com/foo"]
# Hypothesis favours the first item and both ends of a range: the common case comes first.
MANAGERS = [None, None, None, "trainer.kubeflow.org/trainjob-controller",
            "kueue.x-k8s.io/multikueue", "example.com/other"]
RARELY = [False] * 9 + [True]
names = st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True)


def env_list(values: str = "ab1") -> st.SearchStrategy[list[Obj]]:
    """Env with unique names, reserved ones included."""
    return st.lists(st.sampled_from(ENV), unique=True, max_size=3).flatmap(
        lambda keys: st.tuples(*[st.text(values, max_size=3) for _ in keys]).map(
            lambda vals: [{"name": k, "value": v} for k, v in zip(keys, vals, strict=True)]))


resources = st.fixed_dictionaries({}, optional={
    "limits": st.dictionaries(st.sampled_from(RESOURCE), st.sampled_from(QUANTITY), max_size=3),
    "requests": st.dictionaries(st.sampled_from(RESOURCE), st.sampled_from(QUANTITY),
                                max_size=2),
})


@st.composite
def container(draw: st.DrawFn, name: str) -> Obj:
    """A container with maybe a command, env, resources and a port."""
    out: Obj = {"name": name, "image": draw(st.sampled_from(["img:1", "busybox:1.36"]))}
    if draw(st.booleans()):
        out["command"] = ["python", draw(names)]
    if draw(st.booleans()):
        out["args"] = [draw(names)]
    if draw(st.booleans()):
        out["env"] = draw(env_list())
    if draw(st.booleans()):
        out["resources"] = draw(resources)
    if draw(st.integers(0, 3)) == 0:
        out["ports"] = [{"containerPort": draw(st.sampled_from([8080, 29500]))}]
    return out


@st.composite
def replicated_job(draw: st.DrawFn, name: str, ancestor: str | None, main: str) -> Obj:
    """A replicatedJob whose pod has `main` and maybe a sidecar or an init container."""
    containers = [draw(container(main))]
    if draw(st.integers(0, 3)) == 0:
        containers.append(draw(container("sidecar")))
    pod: Obj = {"containers": containers}
    if draw(st.integers(0, 4)) == 0:
        pod["initContainers"] = [draw(container("init"))]
    spec: Obj = {"template": {"spec": pod}}
    if draw(st.booleans()):
        spec["parallelism"] = draw(st.integers(1, 3))
    labels = {ANCESTOR: ancestor} if ancestor else {}
    job: Obj = {"name": name, "template": {"metadata": {"labels": labels}, "spec": spec}}
    if draw(st.sampled_from(RARELY)):
        job["replicas"] = 2
    return job


@st.composite
def ml_policy(draw: st.DrawFn) -> tuple[str, Obj | None]:
    """A framework name and its mlPolicy."""
    framework = draw(st.sampled_from(["none", "plain", "torch", "mpi", "jax", "xgboost",
                                      "flux"]))
    if framework == "none":
        return framework, None
    policy: Obj = {}
    if draw(st.booleans()):
        policy["numNodes"] = draw(st.integers(1, 3))
    if framework == "mpi":
        mpi: Obj = {}
        if draw(st.booleans()):
            mpi["numProcPerNode"] = draw(st.integers(1, 3))
        if draw(st.booleans()):
            mpi["runLauncherAsNode"] = draw(st.booleans())
        if draw(st.booleans()):
            mpi["sshAuthMountPath"] = "/home/mpiuser/.ssh"
        policy["mpi"] = mpi
    elif framework == "flux":
        flux: Obj = {}
        if draw(st.booleans()):
            flux["numProcPerNode"] = draw(st.integers(1, 3))
        policy["flux"] = flux
    elif framework != "plain":
        policy[framework] = {}
    return framework, policy


@st.composite
def runtime(draw: st.DrawFn, namespace: str) -> Obj:
    """A TrainingRuntime (in `namespace`) or a ClusterTrainingRuntime."""
    framework, policy = draw(ml_policy())
    jobs = []
    for init in ("dataset-initializer", "model-initializer"):
        if draw(st.integers(0, 3)) == 0:
            jobs.append(draw(replicated_job(init, init, init)))
    if framework == "mpi":
        jobs.append(draw(replicated_job("launcher", None, "node")))
    jobs.append(draw(replicated_job("node", "trainer", "node")))
    if draw(st.integers(0, 5)) == 0:
        jobs.append(draw(replicated_job("extra", None, "extra")))
    spec: Obj = {"template": {"spec": {"replicatedJobs": jobs}}}
    if draw(st.booleans()):
        spec["template"]["metadata"] = {"labels": {"team": draw(names)}}
        if draw(st.booleans()):
            spec["template"]["metadata"]["annotations"] = {"owner": draw(names)}
    if policy is not None:
        spec["mlPolicy"] = policy
    group = draw(st.sampled_from([None, "coscheduling", "volcano"]))
    if group == "coscheduling":
        spec["podGroupPolicy"] = {"coscheduling": {"scheduleTimeoutSeconds": 30}
                                  if draw(st.booleans()) else {}}
    elif group == "volcano":
        spec["podGroupPolicy"] = {"volcano": {}}
    kind = draw(st.sampled_from(["ClusterTrainingRuntime", "TrainingRuntime"]))
    meta: Obj = {"name": "rt"}
    if kind == "TrainingRuntime":
        meta["namespace"] = namespace
    if draw(st.integers(0, 4)) == 0:
        meta["labels"] = {"trainer.kubeflow.org/webhook-validation": "disabled"}
    return {"apiVersion": API, "kind": kind, "metadata": meta, "spec": spec}


@st.composite
def runtime_patch(draw: st.DrawFn) -> Obj:
    """A runtimePatch: template metadata, and/or a patch of the node job's pod."""
    template: Obj = {}
    if draw(st.booleans()):
        template["metadata"] = {"labels": {"patched": draw(names)}}
    if draw(st.booleans()):
        pod: Obj = {}
        if draw(st.booleans()):
            pod["nodeSelector"] = {"pool": draw(names)}
        if draw(st.booleans()):
            pod["containers"] = [{"name": "node", "env": draw(env_list("xy"))}]
        template["spec"] = {"replicatedJobs": [{"name": "node", "template": {"spec": {
            "template": {"spec": pod}}}}]}
    return {"manager": draw(st.sampled_from(["kueue.x-k8s.io/kueue", "example.com/tool"])),
            "trainingRuntimeSpec": {"template": template}}


@st.composite
def trainjob(draw: st.DrawFn, rt: Obj, namespace: str) -> Obj:
    """A TrainJob for `rt` (or, now and then, a runtime that does not exist)."""
    ref: Obj = {"name": "missing" if draw(st.sampled_from(RARELY)) else rt["metadata"]["name"]}
    if rt["kind"] == "TrainingRuntime":
        ref["kind"] = "TrainingRuntime"
    spec: Obj = {"runtimeRef": ref}
    trainer: Obj = {}
    if draw(st.booleans()):
        trainer["numNodes"] = draw(st.integers(0, 3))
    if draw(st.booleans()):
        trainer["numProcPerNode"] = draw(st.integers(0, 2))
    if draw(st.booleans()):
        trainer["env"] = draw(env_list())
    if draw(st.booleans()):
        trainer["resourcesPerNode"] = draw(resources)
    if draw(st.booleans()):
        trainer["command"] = ["torchrun", draw(names)]
    if draw(st.booleans()):
        trainer["args"] = [draw(names)]
    if draw(st.sampled_from(RARELY)):
        trainer["image"] = "trainer:2"
    wants_trainer: bool = bool(trainer) or draw(st.booleans())
    if wants_trainer:
        spec["trainer"] = trainer
    if draw(st.integers(0, 3)) == 0:
        spec["runtimePatches"] = draw(st.lists(runtime_patch(), max_size=2, unique_by=lambda p:
                                               p["manager"]))
    if draw(st.integers(0, 3)) == 0:
        spec["initializer"] = draw(st.fixed_dictionaries({}, optional={
            "dataset": st.sampled_from([{"storageUri": "hf://d"},
                                        {"storageUri": "s3://b", "secretRef": {"name": "s"}}]),
            "model": st.just({"storageUri": "hf://m", "env": [{"name": "X", "value": "1"}]})}))
    manager = draw(st.sampled_from(MANAGERS))
    if manager is not None:
        spec["managedBy"] = manager
    if draw(st.booleans()):
        spec["suspend"] = draw(st.booleans())
    if draw(st.sampled_from(RARELY)):
        spec["activeDeadlineSeconds"] = 600
    meta: Obj = {"name": draw(names), "namespace": namespace,
                 "uid": "7c6f9f0e-1b7e-4a39-9a5b-" + draw(st.from_regex(r"[0-9a-f]{12}",
                                                                     fullmatch=True))}
    if draw(st.booleans()):
        meta["labels"] = {"app": draw(names)}
    if draw(st.booleans()):
        meta["annotations"] = {"note": draw(names)}
    return {"apiVersion": API, "kind": "TrainJob", "metadata": meta, "spec": spec}


@st.composite
def parity_case(draw: st.DrawFn) -> tuple[list[Obj], Obj]:
    """Runtimes (one, sometimes two of the same name and kind differing) and a TrainJob."""
    namespace = draw(st.sampled_from(["default", "team-a"]))
    rt = draw(runtime(namespace))
    return [rt], draw(trainjob(rt, namespace))
