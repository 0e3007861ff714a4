"""One verdict: on generated TrainJobs and runtimes, `tjc validate` exits 1 iff `tjc render`
refuses the TrainJob iff the library refuses it iff the controller marks it Failed iff the
admission webhook refuses its create.

The runtimes and TrainJobs are ones the API server stores (the controller only ever sees
those), some broken the way a real repository breaks them: more nodes than an Indexed Job
runs, a name whose pod names JobSet refuses, a volume item the API server refuses in the
Pods, a hostfile over what a ConfigMap holds."""

from __future__ import annotations

import copy
import json
import uuid
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler import compile_trainjob
from compiler.cli.main import main
from compiler.common.diagnostics import Severity
from compiler.common.jsondata import Obj
from compiler.controller import status
from compiler.controller.judge import Judge, Runtimes
from compiler.controller.kube import CLUSTER_RUNTIME, TRAINJOB
from compiler.io.builtin import builtin_runtimes
from tests import strategies as gen
from tests.controller.test_controller_units import FakeKube, _reconciler

BUDGET = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
BREAKERS = ["none", "none", "parallelism", "long-name", "volume-path", "volume-mode",
            "mpi-hostfile"]


def _break(how: str, runtime: Obj, job: Obj) -> tuple[Obj, Obj]:
    runtime, job = copy.deepcopy(runtime), copy.deepcopy(job)
    trainer = job["spec"].setdefault("trainer", {})
    pod = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"][
        "template"]["spec"]
    if how == "parallelism":
        trainer["numNodes"] = 150_001
    elif how == "long-name":
        job["metadata"]["name"] = "n" * 60
    elif how in ("volume-path", "volume-mode"):
        item = {"key": "a", "path": "../x"} if how == "volume-path" else \
            {"key": "a", "path": "x", "mode": 0o6777}
        pod["volumes"] = [{"name": "cfg", "configMap": {"name": "cfg", "items": [item]}}]
    elif how == "mpi-hostfile":
        runtime = copy.deepcopy(_builtin("deepspeed-distributed"))
        runtime["metadata"]["name"] = job["spec"]["runtimeRef"]["name"]
        trainer["numNodes"] = 90_000  # over 1 MiB of hostfile lines, under 100,000 pods
    return runtime, job


def _builtin(name: str) -> Obj:
    return next(d.data for d in builtin_runtimes() if d.data["metadata"]["name"] == name)


def _cli(verb: str, runtime: Obj, job: Obj, folder: Path) -> int:
    path = folder / "in.yaml"  # JSON documents: no YAML 1.1 reading of `y` as a boolean
    path.write_text("---\n".join(json.dumps(doc) + "\n" for doc in (runtime, job)))
    code = main([verb, "-q", "--no-default-policies", "--no-builtin-runtimes", str(path)])
    assert isinstance(code, int)
    return code


def _controller(runtime: Obj, job: Obj) -> bool:
    """Whether the controller marks the TrainJob Failed (it reads both from the cluster)."""
    kube = FakeKube()
    kube.put(CLUSTER_RUNTIME, runtime)
    stored = copy.deepcopy(job)
    stored["metadata"].update({"uid": "u-1", "creationTimestamp": "2026-01-01T00:00:00Z"})
    kube.put(TRAINJOB, stored)
    meta = stored["metadata"]
    _reconciler(kube).reconcile((meta["namespace"], meta["name"]))
    patches = [p["status"] for p in kube.status_patches]
    return bool(patches) and status.condition(patches[-1], "Failed") is not None


def _webhook(runtime: Obj, job: Obj) -> bool:
    """Whether the admission webhook refuses the TrainJob's create (the runtime in the
    cluster, with a uid of its own: a runtime version is known by its uid and
    resourceVersion)."""
    kube = FakeKube()
    stored = copy.deepcopy(runtime)
    stored["metadata"]["uid"] = str(uuid.uuid4())
    kube.put(CLUSTER_RUNTIME, stored)
    judge = Judge(Runtimes(kube, watch=False), None)  # type: ignore[arg-type]
    found = judge.judge({"uid": "u", "operation": "CREATE", "object": copy.deepcopy(job)})
    return any(d.severity is Severity.ERROR for d in found)


@BUDGET
@given(pair=gen.job_and_runtime(), how=st.sampled_from(BREAKERS))
def test_validate_render_library_and_controller_agree(
        pair: tuple[Obj, Obj], how: str, tmp_path_factory: Any) -> None:
    job, runtime = pair
    if runtime["metadata"]["name"] == "jax-distributed":
        runtime = copy.deepcopy(runtime)
        runtime["metadata"]["name"] = job["spec"]["runtimeRef"]["name"] = "jax-own"
    runtime, job = _break(how, runtime, job)
    folder = tmp_path_factory.mktemp("verdict")
    validate = _cli("validate", runtime, job, folder)
    render = _cli("render", runtime, job, folder)
    library = 0 if compile_trainjob(job, runtime).ok else 1
    controller = 1 if _controller(runtime, job) else 0
    webhook = 1 if _webhook(runtime, job) else 0
    assert validate in (0, 1)
    assert (validate, render, library, controller, webhook) == (validate,) * 5, \
        (how, job, runtime)
    if how != "none":
        assert validate == 1, how
