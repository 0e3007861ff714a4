"""What the Job and JobSet controllers and the kubelet give a pod, computed locally.

`pod_metadata` is the labels and annotations the JobSet and Job controllers put on a pod;
`container_env` resolves a container's `env` and `envFrom` as the kubelet does (fieldRef,
resourceFieldRef, ConfigMap and Secret keys, `$(VAR)` expansion in list order) and `expand`
applies the same expansion to command and args. Called by `compiler.localrun.plan`; pure.
"""

from __future__ import annotations

import base64
import math
import os
import re
from collections.abc import Mapping

from compiler.common.jsondata import Obj
from compiler.common.records import dataclass
from compiler.kube import quantity

_REF = re.compile(r"\$\$|\$\(([-._a-zA-Z][-._a-zA-Z0-9]*)\)")
_KEYED = re.compile(r"^metadata\.(labels|annotations)\['([^']*)'\]$")


class KubeletError(ValueError):
    """A pod field the kubelet could not resolve either (the pod would not start)."""


@dataclass(frozen=True)
class PodIdentity:
    """Where one pod sits in its JobSet."""

    jobset: str
    namespace: str
    replicated_job: str
    replicas: int
    job_index: int
    global_index: int
    completion_index: int
    group: str

    @property
    def hostname(self) -> str:
        """`<jobset>-<replicatedJob>-<jobIndex>-<podIndex>`, as JobSet names the pod host."""
        return f"{self.jobset}-{self.replicated_job}-{self.job_index}-{self.completion_index}"


def pod_metadata(pod: PodIdentity, template: Obj) -> tuple[dict[str, str], dict[str, str]]:
    """Labels and annotations of the pod: the template's plus the controllers' own."""
    meta = template.get("metadata") or {}
    own = {
        "jobset.sigs.k8s.io/jobset-name": pod.jobset,
        "jobset.sigs.k8s.io/replicatedjob-name": pod.replicated_job,
        "jobset.sigs.k8s.io/replicatedjob-replicas": str(pod.replicas),
        "jobset.sigs.k8s.io/job-index": str(pod.job_index),
        "jobset.sigs.k8s.io/job-global-index": str(pod.global_index),
        "jobset.sigs.k8s.io/group-name": pod.group,
        "jobset.sigs.k8s.io/restart-attempt": "0",
        "batch.kubernetes.io/job-name": f"{pod.jobset}-{pod.replicated_job}-{pod.job_index}",
        "batch.kubernetes.io/job-completion-index": str(pod.completion_index),
    }
    labels = {**{str(k): str(v) for k, v in (meta.get("labels") or {}).items()}, **own}
    annotations = {**{str(k): str(v) for k, v in (meta.get("annotations") or {}).items()}, **own}
    return labels, annotations


@dataclass(frozen=True)
class PodView:
    """What fieldRefs and key references of one pod can read."""

    identity: PodIdentity
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    service_account: str
    objects: Mapping[tuple[str, str], Obj]  # (kind, name) -> ConfigMap or Secret

    def field(self, path: str) -> str:
        """The value of a downward-API `fieldRef.fieldPath`."""
        keyed = _KEYED.match(path)
        if keyed:
            table = self.labels if keyed.group(1) == "labels" else self.annotations
            return table.get(keyed.group(2), "")
        simple = {"metadata.name": self.identity.hostname,
                  "metadata.namespace": self.identity.namespace,
                  "metadata.uid": f"local-{self.identity.hostname}",
                  "spec.nodeName": "localhost", "spec.serviceAccountName": self.service_account,
                  "status.hostIP": "127.0.0.1", "status.hostIPs": "127.0.0.1",
                  "status.podIP": "127.0.0.1", "status.podIPs": "127.0.0.1"}
        if path not in simple:
            raise KubeletError(f"fieldRef.fieldPath {path!r} is not supported by the downward API")
        return simple[path]

    def key(self, kind: str, ref: Obj) -> str | None:
        """A ConfigMap or Secret key's text; None when missing and optional."""
        found = self.objects.get((kind, str(ref.get("name", ""))))
        data = (found or {}).get("data") or {}
        if ref.get("key") in data:
            raw = str(data[ref["key"]])
            return decoded(raw).decode() if kind == "Secret" else raw
        if ref.get("optional"):
            return None
        raise KubeletError(f"{kind} {ref.get('name')!r} has no key {ref.get('key')!r} "
                           "(the pod would not start)")


def decoded(raw: str) -> bytes:
    """A Secret's `data` value (base64) as bytes."""
    return base64.b64decode(raw)


def expand(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes `$(VAR)` expansion: defined names are replaced, `$$` is a literal `$`,
    anything else stays as written."""

    def one(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        return env.get(match.group(1), match.group(0))

    return _REF.sub(one, text)


def container_env(container: Obj, view: PodView) -> dict[str, str]:
    """The container's environment, in the kubelet's order: envFrom, then env."""
    env: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        env.update(_env_from(source, view))
    for var in container.get("env") or []:
        value = _value(var, container, env, view)
        if value is not None:
            env[str(var["name"])] = value
    return env


def _env_from(source: Obj, view: PodView) -> dict[str, str]:
    kind = "ConfigMap" if "configMapRef" in source else "Secret"
    ref = source.get("configMapRef") or source.get("secretRef") or {}
    found = view.objects.get((kind, str(ref.get("name", ""))))
    if found is None and not ref.get("optional"):
        raise KubeletError(f"{kind} {ref.get('name')!r} of envFrom is not among the inputs")
    prefix = str(source.get("prefix") or "")
    out = {}
    for key, raw in ((found or {}).get("data") or {}).items():
        out[prefix + key] = decoded(raw).decode() if kind == "Secret" else str(raw)
    return out


def _value(var: Obj, container: Obj, env: Mapping[str, str], view: PodView) -> str | None:
    source = var.get("valueFrom")
    if not source:
        return expand(str(var.get("value", "")), env)
    if "fieldRef" in source:
        return view.field(str(source["fieldRef"].get("fieldPath", "")))
    if "resourceFieldRef" in source:
        return _resource(source["resourceFieldRef"], container)
    if "configMapKeyRef" in source:
        return view.key("ConfigMap", source["configMapKeyRef"])
    if "secretKeyRef" in source:
        return view.key("Secret", source["secretKeyRef"])
    raise KubeletError(f"env {var.get('name')!r}: unsupported valueFrom {sorted(source)}")


def _resource(ref: Obj, container: Obj) -> str:
    """`resourceFieldRef`: the container's limit (or request), else what this machine has."""
    name = str(ref.get("resource", ""))
    section, _, resource = name.partition(".")
    resources = container.get("resources") or {}
    raw = (resources.get(section) or {}).get(resource)
    if raw is None:
        raw = (resources.get("limits") or {}).get(resource)
    if raw is None:
        raw = (os.cpu_count() or 1) if resource == "cpu" else _memory()
    divisor = quantity.parse(str(ref.get("divisor") or "1")).value
    return str(math.ceil(quantity.parse(str(raw)).value / divisor))


def _memory() -> int:
    pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    return int(pages * size)
