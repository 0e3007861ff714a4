"""Inputs, runs and the semantic comparison of the side-by-side test against upstream.

Inputs: every golden case (`golden/*.txtar`) whose want is a JobSet, each in a namespace of
its own (its TrainingRuntimes there too; its ClusterTrainingRuntimes renamed `<name>-<ns>` with
their runtimeRefs, so that cases do not clash), and generated TrainJobs over the eight
built-in runtimes plus a custom TrainingRuntime per namespace. Left out, with the reason: cases
that bypass upstream's webhook (`--no-validate`), that need no built-in runtimes
(`--no-builtin-runtimes`), and Volcano's (no Volcano CRD is at hand; the scheduler-plugins
PodGroup CRD is installed).

Comparison: the objects each controller created (JobSets, ConfigMaps, Secrets, PodGroups) and
the TrainJobs' conditions, with what the API server assigns (uid, resourceVersion, timestamps,
managedFields, generation) and the status of objects dropped; Secret values (random SSH keys)
compared by their keys only; the runtime snapshot compared as the runtime Go's types decode
from it (README: upstream re-encodes the runtime, tjc keeps it as read); the label
`trainer.kubeflow.org/trainjob-name` tjc's controller puts on the ConfigMaps and Secrets it
makes, and its two record conditions (`RuntimeSnapshot`, `MPISSHSecret`: the snapshot digest and
the SSH Secret uid kept where a tenant cannot write), left out as README lists them. A
difference in the order of a container's env only is tolerated as README's "plugin order
inside a phase is fixed" and counted; any other difference is a failure.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from typing import Any

import yaml
from kubernetes.client.exceptions import ApiException

from compiler.common.jsondata import Obj
from compiler.controller import ownership, snapshot, sshsecret
from compiler.io.builtin import builtin_runtimes
from compiler.kube import quantity
from tests import goldenfile
from tests.e2e import cluster as cl

TRAINER = "trainer.kubeflow.org/v1alpha1"
# (a case rendered as another Kubeflow Trainer release is held to that release's oracle by
# tests/parity/test_releases.py; the control plane here runs v2.3.0's controller)
SKIP_FLAGS = ("--no-validate", "--no-builtin-runtimes", "--trainer-version")
SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields",
                 "selfLink")
COLLECT = (("jobset.x-k8s.io/v1alpha2", "jobsets", "JobSet"), ("v1", "configmaps", "ConfigMap"),
           ("v1", "secrets", "Secret"), ("scheduling.x-k8s.io/v1alpha1", "podgroups", "PodGroup"))


@dataclass
class Inputs:
    """What both controllers get: namespaces, cluster-scoped runtimes, namespaced objects."""

    namespaces: list[str] = field(default_factory=list)
    cluster_runtimes: list[Obj] = field(default_factory=list)
    objects: list[Obj] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)

    @property
    def trainjobs(self) -> list[Obj]:
        return [o for o in self.objects if o.get("kind") == "TrainJob"]


def _golden_docs(case: goldenfile.Case) -> list[Obj]:
    docs: list[Obj] = []
    for text in case.inputs.values():
        docs += [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]
    return docs


def _skip_reason(case: goldenfile.Case, docs: list[Obj]) -> str | None:
    if any(flag.startswith(SKIP_FLAGS) for flag in case.flags):
        return "flags " + " ".join(case.flags)
    if "kind: JobSet" not in case.wants.get("want/objects.yaml", ""):
        return "no JobSet wanted"
    if "volcano" in yaml.safe_dump(docs):
        return "Volcano"
    if not any(d.get("kind") == "TrainJob" for d in docs):
        return "no TrainJob"
    if len(_gpu_names(docs)) > 1:
        return "several GPU resource names: upstream picks one at random (README)"
    if _pods_refused(docs):
        return "the API server would refuse its Pods: tjc fails the TrainJob (one verdict)"
    return None


def _pods_refused(docs: list[Obj]) -> bool:
    """Whether tjc's admission refuses a TrainJob of the case for what the API server would
    refuse in its Jobs or Pods (`TJC-POD-*`, `TJC-RESOURCE-*`): upstream's controller builds
    the JobSet, whose Pods then never start; tjc's marks the TrainJob Failed (README)."""
    from compiler import compile_trainjob

    runtimes = [d for d in docs if d.get("kind") != "TrainJob"] + \
        [d.data for d in builtin_runtimes()]
    for job in (d for d in docs if d.get("kind") == "TrainJob"):
        name = job["spec"]["runtimeRef"]["name"]
        runtime = next((r for r in runtimes if r["metadata"]["name"] == name), None)
        if runtime is None:
            continue
        rules = {d.rule for d in compile_trainjob(job, runtime).diagnostics
                 if d.severity.value == "error"}
        if any(rule.startswith(("TJC-POD-", "TJC-RESOURCE-")) for rule in rules):
            return True
    return False


