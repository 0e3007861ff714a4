"""The compile context: what upstream calls the runtime `Info` (reference §2).

`build_context` takes a defaulted TrainJob and runtime and returns the `Context` the plugins
work on: propagated labels/annotations (§2.1), the JobSet spec after `runtimePatches` (§2.2) and
the typed round trip (§2.3), the resourcesPerNode merge (§2.5) and one `PodSet` per
replicatedJob (§2.4). Pure; called by `compiler.core.compile`.
"""

from __future__ import annotations

import marshal
from collections.abc import Callable, Iterator
from dataclasses import field, replace
from typing import Any, cast

from compiler.common.diagnostics import Path
from compiler.common.jsondata import Obj, copy_json, value_key
from compiler.common.records import dataclass
from compiler.core.provenance import (
    Hit,
    Origin,
    PathIndex,
    Recorder,
    Writes,
    copied,
    made,
    object_root,
    trainjob_field,
)
from compiler.core.release import DEFAULT as DEFAULT_RELEASE
from compiler.core.release import Release, release_of
from compiler.kube import roundtrip as typed
from compiler.kube import strategicmerge as smp
from compiler.kube.defaults import canonicalize_quantities, quantity_tree
from compiler.kube.releases import DEFAULT as DEFAULT_VERSION

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
    it, no Secret is emitted and a notice says which Secret the job needs.
    `field_validation` is kubectl's for unknown fields in admission (`strict`, `warn` or
    `ignore`; `compiler.core.admission.field_validation`).
    `name_hash` is read by the render pipeline, not by the compile: it renders each TrainJob
    as if named `<name>-<hash>` (`compiler.render.named`, `tjc render --name-hash`).
    `trainer_version` is the Kubeflow Trainer release whose objects and admission are
    reproduced (`compiler.core.release`; default the newest); an unserved one raises
    `compiler.core.release.UnservedRelease`, a ValueError saying why.
    """

    ssh_keys: SSHKeySource | None = None
    field_validation: str = "strict"
    name_hash: bool = False
    trainer_version: str = DEFAULT_VERSION

    def __post_init__(self) -> None:
        release_of(self.trainer_version)  # refuses an unserved release now, not mid-compile

    @property
    def release(self) -> Release:
        """The Release of `trainer_version`."""
        return release_of(self.trainer_version)


DEFAULT_OPTIONS = CompileOptions()


ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
TRAINER = "trainer"
NODE = "node"
JOBSET_API = ("jobset.x-k8s.io/v1alpha2", "JobSet")
JOBSET_ROOT = object_root(*JOBSET_API, "")[0]
POD_SPEC: Path = ("template", "spec", "template", "spec")
PATCHES: Path = ("spec", "runtimePatches")
PATCH_SPEC: Path = ("trainingRuntimeSpec", "template", "spec")
TEMPLATE_COUNT = made("the job template's parallelism (default 1), written as the pod-set count "
                      "by the JobSet builder")
TEMPLATE_SPEC = Origin("runtime spec.template.spec", "runtime", ("spec", "template", "spec"),
                       exact=True)
POLICY_COUNT = Origin("runtime spec.mlPolicy.numNodes (CRD default 1 when unset), via the "
                      "trainer pod-set count", "runtime", ("spec", "mlPolicy", "numNodes"))
POLICY_COUNT_UNSET = replace(POLICY_COUNT, path=("spec", "mlPolicy"))


@dataclass
class PodSet:
    """One replicatedJob as the plugins see it; `pod_spec` points into the JobSet spec."""

    index: int
    name: str
    ancestor: str | None
    count: int
    pod_spec: Obj
    replicas: int = 1
    count_origin: Origin = TEMPLATE_COUNT
    # the pod spec whose requests a PodGroup counts, where the release's runtime info holds
    # other resources than the JobSet (`Release.resources_per_node`); None: `pod_spec`
    group_pod_spec: Obj | None = None

    def container(self, name: str, *, init: bool = False) -> Obj | None:
        """The first container (or init container) with this name."""
        for container in self.pod_spec.get("initContainers" if init else "containers") or ():
            if container.get("name") == name:
                return container  # type: ignore[no-any-return]
        return None


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
    options: CompileOptions = DEFAULT_OPTIONS
    origins: Recorder = field(default_factory=Recorder)
    root: Path = ()
    pod_meta_origins: dict[tuple[str, str], Origin] = field(default_factory=dict)
    command_origin: Origin | None = None
    release: Release = DEFAULT_RELEASE

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

    def out_path(self, *path: str | int) -> Path:
        """An output path into the JobSet (for the origin recorder)."""
        return (*self.root, *path)

    def pod_path(self, ps: PodSet, *path: str | int) -> Path:
        """An output path into the pod spec of a pod set."""
        return (*self.root, "spec", "replicatedJobs", ps.index, *POD_SPEC, *path)

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

    def endpoint_replicas(self, ps: PodSet) -> int:
        """The replicas of a pod set its endpoints list: all of them from v2.3, only the first
        before (`Release.hostfile_all_replicas`, upstream's jobset plugin `PodSet.Endpoints`)."""
        return ps.replicas if self.release.hostfile_all_replicas else 1

    def endpoints(self, ps: PodSet) -> Iterator[str]:
        """`<tj>-<job>-<replica>-<pod>.<subdomain>` for every pod of a pod set."""
        sub = self.subdomain()
        for replica in range(self.endpoint_replicas(ps)):
            for pod in range(ps.count):
                yield f"{self.name}-{ps.name}-{replica}-{pod}.{sub}"


def build_context(trainjob: Obj, runtime: Obj, spec: Obj, merged: MergedSpecs | None = None,
                  release: Release = DEFAULT_RELEASE) -> Context:
    """Build the context from a defaulted TrainJob, its defaulted runtime and a fresh copy of
    the runtime's JobSet spec after the typed round trip (`typed.jobset_spec`), which the
    context takes over, as the Kubeflow Trainer `release` builds its runtime info. Every
    field written is recorded in the context's `origins`; `merged` (the runtime's, when
    given, for the same release) remembers what the runtime patches merge to."""
    rt_spec = runtime.get("spec") or {}
    template = rt_spec.get("template") or {}
    ml_policy = rt_spec.get("mlPolicy")
    patches = spec_patches(trainjob, release)
    metadata = [*patches, *_own_metadata(trainjob, release)]  # (what sets JobSet labels)
    labels, annotations = _propagated_metadata(template, metadata)
    root = (JOBSET_ROOT, str((trainjob.get("metadata") or {}).get("name", "")))
    raw = template.get("spec")
    merged = merged if merged is not None else MergedSpecs(release)
    spec_at = (*root, "spec")
    origins = Recorder({"trainjob": trainjob, "runtime": runtime}, (spec_at, merged, raw),
                       [(root, TEMPLATE_WRITES, (raw, merged, labels, annotations, metadata))])
    if patches:
        origins.add((spec_at, PATCH_WRITES, (raw, merged, patches, [])))
    spec = merged.merge(spec, patches)
    pod_sets = []
    for index, rjob in enumerate(spec.get("replicatedJobs") or []):
        pod_sets.append(_pod_set(index, rjob, trainjob, ml_policy, origins, root, release))
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
        origins=origins,
        root=root,
        release=release,
    )


