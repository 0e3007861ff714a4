"""The plans compiled from the built-in packs' source give what CUE gives: same rules, paths,
messages, order.

CUE (the packs' own source) is the reference: every document below is checked by a policy set
that evaluates with CUE and one that uses the plans, and the violations must be equal. The
documents: a generated repository corpus compiled to JobSets, the built-in runtimes, and
hand-made runtimes and JobSets that make each rule fire (and inputs whose odd field types
only CUE decides, where the plans must hand over to CUE).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from bench.corpus import corpus
from compiler import compile_trainjob, prepare_runtime
from compiler.common.jsondata import Obj
from compiler.io.builtin import builtin_runtimes
from compiler.policy.engine import PolicySet
from compiler.policy.packs import BUILTIN_DIR, Loader, pack_files

SETTINGS = [{}, {"images": {"allowedRegistries": ["ghcr.io", "docker.io/pytorch"]},
                 "resources": {"maxNumNodes": 4, "maxGPUs": 8},
                 "security": {"allowedCapabilities": ["CHOWN"]}}]


def _found(policies: PolicySet, kind: str, obj: Obj, job: Obj | None = None) -> list[Any]:
    found = [(v.rule.id, v.path, v.message) for v in policies.check(kind, obj, job)]
    return found + [d.text() for d in policies.errors]


def _pod(runtime: Obj, index: int = 0) -> Obj:
    pod: Obj = runtime["spec"]["template"]["spec"]["replicatedJobs"][index]["template"][
        "spec"]["template"]["spec"]
    return pod


def _odd_runtimes() -> list[Obj]:
    base = next(d.data for d in builtin_runtimes()
                if d.data["metadata"]["name"] == "deepspeed-distributed")
    variants: list[Obj] = []
    edits: list[Obj] = [
        {"hostNetwork": True, "hostIPC": True, "volumes": [
            {"name": "scratch", "hostPath": {"path": "/mnt"}}, {"name": "x", "emptyDir": {}}]},
        {"hostPID": False, "securityContext": {"runAsNonRoot": True}},
        {"hostNetwork": "yes"},
        {"volumes": [{"name": 5, "hostPath": {"path": "/"}}]},
    ]
    for pod_edit in edits:
        runtime = copy.deepcopy(base)
        _pod(runtime).update(pod_edit)
        variants.append(runtime)
    containers: list[Obj] = [
        {"securityContext": {"privileged": True, "capabilities": {"add": ["NET_ADMIN", "CHOWN"]},
                             "runAsNonRoot": False}},
        {"securityContext": {"privileged": "yes"}},
        {"image": "localhost:5000/x:latest", "securityContext": {"runAsNonRoot": "no"}},
        {"image": "registry.example.com/team/img@sha256:abc"},
        {"image": "ubuntu", "resources": {"requests": {"example.com/fpga": "1"},
                                          "limits": {"example.com/fpga": "2"}}},
        {"resources": {"requests": {"example.com/fpga": "1000m", "example.com/b": 2,
                                    "example.com/c": "1", "nvidia.com/gpu": "1",
                                    "kubernetes.io/x": "1", "a.kubernetes.io/y": "1"},
                       "limits": {"example.com/fpga": "1", "example.com/b": "2",
                                  "nvidia.com/gpu": "2Ki", "cpu": "1"}}},
        {"resources": {"requests": {"example.com/x": "bad"}, "limits": {"example.com/x": "0"}}},
    ]
    for container_edit in containers:
        runtime = copy.deepcopy(base)
        _pod(runtime, 1)["containers"][0].update(container_edit)
        variants.append(runtime)
    spec_edits: list[Obj] = [{"podGroupPolicy": {"coscheduling": {}, "volcano": {}}},
                             {"mlPolicy": {"mpi": {"mpiImplementation": "Intel"}}},
                             {"mlPolicy": {"mpi": {"mpiImplementation": None}}}]
    for spec_edit in spec_edits:
        runtime = copy.deepcopy(base)
        runtime["spec"].update(spec_edit)
        variants.append(runtime)
    return variants


def _jobsets(n: int) -> list[tuple[Obj, Obj]]:
    runtimes, jobs = corpus(n, seed=7)
    table = {(d.data["kind"], d.data["metadata"]["name"]): prepare_runtime(d.data)
             for d in builtin_runtimes()}
    table.update({(r["kind"], r["metadata"]["name"]): prepare_runtime(r) for r in runtimes})
    out = []
    for job in jobs:
        ref = job["spec"]["runtimeRef"]
        runtime = table.get((ref["kind"], ref["name"]))
        result = compile_trainjob(job, runtime) if runtime is not None else None
        jobset = next((o for o in result.objects if o.get("kind") == "JobSet"), None) \
            if result is not None and result.ok else None
        if jobset is not None:
            out.append((jobset, job))
    return out


@pytest.mark.parametrize("settings", SETTINGS)
def test_plans_give_what_cue_gives(settings: Obj) -> None:
    packs = Loader(settings).load_all(pack_files([], builtin=True))
    assert all(p.plan.compiled == set(p.rules) for p in packs)
    cue, planned = (PolicySet(packs, settings=settings, plans=flag) for flag in (False, True))
    jobsets = _jobsets(150)
    big = copy.deepcopy(jobsets[0])
    big[0]["spec"]["replicatedJobs"] = [dict(big[0]["spec"]["replicatedJobs"][0], name=f"r{i}")
                                        for i in range(9)]
    big[1]["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "q"}
    fired: set[str] = set()
    bare = [copy.deepcopy(jobsets[0]) for _ in range(2)]
    for (jobset, _), resources in zip(bare, [None, {"requests": {}, "limits": "none"}],
                                      strict=True):
        for replicated in jobset["spec"]["replicatedJobs"]:
            for container in replicated["template"]["spec"]["template"]["spec"]["containers"]:
                container["resources"] = resources
    for jobset, job in [*jobsets, big, *bare]:
        want = _found(cue, "JobSet", jobset, job)
        assert _found(planned, "JobSet", jobset, job) == want
        fired |= {f[0] for f in want if isinstance(f, tuple)}
    runtimes = [d.data for d in builtin_runtimes()] + corpus(0)[0] + _odd_runtimes()
    for runtime in runtimes:
        want = _found(cue, runtime["kind"], runtime)
        assert _found(planned, runtime["kind"], runtime) == want, runtime
        fired |= {f[0] for f in want if isinstance(f, tuple)}
    expected = {"images.tag", "resources.extended-requests-equal-limits",
                "resources.trainer-requests",
                "scheduling.kueue-replicated-jobs", "scheduling.one-pod-group-policy",
                "scheduling.mpi-openmpi", "security.privileged", "security.host-namespaces",
                "security.host-path", "security.capabilities", "security.run-as-non-root"}
    if settings:
        expected |= {"images.allowed-registries", "resources.max-nodes", "resources.max-gpus"}
    assert expected <= fired


def test_every_builtin_rule_compiles_also_when_the_pack_is_edited(tmp_path: Path) -> None:
    """No rule of ours needs CUE; a built-in pack with its messages changed (a user's pack)
    compiles as well as the shipped one."""
    for path in sorted(BUILTIN_DIR.glob("*.cue")):
        pack = Loader().load(path)
        assert pack.plan.compiled == set(pack.rules), pack.plan.reasons
        edited = tmp_path / path.name
        edited.write_text(path.read_text().replace('message:   "', 'message:   "ours: '))
        mine = Loader().load(edited)
        assert mine.plan.compiled == set(mine.rules), mine.plan.reasons
        assert all(r.message.startswith("ours: ") for r in mine.rules.values())


def test_a_plan_hands_odd_shapes_to_cue() -> None:
    """Where a field has a type the rule does not expect, CUE's answer is an error: the plan
    says None (CUE decides) for that rule and that input, and decides the others."""
    packs = {p.name: p for p in Loader().load_all(pack_files([], builtin=True))}
    images, security = packs["images"].plan, packs["security"].plan
    inp = {"kind": "JobSet", "object": {}, "pods": [],
           "containers": [{"container": {"image": 5}, "path": ["x"]}]}
    assert images.run(inp, ["images.tag"]) == {"images.tag": None}
    pods = {"kind": "JobSet", "object": {}, "containers": [],
            "pods": [{"spec": {"hostPID": None}, "path": ["p"]}]}
    assert security.run(pods, ["security.host-namespaces", "security.host-path"]) == {
        "security.host-namespaces": None, "security.host-path": []}


@pytest.mark.parametrize("skip", [["security.privileged", "images.tag", "scheduling"],
                                  ["security.run-as-non-root", "resources.trainer-requests",
                                   "security.host-namespaces"]])
def test_plans_give_what_cue_gives_with_rules_skipped(skip: list[str]) -> None:
    settings = SETTINGS[1]
    packs = Loader(settings).load_all(pack_files([], builtin=True))
    cue, planned = (PolicySet(packs, skip, settings=settings, plans=flag)
                    for flag in (False, True))
    for jobset, job in _jobsets(20):
        assert _found(planned, "JobSet", jobset, job) == _found(cue, "JobSet", jobset, job)
    for runtime in [d.data for d in builtin_runtimes()] + _odd_runtimes():
        want = _found(cue, runtime["kind"], runtime)
        assert _found(planned, runtime["kind"], runtime) == want, runtime
        assert not any(isinstance(f, tuple) and f[0] in skip for f in want)


def test_a_check_leaves_no_garbage_only_the_collector_frees() -> None:
    """A plan's run leaves nothing in reference cycles (its top struct's environments held
    the struct): a long run made garbage for the cycle collector with every JobSet, which
    cost validate about a sixth of its policy time and grew the heap between collections."""
    import gc

    policies = PolicySet(Loader().load_all(pack_files([], builtin=True)))
    jobsets = _jobsets(20)
    for jobset, job in jobsets:  # (compiles each rule's function and fills the caches)
        policies.check("JobSet", jobset, job)
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for jobset, job in jobsets:
            policies.check("JobSet", jobset, job)
        gc.collect()
        left = [type(x).__name__ for x in gc.garbage]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if enabled:
            gc.enable()
    assert left == []
