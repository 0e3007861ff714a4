"""Hypothesis strategies: valid TrainJobs and runtimes for the property tests."""

from __future__ import annotations

from hypothesis import strategies as st

from compiler.common.jsondata import Obj
from compiler.io.builtin import builtin_runtimes

ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
ENV_NAMES = ["A", "B", "JAX_NUM_PROCESSES", "JAX_PROCESS_ID", "LR", "STORAGE_URI"]
names = st.from_regex(r"[a-z][a-z0-9]{0,8}", fullmatch=True)


def env_list(prefix: str = "") -> st.SearchStrategy[list[Obj]]:
    """Env lists with unique names (the CRDs key env by name)."""
    return st.lists(st.sampled_from(ENV_NAMES), unique=True, max_size=4).flatmap(
        lambda keys: st.tuples(*[st.text("abc01", max_size=3) for _ in keys]).map(
            lambda values: [{"name": k, "value": prefix + v} for k, v in zip(keys, values,
                                                                            strict=True)]))


# Requests below every limit, whole GPUs as limits only: the API server takes the Pods however
# the TrainJob's resourcesPerNode merges with the runtime's resources.
_REQUESTS = {"cpu": ["500m", "1", "0.5"], "memory": ["100M", "1Gi"]}
_LIMITS = {"cpu": ["2", "2000m", "3"], "memory": ["1Gi", "1024Mi", "2Gi"],
           "nvidia.com/gpu": ["1", "2", "3"]}
resources = st.fixed_dictionaries({}, optional={
    "limits": st.lists(st.sampled_from(sorted(_LIMITS)), unique=True, max_size=3).flatmap(
        lambda keys: st.fixed_dictionaries({k: st.sampled_from(_LIMITS[k]) for k in keys})),
    "requests": st.lists(st.sampled_from(sorted(_REQUESTS)), unique=True, max_size=2).flatmap(
        lambda keys: st.fixed_dictionaries({k: st.sampled_from(_REQUESTS[k]) for k in keys})),
})


@st.composite
def plain_runtime(draw: st.DrawFn) -> Obj:
    """A ClusterTrainingRuntime with 1-4 replicatedJobs, maybe an mlPolicy, maybe no jax."""
    job_names = draw(st.lists(names, min_size=1, max_size=4, unique=True))
    trainer_at = draw(st.integers(0, len(job_names) - 1))
    jobs = []
    for i, name in enumerate(job_names):
        labels = {ANCESTOR: "trainer"} if i == trainer_at else {}
        container: Obj = {"name": "node" if i == trainer_at else name, "image": "busybox:1",
                          "env": draw(env_list("rt-"))}
        if draw(st.booleans()):
            container["resources"] = draw(resources)
        job_spec: Obj = {"template": {"spec": {"containers": [container]}}}
        if draw(st.booleans()):  # (an Indexed Job needs completions too)
            job_spec["parallelism"] = job_spec["completions"] = draw(st.integers(1, 5))
        jobs.append({"name": name, "template": {"metadata": {"labels": labels}, "spec": job_spec}})
    spec: Obj = {"template": {"spec": {"replicatedJobs": jobs}}}
    policy = draw(st.sampled_from(["none", "plain", "jax"]))
    if policy != "none":
        spec["mlPolicy"] = {"numNodes": draw(st.integers(1, 4))}
        if policy == "jax":
            spec["mlPolicy"]["jax"] = {}
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime",
            "metadata": {"name": "gen-runtime"}, "spec": spec}


@st.composite
def trainjob(draw: st.DrawFn, runtime_name: str) -> Obj:
    """A TrainJob referencing `runtime_name`, with optional trainer fields."""
    spec: Obj = {"runtimeRef": {"name": runtime_name}}
    if draw(st.booleans()):
        trainer: Obj = {}
        if draw(st.booleans()):
            trainer["numNodes"] = draw(st.integers(0, 8))
        if draw(st.booleans()):
            trainer["env"] = draw(env_list())
        if draw(st.booleans()):
            trainer["resourcesPerNode"] = draw(resources)
        if draw(st.booleans()):
            trainer["command"] = ["python", draw(names)]
        spec["trainer"] = trainer
    if draw(st.booleans()):
        spec["suspend"] = draw(st.booleans())
    meta: Obj = {"name": draw(names), "namespace": draw(st.sampled_from(["default", "team-a"]))}
    if draw(st.booleans()):
        meta["uid"] = "0000-1111"
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": meta, "spec": spec}


@st.composite
def job_and_runtime(draw: st.DrawFn) -> tuple[Obj, Obj]:
    """A TrainJob with the built-in jax-distributed runtime or a generated one."""
    if draw(st.booleans()):
        runtime = next(d.data for d in builtin_runtimes()
                       if d.data["metadata"]["name"] == "jax-distributed")
    else:
        runtime = draw(plain_runtime())
    return draw(trainjob(runtime["metadata"]["name"])), runtime


def _job(name: str, container: str, labels: dict[str, str], parallelism: int | None,
         env: list[Obj], resources: Obj | None = None) -> Obj:
    spec: Obj = {"template": {"spec": {"containers": [
        {"name": container, "image": "img:1", "env": env,
         **({"resources": resources} if resources else {})}]}}}
    if parallelism is not None:
        spec["parallelism"] = parallelism
    return {"name": name, "template": {"metadata": {"labels": labels}, "spec": spec}}


@st.composite
def framework_runtime(draw: st.DrawFn) -> Obj:
    """A runtime for torch, jax, xgboost or mpi (launcher/node jobs in either order)."""
    framework = draw(st.sampled_from(["torch", "jax", "xgboost", "mpi"]))
    cpu_only = {"requests": {"cpu": draw(st.sampled_from(["1", "2", "2500m", "0.5"]))}}
    if framework == "mpi":
        launcher_is_trainer = draw(st.booleans())
        launcher = _job("launcher", "node", {ANCESTOR: "trainer"} if launcher_is_trainer else {},
                        None, draw(env_list("rt-")))
        node = _job("node", "node", {} if launcher_is_trainer else {ANCESTOR: "trainer"},
                    draw(st.one_of(st.none(), st.integers(1, 4))), [], cpu_only)
        jobs = [launcher, node] if draw(st.booleans()) else [node, launcher]
        policy: Obj = {"mpi": {"runLauncherAsNode": draw(st.booleans()),
                               "numProcPerNode": draw(st.integers(1, 4))}}
    else:
        jobs = [_job("node", "node", {ANCESTOR: "trainer"}, None, draw(env_list("rt-")),
                     cpu_only)]
        policy = {framework: {}}
    spec: Obj = {"mlPolicy": {"numNodes": draw(st.integers(1, 4)), **policy},
                 "template": {"spec": {"replicatedJobs": jobs}}}
    if draw(st.booleans()):
        spec["template"]["spec"]["network"] = {"subdomain": "svc"}
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime",
            "metadata": {"name": f"{framework}-gen"}, "spec": spec}


@st.composite
def framework_pair(draw: st.DrawFn) -> tuple[Obj, Obj]:
    """A TrainJob (always with spec.trainer) and a framework runtime."""
    runtime = draw(framework_runtime())
    job = draw(trainjob(runtime["metadata"]["name"]))
    trainer = job["spec"].setdefault("trainer", {})
    trainer.pop("resourcesPerNode", None)
    # a user env may override a framework variable (JAX has no reserved names upstream);
    # the framework invariants hold for TrainJobs that do not
    trainer["env"] = [e for e in trainer.get("env", []) if not e["name"].startswith(
        ("PET_", "JAX_", "DMLC_", "OMPI_"))]
    return job, runtime
