"""Upstream-quirk warnings (`compiler.pipeline.quirks`): one case that hits each quirk and one
that does not, on the built-in runtimes (loaded, sanitized and defaulted) and TrainJobs that
use them. A passing case must produce no warning at all."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from compiler.common.diagnostics import Severity
from compiler.common.jsondata import Obj, copy_json
from compiler.pipeline.quirks import check
from tests.validate.test_validate_webhook import JOBS, POD, Edit, put, runtime, trainjob

NODE_CONTAINER = (*JOBS, 0, *POD, "containers", 0)
GPU2 = put((*NODE_CONTAINER, "resources"), {"limits": {"nvidia.com/gpu": 2}})
NO_ML_POLICY = put(("spec", "mlPolicy"), None)
FLUX = put(("spec", "mlPolicy"), {"numNodes": 1, "flux": {"numProcPerNode": 1}})


@dataclass(frozen=True)
class Case:
    """One TrainJob spec against one (edited) built-in runtime."""

    id: str
    rule: str
    spec: Obj
    runtime: str = "torch-distributed"
    edits: tuple[Edit, ...] = ()
    fires: bool = True
    path: tuple[str | int, ...] | None = None
    subject: str = "trainjob"
    message: str = ""


CASES = [
    Case("torch-no-trainer", "TJC-QUIRK-NO-TRAINER", {}, path=("spec",),
         message="injects none of PET_NNODES"),
    Case("jax-no-trainer", "TJC-QUIRK-NO-TRAINER", {}, runtime="jax-distributed",
         message="injects none of JAX_NUM_PROCESSES"),
    Case("xgboost-no-trainer", "TJC-QUIRK-NO-TRAINER", {}, runtime="xgboost-distributed",
         message="injects none of DMLC_TRACKER_URI"),
    Case("empty-trainer", "TJC-QUIRK-NO-TRAINER", {"trainer": {}}, fires=False),
    Case("mpi-no-trainer", "TJC-QUIRK-NO-TRAINER", {}, runtime="deepspeed-distributed",
         fires=False),
    Case("jax-env-override", "TJC-QUIRK-JAX-ENV-OVERRIDE",
         {"trainer": {"env": [{"name": "XLA_FLAGS", "value": "--x"},
                              {"name": "JAX_PROCESS_ID", "value": "0"}]}},
         runtime="jax-distributed", path=("spec", "trainer", "env", 1),
         message="JAX_PROCESS_ID replaces the value the JAX plugin injects"),
    Case("jax-other-env", "TJC-QUIRK-JAX-ENV-OVERRIDE",
         {"trainer": {"env": [{"name": "JAX_PLATFORMS", "value": "cuda"}]}},
         runtime="jax-distributed", fires=False),
    Case("torchtune-gpu-ignored", "TJC-QUIRK-GPU-IGNORED",
         {"trainer": {"command": ["tune", "run"],
                      "resourcesPerNode": {"limits": {"memory": "64Gi"}}}},
         runtime="torchtune-llama3.2-1b", path=("spec", "trainer", "resourcesPerNode"),
         message="ignores the runtime's nvidia.com/gpu (2 per node"),
    Case("torch-gpu-ignored", "TJC-QUIRK-GPU-IGNORED",
         {"trainer": {"resourcesPerNode": {"requests": {"cpu": "8"}}}}, edits=(GPU2,),
         message="PET_NPROC_PER_NODE becomes the node's CPU count instead of auto"),
    Case("mpi-gpu-ignored", "TJC-QUIRK-GPU-IGNORED",
         {"trainer": {"resourcesPerNode": {"requests": {"memory": "16Gi"}}}},
         runtime="deepspeed-distributed", edits=(GPU2,),
         message="the MPI slots per node stay 1"),
    Case("xgboost-gpu-ignored", "TJC-QUIRK-GPU-IGNORED",
         {"trainer": {"resourcesPerNode": {"requests": {"memory": "16Gi"}}}},
         runtime="xgboost-distributed", edits=(GPU2,), message="DMLC_NUM_WORKER"),
    Case("gpu-repeated", "TJC-QUIRK-GPU-IGNORED",
         {"trainer": {"command": ["tune", "run"],
                      "resourcesPerNode": {"limits": {"memory": "64Gi", "nvidia.com/gpu": 2}}}},
         runtime="torchtune-llama3.2-1b", fires=False),
    Case("gpu-irrelevant-fixed-procs", "TJC-QUIRK-GPU-IGNORED",
         {"trainer": {"numProcPerNode": 2, "resourcesPerNode": {"requests": {"cpu": "8"}}}},
         edits=(GPU2,), fires=False),
    Case("zero-nodes", "TJC-QUIRK-ZERO-NODES", {"trainer": {"numNodes": 0}},
         path=("spec", "trainer", "numNodes"), message="no training pod runs"),
    Case("one-node", "TJC-QUIRK-ZERO-NODES", {"trainer": {"numNodes": 1}}, fires=False),
    Case("two-gang-schedulers", "TJC-QUIRK-TWO-GANG-SCHEDULERS", {"trainer": {}},
         edits=(put(("spec", "podGroupPolicy"), {"coscheduling": {}, "volcano": {}}),),
         path=("spec", "podGroupPolicy"), subject="runtime", message="keep only one"),
    Case("one-gang-scheduler", "TJC-QUIRK-TWO-GANG-SCHEDULERS", {"trainer": {}},
         edits=(put(("spec", "podGroupPolicy"), {"coscheduling": {}}),), fires=False),
    Case("unnamed-port-replaced", "TJC-QUIRK-PORT-REPLACED", {"trainer": {}},
         edits=(put((*NODE_CONTAINER, "ports"), [{"name": "metrics", "containerPort": 9090},
                                                {"containerPort": 8080}]),),
         path=(*NODE_CONTAINER, "ports", 1), subject="runtime",
         message="this unnamed port 8080 is replaced by the trainer port 29500"),
    Case("named-port-kept", "TJC-QUIRK-PORT-REPLACED", {"trainer": {}},
         edits=(put((*NODE_CONTAINER, "ports"), [{"name": "http", "containerPort": 8080}]),),
         fires=False),
    Case("port-29500-first", "TJC-QUIRK-PORT-REPLACED", {"trainer": {}},
         edits=(put((*NODE_CONTAINER, "ports"), [{"name": "c10d", "containerPort": 29500},
                                                {"containerPort": 8080}]),),
         fires=False),
    Case("resources-ignored", "TJC-QUIRK-RESOURCES-IGNORED",
         {"trainer": {"resourcesPerNode": {"limits": {"cpu": "4"}}}}, edits=(NO_ML_POLICY,),
         path=("spec", "trainer", "resourcesPerNode"),
         message="resourcesPerNode is ignored because the runtime has no mlPolicy"),
    Case("resources-merged", "TJC-QUIRK-RESOURCES-IGNORED",
         {"trainer": {"resourcesPerNode": {"limits": {"cpu": "4"}}}}, fires=False),
    # upstream's Flux plugin dereferences spec.trainer.numNodes (flux.go generateInitEntrypoint)
    Case("flux-no-numnodes", "TJC-QUIRK-FLUX-PANIC", {"trainer": {"image": "u:1"}},
         runtime="jax-distributed", edits=(FLUX,), path=("spec", "trainer"),
         message="Flux plugin panics without spec.trainer.numNodes"),
    Case("flux-no-trainer", "TJC-QUIRK-FLUX-PANIC", {}, runtime="jax-distributed",
         edits=(FLUX,), path=("spec",), message="the controller creates nothing"),
    Case("flux-numnodes", "TJC-QUIRK-FLUX-PANIC", {"trainer": {"numNodes": 2}},
         runtime="jax-distributed", edits=(FLUX,), fires=False),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_quirk(case: Case) -> None:
    tj = trainjob(case.spec, case.runtime)
    rt = runtime(case.runtime, *case.edits)
    before = (copy_json(tj), copy_json(rt))
    found = check(tj, rt)
    assert (tj, rt) == before, "check must not mutate its inputs"
    if not case.fires:
        assert found == [], [d.text() for d in found]
        return
    assert [d.rule for d in found] == [case.rule], [d.text() for d in found]
    hit = found[0]
    assert hit.severity is Severity.WARNING
    assert hit.subject == case.subject
    assert case.message in hit.message
    if case.path is not None:
        assert hit.path == case.path
