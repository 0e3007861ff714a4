"""`compiler.pipeline.quirks.check`, which works out a runtime's facts once per runtime object,
gives what the rules that looked at the runtime for every TrainJob gave
(`tests.reference_checks.quirks_check`): the same warnings in the same order, for generated
runtimes and TrainJobs (several TrainJobs against one runtime object, as the validate
application checks them) and for the built-in runtimes; a runtime edited into a new object
is not answered from the old one's facts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from compiler.common.jsondata import Obj, copy_json
from compiler.core import admission
from compiler.pipeline.quirks import check
from tests import parity_strategies as ps
from tests.reference_checks import quirks_check

RUNTIMES = Path(__file__).resolve().parents[2] / "runtimes"
NODE = ("spec", "template", "spec", "replicatedJobs")
POD = ("template", "spec", "template", "spec")
PORTS = [[{"containerPort": 8080}], [{"name": "m", "containerPort": 9090}, {"containerPort": 1}],
         [{"containerPort": 29500}, {"containerPort": 8080}], ["junk", {"containerPort": 2}]]
GPUS = [{"limits": {"nvidia.com/gpu": 2}}, {"requests": {"amd.com/gpu": "1", "cpu": "2"}},
        {"requests": {"cpu": "4"}, "limits": {"nvidia.com/gpu": "4"}}]
TRAINERS: list[Obj | None] = [
    None, {}, {"numNodes": 0}, {"numNodes": 2}, {"numNodes": 0, "numProcPerNode": 2},
    {"resourcesPerNode": {"requests": {"cpu": "8"}}},
    {"resourcesPerNode": {"limits": {"memory": "16Gi"}}, "numNodes": 0},
    {"resourcesPerNode": {"limits": {"nvidia.com/gpu": 1}}},
    {"resourcesPerNode": {}, "numProcPerNode": 1},
    {"command": ["tune", "run"], "resourcesPerNode": {"limits": {"memory": "64Gi"}}},
    {"image": "u:1"}, {"numNodes": 1, "env": [{"name": "JAX_PROCESS_ID", "value": "0"}]},
]


def _admitted(doc: Obj) -> Obj:
    """The document as the validate application hands it to `check`."""
    data, diagnostics = admission.check_object(str(doc["kind"]), doc)
    return admission.well_typed(data, diagnostics)


def _trainjob(trainer: Obj | None, ref: Obj) -> Obj:
    spec: Obj = {"runtimeRef": ref}
    if trainer is not None:
        spec["trainer"] = copy_json(trainer)
    return _admitted({"apiVersion": ps.API, "kind": "TrainJob",
                      "metadata": {"name": "a", "namespace": "team-a"}, "spec": spec})


def _edit(rt: Obj, draw: Any) -> None:
    """Now and then what the shared strategies draw rarely: both gang schedulers, GPUs and
    ports on the trainer container, no mlPolicy."""
    spec = rt["spec"]
    if draw(st.sampled_from(ps.RARELY)):
        spec["podGroupPolicy"] = {"coscheduling": {}, "volcano": {}}
    if draw(st.sampled_from(ps.RARELY)):
        spec.pop("mlPolicy", None)
    for job in spec["template"]["spec"]["replicatedJobs"]:
        for container in job["template"]["spec"]["template"]["spec"]["containers"]:
            if draw(st.integers(0, 2)) == 0:
                container["resources"] = copy_json(draw(st.sampled_from(GPUS)))
            if draw(st.integers(0, 2)) == 0:
                container["ports"] = copy_json(draw(st.sampled_from(PORTS)))


@given(st.data())
def test_generated(data: st.DataObject) -> None:
    namespace = data.draw(st.sampled_from(["default", "team-a"]))
    raw = data.draw(ps.runtime(namespace))
    _edit(raw, data.draw)
    rt = _admitted(raw)
    jobs = [_admitted(data.draw(ps.trainjob(raw, namespace))) for _ in range(3)]
    jobs += [_trainjob(data.draw(st.sampled_from(TRAINERS)), {"name": "rt"})]
    before = copy_json(rt)
    for tj in jobs:
        expected = quirks_check(tj, rt)
        assert check(tj, rt) == expected
        assert check(tj, rt) == expected
    assert rt == before


@pytest.mark.parametrize("path", sorted(RUNTIMES.glob("*.yaml")), ids=lambda p: p.stem)
def test_builtin_runtimes(path: Path) -> None:
    rt = _admitted(yaml.safe_load(path.read_text()))
    ref = {"name": rt["metadata"]["name"], "kind": rt["kind"]}
    variants = [rt]
    for resources in GPUS:
        for ports in PORTS:
            edited = copy_json(rt)
            container = edited
            for key in (*NODE, 0, *POD, "containers", 0):
                container = container[key]
            container["resources"], container["ports"] = copy_json(resources), copy_json(ports)
            variants.append(edited)
    both = copy_json(rt)
    both["spec"]["podGroupPolicy"] = {"coscheduling": {}, "volcano": {}}
    no_policy = copy_json(rt)
    no_policy["spec"].pop("mlPolicy", None)
    fired: set[str] = set()
    for variant in [*variants, both, no_policy]:
        for trainer in TRAINERS:
            tj = _trainjob(trainer, ref)
            expected = quirks_check(tj, variant)
            assert check(tj, variant) == expected
            fired.update(d.rule for d in expected)
    assert len(fired) >= 4, fired


def test_new_object_new_facts() -> None:
    """A runtime edited into a new object (as `well_typed` copies one) gets its own facts."""
    rt = _admitted(yaml.safe_load((RUNTIMES / "torch-distributed.yaml").read_text()))
    tj = _trainjob({}, {"name": "torch-distributed"})
    assert check(tj, rt) == []
    edited = copy_json(rt)
    edited["spec"]["podGroupPolicy"] = {"coscheduling": {}, "volcano": {}}
    assert [d.rule for d in check(tj, edited)] == ["TJC-QUIRK-TWO-GANG-SCHEDULERS"]
    assert check(tj, rt) == []
