"""Job templates for the pod parity test, and the two verdicts on one of them.

`job_spec()` draws a replicated job's Job spec (a JobSet's `template.spec`) with the fields
`compiler.kube.podspec` checks, valid and invalid values alike: container names and images,
policies, ports, env and envFrom, resources, probes and hooks, volumes and mounts, security
contexts, tolerations, the node selector, the template's labels, and the Job's own counts and
modes. `tjc_paths` and `upstream_paths` give each side's verdict as a set of field paths in the
API server's spelling (`spec.template.spec.containers[0].env[1].name`), mapping the few places
where upstream names a path other than the field's.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from compiler.common.jsondata import Obj
from compiler.kube.podspec.base import Problem, Scope
from compiler.kube.podspec.check import job_problems
from tests.parity.oracle import Oracle

RARE = [False] * 4 + [True]
LABEL_KEYS = (["app", "example.com/team"], ["bad key", "-x"])
LABEL_VALUES = (["a", ""], ["bad value!", "x" * 64])
QUANTITIES = (["1", "2", "500m", "0", "1Gi", "2Mi"], ["-1", "1.5"])
RESOURCES = (["cpu", "memory", "nvidia.com/gpu", "example.com/foo", "kubernetes.io/x",
              "hugepages-2Mi"], ["foo", "pods"])
VOLUMES = (["data", "cfg"], ["Bad_Name", "data", ""])


class Pick:
    """Draws values for one example: from the valid ones only when the example is `clean`
    (a third of them), else mostly valid ones with now and then an invalid one."""

    def __init__(self, draw: st.DrawFn, clean: bool) -> None:
        self.draw, self.clean = draw, clean

    def __call__(self, valid: list[Any], invalid: list[Any], weight: int = 6) -> Any:
        """One of `valid` (`weight` times as likely, and first: Hypothesis shrinks to the
        first) or, unless clean, of `invalid`."""
        return self.draw(st.sampled_from(valid if self.clean else valid * weight + invalid))

    def rarely(self) -> bool:
        """True one time in five."""
        return bool(self.draw(st.sampled_from(RARE)))

    def labels(self) -> Obj:
        """A label map, maybe with invalid keys or values."""
        return {self(*LABEL_KEYS, 2): self(*LABEL_VALUES, 2)
                for _ in range(self.draw(st.integers(0, 2)))}


def port(pick: Pick) -> Obj:
    out: Obj = {"containerPort": pick([8080, 29500, 2222], [0, 70000])}
    if pick.draw(st.booleans()):
        out["name"] = pick(["http", "metrics", "ssh"], ["HTTP", "a-very-long-port-name",
                                                        "1234", "-x", "http"], 2)
    if pick.rarely():
        out["hostPort"] = pick([0, 8080], [70000, 8080], 2)
    if pick.rarely():
        out["protocol"] = pick(["TCP", "UDP", "SCTP", ""], ["ICMP"], 2)
    return out


def value_from(pick: Pick) -> Obj:
    kinds = pick.draw(st.lists(st.sampled_from(["fieldRef", "resourceFieldRef",
                                                "secretKeyRef", "configMapKeyRef"]),
                               min_size=1, max_size=1))
    if not pick.clean and pick.rarely():
        kinds = pick([[]], [["fieldRef", "secretKeyRef"]], 1)
    out: Obj = {}
    for kind in kinds:
        if kind == "fieldRef":
            out[kind] = {"fieldPath": pick(
                ["metadata.name", "metadata.labels['app']", "status.podIP", "spec.host"],
                ["status.phase", "metadata.annotations['Bad Key']", "metadata.labels", "bogus",
                 "metadata.name['x']", ""], 2)}
            if pick.rarely():
                out[kind]["apiVersion"] = pick(["v1"], ["v2"], 1)
        elif kind == "resourceFieldRef":
            out[kind] = {"resource": pick(["limits.cpu", "requests.memory"],
                                          ["limits.gpu", ""], 3)}
            if pick.rarely():
                out[kind]["divisor"] = pick(["1m", "1"], ["2"], 2)
        else:
            out[kind] = {"name": pick(["s", "cm"], ["", "Bad"], 3),
                         "key": pick(["k", "a.b"], ["", "bad key", ".."], 3)}
    return out


def env_var(pick: Pick) -> Obj:
    out: Obj = {"name": pick(["A", "MY.VAR", "B", "x y"], ["1=x", "", "é", "tab\tx"])}
    if pick.draw(st.integers(0, 2)) == 0:
        out["valueFrom"] = value_from(pick)
        if pick.rarely():
            out["value"] = pick([""], ["v"], 1)
    else:
        out["value"] = pick.draw(st.sampled_from(["v", ""]))
    return out


def env_from(pick: Pick) -> Obj:
    kinds = pick([["configMapRef"], ["secretRef"]], [[], ["configMapRef", "secretRef"]], 3)
    out: Obj = {kind: {"name": pick(["cm", "cm-"], ["", "Bad"], 3)} for kind in kinds}
    if pick.draw(st.booleans()):
        out["prefix"] = pick(["P_", "p."], ["a=b"], 3)
    return out


def resources(pick: Pick) -> Obj:
    out: Obj = {}
    for group in ("limits", "requests"):
        if pick.draw(st.booleans()):
            out[group] = {pick(*RESOURCES, 3): pick(*QUANTITIES, 3)
                          for _ in range(pick.draw(st.integers(0, 3)))}
    return out


def handler(pick: Pick, kinds: list[str]) -> Obj:
    count = pick([1], [0, 2], 5)
    picked = pick.draw(st.lists(st.sampled_from(kinds), min_size=count, max_size=count,
                                unique=True))
    actions: dict[str, Any] = {
        "exec": lambda: {"command": pick([["true"]], [[]], 3)},
        "httpGet": lambda: {"port": pick([8080, "http"], [0, "HTTP", 70000], 3),
                            **({"scheme": pick(["HTTP", "HTTPS"], ["FTP"], 2)}
                               if pick.rarely() else {}),
                            **({"httpHeaders": [{"name": pick(["X-A"], ["bad header"], 2),
                                                 "value": "v"}]} if pick.rarely() else {})},
        "tcpSocket": lambda: {"port": pick([2222, "ssh"], [0], 3)},
        "grpc": lambda: {"port": pick([9000], [0], 3)},
        "sleep": lambda: {"seconds": pick([5, 0], [-1, 100], 3)},
    }
    return {kind: actions[kind]() for kind in picked}


def probe(pick: Pick) -> Obj:
    out = handler(pick, ["exec", "httpGet", "tcpSocket", "grpc"])
    for key in ("initialDelaySeconds", "periodSeconds", "successThreshold",
                "failureThreshold", "timeoutSeconds"):
        if pick.rarely():
            out[key] = pick([0, 1], [-1, 2], 2)
    if pick.rarely():
        out["terminationGracePeriodSeconds"] = pick([10], [0], 1)
    return out


def mount(pick: Pick) -> Obj:
    out: Obj = {"name": pick(VOLUMES[0], [*VOLUMES[1], "missing"], 4),
                "mountPath": pick(["/a", "/b", "/c"], [""], 4)}
    if pick.rarely():
        out["subPath"] = pick(["x"], ["/abs", "../up"], 2)
    if pick.rarely():
        out["subPathExpr"] = pick(["$(POD)"], ["/abs"], 2)
    if pick.rarely():
        out["mountPropagation"] = pick(["None", "HostToContainer"], ["Bidirectional",
                                                                     "Bogus"], 2)
    if pick.rarely():
        out["readOnly"] = True
        out["recursiveReadOnly"] = pick(["Disabled", "Enabled"], ["Bogus"], 2)
        if not pick.clean and pick.rarely():
            out["readOnly"] = False
    return out


def security_context(pick: Pick) -> Obj:
    out: Obj = {}
    if pick.draw(st.booleans()):
        out["privileged"] = pick.draw(st.booleans())
    if pick.draw(st.booleans()):
        out["allowPrivilegeEscalation"] = pick([True], [False], 2)
    if pick.draw(st.booleans()):
        out["runAsUser"] = pick([1000, 0], [-1, 2**31], 3)
    if pick.rarely():
        out["capabilities"] = {"add": pick([["NET_ADMIN"]], [["CAP_SYS_ADMIN"]], 1)}
    if pick.rarely():
        out["procMount"] = pick(["Default"], ["Unmasked", "Bogus"], 2)
    if pick.rarely():
        out["seccompProfile"] = pick([{"type": "RuntimeDefault"}, {
            "type": "Localhost", "localhostProfile": "p.json"}], [
            {"type": "Localhost"}, {"type": "Bogus"},
            {"type": "RuntimeDefault", "localhostProfile": "p.json"},
            {"type": "Localhost", "localhostProfile": "/abs"}], 2)
    return out


def container(pick: Pick, name: str) -> Obj:
    out: Obj = {"name": pick([name], ["node", "Node", "", "x_y"], 10),
                "image": pick(["img:1"], ["", " img:1"], 10)}
    if name == "init" and pick.draw(st.booleans()):
        out["restartPolicy"] = pick(["Always", "Never"], ["Bogus"], 3)
    if pick.rarely():
        out["imagePullPolicy"] = pick(["Always", "IfNotPresent"], ["Sometimes"], 2)
    if pick.rarely():
        out["terminationMessagePolicy"] = pick(["File"], ["Bogus"], 2)
    for key, make, size in (("ports", port, 2), ("env", env_var, 3),
                            ("volumeMounts", mount, 2)):
        if pick.draw(st.booleans()):
            out[key] = [make(pick) for _ in range(pick.draw(st.integers(0, size)))]
    if pick.rarely():
        out["envFrom"] = [env_from(pick) for _ in range(pick.draw(st.integers(1, 2)))]
    if pick.draw(st.booleans()):
        out["resources"] = resources(pick)
    for key in ("livenessProbe", "readinessProbe", "startupProbe"):
        if pick.rarely():
            out[key] = probe(pick)
    if pick.rarely():
        out["lifecycle"] = {"preStop": handler(pick, ["exec", "httpGet", "tcpSocket",
                                                      "sleep"])}
    if pick.rarely():
        out["securityContext"] = security_context(pick)
    return out


def volume(pick: Pick) -> Obj:
    sources: dict[str, Any] = {
        "emptyDir": lambda: {"sizeLimit": pick(["1Gi"], ["-1"], 2)} if pick.rarely() else {},
        "configMap": lambda: {"name": pick(["cm"], [""], 3), **({"items": [{
            "key": pick(["k"], [""], 3), "path": pick(["f", "a/b"], ["/abs", "..x", "a/../b"],
                                                      2)}]} if pick.rarely() else {}),
            **({"defaultMode": pick([0o644], [0o1000, -1], 2)} if pick.rarely() else {})},
        "secret": lambda: {"secretName": pick(["s"], [""], 3)},
        "persistentVolumeClaim": lambda: {"claimName": pick(["pvc"], [""], 3)},
        "hostPath": lambda: {"path": pick(["/data"], ["", "/a/../b"], 3), **(
            {"type": pick(["Directory", ""], ["Bogus"], 2)} if pick.rarely() else {})},
        "nfs": lambda: {"server": pick(["nfs"], [""], 3), "path": pick(["/export"], ["rel", ""],
                                                                        3)},
        "downwardAPI": lambda: {"items": [{"path": pick(["labels"], ["/abs", ""], 3),
                                           "fieldRef": {"fieldPath": "metadata.labels"}}]},
    }
    count = pick([1], [0, 2], 5)
    kinds = pick.draw(st.lists(st.sampled_from(sorted(sources)), min_size=count,
                               max_size=count, unique=True))
    out: Obj = {"name": pick(*VOLUMES, 3)}
    out.update({kind: sources[kind]() for kind in kinds})
    return out


def toleration(pick: Pick) -> Obj:
    out: Obj = pick([{"key": "k", "operator": "Equal", "value": "v"},
                     {"key": "example.com/k", "operator": "Exists"}, {"operator": "Exists"}],
                    [{"key": "bad key"}, {"operator": "Equal"}, {"key": "k", "operator": "Bogus"},
                     {"key": "k", "value": "bad value!"},
                     {"key": "k", "operator": "Exists", "value": "v"}], 2)
    out = dict(out)
    if pick.rarely():
        out["effect"] = pick(["NoSchedule", "NoExecute"], ["Bogus"], 2)
    if pick.rarely():
        out["effect"] = "NoExecute"
        out["tolerationSeconds"] = 30
        if not pick.clean and pick.rarely():
            out["effect"] = "NoSchedule"
    return out


def pod_spec(pick: Pick) -> Obj:
    count = pick([1, 1, 2], [0], 3)
    out: Obj = {"containers": [container(pick, name) for name in ["node", "side"][:count]]}
    if pick.draw(st.integers(0, 3)) == 0:
        out["initContainers"] = [container(pick, "init")]
    if pick.draw(st.booleans()):
        out["volumes"] = [volume(pick) for _ in range(pick.draw(st.integers(0, 3)))]
    for key, valid, invalid in (
            ("restartPolicy", ["OnFailure", "Never", ""], ["Always", "Sometimes"]),
            ("dnsPolicy", ["ClusterFirst", "Default"], ["Bogus"]),
            ("serviceAccountName", ["sa"], ["Bad_SA"]),
            ("activeDeadlineSeconds", [10], [0]), ("hostname", ["h"], ["Bad.Host"])):
        if pick.rarely():
            out[key] = pick(valid, invalid, 2)
    if pick.rarely():
        out["nodeSelector"] = pick.labels()
    if pick.rarely():
        out["tolerations"] = [toleration(pick) for _ in range(pick.draw(st.integers(1, 2)))]
    if pick.rarely():
        context: Obj = {}
        choices: list[tuple[str, list[Any], list[Any]]] = [
            ("runAsUser", [1000], [-1]), ("fsGroup", [100], [-5]),
            ("supplementalGroups", [[1, 2]], [[1, -1]]),
            ("fsGroupChangePolicy", ["Always"], ["Bogus"])]
        for key, valid, invalid in choices:
            if pick.draw(st.booleans()):
                context[key] = pick(valid, invalid, 2)
        out["securityContext"] = context
    return out


@st.composite
def job_spec(draw: st.DrawFn) -> Obj:
    """A replicated job's Job spec: a third of them with valid values only."""
    pick = Pick(draw, draw(st.sampled_from([True, False, False])))
    template: Obj = {"spec": pod_spec(pick)}
    if pick.rarely():
        template["metadata"] = {"labels": pick.labels()}
    out: Obj = {"template": template}
    for key, valid, invalid in (
            ("parallelism", [1, 2, 0], [-1]), ("completions", [1, 2, 0], [-1]),
            ("backoffLimit", [0, 3], [-1]), ("activeDeadlineSeconds", [60], [-1]),
            ("ttlSecondsAfterFinished", [0], [-1]),
            ("completionMode", ["Indexed", "NonIndexed"], ["Bogus"]),
            ("backoffLimitPerIndex", [1], [-1]), ("maxFailedIndexes", [0], [5]),
            ("podFailurePolicy", [{"rules": []}], []),
            ("podReplacementPolicy", ["Failed", "TerminatingOrFailed"], ["Bogus"])):
        if pick.rarely():
            out[key] = pick(valid, invalid, 2)
    return _consistent(out) if pick.clean else out


