"""The compile context: what upstream calls the runtime `Info` (reference §2).

`build_context` takes a defaulted TrainJob and runtime and returns the `Context` the plugins
work on: propagated labels/annotations (§2.1), the JobSet spec after `runtimePatches` (§2.2) and
the typed round trip (§2.3), the resourcesPerNode merge (§2.5) and one `PodSet` per
replicatedJob (§2.4). Pure; called by `compiler.compile`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from compiler import smp, typed
from compiler.data import Obj, copy_json
from compiler.defaults import canonicalize_quantities, quantity_tree

SSHKeySource = Callable[[str, str], "SSHKeyPair"]


@dataclass(frozen=True)
class SSHKeyPair:
    """An MPI SSH key pair: the PEM private key and the OpenSSH authorized_keys line."""

    private_pem: bytes
    public_key: bytes


@dataclass(frozen=True)
class CompileOptions:
    """What the cluster would supply, passed in so the compile stays pure.

    `ssh_keys(namespace, name)` returns the key pair of a TrainJob's MPI SSH Secret; without
    it, no Secret is emitted and a notice says which Secret the job needs. `trace` records
    which plugin made which edit and object (for `tjc explain`).
    """

    ssh_keys: SSHKeySource | None = None
    trace: bool = False


ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
TRAINER = "trainer"
NODE = "node"


@dataclass
class PodSet:
    """One replicatedJob as the plugins see it; `pod_spec` points into the JobSet spec."""

    index: int
    name: str
    ancestor: str | None
    count: int
    pod_spec: Obj
    replicas: int = 1

    def container(self, name: str, *, init: bool = False) -> Obj | None:
        """The first container (or init container) with this name."""
        key = "initContainers" if init else "containers"
        return next((c for c in self.pod_spec.get(key) or [] if c.get("name") == name), None)


@dataclass
class Context:
    """Everything the plugins read and the JobSet builder assembles."""

    trainjob: Obj
    runtime: Obj
    spec: Obj
    labels: dict[str, str]
    annotations: dict[str, str]
    pod_sets: list[PodSet]
    ml_policy: Obj | None
    pod_group_policy: Obj | None
    pod_labels: dict[str, str] = field(default_factory=dict)
    pod_annotations: dict[str, str] = field(default_factory=dict)
    trainer_command: list[str] | None = None
    clear_trainer_args: bool = False
    facts: dict[str, Any] = field(default_factory=dict)
    options: CompileOptions = field(default_factory=lambda: CompileOptions())
    trace: list[tuple[str, Any]] | None = None

    @property
    def name(self) -> str:
        """The TrainJob's name."""
        return str(self.trainjob["metadata"]["name"])

    @property
    def namespace(self) -> str:
        """The TrainJob's namespace."""
        return str(self.trainjob["metadata"].get("namespace", ""))

    @property
    def trainer(self) -> Obj | None:
        """The TrainJob's `spec.trainer`, or None."""
        value = self.trainjob.get("spec", {}).get("trainer")
        return value if isinstance(value, dict) else None

    def pod_set_by_ancestor(self, ancestor: str) -> PodSet | None:
        """The first pod set with this ancestor label value."""
        return next((ps for ps in self.pod_sets if ps.ancestor == ancestor), None)

    def pod_set_by_name(self, name: str) -> PodSet | None:
        """The first pod set with this replicatedJob name."""
        return next((ps for ps in self.pod_sets if ps.name == name), None)

    def trainer_container(self) -> Obj | None:
        """Container `node` of the trainer pod set (containers only, as upstream)."""
        ps = self.pod_set_by_ancestor(TRAINER)
        return ps.container(NODE) if ps else None

    def subdomain(self) -> str:
        """`network.subdomain` of the JobSet spec, else the TrainJob name."""
        network = self.spec.get("network")
        if isinstance(network, dict) and network.get("subdomain"):
            return str(network["subdomain"])
        return self.name

    def endpoints(self, ps: PodSet) -> Iterator[str]:
        """`<tj>-<job>-<replica>-<pod>.<subdomain>` for every pod of a pod set."""
        sub = self.subdomain()
        for replica in range(ps.replicas):
            for pod in range(ps.count):
                yield f"{self.name}-{ps.name}-{replica}-{pod}.{sub}"


def build_context(trainjob: Obj, runtime: Obj, spec: Obj) -> Context:
    """Build the context from a defaulted TrainJob, its defaulted runtime and a fresh copy of
    the runtime's JobSet spec after the typed round trip (`typed.jobset_spec`), which the
    context takes over."""
    rt_spec = runtime.get("spec") or {}
    template = rt_spec.get("template") or {}
    ml_policy = rt_spec.get("mlPolicy")
    patches = runtime_patches(trainjob)
    labels, annotations = _propagated_metadata(template, patches)
    spec = merge_patches(spec, patches)
    pod_sets = []
    for index, rjob in enumerate(spec.get("replicatedJobs") or []):
        pod_sets.append(_pod_set(index, rjob, trainjob, ml_policy))
    command = (trainjob.get("spec", {}).get("trainer") or {}).get("command")
    return Context(
        trainjob=trainjob,
        runtime=runtime,
        spec=spec,
        labels=labels,
        annotations=annotations,
        pod_sets=pod_sets,
        ml_policy=ml_policy if isinstance(ml_policy, dict) else None,
        pod_group_policy=rt_spec.get("podGroupPolicy"),
        trainer_command=list(command) if isinstance(command, list) else None,
    )


