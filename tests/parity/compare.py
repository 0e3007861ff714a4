"""Compare tjc with the parity oracle on one case: the cluster's accept/reject of every
runtime and of the TrainJob, then whether the API server would refuse the Jobs or Pods of the
JobSet upstream builds (tjc must refuse exactly those TrainJobs: `TJC-POD-*`, and the amounts
`compiler.kube.podresources` reports), then what the controller creates.

Upstream ranges over Go maps, so the oracle runs each case several times and returns every
distinct output; tjc's must equal one of them. Objects are compared as a set (tjc's object
order is fixed, a documented difference); everything inside an object, list order included,
must be equal.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from compiler.common.diagnostics import Diagnostic, Severity, refused
from compiler.common.jsondata import Obj
from compiler.core.context import CompileOptions
from compiler.io import sshkeys
from compiler.io.loader import Source
from compiler.kube.releases import DEFAULT
from compiler.pipeline.session import JobResult
from compiler.render.pipeline import render_stream
from tests.parity.oracle import Oracle

RUNS = 6
MORE_RUNS = 60  # before a difference in the objects is reported
KEYS = sshkeys.from_file(str(Path(__file__).parents[1] / "data" / "test-only-mpi-key.pem"))


def tjc_case(runtimes: list[Obj], trainjob: Obj, release: str = DEFAULT, fields: str = "strict"
             ) -> tuple[bool, list[Obj], list[Diagnostic]]:
    """(refused, objects, diagnostics) of `tjc render` on the runtimes and the TrainJob, for
    the Kubeflow Trainer `release`, with kubectl's field validation `fields`."""
    sources = [Source("runtimes.json", json.dumps({"apiVersion": "v1", "kind": "List",
                                                   "items": runtimes})),
               Source("trainjob.json", json.dumps(trainjob))]
    diagnostics: list[Diagnostic] = []
    objects: list[Obj] = []
    rejected = False
    for item in render_stream(sources, (), CompileOptions(ssh_keys=KEYS, field_validation=fields,
                                                          trainer_version=release)):
        if isinstance(item, JobResult):
            objects = item.objects
            diagnostics += item.diagnostics
            rejected = refused(item.diagnostics)
        else:
            diagnostics.append(item)
    return rejected, objects, diagnostics


def object_key(obj: Obj) -> str:
    """An object as comparable text; the MPI SSH Secret's key material is random upstream."""
    if obj.get("kind") == "Secret" and str(obj.get("metadata", {}).get("name", "")).endswith(
            "-mpi-ssh-auth"):
        obj = {**obj, "data": sorted(obj.get("data") or {})}
    return json.dumps(obj, sort_keys=True)


def _runtime_errors(diagnostics: list[Diagnostic]) -> bool:
    """Whether tjc says the cluster refuses a runtime (errors about its Pods, which the cluster
    refuses only when it makes them, do not count: `diagnostics.refused`)."""
    return refused(d for d in diagnostics if d.obj is not None and d.obj.kind != "TrainJob")


def _pod_refusal(d: Diagnostic) -> bool:
    """An error about what the API server refuses of the Jobs and Pods (the JobSet is taken)."""
    return d.severity is Severity.ERROR and (d.rule.startswith("TJC-POD-") or d.subject == "pods")


def _admission(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """The diagnostics but the pod refusals, and but the TrainJob's TJC-RUNTIME-INVALID when
    its runtime has no other error."""
    others = [d for d in diagnostics if not _pod_refusal(d)]
    if not _runtime_errors(others):
        others = [d for d in others if d.rule != "TJC-RUNTIME-INVALID"]
    return others


def difference(oracle: Oracle, runtimes: list[Obj], trainjob: Obj, release: str = DEFAULT,
               fields: str = "strict") -> tuple[str, str] | None:
    """None when tjc (for the Kubeflow Trainer `release`, the oracle's) agrees with upstream,
    else (class of the difference, detail). `fields`: kubectl's field validation (the
    oracle, the API server without kubectl, prunes unknown fields: `warn`)."""
    request = {"op": "case", "runtimes": runtimes, "trainjob": trainjob}
    answer = oracle.ask({**request, "runs": RUNS})
    _, objects, diagnostics = tjc_case(runtimes, trainjob, release, fields)
    texts = "; ".join(d.text() for d in diagnostics if d.severity is Severity.ERROR)
    pods_refused = any(_pod_refusal(d) for d in diagnostics)
    diagnostics = _admission(diagnostics)
    rejected = refused(diagnostics)
    upstream_rt = any(r.get("errors") for r in answer["runtimes"])
    if upstream_rt != _runtime_errors(diagnostics):
        return ("runtime accept/reject",
                f"upstream: {answer['runtimes']}; tjc: {texts or 'accepted'}")
    tj_errors = answer["trainjob"].get("errors")
    if not tj_errors and answer.get("error"):
        # Admitted, but NewObjects fails (or panics): nothing is created, tjc must say why.
        if objects or not texts:
            return ("build error", f"upstream: {answer['error'][:300]}; tjc: "
                    f"{texts or 'no error'}, {len(objects)} objects")
        return None
    if bool(tj_errors) != rejected:
        return ("trainjob accept/reject", f"upstream: {tj_errors or 'accepted'}; "
                f"tjc: {texts or 'accepted'}")
    if tj_errors:
        return None
    if answer.get("managedBy"):
        if objects:
            return ("managedBy", f"upstream creates nothing (managed by {answer['managedBy']})")
        return None
    if bool(answer.get("podErrors")) != pods_refused:
        return ("pod refusal", f"API server: {answer.get('podErrors') or 'accepted'}; "
                f"tjc: {texts or 'accepted'}")
    if pods_refused:
        return None
    if any(d.severity is Severity.ERROR and d.subject != "pods" for d in diagnostics):
        # (errors about the Pods keep the objects: the cluster refuses only the Pods)
        return ("build error", f"upstream builds {len(answer['outputs'][0])} objects; tjc: "
                f"{texts}")
    mine = sorted(object_key(o) for o in objects)
    if any(sorted(object_key(o) for o in output) == mine for output in answer["outputs"]):
        return None
    # A few runs can all miss an order tjc's equals (XGBoost's or Flux's env against
    # PlainML's: reference §8 B1, an even chance each run): ask for many more first.
    again = oracle.ask({**request, "runs": MORE_RUNS})
    if any(sorted(object_key(o) for o in output) == mine for output in again["outputs"]):
        return None
    return ("objects", _first_change(answer["outputs"][0], objects))


def _first_change(theirs: list[Obj], mine: list[Obj]) -> str:
    """A short account of where two object lists part (the random SSH key material aside)."""
    by_name = {(o.get("kind"), o.get("metadata", {}).get("name")): o for o in theirs}
    for obj in mine:
        other = by_name.pop((obj.get("kind"), obj.get("metadata", {}).get("name")), None)
        if other is None:
            return f"tjc only: {obj.get('kind')} {obj.get('metadata', {}).get('name')}"
        path = _diff_path(json.loads(object_key(other)), json.loads(object_key(obj)), "")
        if path is not None:
            return f"{obj.get('kind')}: {path}"
    return f"upstream only: {sorted(str(k) for k in by_name)}"


def _diff_path(a: Any, b: Any, at: str) -> str | None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            found = _diff_path(a.get(k, "<absent>"), b.get(k, "<absent>"), f"{at}.{k}")
            if found is not None:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = _diff_path(x, y, f"{at}[{i}]")
            if found is not None:
                return found
        return None
    if a != b:
        return f"{at}: upstream {json.dumps(a)[:200]} tjc {json.dumps(b)[:200]}"
    return None