def runtime_patches(trainjob: Obj) -> list[Obj]:
    patches = trainjob.get("spec", {}).get("runtimePatches") or []
    return [p for p in patches if isinstance(p, dict)]


SOURCE = "tjc.source"  # where a patch made from another v2.1 field comes from (a TrainJob path)


def spec_patches(trainjob: Obj, release: Release = DEFAULT_RELEASE) -> list[Obj]:
    """What changes the runtime's JobSet template, as runtime patches: the TrainJob's own,
    or v2.1's `spec.podTemplateOverrides` (`Release.patch_merge`), each override the patch of
    the pod template of every job it targets (marked with its `SOURCE`)."""
    if release.patch_merge != "overrides":
        return runtime_patches(trainjob)
    overrides = (trainjob.get("spec") or {}).get("podTemplateOverrides") or []
    return [_override_patch(k, override, release) for k, override in enumerate(overrides)
            if isinstance(override, dict)]


def _override_patch(k: int, override: Obj, release: Release) -> Obj:
    """`mergePodTemplateOverrides`' patch of one override: its metadata labels and
    annotations and its spec (Go-encoded), merged into each target job's pod template."""
    typed_override = typed.pod_template_override(override, release.version)
    pod: Obj = {}
    meta = typed_override.get("metadata") or {}
    kept = {key: meta[key] for key in ("labels", "annotations") if meta.get(key) is not None}
    if kept:
        pod["metadata"] = kept
    if isinstance(typed_override.get("spec"), dict):
        pod["spec"] = typed_override["spec"]
    targets = dict.fromkeys(str(t.get("name", "")) for t in typed_override.get("targetJobs") or []
                            if isinstance(t, dict))
    jobs = [{"name": name, "template": {"spec": {"template": pod}}} for name in targets]
    return {"trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": jobs}}},
            SOURCE: ("spec", "podTemplateOverrides", k)}