def _consistent(job: Obj) -> Obj:
    """A clean example made consistent across fields (each value valid alone may still clash:
    a mount of a volume not drawn, requests above limits, an Indexed Job without
    completions), so that a third of the examples are Jobs the API server takes."""
    pod = job["template"]["spec"]
    volumes = pod.get("volumes", [])
    for index, vol in enumerate(volumes):
        vol["name"] = f"vol{index}"
    for key in ("containers", "initContainers"):
        for container in pod.get(key, []):
            _consistent_container(container, key == "initContainers", len(volumes))
    if "podFailurePolicy" in job:
        pod["restartPolicy"] = "Never"
        if "podReplacementPolicy" in job:
            job["podReplacementPolicy"] = "Failed"
    if "parallelism" in job:
        job.setdefault("completions", job["parallelism"])
    if job.get("completionMode") == "NonIndexed" or "backoffLimitPerIndex" not in job:
        job.pop("backoffLimitPerIndex", None)
        job.pop("maxFailedIndexes", None)
    return job


def _consistent_container(container: Obj, init: bool, volumes: int) -> None:
    for index, port_ in enumerate(container.get("ports", [])):
        if "name" in port_:
            port_["name"] = f"p{index}"
    mounts = container.get("volumeMounts", [])[:volumes]
    for index, mnt in enumerate(mounts):
        mnt["name"], mnt["mountPath"] = f"vol{index}", f"/m{index}"
        if "recursiveReadOnly" in mnt:
            mnt.pop("mountPropagation", None)
    if "volumeMounts" in container:
        container["volumeMounts"] = mounts
    if init and container.get("restartPolicy") != "Always":
        for key in ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe"):
            container.pop(key, None)
    container.get("readinessProbe", {}).pop("terminationGracePeriodSeconds", None)
    holder = container.get("resources", {})
    limits = holder.get("limits", {})
    requests = {k: v for k, v in holder.get("requests", {}).items() if k in ("cpu", "memory")}
    requests.update({k: v for k, v in limits.items() if k in requests or k.count("/")
                     or k.startswith("hugepages-")})
    for group in (limits, requests):
        for name in group:
            if name.startswith("hugepages-") or "/" in name:
                group[name] = "2Mi" if name.startswith("hugepages-") else "1"
        if any(n.startswith("hugepages-") for n in group):
            group.setdefault("memory", "1Gi")
            limits.setdefault("memory", group["memory"])
            requests["memory"] = limits["memory"]
    if "requests" in holder:
        holder["requests"] = requests


