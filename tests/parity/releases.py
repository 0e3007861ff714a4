"""The pairs every served Kubeflow Trainer release's oracle is asked about, and what its
answers must look like (tests/parity/test_releases.py).

`release_case(release)` draws the parity cases (`tests.parity_strategies.parity_case`) and
adds what only that release's API has (v2.1: `podTemplateOverrides`, `spec.labels` and
`spec.annotations`, string `numProcPerNode`, the torch policy's own `numProcPerNode`), and now
and then runs the TrainJob on one of the release's built-in runtimes instead (from
`compiler.kube.releases`, the release's own files). `input_cases(release)` are the TrainJobs of
examples/ with the release's built-in runtimes. `outcome(answer)` checks that an oracle answer
has the shape the comparisons read and says what the cluster did.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

from compiler.common.jsondata import Obj
from compiler.kube.releases import release_data
from tests import parity_strategies as ps

ROOT = Path(__file__).resolve().parents[2]
UID = "7c6f9f0e-1b7e-4a39-9a5b-000000000027"
OLDEST_API = "v2.1.0"  # the release whose TrainJob API differs (podTemplateOverrides ...)


def documents(text: str) -> list[Obj]:
    """The mappings of a YAML stream as JSON values (dates stay strings, as kubectl sends)."""
    return [json.loads(json.dumps(doc, default=str)) for doc in yaml.safe_load_all(text)
            if isinstance(doc, dict)]


def builtin_runtimes(release: str) -> dict[str, Obj]:
    """Name -> runtime, of the release's built-in runtimes."""
    out: dict[str, Obj] = {}
    for path in release_data(release).runtime_files():
        for doc in documents(path.read_text(encoding="utf-8")):
            out[doc["metadata"]["name"]] = doc
    return out


def input_cases(release: str) -> list[tuple[str, list[Obj], Obj]]:
    """(name, runtimes, TrainJob) for each TrainJob of examples/ whose runtime the release has
    (the release's own built-in runtime, or the example's runtime file beside it)."""
    builtin = builtin_runtimes(release)
    cases = []
    custom = ROOT / "examples" / "custom-runtime" / "resnet.yaml"
    for path in [*sorted(ROOT.glob("examples/*.yaml")), custom]:
        docs = documents(path.read_text(encoding="utf-8"))
        if path.parent.name == "custom-runtime":
            docs += documents((path.parent / "runtime.yaml").read_text(encoding="utf-8"))
        runtimes = [d for d in docs if d["kind"] != "TrainJob"]
        for job in (d for d in docs if d["kind"] == "TrainJob"):
            name = job["spec"]["runtimeRef"]["name"]
            if not runtimes and name not in builtin:
                continue
            job["metadata"].setdefault("uid", UID)  # as the API server gives one
            cases.append((path.stem, runtimes or [builtin[name]], job))
    return cases


def golden_inputs(case: Any) -> tuple[list[Obj], Obj]:
    """The runtimes and the TrainJob of a golden case (`tests.goldenfile.Case`): its own
    runtimes, else the built-in runtime of its release it references."""
    docs = [doc for name, text in case.inputs.items() for doc in documents(text)]
    job = next(d for d in docs if d.get("kind") == "TrainJob")
    runtimes = [d for d in docs if d.get("kind") != "TrainJob"]
    if not runtimes:
        runtimes = [builtin_runtimes(case.release)[job["spec"]["runtimeRef"]["name"]]]
    return runtimes, job


def is_ssh_secret(obj: Obj) -> bool:
    """The MPI SSH Secret, which a golden case renders only with a key source."""
    return obj.get("kind") == "Secret" and \
        str(obj.get("metadata", {}).get("name", "")).endswith("-mpi-ssh-auth")


@st.composite
def release_case(draw: st.DrawFn, release: str) -> tuple[list[Obj], Obj]:
    """A parity case for `release`: its own API fields, sometimes its built-in runtimes."""
    runtimes, job = draw(ps.parity_case())
    if release == OLDEST_API:
        _older_api(draw, runtimes[0], job)
    builtin = builtin_runtimes(release)
    if draw(st.integers(0, 4)) == 0:
        name = draw(st.sampled_from(sorted(builtin)))
        runtimes = [builtin[name]]
        job["spec"]["runtimeRef"] = {"name": name}
    return runtimes, job


def _older_api(draw: st.DrawFn, runtime: Obj, job: Obj) -> None:
    """What v2.1's TrainJob and runtime APIs have and later releases dropped."""
    spec = job["spec"]
    if draw(st.integers(0, 3)) == 0:
        spec["labels"] = {"team": draw(ps.names)}
    if draw(st.integers(0, 3)) == 0:
        spec["annotations"] = {"owner": draw(ps.names)}
    if draw(st.integers(0, 2)) == 0:
        override: Obj = {"targetJobs": [{"name": draw(st.sampled_from(["node", "launcher"]))}]}
        if draw(st.booleans()):
            override["metadata"] = {"labels": {"override": draw(ps.names)}}
        if draw(st.booleans()):
            override["spec"] = {"nodeSelector": {"pool": draw(ps.names)}}
        spec["podTemplateOverrides"] = [override]
    trainer = spec.get("trainer")
    if isinstance(trainer, dict) and draw(st.integers(0, 2)) == 0:
        trainer["numProcPerNode"] = draw(st.sampled_from(["auto", "cpu", "gpu", "x", 2]))
    policy = runtime["spec"].get("mlPolicy") or {}
    if "torch" in policy and draw(st.booleans()):
        policy["torch"]["numProcPerNode"] = draw(st.sampled_from([2, "auto", "cpu"]))


def _errors(entry: Any) -> list[str]:
    errors = entry.get("errors", []) if isinstance(entry, dict) else None
    assert isinstance(errors, list) and all(isinstance(e, str) for e in errors), entry
    return errors


def outcome(answer: Obj) -> str:
    """What the cluster did with a case (`refused`, `managed`, `failed` or `built`), after
    checking that the answer has every part `tests.parity.compare.difference` reads."""
    assert isinstance(answer.get("runtimes"), list), answer
    for runtime in answer["runtimes"]:
        assert isinstance(runtime.get("kind"), str), runtime
        _errors(runtime)
    job = answer.get("trainjob")
    assert isinstance(job, dict) and job.get("kind") == "TrainJob", answer
    if _errors(job):
        return "refused"
    if answer.get("managedBy"):
        assert isinstance(answer["managedBy"], str) and "outputs" not in answer, answer
        return "managed"
    if answer.get("error"):
        assert isinstance(answer["error"], str) and not answer.get("outputs"), answer
        return "failed"
    outputs = answer.get("outputs")
    assert isinstance(outputs, list) and outputs, answer
    for objects in outputs:
        assert isinstance(objects, list) and objects, answer
        for obj in objects:
            assert isinstance(obj.get("apiVersion"), str) and isinstance(obj.get("kind"), str)
            assert isinstance(obj.get("metadata", {}).get("name"), str), obj
    assert [o["kind"] for o in outputs[0]].count("JobSet") == 1, outputs[0]
    assert all(isinstance(e, str) for e in answer.get("podErrors") or []), answer
    return "built"