def _gpu_names(value: Any) -> set[str]:
    """The resource names containing "gpu" in any requests or limits below `value`."""
    if isinstance(value, list):
        return set().union(*(_gpu_names(v) for v in value))
    if not isinstance(value, dict):
        return set()
    found = {str(k) for key in ("requests", "limits") if isinstance(value.get(key), dict)
             for k in value[key] if "gpu" in str(k)}
    return found.union(*(_gpu_names(v) for v in value.values()))


def _place(doc: Obj, ns: str, renamed: dict[str, str]) -> Obj:
    """`doc` in namespace `ns` with server fields dropped and cluster runtimes renamed."""
    obj = copy.deepcopy(doc)
    meta = obj.setdefault("metadata", {})
    for key in (*SERVER_FIELDS, "ownerReferences"):
        meta.pop(key, None)
    obj.pop("status", None)
    if obj.get("kind") == "ClusterTrainingRuntime":
        meta["name"] = renamed[meta["name"]]
        meta.pop("namespace", None)
        return obj
    meta["namespace"] = ns
    ref = (obj.get("spec") or {}).get("runtimeRef") if obj.get("kind") == "TrainJob" else None
    if ref and ref.get("kind", "ClusterTrainingRuntime") == "ClusterTrainingRuntime":
        ref["name"] = renamed.get(ref.get("name", ""), ref.get("name"))
    return obj


def golden_inputs(into: Inputs) -> None:
    """The golden cases, one namespace each."""
    for index, path in enumerate(goldenfile.cases()):
        case = goldenfile.parse(path)
        docs = _golden_docs(case)
        reason = _skip_reason(case, docs)
        if reason:
            into.skipped[path.stem] = reason
            continue
        ns = f"g{index:03d}"
        renamed = {d["metadata"]["name"]: f"{d['metadata']['name']}-{ns}" for d in docs
                   if d.get("kind") == "ClusterTrainingRuntime"}
        into.namespaces.append(ns)
        for doc in docs:
            placed = _place(doc, ns, renamed)
            target = (into.cluster_runtimes if doc.get("kind") == "ClusterTrainingRuntime"
                      else into.objects)
            target.append(placed)


VARIANTS: list[Obj] = [
    {"numNodes": 1},
    {"numNodes": 3, "env": [{"name": "EPOCHS", "value": "2"}]},
    {"numNodes": 2, "resourcesPerNode": {"limits": {"nvidia.com/gpu": "2"}}},
    {"numNodes": 2, "resourcesPerNode": {"requests": {"cpu": "2", "memory": "4Gi"}}},
    {"image": "example.com/train:v1", "command": ["python", "train.py"], "args": ["--lr=0.1"]},
    {"numNodes": 4, "numProcPerNode": 2},
    {"numNodes": 2, "resourcesPerNode": {"limits": {"cpu": "1", "memory": "2Gi"}}},
    {"numNodes": 3, "args": ["--epochs=1"], "env": [{"name": "SEED", "value": "7"}]},
    {"numNodes": 1, "resourcesPerNode": {"requests": {"cpu": "500m"},
                                         "limits": {"cpu": "1", "nvidia.com/gpu": "1"}}},
]