# ---------------------------------------------------------------------------- verdicts

_KEYED = ("limits", "requests")


def api_path(path: tuple[Any, ...]) -> str:
    """A field path spelled as `field.Path` spells it: indices and map keys in brackets."""
    out = ""
    for i, part in enumerate(path):
        if isinstance(part, int) or (i and path[i - 1] in _KEYED and path[i - 2:i - 1] == (
                "resources",)):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _upstream_spelling(problem: Problem) -> tuple[Any, ...]:
    """Where upstream reports a problem whose path it does not name exactly (tjc reports it
    at the field itself)."""
    path = problem.path
    last = path[-1] if path else None
    if "volumeMounts" in path and last in ("subPath", "subPathExpr", "mountPropagation",
                                           "recursiveReadOnly") and (
            problem.rule != "TJC-POD-MOUNT" or last != "subPathExpr"):
        # ValidateVolumeMounts passes the list's path, not the item's, to these checks
        index = path.index("volumeMounts")
        return (*path[:index + 1], *path[index + 2:])
    if "downwardAPI" in path and "items" in path:
        # validateDownwardAPIVolumeSource hands each item the source's path
        index = path.index("items")
        return (*path[:index], *path[index + 2:])
    if path[-2:] in (("metadata", "labels"), ("metadata", "annotations")):
        return (*path[:-2], path[-1])  # ValidatePodTemplateSpec: `labels` below the template
    if len(path) >= 2 and path[-2] == "envFrom":  # ValidateEnvFrom: the list's path
        return path[:-1]
    if problem.rule == "TJC-POD-CONTAINER" and last == "hostPort" and "initContainers" in path:
        # checkHostPortConflicts gets one init container at a time, as index 0
        index = path.index("initContainers")
        return (*path[:index + 1], 0, *path[index + 2:])
    return path


def tjc_paths(spec: Obj) -> set[str]:
    """tjc's verdict: the paths of its problems, as the Job's (or else, the Pod's) errors."""
    found = [p._replace(path=("spec", *p.path)) for p in job_problems(spec, Scope.PODS)]
    on_job = [p for p in found if not p.pod_only]
    return {api_path(_upstream_spelling(p)) for p in (on_job or found)}


def upstream_paths(oracle: Oracle, spec: Obj) -> set[str]:
    """The API server's verdict: the Job's error paths, or else its first Pod's (whose spec
    is the Job's template spec)."""
    answer = oracle.ask({"op": "job", "spec": spec})
    if answer.get("error"):
        raise RuntimeError(f"the oracle could not validate {spec}: {answer['error']}")
    if answer["job"]:
        return {e["field"] for e in answer["job"]}
    return {e["field"].replace("spec.", "spec.template.spec.", 1)
            if e["field"].startswith("spec.") else f"spec.template.{e['field']}"
            for e in answer["pod"]}
