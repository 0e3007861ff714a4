"""A whole control plane on the local API server: pods get scheduled, run and finish.

`FullControlPlane` starts, beside the etcd and kube-apiserver of `cluster.LocalControlPlane`,
the binaries `e2e/controlplane/build.sh` builds:

- kube-controller-manager (the Job, garbage-collector, namespace and service-account
  controllers among the defaults; the node-lifecycle controller is off, as kwok's nodes send no
  heartbeats) and kube-scheduler, at the API server's Kubernetes version;
- the JobSet controller, with its webhooks as its manifests register them (JobSet defaulting and
  validation, and the pod webhooks for JobSet pods), except that the API server reaches them by
  URL on loopback instead of through a Service, with a certificate from the cluster's CA;
- kwok, managing the nodes labelled `type=kwok` that `add_nodes` creates (some with
  `nvidia.com/gpu`), and driving the pods bound to them by the stages below.

The stages (kwok's Stage API, written here): a pod bound to a kwok node is Running and Ready at
once (init containers completed); a Running pod a Job owns then Succeeds after one second, or
after the duration in its container env `TJC_E2E_RUN_FOR` (say `30s`); one whose container env
has `TJC_E2E_OUTCOME=fail` Fails (exit code 1) instead; a deleted pod goes away.

`start_trainer_controller` runs Kubeflow Trainer's own controller manager (v2.3.0), without its
webhooks: it serves them (on loopback, certificate from the cluster's CA) but no webhook
configuration points at them, so TrainJobs reach it as they reach tjc's controller.
"""

from __future__ import annotations

import base64
import os
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from kubernetes.client.exceptions import ApiException

from tests.e2e import cluster as cl

BUILD_SCRIPT = cl.REPO_ROOT / "e2e" / "controlplane" / "build.sh"
BINARIES = ("kube-controller-manager", "kube-scheduler", "jobset-controller", "kwok",
            "trainer-controller-manager")
NODE_LABEL = ("type", "kwok")
GPU = "nvidia.com/gpu"
JOBSET_WEBHOOK_PATHS = {
    "mjobset.kb.io": "/mutate-jobset-x-k8s-io-v1alpha2-jobset",
    "mpod.kb.io": "/mutate--v1-pod",
    "vjobset.kb.io": "/validate-jobset-x-k8s-io-v1alpha2-jobset",
    "vpod.kb.io": "/validate--v1-pod",
}
_ENV_QUERY = '(.spec.containers[].env // [])[] | select(.name == "{}") | .value'


def binary_dir() -> Path:
    """Where build.sh puts (or has put) the binaries: `$TJC_CP_BIN_DIR` or its cache dir."""
    override = os.environ.get("TJC_CP_BIN_DIR")
    if override:
        return Path(override)
    out = subprocess.run(["sh", str(BUILD_SCRIPT), "--print-dir"], check=True,
                         capture_output=True, text=True)
    return Path(out.stdout.strip())


def find_binaries() -> Path | None:
    """The binary dir when every binary of the full control plane is built there, else None."""
    directory = binary_dir()
    if all(os.access(directory / name, os.X_OK) for name in BINARIES):
        return directory
    return None


# --- kwok stages ----------------------------------------------------------------------------


def _stage(name: str, kind: str, match: list[dict[str, Any]], nxt: dict[str, Any],
           delay: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"resourceRef": {"apiGroup": "v1", "kind": kind},
                            "selector": {"matchExpressions": match}, "next": nxt}
    if delay:
        spec["delay"] = delay
    return {"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Stage",
            "metadata": {"name": name}, "spec": spec}


def _expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    found: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        found["values"] = list(values)
    return found