def _own_metadata(trainjob: Obj, release: Release) -> list[Obj]:
    """v2.1's `spec.labels` and `spec.annotations`, which override the runtime template's on
    the JobSet, as a patch of its metadata (none from v2.2: the CRD has no such field)."""
    spec = trainjob.get("spec") or {}
    meta = {key: spec[key] for key in ("labels", "annotations") if isinstance(spec.get(key), dict)}
    if release.patch_merge != "overrides" or not meta:
        return []
    return [{"trainingRuntimeSpec": {"template": {"metadata": meta}}, SOURCE: ("spec",)}]


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


class _TemplateWrites(Writes):
    """The copy of the runtime's template: its JobSet spec, what the typed round trip
    normalized in it, and the JobSet's labels and annotations (from the template's metadata,
    or the last runtime patch that sets a key). `data`: the template's spec as written
    (`raw`), the runtime's `MergedSpecs`, the labels, the annotations and the runtime
    patches."""

    def find(self, at: Path, data: Any, path: Path) -> Hit | None:
        if len(path) > 2 and path[2] == "spec":
            return _normalized(at, data, path[3:]) or ((*at, "spec"), TEMPLATE_SPEC)
        if len(path) > 2 and path[2] != "metadata":
            return None
        return _metadata(at, data, path[3:]) or (None if len(path) > 2 else (
            _normalized(at, data, ()) or ((*at, "spec"), TEMPLATE_SPEC)))

    def writes(self, at: Path, data: Any) -> Iterator[Hit]:
        raw, merged, labels, annotations, patches = data
        yield (*at, "spec"), TEMPLATE_SPEC
        origin = _normalized_origin(at)
        for path in merged.normalized_paths(raw):
            yield (*at, "spec", *path), origin
        for name, values in (("labels", labels), ("annotations", annotations)):
            for key in values:
                yield (*at, "metadata", name, key), _metadata_origin(name, key, patches)


def _normalized(root: Path, data: Any, below: Path) -> Hit | None:
    """A normalized field on the spec's path `below`, above or below it."""
    raw, merged = data[0], data[1]
    if merged.normalized(raw).newest(below) < 0:
        return None
    return (*root, "spec"), _normalized_origin(root)


def _normalized_origin(root: Path) -> Origin:
    return Origin("runtime spec.template.spec (normalized as the API server stores it)",
                  "runtime", ("spec", "template", "spec"), anchor=(*root, "spec"))


def _metadata(root: Path, data: Any, below: Path) -> Hit | None:
    """The newest label or annotation on the metadata's path `below`, above or below it
    (labels are written first)."""
    for name, values in (("annotations", data[3]), ("labels", data[2])):
        if below and below[0] != name:
            continue
        if len(below) > 1:
            if below[1] not in values:
                return None
            key = str(below[1])
        elif values:
            key = next(reversed(values))
        else:
            continue
        return (*root, "metadata", name, key), _metadata_origin(name, key, data[4])
    return None


def _metadata_origin(name: str, key: Any, patches: list[Obj]) -> Origin:
    """The origin of a JobSet label or annotation: the last runtime patch that sets it, else
    the runtime template's metadata."""
    origin = copied(f"runtime spec.template.metadata.{name}", "runtime",
                    ("spec", "template", "metadata", name, key))
    for i, patch in enumerate(patches):
        meta = (_patch_template(patch).get("metadata") or {}).get(name) or {}
        if key in meta and SOURCE in patch:  # v2.1's spec.labels / spec.annotations
            origin = copied(f"trainJob spec.{name}", "trainjob", (*patch[SOURCE], name, key))
        elif key in meta:
            origin = copied(f"trainJob spec.runtimePatches[{i}] (manager "
                            f"{patch.get('manager', '')})", "trainjob",
                            (*PATCHES, i, "trainingRuntimeSpec", "template", "metadata",
                             name, key))
    return origin