def generated_inputs(into: Inputs) -> None:
    """Each built-in runtime with each variant (also suspended, labelled), and a custom one."""
    names = [str(d.data["metadata"]["name"]) for d in builtin_runtimes()]
    for r, runtime in enumerate(names):
        ns = f"b{r}"
        into.namespaces.append(ns)
        for v, variant in enumerate(VARIANTS):
            trainer = copy.deepcopy(variant)
            if "numProcPerNode" in trainer and "torch" not in runtime:
                trainer.pop("numProcPerNode")
            spec: Obj = {"runtimeRef": {"name": runtime}, "trainer": trainer}
            meta: Obj = {"name": f"v{v}", "namespace": ns}
            if v % 2:
                spec["suspend"] = True
                spec["labels"] = {"team": "a"}
                spec["annotations"] = {"note": f"variant {v}"}
            into.objects.append({"apiVersion": TRAINER, "kind": "TrainJob",
                                 "metadata": meta, "spec": spec})
        custom = copy.deepcopy(next(d.data for d in builtin_runtimes()
                                    if d.data["metadata"]["name"] == runtime))
        custom["kind"] = "TrainingRuntime"
        custom["metadata"] = {"name": f"own-{runtime}", "namespace": ns,
                              "labels": dict(custom["metadata"].get("labels") or {})}
        into.objects.append(custom)
        for n in (1, 2):
            into.objects.append({"apiVersion": TRAINER, "kind": "TrainJob",
                                 "metadata": {"name": f"own-{n}", "namespace": ns},
                                 "spec": {"runtimeRef": {"name": f"own-{runtime}",
                                                         "kind": "TrainingRuntime"},
                                          "trainer": {"numNodes": n}}})


def all_inputs() -> Inputs:
    found = Inputs()
    golden_inputs(found)
    generated_inputs(found)
    return found


# --- running ----------------------------------------------------------------------------------


def _path(api_version: str, plural: str, ns: str | None = None, name: str | None = None) -> str:
    base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    if ns:
        base += f"/namespaces/{ns}"
    base += f"/{plural}"
    return f"{base}/{name}" if name else base


PLURALS = {"TrainJob": "trainjobs", "TrainingRuntime": "trainingruntimes",
           "ClusterTrainingRuntime": "clustertrainingruntimes", "ConfigMap": "configmaps",
           "Secret": "secrets"}


