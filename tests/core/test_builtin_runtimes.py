"""Every built-in runtime renders a sample TrainJob cleanly and passes `tjc validate` on its own
(as a user document, with no built-in runtimes loaded)."""

from __future__ import annotations

from typing import Any

import pytest

from compiler.common.diagnostics import Diagnostic, Severity
from compiler.io.builtin import builtin_runtimes
from compiler.io.loader import Document, Source
from compiler.pipeline.session import JobResult
from compiler.render.pipeline import render_stream
from compiler.validate.documents import validate_stream

NAMES = ["deepspeed-distributed", "jax-distributed", "mlx-distributed", "torch-distributed",
         "torchtune-llama3.2-1b", "torchtune-llama3.2-3b", "torchtune-qwen2.5-1.5b",
         "xgboost-distributed"]
MPI = {"deepspeed-distributed", "mlx-distributed"}
TRAINJOB = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: {name}
  namespace: team-a
spec:
  runtimeRef:
    name: {runtime}
  trainer:
    numNodes: {nodes}
    command: {command}
"""
GPU = """\
    resourcesPerNode:
      limits:
        nvidia.com/gpu: 1
"""


def runtime_doc(name: str) -> Document:
    return next(doc for doc in builtin_runtimes() if doc.data["metadata"]["name"] == name)


def sample_trainjob(runtime: str) -> tuple[str, int, str]:
    """(TrainJob name, numNodes, text): torchtune rejects multi-node, so it gets one GPU node
    and `tune run`; the others (MPI ones included) get two nodes and a python command."""
    name = "job-" + runtime.replace(".", "-")
    if runtime.startswith("torchtune"):
        return name, 1, TRAINJOB.format(name=name, runtime=runtime, nodes=1,
                                        command="[tune, run]") + GPU
    return name, 2, TRAINJOB.format(name=name, runtime=runtime, nodes=2,
                                    command="[python, train.py]")


def render(text: str) -> JobResult:
    items = list(render_stream([Source("job.yaml", text)], builtin_runtimes()))
    loose = [item for item in items if isinstance(item, Diagnostic)]
    jobs = [item for item in items if isinstance(item, JobResult)]
    assert not loose and len(jobs) == 1, [d.text() for d in loose]
    return jobs[0]


def test_the_builtin_set() -> None:
    assert sorted(doc.data["metadata"]["name"] for doc in builtin_runtimes()) == NAMES
    assert {doc.data["kind"] for doc in builtin_runtimes()} == {"ClusterTrainingRuntime"}


@pytest.mark.parametrize("runtime", NAMES)
def test_builtin_runtime_renders_a_sample_trainjob(runtime: str) -> None:
    name, nodes, text = sample_trainjob(runtime)
    job = render(text)
    errors = [d.text() for d in job.diagnostics if d.severity is Severity.ERROR]
    assert errors == []
    assert all(d.severity is Severity.NOTICE for d in job.diagnostics), \
        [d.text() for d in job.diagnostics]
    kinds = [obj["kind"] for obj in job.objects]
    assert kinds == (["ConfigMap", "JobSet"] if runtime in MPI else ["JobSet"])
    for obj in job.objects:
        assert obj["metadata"]["namespace"] == "team-a"
    jobset = job.objects[-1]
    assert jobset["metadata"]["name"] == name
    assert _trainer_pods(jobset) == nodes
    command = _container(jobset, "launcher" if runtime in MPI else "node")["command"]
    assert command[:2] == (["tune", "run"] if nodes == 1 else ["python", "train.py"])


@pytest.mark.parametrize("runtime", sorted(MPI))
def test_mpi_runtimes_hostfile_and_ssh_notice(runtime: str) -> None:
    name, _, text = sample_trainjob(runtime)
    job = render(text)
    hostfile = job.objects[0]
    assert hostfile["metadata"]["name"] == f"{name}-mpi-hostfile"
    assert "hostfile" in hostfile["data"]
    assert [d.rule for d in job.diagnostics] == ["TJC-MPI-SSH-SECRET"]


def _jobs(jobset: dict[str, Any]) -> dict[str, Any]:
    return {job["name"]: job for job in jobset["spec"]["replicatedJobs"]}


def _trainer_pods(jobset: dict[str, Any]) -> int:
    """Pods of the `node` and `launcher` jobs (an MPI launcher runs as a node)."""
    return sum(job.get("replicas", 1) * job["template"]["spec"].get("parallelism", 1)
               for name, job in _jobs(jobset).items() if name in ("node", "launcher"))


def _container(jobset: dict[str, Any], job: str) -> dict[str, Any]:
    containers = _jobs(jobset)[job]["template"]["spec"]["template"]["spec"]["containers"]
    found: dict[str, Any] = next(c for c in containers if c["name"] == "node")
    return found


def validate_alone(doc: Document) -> list[Diagnostic]:
    """`tjc validate --no-builtin-runtimes <runtime file>` on one runtime document."""
    return list(validate_stream([Source(doc.source.name, doc.source.text)], builtin=()))


@pytest.mark.parametrize("runtime", NAMES)
def test_builtin_runtime_passes_validate(runtime: str) -> None:
    diagnostics = validate_alone(runtime_doc(runtime))
    assert [d.text() for d in diagnostics if d.severity is Severity.ERROR] == []
    # warnings are allowed; none are expected today (a new one should be looked at)
    assert [d.text() for d in diagnostics] == []


def test_validate_of_a_runtime_is_not_vacuous() -> None:
    doc = runtime_doc("torch-distributed")
    broken = Document(doc.data, Source(doc.source.name, doc.source.text.replace(
        "numNodes: 1", "numNodes: one")), doc.index)
    assert "numNodes: one" in broken.source.text
    assert any(d.severity is Severity.ERROR and d.field_path == "spec.mlPolicy.numNodes"
               for d in validate_alone(broken))