_NODE_READY = """\
conditions:
- type: Ready
  status: "True"
  reason: KubeletReady
  message: kwok
  lastHeartbeatTime: {{ Now | Quote }}
  lastTransitionTime: {{ Now | Quote }}
addresses:
- type: InternalIP
  address: {{ NodeIP | Quote }}
phase: Running
"""
_POD_RUNNING = """\
{{ $now := Now }}
conditions:
{{ range list "PodScheduled" "Initialized" "ContainersReady" "Ready" }}
- type: {{ . }}
  status: "True"
  lastTransitionTime: {{ $now | Quote }}
{{ end }}
initContainerStatuses:
{{ range .spec.initContainers }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
  ready: true
  restartCount: 0
  state:
    terminated: {exitCode: 0, reason: Completed, startedAt: {{ $now | Quote }},
                 finishedAt: {{ $now | Quote }}}
{{ end }}
containerStatuses:
{{ range .spec.containers }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
  ready: true
  started: true
  restartCount: 0
  state:
    running: {startedAt: {{ $now | Quote }}}
{{ end }}
hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
podIP: {{ PodIPWith .spec.nodeName false .metadata.uid .metadata.name .metadata.namespace | Quote }}
phase: Running
startTime: {{ $now | Quote }}
"""
_POD_DONE = """\
{{ $now := Now }}
conditions:
{{ range list "ContainersReady" "Ready" }}
- type: {{ . }}
  status: "False"
  reason: PodCompleted
  lastTransitionTime: {{ $now | Quote }}
{{ end }}
containerStatuses:
{{ range .spec.containers }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
  ready: false
  started: false
  restartCount: 0
  state:
    terminated: {exitCode: EXIT, reason: REASON, startedAt: {{ $now | Quote }},
                 finishedAt: {{ $now | Quote }}}
{{ end }}
phase: PHASE
"""


def kwok_stages() -> list[dict[str, Any]]:
    """The node and pod stages kwok plays (see the module docstring)."""
    outcome = _ENV_QUERY.format("TJC_E2E_OUTCOME")
    running = [_expr(".metadata.deletionTimestamp", "DoesNotExist"),
               _expr(".status.phase", "In", "Running"),
               _expr(".metadata.ownerReferences.[].kind", "In", "Job")]
    run_for = {"durationMilliseconds": 1000,
               "durationFrom": {"expressionFrom": _ENV_QUERY.format("TJC_E2E_RUN_FOR")}}

    def done(phase: str, exit_code: int, reason: str) -> dict[str, Any]:
        text = _POD_DONE.replace("EXIT", str(exit_code)).replace("REASON", reason)
        return {"statusTemplate": text.replace("PHASE", phase)}

    return [
        _stage("tjc-node-ready", "Node", [
            _expr('.status.conditions.[] | select( .type == "Ready" ) | .status',
                  "NotIn", "True")], {"statusTemplate": _NODE_READY}),
        _stage("tjc-pod-running", "Pod", [
            _expr(".metadata.deletionTimestamp", "DoesNotExist"),
            _expr(".status.podIP", "DoesNotExist")], {"statusTemplate": _POD_RUNNING}),
        _stage("tjc-pod-succeed", "Pod", [*running, _expr(outcome, "NotIn", "fail")],
               done("Succeeded", 0, "Completed"), run_for),
        _stage("tjc-pod-fail", "Pod", [*running, _expr(outcome, "In", "fail")],
               done("Failed", 1, "Error"), run_for),
        _stage("tjc-pod-delete", "Pod", [_expr(".metadata.deletionTimestamp", "Exists")],
               {"finalizers": {"empty": True}, "delete": True}),
    ]


# --- the processes --------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((cl.LOOPBACK, 0))
        return int(sock.getsockname()[1])


def _listening(port: int) -> bool:
    try:
        with socket.create_connection((cl.LOOPBACK, port), timeout=1):
            return True
    except OSError:
        return False


