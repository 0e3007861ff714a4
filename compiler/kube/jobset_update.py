"""What an update may change in an existing JobSet, as JobSet v0.12.0 decides it.

Three sources, read from JobSet's code at that tag:
- its validating webhook (`ValidateUpdate`, pkg/webhooks/jobset_webhook.go): `spec.replicatedJobs`
  and `spec.managedBy` may not change, except that while the old or the new JobSet is
  suspended each replicated job's pod template may change its labels, annotations,
  nodeSelector, tolerations and schedulingGates (for Kueue); the ElasticJobSet feature gate
  (alpha, off by default) would also free parallelism and completions: not modelled;
- its CRD's transition rules (`self == oldSelf`) on `spec.network`, `successPolicy`,
  `failurePolicy`, `startupPolicy` and `volumeClaimPolicies`: checked only when the old and
  the new object both have the field;
- its defaulting webhook (`Default`), which runs on create only: the live JobSet holds the
  defaults it set (`completionMode`, `restartPolicy`, the policies, `network`), a later update
  does not get them again.

An update is what a GitOps tool sends for the new rendered JobSet. A client-side apply
(`kubectl apply`, `helm upgrade`, Argo CD's default) sends a JSON merge patch, which replaces
every list it changes: `spec.replicatedJobs` arrives without the defaults of the live object.
A server-side apply (Flux, Argo CD's `ServerSideApply=true`) keeps the fields it does not own,
those defaults among them. `refusals` reports, per field, what each would have refused.

Pure; called by `compiler.render.named` (what a content-hash name covers) and by
`compiler.gitops.updates` (the marks of `tjc diff`). It knows nothing of TrainJobs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from compiler.common.jsondata import Obj, copy_json
from compiler.common.records import dataclass

# The spec fields an update may change whatever their value (the rest is `fixed_part`).
MUTABLE_SPEC = frozenset({"suspend", "ttlSecondsAfterFinished", "coordinator"})
# Immutable through the CRD's transition rules: refused only when old and new both have them.
RULE_IMMUTABLE = ("network", "successPolicy", "failurePolicy", "startupPolicy",
                  "volumeClaimPolicies")
# Below `replicatedJobs[].template.spec.template`: what may change while suspended.
WHILE_SUSPENDED = (("metadata", "annotations"), ("metadata", "labels"),
                   ("spec", "nodeSelector"), ("spec", "tolerations"),
                   ("spec", "schedulingGates"))
POD_TEMPLATE = ("template", "spec", "template")
RJOBS = ("spec", "replicatedJobs")
Path = tuple[str | int, ...]


@dataclass(frozen=True)
class Refusal:
    """A change the JobSet webhook (or a CRD rule) refuses: `path` in the new JobSet, a
    replicated job named by its name instead of its index (`spec.replicatedJobs[node]...`);
    `client_side` when only a client-side apply is refused (a server-side one syncs it)."""

    field: str
    path: Path
    client_side: bool
    while_suspended: bool = False


def fixed_part(jobset: Obj) -> Obj:
    """The part of a JobSet no update may change: its spec but the always-mutable fields.
    (A pod template's labels and the like, mutable only while suspended, are in it.)"""
    spec = _dict(jobset.get("spec"))
    return {k: v for k, v in spec.items() if k not in MUTABLE_SPEC}


def defaulted(jobset: Obj) -> Obj:
    """A copy of `jobset` with what JobSet's defaulting webhook sets at creation."""
    out: Obj = copy_json(jobset)
    spec = out.setdefault("spec", {})
    spec.setdefault("successPolicy", {"operator": "All"})
    spec.setdefault("startupPolicy", {"startupPolicyOrder": "AnyOrder"})
    for rjob in spec.get("replicatedJobs") or []:
        job = rjob.setdefault("template", {}).setdefault("spec", {})
        job.setdefault("completionMode", "Indexed")
        pod = job.setdefault("template", {}).setdefault("spec", {})
        if not pod.get("restartPolicy"):
            pod["restartPolicy"] = "OnFailure"
    network = spec.setdefault("network", {})
    network.setdefault("enableDNSHostnames", True)
    network.setdefault("publishNotReadyAddresses", True)
    for i, rule in enumerate(_dict(spec.get("failurePolicy")).get("rules") or []):
        if not rule.get("name"):
            rule["name"] = f"failurePolicyRule{i}"
    for policy in spec.get("volumeClaimPolicies") or []:
        policy.setdefault("retentionPolicy", {"whenDeleted": "Delete"})
    return out


def refusals(old: Obj, new: Obj) -> list[Refusal]:
    """What an update of the JobSet `old` (as rendered, then created) to the rendered `new`
    is refused for; empty when it syncs in place."""
    live = _dict(defaulted(old).get("spec"))
    sent = merged(live, _dict(old.get("spec")), _dict(new.get("spec")))
    found = [Refusal(f"spec.{name}", ("spec", name), False) for name in RULE_IMMUTABLE
             if name in live and name in sent and live[name] != sent[name]]
    if live.get("managedBy") != sent.get("managedBy"):
        found.append(Refusal("spec.managedBy", ("spec", "managedBy"), False))
    if _list(old, RJOBS) != _list(new, RJOBS):
        found += _rjob_refusals(old, new, live, sent)
    return found


def merged(live: Any, original: Any, modified: Any) -> Any:
    """`live` after a client-side apply of `modified` over the last applied `original`: a
    three-way JSON merge patch (maps merge, what `original` had and `modified` dropped goes,
    lists and scalars are replaced)."""
    if not (isinstance(live, dict) and isinstance(modified, dict)):
        return modified
    was = original if isinstance(original, dict) else {}
    out = {k: merged(v, was.get(k), modified[k]) if k in modified else v
           for k, v in live.items() if k in modified or k not in was}
    out.update({k: v for k, v in modified.items() if k not in live})
    return out


def _rjob_refusals(old: Obj, new: Obj, live: Obj, sent: Obj) -> list[Refusal]:
    """The replicated jobs' changes refused, server-side and client-side."""
    names_old, names_new = _names(_list(old, RJOBS)), _names(_list(new, RJOBS))
    if names_old != names_new:  # compared by position: added, removed or reordered jobs
        return [Refusal("spec.replicatedJobs", RJOBS, False)]
    suspended = bool(live.get("suspend")) or bool(sent.get("suspend"))
    before = _by_name(live.get("replicatedJobs"))
    server = _by_name(_dict(defaulted(new).get("spec")).get("replicatedJobs"))
    client = _by_name(sent.get("replicatedJobs"))
    shown = set(_leaves(_by_name(_list(old, RJOBS)), _by_name(_list(new, RJOBS)), RJOBS))
    out: list[Refusal] = []
    for path in _refused_leaves(before, server, suspended, shown):
        out.append(Refusal("spec.replicatedJobs", path, False, _while_suspended(path)))
    for path in _refused_leaves(before, client, suspended, shown):
        if not any(_related(path, r.path) for r in out):
            out.append(Refusal("spec.replicatedJobs", path, True, _while_suspended(path)))
    return out


def _refused_leaves(before: Obj, after: Obj, suspended: bool, shown: set[Path]
                    ) -> Iterator[Path]:
    """The leaves where `after` (the replicated jobs as the webhook gets them, by name) still
    differs from `before` once the webhook has let through what suspension allows; a leaf no
    rendered change touches (a default the update lost) stands for its whole job."""
    if suspended:
        after = {name: _unsuspended(rjob, before.get(name)) for name, rjob in after.items()}
    seen: set[Path] = set()
    for leaf in _leaves(before, after, RJOBS):
        path = leaf if any(_related(leaf, s) for s in shown) else leaf[:3]
        if path not in seen:
            seen.add(path)
            yield path


def _unsuspended(rjob: Any, live: Any) -> Any:
    """`rjob` with the fields mutable while suspended taken from the live job."""
    if not isinstance(live, dict) or not isinstance(rjob, dict):
        return rjob
    out = copy_json(rjob)
    for sub in WHILE_SUSPENDED:
        _put(out, (*POD_TEMPLATE, *sub), _get(live, (*POD_TEMPLATE, *sub)))
    return out


def _leaves(a: Any, b: Any, path: Path) -> Iterator[Path]:
    """The paths where `a` and `b` differ: a key on one side only, a list of another
    length, or a scalar; lists of equal length item by item."""
    if a == b:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(a.keys() | b.keys()):
            if key not in a or key not in b:
                yield (*path, key)
            else:
                yield from _leaves(a[key], b[key], (*path, key))
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            yield from _leaves(x, y, (*path, i))
    else:
        yield path


def _while_suspended(path: Path) -> bool:
    """Whether `path` (in a replicated job) is a field the webhook lets change while
    the JobSet is suspended."""
    inner = path[3:]
    return any(inner[:len(POD_TEMPLATE) + len(sub)] == (*POD_TEMPLATE, *sub)
               for sub in WHILE_SUSPENDED)


def _related(a: Path, b: Path) -> bool:
    """Whether one path is the other or inside it."""
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def _names(rjobs: list[Any]) -> list[Any]:
    return [r.get("name") if isinstance(r, dict) else None for r in rjobs]


def _by_name(rjobs: Any) -> Obj:
    return {str(r.get("name")): r for r in rjobs or [] if isinstance(r, dict)}


def _list(obj: Obj, path: Path) -> list[Any]:
    found = _get(obj, path)
    return found if isinstance(found, list) else []


def _get(obj: Any, path: Path) -> Any:
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def _put(obj: Obj, path: tuple[str, ...], value: Any) -> None:
    """Set the value at `path`, creating maps on the way; None removes it (if there)."""
    for key in path[:-1]:
        inner = obj.get(key)
        if not isinstance(inner, dict):
            if value is None:
                return
            inner = obj[key] = {}
        obj = inner
    if value is None:
        obj.pop(path[-1], None)
    else:
        obj[path[-1]] = value


def _dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}