class _PatchWrites(Writes):
    """What the runtime patches changed in the JobSet spec copied from the runtime's
    template, each field as the last patch that changed it. `data`: the template's spec as
    written (`raw`), the runtime's `MergedSpecs`, the runtime patches and a list that keeps
    what they change once asked."""

    def find(self, at: Path, data: Any, path: Path) -> Hit | None:
        patches = data[2]
        k = _changes(data)[1].newest(path[len(at):])
        return None if k < 0 else (at, _patch_origin(at[:2], k, patches[k]))

    def writes(self, at: Path, data: Any) -> Iterator[Hit]:
        patches = data[2]
        for k, path in _changes(data)[0]:
            yield (*at, *path), _patch_origin(at[:2], k, patches[k])


def _changes(data: Any) -> tuple[list[tuple[int, Path]], PathIndex]:
    """`MergedSpecs.changes` of a `_PatchWrites` entry's data, asked once per entry (its
    last item keeps it)."""
    raw, merged, patches, known = data
    if not known:
        known.append(merged.changes(raw, patches))
    return known[0]  # type: ignore[no-any-return]


TEMPLATE_WRITES = _TemplateWrites()
PATCH_WRITES = _PatchWrites()


def merge_patches(spec: Obj, patches: list[Obj], release: Release = DEFAULT_RELEASE) -> Obj:
    """§2.2: strategic-merge each patch's spec, then restore the template's job order (as
    `release` merges them: `merge_each`).

    `spec` is a copy the caller hands over (the compile's own, explain's): it is merged into
    in place, not copied again."""
    order = {rjob.get("name"): i for i, rjob in enumerate(spec.get("replicatedJobs") or [])}
    spec, patched = merge_each(spec, patches, release)
    if not patched:
        return spec
    jobs = spec.get("replicatedJobs")
    if isinstance(jobs, list):
        jobs.sort(key=lambda rjob: order.get(rjob.get("name"), 0))
    return typed.jobset_spec(spec, owned=True, release=release.version)


class MergedSpecs:
    """What runtime patches merge one runtime's spec to, remembered by the patches' specs.

    TrainJobs of a repository repeat the same few patches (a queue's node selectors and
    tolerations), and merging one is a strategic merge and a typed round trip of the whole
    spec. Kept as `marshal` bytes by the `value_key` of the patches' specs (which tells 1
    from True and 1.0, so only equal patches share an entry), at most LIMIT of them; a hit
    is a fresh copy the caller owns. For the origin recorder, also which fields the typed
    round trip changed in the template (once) and which each patch changes (by the same
    key), worked out only when a compile's origins are looked up. One instance belongs to
    one runtime's spec (`PreparedRuntime`): the spec is part of what the entries depend on."""

    LIMIT = 256

    def __init__(self, release: Release = DEFAULT_RELEASE) -> None:
        self.release = release  # the release the runtime was prepared for
        self._memo: dict[bytes, bytes] = {}
        self._typed: list[Obj] = []
        self._normalized: list[tuple[list[Path], PathIndex]] = []
        self._changes: dict[bytes, tuple[list[tuple[int, Path]], PathIndex]] = {}

    def template(self, raw: Any) -> Obj:
        """This runtime's template spec `raw` after the typed round trip (read only)."""
        if not self._typed:
            self._typed.append(typed.jobset_spec(raw or {}, release=self.release.version))
        return self._typed[0]

    def normalized_paths(self, raw: Any) -> list[Path]:
        """The fields (paths below the spec) the typed round trip changed in this runtime's
        template spec `raw` (canonical quantities, empty strings dropped, `{}` for empty
        structs), worked out once."""
        if not self._normalized:
            paths = _changed(raw, self.template(raw), ())
            self._normalized.append((paths, PathIndex((path, 0) for path in paths)))
        return self._normalized[0][0]

    def normalized(self, raw: Any) -> PathIndex:
        """`normalized_paths`, indexed."""
        self.normalized_paths(raw)
        return self._normalized[0][1]

    def changes(self, raw: Any, patches: list[Obj]) -> tuple[list[tuple[int, Path]], PathIndex]:
        """`patch_paths` of this runtime's template spec `raw`, and the same indexed (each
        path ranked by its patch), remembered by the patches' specs as `merge` is (at most
        LIMIT of them; read only)."""
        key = value_key([_patch_template(patch).get("spec") for patch in patches])
        known = self._changes.get(key) if key is not None else None
        if known is None:
            paths = patch_paths(self.template(raw), patches, self.release)
            known = paths, PathIndex((path, k) for k, path in paths)
            if key is not None and len(self._changes) < self.LIMIT:
                self._changes[key] = known
        return known

    def merge(self, spec: Obj, patches: list[Obj]) -> Obj:
        """`merge_patches(spec, patches)`, where `spec` is a fresh copy of this runtime's."""
        if not patches:
            return spec  # (what merge_patches gives when no patch has a spec)
        specs = [_patch_template(patch).get("spec") for patch in patches]
        if not any(isinstance(pspec, dict) for pspec in specs):
            return merge_patches(spec, patches, self.release)
        key = value_key(specs)
        if key is None:
            return merge_patches(spec, patches, self.release)
        blob = self._memo.get(key)
        if blob is not None:
            return cast(Obj, marshal.loads(blob))
        out = merge_patches(spec, patches, self.release)
        if len(self._memo) < self.LIMIT:
            self._memo[key] = marshal.dumps(out)
        return out