def create_inputs(api: Any, inputs: Inputs) -> dict[str, str]:
    """Create everything (runtimes before TrainJobs); the objects the API server refused."""
    refused: dict[str, str] = {}
    for ns in inputs.namespaces:
        cl.api_request(api, "POST", "/api/v1/namespaces",
                       {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    ordered = [*inputs.cluster_runtimes,
               *sorted(inputs.objects, key=lambda o: o.get("kind") == "TrainJob")]
    for obj in ordered:
        meta = obj["metadata"]
        path = _path(obj["apiVersion"], PLURALS[obj["kind"]], meta.get("namespace"))
        try:
            cl.api_request(api, "POST", path, obj)
        except ApiException as error:
            refused[f"{meta.get('namespace')}/{obj['kind']}/{meta['name']}"] = str(error.reason)
    return refused


def collect(api: Any, namespaces: list[str]) -> dict[str, Obj]:
    """What the controller made, by `ns/kind/name`, and each TrainJob's conditions."""
    found: dict[str, Obj] = {}
    wanted = set(namespaces)
    for api_version, plural, kind in COLLECT:
        try:
            items = cl.api_request(api, "GET", _path(api_version, plural))["items"]
        except ApiException:
            continue
        for item in items:
            item = {"apiVersion": api_version, "kind": kind, **item}
            meta = item["metadata"]
            if meta.get("namespace") in wanted and _made_by_controller(item):
                found[f"{meta['namespace']}/{item['kind']}/{meta['name']}"] = item
    for job in cl.api_request(api, "GET", _path(TRAINER, "trainjobs"))["items"]:
        meta = job["metadata"]
        conditions = [{k: c.get(k) for k in ("type", "status", "reason", "message")}
                      for c in (job.get("status") or {}).get("conditions") or []
                      if c.get("type") not in RECORDS]
        found[f"{meta['namespace']}/TrainJob-conditions/{meta['name']}"] = {
            "conditions": sorted(conditions, key=lambda c: str(c["type"]))}
    return found


# Conditions only tjc's controller writes (README: what the controller records).
RECORDS = (snapshot.RECORD, sshsecret.RECORD)


def _made_by_controller(item: Obj) -> bool:
    refs = item["metadata"].get("ownerReferences") or []
    return any(r.get("kind") == "TrainJob" for r in refs)


def wait_settled(api: Any, namespaces: list[str], want_jobsets: int, timeout: float) -> float:
    """Wait until nothing changes for 5 s with `want_jobsets` JobSets there, or for 30 s."""
    start = time.monotonic()
    last: tuple[int, int] | None = None
    stable_since = time.monotonic()
    while time.monotonic() - start < timeout:
        objects = collect(api, namespaces)
        jobsets = sum(1 for k in objects if "/JobSet/" in k)
        marker = (jobsets, hash(yaml.safe_dump(objects)))
        if marker != last:
            last, stable_since = marker, time.monotonic()
        else:
            quiet = time.monotonic() - stable_since
            if quiet > 30 or (jobsets >= want_jobsets and quiet > 5):
                break
        time.sleep(1)
    return time.monotonic() - start


# --- comparing ----------------------------------------------------------------------------


def normalize(obj: Obj) -> Obj:
    """`obj` without what the API server assigns; Secret values and snapshots made comparable."""
    out = copy.deepcopy(obj)
    out.pop("status", None)
    meta = out.get("metadata") or {}
    for key in SERVER_FIELDS:
        meta.pop(key, None)
    for ref in meta.get("ownerReferences") or []:
        ref.pop("uid", None)
    labels = meta.get("labels") or {}
    if out.get("kind") in ownership.TENANT_WRITABLE and ownership.OWNED_LABEL in labels:
        labels.pop(ownership.OWNED_LABEL)
        if not labels:
            meta.pop("labels")
    if out.get("kind") == "Secret":
        out["data"] = sorted((out.get("data") or {}).keys())
    if out.get("kind") == "ConfigMap" and "runtime" in (out.get("data") or {}):
        runtime = _as_go_reads_it(normalize(yaml.safe_load(out["data"]["runtime"])))
        out["data"] = {**out["data"], "runtime": runtime}
    return out


def _as_go_reads_it(value: Any, key: str = "") -> Any:
    """A runtime as Go's types decode it (README: the runtime snapshot's encoding).

    Upstream writes its snapshot from the typed runtime: empty structs as `{}`, quantities in
    canonical form (`1Gi` for `1024Mi`), zero values of `omitempty` fields (`""`, `0`, false)
    left out; tjc writes the runtime as read. Empty objects and zero values are
    dropped and quantities under `resources` compared by value, so that both read the same.
    """
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if key in ("limits", "requests"):
                out[k] = str(quantity.parse(v).value)
                continue
            item = _as_go_reads_it(v, k)
            if item in ({}, "", 0, False):
                continue
            out[k] = item
        return out
    if isinstance(value, list):
        return [_as_go_reads_it(v, key) for v in value]
    return value


def _sort_env(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: (sorted(v, key=lambda e: str(e.get("name"))) if k == "env" and
                    isinstance(v, list) else _sort_env(v)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_sort_env(v) for v in obj]
    return obj


def diff(left: Any, right: Any, path: str = "") -> list[str]:
    """The paths where two JSON values differ, with both values."""
    if isinstance(left, dict) and isinstance(right, dict):
        out: list[str] = []
        for key in sorted(set(left) | set(right)):
            out += diff(left.get(key), right.get(key), f"{path}.{key}")
        return out
    if isinstance(left, list) and isinstance(right, list) and len(left) == len(right):
        return [d for i, (a, b) in enumerate(zip(left, right, strict=True))
                for d in diff(a, b, f"{path}[{i}]")]
    return [] if left == right else [f"{path}: tjc {left!r} / upstream {right!r}"]


@dataclass
class Comparison:
    """The outcome: objects equal, equal but for env order (README), and failures."""

    equal: int = 0
    env_order_only: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


def compare(tjc: dict[str, Obj], upstream: dict[str, Obj]) -> Comparison:
    result = Comparison()
    for key in sorted(set(tjc) | set(upstream)):
        if key not in upstream:
            result.failures.append(f"{key}: only tjc made it")
            continue
        if key not in tjc:
            result.failures.append(f"{key}: only upstream made it")
            continue
        left, right = normalize(tjc[key]), normalize(upstream[key])
        if left == right:
            result.equal += 1
        elif _sort_env(left) == _sort_env(right):
            result.env_order_only.append(key)
        else:
            result.failures.append(f"{key}: " + "; ".join(diff(left, right)[:6]))
    return result