@dataclass
class FullControlPlane:
    """The controllers, scheduler and kwok beside a running `LocalControlPlane`."""

    plane: cl.LocalControlPlane
    bin_dir: Path
    processes: dict[str, cl._Process] = field(default_factory=dict)

    @property
    def workdir(self) -> Path:
        return self.plane.workdir

    def start(self) -> None:
        """Start everything but Trainer's controller; return once JobSet's webhooks answer."""
        pki = self.workdir / "pki"
        kubeconfig = str(self.plane.kubeconfig)
        self._run("kube-controller-manager", [
            f"--kubeconfig={kubeconfig}", "--leader-elect=false",
            f"--bind-address={cl.LOOPBACK}", f"--secure-port={_free_port()}",
            f"--cert-dir={self.workdir / 'kcm-certs'}",
            "--controllers=*,-node-lifecycle-controller",
            f"--service-account-private-key-file={pki / 'sa.key'}",
            f"--root-ca-file={pki / 'ca.crt'}",
            "--kube-api-qps=200", "--kube-api-burst=400", "--concurrent-job-syncs=20",
        ])
        self._run("kube-scheduler", [
            f"--kubeconfig={kubeconfig}", "--leader-elect=false",
            f"--bind-address={cl.LOOPBACK}", f"--secure-port={_free_port()}",
            f"--cert-dir={self.workdir / 'scheduler-certs'}",
            "--kube-api-qps=200", "--kube-api-burst=400",
        ])
        self._start_kwok(kubeconfig)
        self._start_jobset(kubeconfig)

    def stop(self) -> None:
        for process in reversed(list(self.processes.values())):
            process.stop()
        self.processes.clear()

    def start_trainer_controller(self, qps: int = 50) -> cl._Process:
        """Kubeflow Trainer's controller manager, webhooks unregistered; waits for its webhooks.

        `qps` (burst twice that) is its client's rate limit; 50 (burst 100) is its default.
        """
        webhook_port, probe_port = _free_port(), _free_port()
        tmp = self.workdir / "trainer-tmp"
        self._serving_cert(tmp / "k8s-webhook-server" / "serving-certs", "trainer")
        config = {
            "apiVersion": "config.trainer.kubeflow.org/v1alpha1", "kind": "Configuration",
            "webhook": {"port": webhook_port, "host": cl.LOOPBACK},
            "metrics": {"bindAddress": "0"},
            "health": {"healthProbeBindAddress": f"{cl.LOOPBACK}:{probe_port}"},
            "leaderElection": {"leaderElect": False},
            "certManagement": {"enable": False},
            "clientConnection": {"qps": qps, "burst": 2 * qps},
        }
        path = self.workdir / "trainer-config.yaml"
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        process = self._run("trainer-controller-manager", [f"--config={path}"],
                            env={"TMPDIR": str(tmp), "KUBECONFIG": str(self.plane.kubeconfig)})
        cl._wait_until("listening for webhooks", process, lambda: _listening(webhook_port),
                       120.0)
        return process

    def stop_process(self, name: str) -> None:
        process = self.processes.pop(name, None)
        if process is not None:
            process.stop()

    def add_nodes(self, api: Any, count: int, *, gpus: int = 0, prefix: str = "kwok") -> list[str]:
        """Create `count` kwok nodes (with `gpus` nvidia.com/gpu each); wait until Ready."""
        names = [f"{prefix}-{i}" for i in range(count)]
        for name in names:
            capacity = {"cpu": "64", "memory": "512Gi", "pods": "1000"}
            if gpus:
                capacity[GPU] = str(gpus)
            node = {"apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": name, "labels": {NODE_LABEL[0]: NODE_LABEL[1],
                                                          "kubernetes.io/hostname": name},
                                 "annotations": {"node.alpha.kubernetes.io/ttl": "0"}},
                    "status": {"capacity": capacity, "allocatable": capacity}}
            cl.api_request(api, "POST", "/api/v1/nodes", node)
            # The TaintNodesByCondition admission adds `not-ready`, which the node-lifecycle
            # controller (off: no heartbeats) would take away once kwok makes the node Ready.
            cl.api_request(api, "PATCH", f"/api/v1/nodes/{name}", {"spec": {"taints": None}},
                           content_type="application/merge-patch+json")
        deadline = time.monotonic() + 60
        while not all(_node_ready(api, n) for n in names):
            if time.monotonic() > deadline:
                raise cl.ClusterError(f"kwok nodes not Ready after 60s: {names}")
            time.sleep(0.3)
        return names

    # -- internals --

    def _run(self, name: str, args: Sequence[str], env: dict[str, str] | None = None
             ) -> cl._Process:
        argv = [str(self.bin_dir / name), *args]
        if env:
            argv = ["env", *(f"{k}={v}" for k, v in env.items()), *argv]
        process = cl._Process(name, argv, self.workdir / f"{name}.log")
        self.processes[name] = process
        return process

    def _serving_cert(self, directory: Path, name: str) -> None:
        assert self.plane._ca is not None
        directory.mkdir(parents=True, exist_ok=True)
        key, cert = self.plane._ca.issue(name, server_names=["localhost"],
                                         server_ips=[cl.LOOPBACK])
        (directory / "tls.key").write_bytes(cl._pem_key(key))
        (directory / "tls.crt").write_bytes(cl._pem_cert(cert))

    def _start_kwok(self, kubeconfig: str) -> None:
        config: list[dict[str, Any]] = [{
            "apiVersion": "config.kwok.x-k8s.io/v1alpha1", "kind": "KwokConfiguration",
            "options": {"manageAllNodes": False,
                        "manageNodesWithLabelSelector": "=".join(NODE_LABEL),
                        "cidr": "10.64.0.0/12", "nodeIP": "10.63.0.1",
                        "serverAddress": f"{cl.LOOPBACK}:{_free_port()}"},
        }, *kwok_stages()]
        path = self.workdir / "kwok.yaml"
        path.write_text(yaml.safe_dump_all(config), encoding="utf-8")
        self._run("kwok", [f"--kubeconfig={kubeconfig}", f"--config={path}"])

    def _start_jobset(self, kubeconfig: str) -> None:
        port, probe_port = _free_port(), _free_port()
        certs = self.workdir / "jobset-certs"
        self._serving_cert(certs, "jobset-webhook")
        config = {
            "apiVersion": "config.jobset.x-k8s.io/v1alpha1", "kind": "Configuration",
            "webhook": {"port": port, "host": cl.LOOPBACK, "certDir": str(certs)},
            "metrics": {"bindAddress": "0"},
            "health": {"healthProbeBindAddress": f"{cl.LOOPBACK}:{probe_port}"},
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": False},
            "clientConnection": {"qps": 200, "burst": 400},
        }
        path = self.workdir / "jobset-config.yaml"
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        process = self._run("jobset-controller", [f"--config={path}", "--zap-log-level=info"],
                            env={"KUBECONFIG": kubeconfig})
        cl._wait_until("listening for webhooks", process, lambda: _listening(port), 120.0)
        self._register_jobset_webhooks(port)

    def _register_jobset_webhooks(self, port: int) -> None:
        """JobSet's webhook configurations (names, paths, rules of its manifests), by URL."""
        assert self.plane._ca is not None
        ca = base64.b64encode(cl._pem_cert(self.plane._ca.cert)).decode()
        api = cl.Cluster(kubeconfig=str(self.plane.kubeconfig)).api_client()
        try:
            for kind, prefix in (("MutatingWebhookConfiguration", "m"),
                                 ("ValidatingWebhookConfiguration", "v")):
                name = f"jobset-{kind.lower()}"
                body = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
                        "metadata": {"name": name},
                        "webhooks": [_jobset_webhook(prefix, what, port, ca)
                                     for what in ("jobset", "pod")]}
                cl.api_request(
                    api, "PATCH", f"/apis/admissionregistration.k8s.io/v1/{kind.lower()}s/{name}",
                    body, query=[("fieldManager", cl.FIELD_MANAGER), ("force", "true")],
                    content_type="application/apply-patch+yaml")
        finally:
            api.close()