def merge_each(spec: Obj, patches: list[Obj], release: Release = DEFAULT_RELEASE
               ) -> tuple[Obj, bool]:
    """The strategic merge of each patch's spec (typed) into `spec`, which the caller hands
    over, and whether any patch had a spec: the only step of `build_context` that can fail
    (`CompileError` for a list item without its merge key). `release.patch_merge`: v2.3
    merges each patch into the whole JobSet spec (a job the runtime lacks is added), v2.2
    each job patch's template into the runtime's jobs of that name only (`_merge_jobs`)."""
    patched = False
    for patch in patches:
        pspec = _patch_template(patch).get("spec")
        if not isinstance(pspec, dict):
            continue
        if release.patch_merge == "overrides":  # (typed as it was made: `spec_patches`)
            _merge_jobs(spec, pspec)
        elif release.patch_merge == "jobs":
            _merge_jobs(spec, _typed_patch(pspec, release))
        else:
            spec = smp.merge_into(spec, _typed_patch(pspec, release))
        patched = True
    return spec, patched


def _merge_jobs(spec: Obj, pspec: Obj) -> None:
    """v2.2's `mergeRuntimePatches`: each job patch's template strategic-merged (as a
    JobTemplateSpec) into the template of every runtime job of its name, in place."""
    for pjob in pspec.get("replicatedJobs") or []:
        template = pjob.get("template") if isinstance(pjob, dict) else None
        if not isinstance(template, dict):
            continue
        for rjob in spec.get("replicatedJobs") or []:
            if rjob.get("name") == pjob.get("name"):
                rjob["template"] = smp.merge_into(rjob.get("template") or {}, template)


def _patch_origin(root: Path, k: int, patch: Obj) -> Origin:
    if SOURCE in patch:  # v2.1's podTemplateOverrides[k]
        return Origin(f"trainJob spec.podTemplateOverrides[{k}]", "trainjob",
                      (*patch[SOURCE], "spec"), anchor=(*root, "spec"))
    return Origin(f"trainJob spec.runtimePatches[{k}] (manager {patch.get('manager', '')})",
                  "trainjob", (*PATCHES, k, *PATCH_SPEC), anchor=(*root, "spec"))


def patch_paths(spec: Obj, patches: list[Obj], release: Release = DEFAULT_RELEASE
                ) -> list[tuple[int, Path]]:
    """Each field (path below the spec) the k-th patch changes in the JobSet spec `spec`
    (read only), comparing the spec after k-1 and k patches (what the strategic merge writes,
    without instrumenting it)."""
    before = spec
    out = []
    for k in range(len(patches)):
        after = merge_patches(copy_json(spec), patches[:k + 1], release)
        out += [(k, path) for path in _changed(before, after, ())]
        before = after
    return out


def _changed(old: Any, new: Any, path: Path) -> list[Path]:
    """The paths where `new` differs from `old`: a map or list that lost entries, then what
    changed below it (whole subtrees where the shape differs)."""
    if isinstance(new, dict) and isinstance(old, dict):
        lost = [path] if old.keys() - new.keys() else []
        return lost + [p for key, value in new.items()
                       for p in _changed(old.get(key), value, (*path, key))]
    if isinstance(new, list) and isinstance(old, list):
        lost = [path] if len(old) > len(new) else []
        return lost + [p for i, value in enumerate(new)
                       for p in _changed(old[i] if i < len(old) else None, value, (*path, i))]
    return [] if new == old else [path]