def runtime_patches(trainjob: Obj) -> list[Obj]:
    patches = trainjob.get("spec", {}).get("runtimePatches") or []
    return [p for p in patches if isinstance(p, dict)]


def _patch_template(patch: Obj) -> Obj:
    rts = patch.get("trainingRuntimeSpec")
    template = rts.get("template") if isinstance(rts, dict) else None
    return template if isinstance(template, dict) else {}


def _propagated_metadata(template: Obj, patches: list[Obj]) -> tuple[dict[str, str], ...]:
    """§2.1: template metadata labels/annotations, overlaid by each patch's in order."""
    meta = template.get("metadata") or {}
    labels = dict(meta.get("labels") or {})
    annotations = dict(meta.get("annotations") or {})
    for patch in patches:
        pmeta = _patch_template(patch).get("metadata") or {}
        labels.update(pmeta.get("labels") or {})
        annotations.update(pmeta.get("annotations") or {})
    return labels, annotations


def merge_patches(spec: Obj, patches: list[Obj]) -> Obj:
    """§2.2: strategic-merge each patch's spec, then restore the template's job order."""
    order = {rjob.get("name"): i for i, rjob in enumerate(spec.get("replicatedJobs") or [])}
    patched = False
    for patch in patches:
        pspec = _patch_template(patch).get("spec")
        if not isinstance(pspec, dict):
            continue
        spec = smp.strategic_merge(spec, _typed_patch(pspec))
        patched = True
    if not patched:
        return spec
    jobs = spec.get("replicatedJobs")
    if isinstance(jobs, list):
        jobs.sort(key=lambda rjob: order.get(rjob.get("name"), 0))
    return typed.jobset_spec(spec)


def _typed_patch(pspec: Obj) -> Obj:
    """The patch as Go's JSON encoding of `JobSetSpecPatch` would give it."""
    out = typed.patch_spec(pspec)
    canonicalize_quantities(out, _patch_quantities())
    return out


def _patch_quantities() -> Obj | None:
    tree = quantity_tree("TrainJob", "spec", "runtimePatches")
    tree = (tree or {}).get("i")
    for name in ("trainingRuntimeSpec", "template", "spec"):
        tree = (tree or {}).get("p", {}).get(name)
    return tree


def _pod_set(index: int, rjob: Obj, trainjob: Obj, ml_policy: Any) -> PodSet:
    """§2.4 and §2.5: count, ancestor, and the resourcesPerNode merge for one job."""
    job_template = rjob["template"]
    job_spec = job_template["spec"]
    pod_spec = job_spec["template"]["spec"]
    count = job_spec.get("parallelism", 1)
    ancestor = (job_template.get("metadata", {}).get("labels") or {}).get(ANCESTOR_LABEL)
    if ancestor == TRAINER and ml_policy is not None:
        count = (ml_policy or {}).get("numNodes", 1)
    resources = (trainjob.get("spec", {}).get("trainer") or {}).get("resourcesPerNode")
    if isinstance(resources, dict) and _takes_resources(rjob, ancestor, ml_policy):
        _merge_node_resources(pod_spec, resources)
    return PodSet(index=index, name=str(rjob.get("name", "")), ancestor=ancestor,
                  count=max(int(count if isinstance(count, int) else 1), 1),
                  pod_spec=pod_spec, replicas=int(rjob.get("replicas", 1) or 1))


def _takes_resources(rjob: Obj, ancestor: str | None, ml_policy: Any) -> bool:
    if not isinstance(ml_policy, dict):
        return False
    if ancestor == TRAINER:
        return True
    mpi = ml_policy.get("mpi")
    return isinstance(mpi, dict) and mpi.get("runLauncherAsNode") is True \
        and rjob.get("name") == NODE


def _merge_node_resources(pod_spec: Obj, override: Obj) -> None:
    """Per-key overlay of limits/requests on the first `node` container; claims dropped."""
    for container in pod_spec.get("containers") or []:
        if container.get("name") != NODE:
            continue
        base = container.get("resources") or {}
        canonical = canonicalize_quantities(copy_json(override), quantity_tree(
            "TrainJob", "spec", "trainer", "resourcesPerNode"))
        merged: Obj = {}
        for key in ("limits", "requests"):
            values = {**(base.get(key) or {}), **(canonical.get(key) or {})}
            if values:
                merged[key] = values
        container["resources"] = merged
        return