def _jobset_webhook(prefix: str, what: str, port: int, ca: str) -> dict[str, Any]:
    """One webhook of JobSet's manifests: `m`utating or `v`alidating, of `jobset`s or `pod`s."""
    name = f"{prefix}{what}.kb.io"
    operations = ["CREATE", "UPDATE"] if (prefix, what) == ("v", "jobset") else ["CREATE"]
    group = "jobset.x-k8s.io" if what == "jobset" else ""
    hook: dict[str, Any] = {
        "name": name, "admissionReviewVersions": ["v1"], "sideEffects": "None",
        "failurePolicy": "Fail",
        "clientConfig": {"url": f"https://{cl.LOOPBACK}:{port}{JOBSET_WEBHOOK_PATHS[name]}",
                         "caBundle": ca},
        "rules": [{"apiGroups": [group], "apiVersions": ["v1alpha2" if group else "v1"],
                   "operations": operations, "resources": [f"{what}s"]}],
    }
    if what == "pod":
        hook["objectSelector"] = {"matchExpressions": [
            {"key": "jobset.sigs.k8s.io/jobset-name", "operator": "Exists"}]}
    return hook


def _node_ready(api: Any, name: str) -> bool:
    try:
        node = cl.api_request(api, "GET", f"/api/v1/nodes/{name}")
    except ApiException:
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (node.get("status") or {}).get("conditions") or [])


@contextmanager
def full_control_plane(plane: cl.LocalControlPlane, bin_dir: Path) -> Iterator[FullControlPlane]:
    """A started `FullControlPlane` on `plane`, stopped on exit."""
    full = FullControlPlane(plane=plane, bin_dir=bin_dir)
    try:
        full.start()
        yield full
    finally:
        full.stop()