def _typed_patch(pspec: Obj, release: Release) -> Obj:
    """The patch as Go's JSON encoding of `JobSetSpecPatch` would give it."""
    out = typed.patch_spec(pspec, release.version)
    canonicalize_quantities(out, _patch_quantities(release.version))
    return out


def _patch_quantities(version: str) -> Obj | None:
    tree = quantity_tree("TrainJob", "spec", "runtimePatches", release=version)
    tree = (tree or {}).get("i")
    for name in ("trainingRuntimeSpec", "template", "spec"):
        tree = (tree or {}).get("p", {}).get(name)
    return tree


def _pod_set(index: int, rjob: Obj, trainjob: Obj, ml_policy: Any, origins: Recorder,
             root: Path, release: Release = DEFAULT_RELEASE) -> PodSet:
    """§2.4 and §2.5: count, ancestor, and the resourcesPerNode merge for one job."""
    job_template = rjob["template"]
    job_spec = job_template["spec"]
    pod_spec = job_spec["template"]["spec"]
    count = job_spec.get("parallelism", 1)
    count_origin = TEMPLATE_COUNT
    ancestor = (job_template.get("metadata", {}).get("labels") or {}).get(ANCESTOR_LABEL)
    if ancestor == TRAINER and ml_policy is not None:
        count = (ml_policy or {}).get("numNodes", 1)
        count_origin = POLICY_COUNT if "numNodes" in (ml_policy or {}) else POLICY_COUNT_UNSET
    resources = (trainjob.get("spec", {}).get("trainer") or {}).get("resourcesPerNode")
    group = None
    if isinstance(resources, dict) and takes_resources(rjob, ancestor, ml_policy, release):
        if release.resources_per_node == "merge":
            at = _merge_node_resources(pod_spec, resources)
        else:
            in_info = release.resources_per_node == "replace" and ancestor == TRAINER and \
                ml_policy is not None
            group = _group_pod_spec(pod_spec, resources if in_info else None)
            at = _replace_node_resources(pod_spec, resources)
        if at is not None:
            origins.add(((*root, "spec", "replicatedJobs", index, *POD_SPEC, "containers", at,
                          "resources"), RESOURCE_WRITES, resources))
    return PodSet(index=index, name=str(rjob.get("name", "")), ancestor=ancestor,
                  count=max(int(count if isinstance(count, int) else 1), 1),
                  pod_spec=pod_spec, replicas=int(rjob.get("replicas", 1) or 1),
                  count_origin=count_origin, group_pod_spec=group)


class _ResourceWrites(Writes):
    """resourcesPerNode's limits and requests (`data`, the TrainJob's), merged into the
    container whose resources are at `at` (over its own), each from its TrainJob field."""

    def find(self, at: Path, data: Any, path: Path) -> Hit | None:
        below = path[len(at):]
        for key in ("requests", "limits"):
            names = data.get(key) or {}
            if below and below[0] != key:
                continue
            if len(below) > 1:
                if below[1] not in names:
                    return None
                name = below[1]
            elif names:
                name = next(reversed(names))
            else:
                continue
            return (*at, key, name), _resource_origin(key, name)
        return None

    def writes(self, at: Path, data: Any) -> Iterator[Hit]:
        for key in ("limits", "requests"):
            for name in data.get(key) or {}:
                yield (*at, key, name), _resource_origin(key, name)


RESOURCE_WRITES = _ResourceWrites()


def _resource_origin(key: str, name: Any) -> Origin:
    return trainjob_field(("spec", "trainer", "resourcesPerNode", key, name))


def takes_resources(rjob: Obj, ancestor: str | None, ml_policy: Any,
                    release: Release = DEFAULT_RELEASE) -> bool:
    """Whether upstream puts a TrainJob's resourcesPerNode into this replicated job (§2.5):
    the trainer job, or MPI's `node` job when the launcher runs as a node; where the release
    merges them (`Release.resources_per_node`), only in a runtime with an mlPolicy."""
    if release.resources_per_node == "merge" and not isinstance(ml_policy, dict):
        return False
    if ancestor == TRAINER:
        return True
    mpi = ml_policy.get("mpi") if isinstance(ml_policy, dict) else None
    return isinstance(mpi, dict) and mpi.get("runLauncherAsNode") is True \
        and rjob.get("name") == NODE


