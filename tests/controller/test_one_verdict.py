"""One verdict: the controller refuses exactly the TrainJobs `tjc validate` refuses, for the same
reasons, with the policy packs on.

Both run the one pipeline (`compiler.pipeline.session`); the controller through its own entry
(`compiler.controller.admission`: the runtime as its snapshot holds it, the policy set of the
time, exemptions judged on the day of the decision), validate through the library's
`validate_documents` (the documents as a repository holds them). The corpus is the bench's
generated repository (TrainJobs of every built-in runtime and of a team's own runtimes) with
hostile edits: privileged containers, MPI node counts whose hostfile is too large, volume items
that leave their mount, typos, negative parallelism.
"""

from __future__ import annotations

import copy
import datetime
import random
from typing import Any

from bench.corpus import corpus
from compiler import validate_documents
from compiler.common.diagnostics import Severity
from compiler.common.jsondata import Obj
from compiler.controller import admission
from compiler.core.compile import prepare_runtime
from compiler.core.context import CompileOptions
from compiler.core.resolve import runtime_key, wanted_key
from compiler.io.builtin import builtin_runtimes
from compiler.kube.defaults import apply_defaults
from compiler.policy.engine import PolicySet
from compiler.policy.packs import Loader, pack_files

TODAY = datetime.date(2026, 6, 1)


def _hostile(rng: random.Random, job: Obj) -> Obj:
    """One of the edits a repository meets in its third month, or the job as it is."""
    job = copy.deepcopy(job)
    trainer = job["spec"].setdefault("trainer", {})
    pick = rng.randrange(7)
    if pick == 0:
        trainer["numNodes"] = rng.choice([40000, 2**31 - 1, -1])
    elif pick == 1:
        trainer["numNode"] = 4  # a typo: kubectl's strict field validation refuses it
    elif pick == 2:
        job["spec"]["podTemplateOverrides"] = [{
            "targetJobs": [{"name": "node"}],
            "spec": {"volumes": [{"name": "v", "configMap": {
                "name": "c", "items": [{"key": "k", "path": rng.choice(["../x", "/abs"])}]}}]}}]
    elif pick == 3:
        trainer["resourcesPerNode"] = {"limits": {"cpu": rng.choice(["-1", "0.0001m", "4"])}}
    return job


def _runtimes() -> dict[Any, Obj]:
    own, _ = corpus(0, seed=7)
    found = {runtime_key(d.data): d.data for d in builtin_runtimes()}
    found.update((runtime_key(r), r) for r in own)
    return found


def _controller_errors(job: Obj, runtime: Obj, policies: PolicySet) -> set[tuple[str, str]]:
    session = admission.session(runtime, prepare_runtime(runtime), policies, TODAY)
    _, said = admission.judge(session, job, CompileOptions())
    return {(d.rule, d.field_path) for d in admission.errors(said) if d.subject != "runtime"
            and (d.obj is None or d.obj.kind == "TrainJob")}


def _validate_errors(job: Obj, runtimes: list[Obj], policies: PolicySet
                     ) -> set[tuple[str, str]]:
    from compiler.policy.check import PolicyChecker

    found = validate_documents([job], runtimes, builtin=False,
                               policies=PolicyChecker(policies, today=TODAY))
    return {(d.rule, d.field_path) for d in found if d.severity is Severity.ERROR
            and d.obj is not None and d.obj.kind == "TrainJob"}


def test_the_controller_and_validate_refuse_the_same_trainjobs_for_the_same_reasons() -> None:
    rng = random.Random(11)
    policies = PolicySet(Loader().load_all(pack_files([], builtin=True)))
    runtimes = _runtimes()
    _, jobs = corpus(160, seed=7)
    refused = agreed = 0
    for job in (_hostile(rng, j) for j in jobs):
        key = wanted_key(apply_defaults("TrainJob", copy.deepcopy(job)))
        runtime = runtimes.get(key)
        if runtime is None:
            continue
        controller = _controller_errors(job, runtime, policies)
        validate = _validate_errors(job, [runtime], policies)
        assert controller == validate, (job["metadata"]["name"], controller, validate)
        refused += bool(controller)
        agreed += 1
    assert agreed >= 120 and 20 <= refused < agreed, (agreed, refused)


def _runtime_said(runtime: Obj, policies: PolicySet) -> set[tuple[str, str, str]]:
    from compiler.policy.check import PolicyChecker

    found = validate_documents([runtime], [], builtin=False,
                               policies=PolicyChecker(policies, today=TODAY))
    return {(d.severity.value, d.rule, d.field_path) for d in found
            if d.obj is not None and d.obj.kind == runtime["kind"]}


def test_the_webhook_says_of_a_runtime_what_validate_says() -> None:
    """A runtime created through the webhook gets validate's own judgement of it (the
    pipeline's `Session.runtime`): admission errors and the packs' findings together."""
    policies = PolicySet(Loader().load_all(pack_files([], builtin=True)))
    rng = random.Random(5)
    runtimes = [r for key, r in _runtimes().items() if r["kind"] == "ClusterTrainingRuntime"]
    for runtime in runtimes[:8]:
        edited = copy.deepcopy(runtime)
        pod = edited["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]
        container = pod["template"]["spec"]["containers"][0]
        container["securityContext"] = {"privileged": True}
        if rng.random() < 0.5:
            container["ports"] = [{"containerPort": 0}]  # refused at admission too
        webhook = {(d.severity.value, d.rule, d.field_path)
                   for d in admission.runtime_verdict(edited, None, policies, TODAY)}
        assert webhook == _runtime_said(edited, policies), edited["metadata"]["name"]
        assert any(rule == "security.privileged" for _, rule, _ in webhook)
