"""`compiler.core.webhook.validate_trainjob` against the code it replaced, kept here as the
reference: every plugin's rules run whatever the runtime's policies, the compile context is
built for every TrainJob with runtime patches and for every rule that reads it (pod sets by
name, container names), and the patch rules look up the runtime's container names each time.
Today's code skips plugins whose policy the runtime does not set, only merges the patches to
learn whether they merge, and reads the runtime's typed spec where no patch has a spec. Both
must give the same diagnostics, in the same order, on generated runtimes and TrainJobs (the
parity strategies, with patches that add jobs and containers, lack merge keys, set env, mounts
and the Volcano queue), on every built-in runtime and on the benchmark corpus."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.corpus import corpus
from compiler.common.diagnostics import Diagnostic, error
from compiler.common.jsondata import Obj, copy_json, get_path
from compiler.core import webhook
from compiler.core.context import NODE, Context
from compiler.core.plugins import flux, hooked, mpi, torch
from compiler.core.plugins.checks import (
    NUM_NODES,
    PATCH_JOBS,
    PATCHES,
    POD_SPEC,
    RUNTIME_REF,
    Admission,
    _typed,
    as_dict,
    as_list,
    go_quote,
    init_container_source,
    patch_jobs,
    reserved_envs,
    strings,
)
from compiler.core.plugins.hooks import CustomValidation
from compiler.kube import roundtrip, structural
from compiler.kube.defaults import default_in_place
from tests import parity_strategies as ps

RUNTIMES = Path(__file__).resolve().parents[2] / "runtimes"
QUEUE = "scheduling.volcano.sh/queue-name"


# ----------------------------------------------------------------------------- the reference


def reference(trainjob: Obj, runtime: Obj | None, old: Obj | None = None) -> list[Diagnostic]:
    """`validate_trainjob` as it was: the full context for every rule that reads it."""
    if runtime is None:
        return [webhook._not_found(trainjob)]
    found: list[Diagnostic] = []
    deprecated = webhook._deprecated_reference(runtime)
    if deprecated is not None:
        found.append(deprecated)
    job = Admission(trainjob, runtime)
    if as_dict(trainjob.get("spec")).get("runtimePatches") and job.ctx is None \
            and job.problem is not None:
        found.append(job.problem)
    rules = {"mpi": _mpi, "flux": _flux, "torch": _torch}
    for plugin, hook in hooked(CustomValidation):
        found.extend(rules.get(plugin.name, hook.validate)(job))
    found.extend(_jobset(job))
    if old is not None:
        found.extend(webhook._patches_immutable(job, old))
    return found


def _mpi(job: Admission) -> Iterator[Diagnostic]:
    policy = job.policy("mlPolicy", "mpi")
    trainer = job.trainer
    if policy is None or trainer is None:
        return
    if trainer.get("numNodes", 1) >= 2 and policy.get("runLauncherAsNode") is True and \
            (ctx := job.ctx) is not None and (
            ctx.pod_set_by_name(mpi.LAUNCHER) is None or ctx.pod_set_by_name(NODE) is None):
        yield error("TJC-WEBHOOK-MPI-LAUNCHER-AS-NODE",
                    "must have 1 when MPI trainingRuntime with enabled runLauncherAsNode does "
                    "not have either launcher and node", NUM_NODES)
    yield from reserved_envs("TJC-WEBHOOK-MPI-RESERVED-ENV", trainer, mpi.RESERVED_ENVS)


def _flux(job: Admission) -> Iterator[Diagnostic]:
    policy = job.policy("mlPolicy", "flux")
    if policy is None or job.ctx is None:
        return
    trainer = job.trainer or {}
    npp = trainer.get("numProcPerNode", policy.get("numProcPerNode"))
    if isinstance(npp, int) and npp < 1:
        yield error("TJC-WEBHOOK-FLUX-NUM-PROC-PER-NODE",
                    f"numProcPerNode is {npp}: must be greater than or equal to 1 for Flux "
                    "TrainJob", ("spec", "trainer", "numProcPerNode"))
    for pod_set in job.ctx.pod_sets:
        if pod_set.name != NODE:
            continue
        for container in pod_set.pod_spec.get("initContainers") or []:
            if container.get("name") == flux.INSTALLER:
                subject, path = init_container_source(job, NODE, flux.INSTALLER)
                yield error("TJC-WEBHOOK-FLUX-INSTALLER",
                            "initContainer 'flux-installer' is reserved; the Flux plugin adds "
                            "it, rename this one", path, subject=subject)


def _torch(job: Admission) -> Iterator[Diagnostic]:
    policy = job.policy("mlPolicy", "torch")
    if policy is None:
        return
    if as_dict(policy.get("envInjection")).get("targets") and job.ctx is not None:
        yield from _injection_targets(job.ctx, policy)
    trainer = job.trainer
    if trainer is None:
        return
    yield from reserved_envs("TJC-WEBHOOK-TORCH-RESERVED-ENV", trainer,
                             frozenset(torch.ENV_NAMES))
    if trainer.get("command") == torch.TUNE_ENTRYPOINT and job.ctx is not None:
        yield from torch._torchtune(job.ctx, trainer)


def _injection_targets(ctx: Context, policy: Obj) -> Iterator[Diagnostic]:
    for target in as_list(as_dict(policy.get("envInjection")).get("targets")):
        job_name = str(target.get("jobName", ""))
        for name in strings(target.get("containerNames")):
            pod_set = ctx.pod_set_by_name(job_name)
            if pod_set is not None and (pod_set.container(name) is not None
                                        or pod_set.container(name, init=True) is not None):
                continue
            yield error("TJC-WEBHOOK-TORCH-ENV-INJECTION",
                        f"envInjection target podSet {go_quote(job_name)} container "
                        f"{go_quote(name)} not found in runtime template", RUNTIME_REF)


def _jobset(job: Admission) -> Iterator[Diagnostic]:
    initializer = as_dict(job.spec.get("initializer"))
    if any(isinstance(initializer.get(k), dict) for k in ("dataset", "model")) \
            and job.ctx is not None:
        names = webhook._container_names(job.ctx.spec)
        for key, name, config in (("dataset", webhook.DATASET_INITIALIZER, "datasetConfig"),
                                  ("model", webhook.MODEL_INITIALIZER, "modelConfig")):
            if isinstance(initializer.get(key), dict):
                yield from webhook._initializer(job.ctx.spec, names, name, config)
    names = webhook._container_names(as_dict(get_path(job.runtime, "spec", "template",
                                                      "spec")))
    for i, patch in enumerate(as_list(job.spec.get("runtimePatches"))):
        yield from webhook._manager(str(patch.get("manager", "")), (*PATCHES, i, "manager"))
    for i, j, pjob in patch_jobs(job.trainjob):
        path = (*PATCHES, i, *PATCH_JOBS, j)
        rjob_name = str(pjob.get("name", ""))
        containers = names.get(rjob_name)
        pod = get_path(pjob, *POD_SPEC)
        if containers is None:
            yield webhook._new_in_patch("TJC-QUIRK-PATCH-NEW-JOB",
                                        f"replicated job {go_quote(rjob_name)}",
                                        "the runtime job template", (*path, "name"))
            containers = {str(c.get("name", "")) for key in ("initContainers", "containers")
                          for c in as_list(as_dict(pod).get(key))}
        if isinstance(pod, dict):
            yield from webhook._patch_containers(pod, containers, rjob_name, (*path, *POD_SPEC))


# ----------------------------------------------------------------------------- comparing


def admitted(kind: str, raw: Obj) -> Obj:
    """A document as the validator hands it to the webhook: sanitized, then defaulted."""
    doc, _ = structural.sanitize(kind, copy_json(raw), subject=kind.lower())
    return default_in_place(kind, doc)


def same(trainjob: Obj, runtime: Obj | None) -> list[Diagnostic]:
    """Today's diagnostics, asserted equal to the reference's; the runtime's shared typed spec
    is left as the typed round trip made it."""
    today = webhook.validate_trainjob(trainjob, runtime)
    assert today == reference(trainjob, runtime)
    if runtime is not None:
        template = as_dict(as_dict(runtime.get("spec")).get("template"))
        assert _typed(runtime) == roundtrip.jobset_spec(as_dict(template.get("spec")))
    return today


def _builtin() -> list[Obj]:
    out = []
    for path in sorted(RUNTIMES.glob("*.yaml")):
        raw: Obj = yaml.safe_load(path.read_text())
        out.append(admitted(str(raw["kind"]), raw))
    return out


BUILTIN = _builtin()


# ----------------------------------------------------------------------------- inputs

CONTAINER_NAMES = ["node", "sidecar", "init", "dataset-initializer", "model-initializer",
                   "flux-installer", "launcher", None, ""]
JOB_NAMES = ["node", "launcher", "dataset-initializer", "model-initializer", "extra", "new",
             None]


@st.composite
def patch_container(draw: st.DrawFn) -> Obj:
    """A patch container: maybe without its name (the merge key), with env or mounts."""
    out: Obj = {}
    name = draw(st.sampled_from(CONTAINER_NAMES))
    if name is not None:
        out["name"] = name
    if draw(st.booleans()):
        out["env"] = [{"name": "A", "value": "1"}]
    if draw(st.booleans()):
        mount: Obj = {"name": draw(st.sampled_from(["initializer", "data"]))}
        if draw(st.integers(0, 4)):
            mount["mountPath"] = "/workspace"
        out["volumeMounts"] = [mount]
    if draw(st.integers(0, 3)) == 0:
        out["ports"] = [{"containerPort": draw(st.sampled_from([8080, 0]))}]
    return out


@st.composite
def patch(draw: st.DrawFn) -> Obj:
    """A runtime patch: metadata (the Volcano queue too), jobs with containers."""
    template: Obj = {}
    if draw(st.booleans()):
        template["metadata"] = {"annotations": {QUEUE: draw(st.sampled_from(["", "q"]))}}
    if draw(st.integers(0, 4)):
        jobs: list[Obj] = []
        for _ in range(draw(st.integers(0, 2))):
            pjob: Obj = {}
            name = draw(st.sampled_from(JOB_NAMES))
            if name is not None:
                pjob["name"] = name
            pod: Obj = {}
            for key in ("containers", "initContainers"):
                if draw(st.booleans()):
                    pod[key] = draw(st.lists(patch_container(), max_size=2))
            if draw(st.booleans()):
                pod["nodeSelector"] = {"pool": "a"}
            if draw(st.integers(0, 3)) == 0:
                pod["imagePullSecrets"] = [{"name": draw(st.sampled_from(["s", ""]))}]
            pjob["template"] = {"spec": {"template": {"spec": pod}}}
            jobs.append(pjob)
        keep: bool = bool(jobs) or draw(st.booleans())
        template["spec"] = {"replicatedJobs": jobs} if keep else {}
    return {"manager": draw(st.sampled_from(["example.com/tool", "kueue.x-k8s.io/kueue", "",
                                             "bad"])),
            "trainingRuntimeSpec": {"template": template}}


@st.composite
def runtime_doc(draw: st.DrawFn) -> Obj:
    """A parity runtime, maybe with torch env-injection targets, a flux-installer init
    container in `node`, or the Volcano queue annotation in its template."""
    raw: Obj = draw(ps.runtime("team-a"))
    spec = raw["spec"]
    if draw(st.booleans()):
        raw.get("metadata", {}).pop("labels", None)
    torch_policy = get_path(spec, "mlPolicy", "torch")
    if isinstance(torch_policy, dict) and draw(st.booleans()):
        torch_policy["envInjection"] = {"targets": [
            {"jobName": draw(st.sampled_from(["node", "extra", "launcher"])),
             "containerNames": draw(st.lists(st.sampled_from(["node", "sidecar", "init"]),
                                             min_size=1, max_size=2, unique=True))}]}
    mpi_policy = get_path(spec, "mlPolicy", "mpi")
    if isinstance(mpi_policy, dict) and draw(st.booleans()):
        mpi_policy["runLauncherAsNode"] = True
    jobs = spec["template"]["spec"]["replicatedJobs"]
    if draw(st.integers(0, 3)) == 0:
        node = next(j for j in jobs if j["name"] == "node")
        node["template"]["spec"]["template"]["spec"]["initContainers"] = [
            {"name": "flux-installer", "image": "i:1"}]
    if draw(st.integers(0, 3)) == 0:
        meta = spec["template"].setdefault("metadata", {})
        meta["annotations"] = {QUEUE: draw(st.sampled_from(["", "q"]))}
    if draw(st.integers(0, 3)) == 0:
        raw["spec"]["template"]["spec"]["replicatedJobs"] = [j for j in jobs
                                                             if j["name"] != "launcher"]
    return raw


@st.composite
def trainjob_doc(draw: st.DrawFn, raw_runtime: Obj) -> Obj:
    """A parity TrainJob for the runtime, maybe with these patches, initializers or the
    TorchTune command."""
    raw: Obj = draw(ps.trainjob(raw_runtime, "team-a"))
    spec = raw["spec"]
    if draw(st.booleans()):
        spec["runtimePatches"] = draw(st.lists(patch(), max_size=3))
    if draw(st.integers(0, 3)) == 0:
        spec.setdefault("trainer", {})["command"] = ["tune", "run"]
    if draw(st.integers(0, 2)) == 0:
        spec["initializer"] = draw(st.sampled_from([
            {"dataset": {"storageUri": "hf://d"}}, {"model": {"storageUri": "hf://m"}},
            {"dataset": {}, "model": {}}]))
    return raw


# ----------------------------------------------------------------------------- tests


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_same_diagnostics_on_generated_documents(data: st.DataObject) -> None:
    raw_runtime = data.draw(runtime_doc())
    raw_job = data.draw(trainjob_doc(raw_runtime))
    runtime = admitted(str(raw_runtime["kind"]), raw_runtime)
    trainjob = admitted("TrainJob", raw_job)
    same(trainjob, runtime)
    same(trainjob, None)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_same_diagnostics_on_builtin_runtimes(data: st.DataObject) -> None:
    runtime = data.draw(st.sampled_from(BUILTIN))
    raw_job = data.draw(trainjob_doc({"kind": runtime["kind"], "metadata": runtime["metadata"],
                                      "spec": {}}))
    same(admitted("TrainJob", raw_job), runtime)


def test_same_diagnostics_on_the_corpus() -> None:
    runtimes, jobs = corpus(600)
    table = {(r["kind"], r["metadata"]["name"], r["metadata"].get("namespace", "")):
             admitted(r["kind"], r) for r in runtimes}
    for runtime in BUILTIN:
        table[(runtime["kind"], runtime["metadata"]["name"], "")] = runtime
    fired = 0
    for raw in jobs:
        trainjob = admitted("TrainJob", raw)
        ref = as_dict(get_path(trainjob, "spec", "runtimeRef"))
        kind = str(ref.get("kind", "ClusterTrainingRuntime"))
        namespace = str(trainjob["metadata"].get("namespace", "")) \
            if kind == "TrainingRuntime" else ""
        key = (kind, str(ref.get("name", "")), namespace)
        fired += len(same(trainjob, table.get(key)))
    assert fired  # the corpus breaks some TrainJobs on purpose


def test_generated_documents_reach_every_changed_rule() -> None:
    """The rules whose inputs changed fire on inputs like those generated above."""
    rules = {d.rule for d in _examples()}
    assert {"TJC-PATCH-MERGE-KEY", "TJC-WEBHOOK-MPI-LAUNCHER-AS-NODE",
            "TJC-WEBHOOK-FLUX-INSTALLER", "TJC-WEBHOOK-TORCH-ENV-INJECTION",
            "TJC-WEBHOOK-INITIALIZER-JOB", "TJC-WEBHOOK-VOLCANO-QUEUE",
            "TJC-QUIRK-PATCH-NEW-JOB", "TJC-WEBHOOK-PATCH-ENV"} <= rules


def _examples() -> Iterator[Diagnostic]:
    by_name = {r["metadata"]["name"]: r for r in BUILTIN}
    deepspeed = by_name["deepspeed-distributed"]
    torch_rt = by_name["torch-distributed"]
    job = {"apiVersion": ps.API, "kind": "TrainJob",
           "metadata": {"name": "demo", "namespace": "team-a"}}
    no_key = {"runtimeRef": {"name": "torch-distributed"}, "runtimePatches": [
        {"manager": "example.com/tool", "trainingRuntimeSpec": {"template": {"spec": {
            "replicatedJobs": [{"name": "node", "template": {"spec": {"template": {"spec": {
                "containers": [{"image": "x"}]}}}}}]}}}}]}
    yield from same(admitted("TrainJob", {**job, "spec": no_key}), torch_rt)
    new_job = copy_json(no_key)
    pjob = new_job["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"][
        "replicatedJobs"][0]
    pjob["name"] = "new"
    pjob["template"]["spec"]["template"]["spec"]["containers"] = [
        {"name": "node", "env": [{"name": "A", "value": "1"}]}]
    yield from same(admitted("TrainJob", {**job, "spec": new_job}), torch_rt)
    yield from same(admitted("TrainJob", {**job, "spec": {
        "runtimeRef": {"name": "deepspeed-distributed"}, "trainer": {"numNodes": 2},
        "initializer": {"dataset": {"storageUri": "hf://d"}}}}),
        _edited(deepspeed, lambda s: s["template"]["spec"].update(replicatedJobs=[
            j for j in s["template"]["spec"]["replicatedJobs"] if j["name"] != "launcher"])))
    no_launcher = _edited(deepspeed, lambda s: s["template"]["spec"].update(replicatedJobs=[
        j for j in s["template"]["spec"]["replicatedJobs"] if j["name"] != "launcher"]))
    adds_launcher = copy_json(new_job)
    adds_launcher["runtimeRef"] = {"name": "deepspeed-distributed"}
    adds_launcher["trainer"] = {"numNodes": 2}
    for name in ("launcher", "other"):
        pjob["name"] = name
        adds_launcher["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"][
            "replicatedJobs"][0] = copy_json(pjob)
        yield from same(admitted("TrainJob", {**job, "spec": adds_launcher}), no_launcher)
    yield from same(admitted("TrainJob", {**job, "spec": {
        "runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 1}}}),
        _edited(torch_rt, _flux_with_installer))
    yield from same(admitted("TrainJob", {**job, "spec": {
        "runtimeRef": {"name": "torch-distributed"}, "trainer": {}}}),
        _edited(torch_rt, _injection_and_volcano))


def _edited(runtime: Obj, edit: Any) -> Obj:
    raw = copy_json(runtime)
    edit(raw["spec"])
    return admitted(str(raw["kind"]), raw)


def _flux_with_installer(spec: Obj) -> None:
    spec["mlPolicy"] = {"numNodes": 1, "flux": {}}
    node = next(j for j in spec["template"]["spec"]["replicatedJobs"] if j["name"] == "node")
    node["template"]["spec"]["template"]["spec"]["initContainers"] = [
        {"name": "flux-installer", "image": "i:1"}]


def _injection_and_volcano(spec: Obj) -> None:
    spec["mlPolicy"]["torch"]["envInjection"] = {"targets": [
        {"jobName": "node", "containerNames": ["missing"]}]}
    spec["podGroupPolicy"] = {"volcano": {}}
    spec["template"].setdefault("metadata", {})["annotations"] = {QUEUE: ""}