_CANONICAL: dict[bytes, Obj] = {}  # resourcesPerNode, canonical, by its value_key
_CANONICAL_LIMIT = 1024


def _canonical_resources(override: Obj) -> Obj:
    """resourcesPerNode with canonical quantities (read only: the caller copies out of it).
    A repository repeats a few of them, so each is canonicalized once, remembered by its
    `value_key`."""
    key = value_key(override)
    known = _CANONICAL.get(key) if key is not None else None
    if known is not None:
        return known
    canonical: Obj = canonicalize_quantities(copy_json(override), quantity_tree(
        "TrainJob", "spec", "trainer", "resourcesPerNode"))
    if key is not None and len(_CANONICAL) < _CANONICAL_LIMIT and _flat(canonical):
        _CANONICAL[key] = canonical
    return canonical


def _flat(resources: Obj) -> bool:
    """Whether every limit and request is a scalar (what the JobSet shares with the memo
    then cannot be changed in place)."""
    return all(isinstance(value, (str, int, float)) for field in resources.values()
               if isinstance(field, dict) for value in field.values())


def _merge_node_resources(pod_spec: Obj, override: Obj) -> int | None:
    """Per-key overlay of limits/requests on the first `node` container; claims dropped.
    Returns the index of that container (None when there is none)."""
    index = node_container(pod_spec)
    if index is not None:
        container = pod_spec["containers"][index]
        base = container.get("resources") or {}
        canonical = _canonical_resources(override)
        merged: Obj = {}
        for key in ("limits", "requests"):
            values = {**(base.get(key) or {}), **(canonical.get(key) or {})}
            if values:
                merged[key] = values
        container["resources"] = merged
    return index


def _replace_node_resources(pod_spec: Obj, override: Obj) -> int | None:
    """v2.2's and v2.1's JobSet builder (`WithResources`): the TrainJob's limits and requests
    replace the first `node` container's resources (the runtime's and its claims are gone),
    when it sets either. Returns the index of that container (None: nothing written)."""
    index = node_container(pod_spec)
    if index is None or (override.get("limits") is None and override.get("requests") is None):
        return None
    canonical = _canonical_resources(override)
    pod_spec["containers"][index]["resources"] = {
        key: dict(canonical[key]) for key in ("limits", "requests")
        if isinstance(canonical.get(key), dict)}
    return index


def _group_pod_spec(pod_spec: Obj, info: Obj | None) -> Obj:
    """The pod spec a v2.1 or v2.2 PodGroup counts (the runtime info's, made before any
    plugin): the runtime's own, but where v2.2 put the TrainJob's resourcesPerNode (`info`)
    into the trainer's first `node` container. Shares what the compile never changes."""
    containers = [dict(c) if isinstance(c, dict) else c for c in pod_spec.get("containers") or []]
    index = node_container(pod_spec)
    if info is not None and index is not None:
        containers[index]["resources"] = _canonical_resources(info)
    return {**pod_spec, "containers": containers,
            "initContainers": list(pod_spec.get("initContainers") or [])}


def node_container(pod_spec: Any) -> int | None:
    """The index of the pod spec's first container named `node` (containers only): the one
    a TrainJob's resourcesPerNode is merged into (§2.5), None when there is none."""
    containers = pod_spec.get("containers") if isinstance(pod_spec, dict) else None
    for index, container in enumerate(containers if isinstance(containers, list) else []):
        if isinstance(container, dict) and container.get("name") == NODE:
            return index
    return None


def may_take_resources(ml_policy: Any, pod_spec: Any, index: Any,
                       release: Release = DEFAULT_RELEASE) -> bool:
    """Whether a TrainJob's resourcesPerNode may replace the amounts of container `index` of
    a runtime's pod spec: its first `node` container (in a runtime with an mlPolicy, where
    the release merges them). The job is not asked: a TrainJob's runtime patch can give any
    replicated job the trainer label."""
    return (isinstance(ml_policy, dict) or release.resources_per_node != "merge") and \
        index == node_container(pod_spec)
