"""Property tests: invariants of the compiler over generated and mutated inputs."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from compiler import compile_trainjob
from compiler.common.jsondata import Obj
from compiler.core.context import ANCESTOR_LABEL
from compiler.io import emit
from tests.strategies import framework_pair, job_and_runtime


def _jobset(objects: tuple[Obj, ...]) -> Obj:
    return next(o for o in objects if o["kind"] == "JobSet")


def _expected_count(rjob: Obj, tj: Obj, rt: Obj) -> int:
    labels = rjob["template"].get("metadata", {}).get("labels") or {}
    ml_policy = rt["spec"].get("mlPolicy")
    count = rjob["template"]["spec"].get("parallelism", 1)
    if labels.get(ANCESTOR_LABEL) == "trainer":
        if ml_policy is not None:
            count = ml_policy.get("numNodes", 1)
        count = max(count, 1)
        trainer = tj["spec"].get("trainer") or {}
        return int(trainer["numNodes"]) if "numNodes" in trainer else count
    return max(int(count), 1)


@given(st.one_of(job_and_runtime(), framework_pair()))
def test_valid_inputs_compile_deterministically(pair: tuple[Obj, Obj]) -> None:
    tj, rt = pair
    before = copy.deepcopy(pair)
    first = compile_trainjob(tj, rt)
    second = compile_trainjob(copy.deepcopy(tj), copy.deepcopy(rt))
    assert (tj, rt) == before, "inputs must not be mutated"
    assert first.ok, [d.text() for d in first.diagnostics]
    assert emit.yaml_stream(list(first.objects)) == emit.yaml_stream(list(second.objects))


@given(job_and_runtime())
def test_counts_names_and_env(pair: tuple[Obj, Obj]) -> None:
    tj, rt = pair
    jobset = _jobset(compile_trainjob(tj, rt).objects)
    assert jobset["metadata"]["name"] == tj["metadata"]["name"]
    assert jobset["metadata"]["namespace"] == tj["metadata"]["namespace"]
    source_jobs = rt["spec"]["template"]["spec"]["replicatedJobs"]
    for rjob, src in zip(jobset["spec"]["replicatedJobs"], source_jobs, strict=True):
        spec = rjob["template"]["spec"]
        assert spec["parallelism"] == spec["completions"] == _expected_count(src, tj, rt)
        for container in spec["template"]["spec"].get("containers", []):
            names = [e["name"] for e in container.get("env", [])]
            assert len(names) == len(set(names)), names


MUTANTS = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=3),
                    st.just([]), st.just({}), st.just([{}]), st.just({"x": [1]}))


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += _paths(item, (*path, index))
    return out


def _mutate(doc: Obj, path: tuple[Any, ...], new: Any, delete: bool) -> Obj:
    doc = copy.deepcopy(doc)
    if not path:
        return doc
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    if delete and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = new
    return doc


@given(st.one_of(job_and_runtime(), framework_pair()), st.data())
def test_mutated_inputs_never_crash(pair: tuple[Obj, Obj], data: st.DataObject) -> None:
    tj, rt = pair
    target = data.draw(st.sampled_from(["trainjob", "runtime"]))
    doc = tj if target == "trainjob" else rt
    path = data.draw(st.sampled_from(_paths(doc)))
    mutated = _mutate(doc, path, data.draw(MUTANTS), data.draw(st.booleans()))
    args = (mutated, rt) if target == "trainjob" else (tj, mutated)
    result = compile_trainjob(*args)
    assert result.ok or not result.objects


def test_same_bytes_under_another_hash_seed(tmp_path: Path) -> None:
    example = Path(__file__).resolve().parents[2] / "examples"
    outputs = set()
    for seed in ("0", "1", "4242"):
        proc = subprocess.run(
            [sys.executable, "-m", "compiler", "render", str(example), "-o", "json"],
            capture_output=True, text=True, check=True,
            env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"})
        outputs.add(proc.stdout)
    assert len(outputs) == 1
    assert json.loads(outputs.pop())["items"], "the examples render to objects"


def _env(container: Obj) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in container.get("env", [])}


def _node_container(rjob: Obj) -> Obj:
    containers = rjob["template"]["spec"]["template"]["spec"]["containers"]
    return next(c for c in containers if c["name"] == "node")


def _endpoints(jobset: Obj, trainjob: str, job_names: set[str]) -> list[str]:
    sub = (jobset["spec"].get("network") or {}).get("subdomain") or trainjob
    out = []
    for rjob in jobset["spec"]["replicatedJobs"]:
        if rjob["name"] in job_names:
            for replica in range(rjob.get("replicas", 1)):
                out += [f"{trainjob}-{rjob['name']}-{replica}-{pod}.{sub}"
                        for pod in range(rjob["template"]["spec"]["parallelism"])]
    return out


@given(framework_pair())
def test_framework_env_agrees_with_counts(pair: tuple[Obj, Obj]) -> None:
    tj, rt = pair
    result = compile_trainjob(tj, rt)
    assert result.ok, [d.text() for d in result.diagnostics]
    jobset = _jobset(result.objects)
    policy = rt["spec"]["mlPolicy"]
    jobs = {rjob["name"]: rjob for rjob in jobset["spec"]["replicatedJobs"]}
    if "mpi" in policy:
        hostfile = next(o for o in result.objects if o["kind"] == "ConfigMap")["data"]["hostfile"]
        lines = hostfile.splitlines()
        as_node = policy["mpi"]["runLauncherAsNode"]
        names = {"node", "launcher"} if as_node else {"node"}
        expected = _endpoints(jobset, tj["metadata"]["name"], names)
        assert sorted(line.split(" ")[0] for line in lines) == sorted(expected)
        launcher_env = _env(_node_container(jobs["launcher"]))
        slots = f"slots={launcher_env['OMPI_MCA_orte_set_default_slots']}"
        assert all(line.split(" ")[1] == slots for line in lines)
        return
    trainer = jobs["node"]
    count = trainer["template"]["spec"]["parallelism"]
    env = _env(_node_container(trainer))
    key = {"torch": "PET_NNODES", "jax": "JAX_NUM_PROCESSES", "xgboost": "DMLC_NUM_WORKER"}
    framework = next(k for k in key if k in policy)
    assert env[key[framework]] == str(count)


def _reversed_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _reversed_keys(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reversed_keys(v) for v in value]
    return value


@given(st.one_of(job_and_runtime(), framework_pair()))
def test_same_bytes_whatever_the_input_key_order(pair: tuple[Obj, Obj]) -> None:
    tj, rt = pair
    first = compile_trainjob(tj, rt)
    second = compile_trainjob(_reversed_keys(tj), _reversed_keys(rt))
    assert emit.yaml_stream(list(first.objects)) == emit.yaml_stream(list(second.objects))
    assert [d.text() for d in first.diagnostics] == [d.text() for d in second.diagnostics]
