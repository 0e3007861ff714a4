"""Admission latency and throughput: 50 concurrent TrainJob creates with `tjc webhook` on and off.

One local API server (etcd + kube-apiserver, `tests/e2e/cluster.py`) with the Trainer CRDs and
the built-in runtimes; `tjc webhook` (the built-in policy packs) runs as its own process, as it
runs in a cluster, reached by URL on loopback with a CA bundle, registered with the
configuration `deploy/webhook/` installs. Each round creates `--per-round` TrainJobs
(`torch-distributed`, admitted) from `--concurrency` threads, each with its own kept-alive
HTTPS connection; rounds alternate between the webhook registered and not (interleaved, so a
busy machine weighs on both alike). Measured per mode: creates per second, and the p50/p99 of
each create's latency as the client sees it; with the webhook on, also the p50/p99 of the
webhook's own time per review (from its log: read, judged, not counting TLS and HTTP) and the
API server's mean webhook call time (`apiserver_admission_webhook_admission_duration_seconds`).
Prints the machine's 1-minute load average too (the machine may be shared).

    python -m bench.webhook [--rounds N] [--per-round N] [--concurrency N]

Needs the binaries of `e2e/cluster/build.sh` (`make bench-webhook` builds them first).
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import re
import ssl
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.e2e import cluster as cl

TRAINER = "trainer.kubeflow.org/v1alpha1"
CONFIGURATION = cl.REPO_ROOT / "deploy" / "webhook" / "validating_webhook_configuration.yaml"
CONFIGURATIONS = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
NAME = "tjc-webhook-bench"
JUDGED = re.compile(r"judged in ([0-9.]+) ms")
HANDSHAKE = re.compile(r"TLS handshake in ([0-9.]+) ms")
PRIVILEGED = [{"manager": "example.com/m", "trainingRuntimeSpec": {"template": {"spec": {
    "replicatedJobs": [{"name": "node", "template": {"spec": {"template": {"spec": {
        "containers": [{"name": "node", "securityContext": {"privileged": True}}]}}}}}]}}}}]


@dataclass
class Mode:
    """The creates of one mode, over all its rounds."""

    latencies: list[float] = field(default_factory=list)
    seconds: float = 0.0
    errors: int = 0
    webhook_cpu: float = 0.0  # the webhook process's CPU seconds over the rounds

    @property
    def throughput(self) -> float:
        return len(self.latencies) / self.seconds if self.seconds else float("nan")


def quantile(values: list[float], q: float) -> float:
    """The q-quantile (nearest rank) of the values, in milliseconds."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def _trainjob(namespace: str, name: str, privileged: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"runtimeRef": {"name": "torch-distributed"},
                            "trainer": {"numNodes": 1}}
    if privileged:
        spec["runtimePatches"] = PRIVILEGED
    return {"apiVersion": TRAINER, "kind": "TrainJob",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


class Client:
    """One kept-alive HTTPS connection to the API server, as the admin user."""

    def __init__(self, plane: cl.LocalControlPlane) -> None:
        pki = plane.workdir / "pki"
        context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        context.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
        self.connection = http.client.HTTPSConnection(cl.LOOPBACK, plane.apiserver_port,
                                                      context=context, timeout=60)

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
        data = json.dumps(body).encode() if body is not None else None
        self.connection.request(method, path, data, {"Content-Type": "application/json"})
        response = self.connection.getresponse()
        return response.status, response.read()


def _round(plane: cl.LocalControlPlane, namespace: str, count: int, threads: int,
           mode: Mode) -> None:
    """`count` creates from `threads` threads; their latencies into `mode`."""
    path = f"/apis/{TRAINER}/namespaces/{namespace}/trainjobs"
    names = iter(range(count))
    lock = threading.Lock()

    def work() -> None:
        client = Client(plane)
        while True:
            with lock:
                i = next(names, None)
            if i is None:
                return
            began = time.perf_counter()
            status, _ = client.request("POST", path, _trainjob(namespace, f"job-{i}"))
            took = time.perf_counter() - began
            with lock:
                mode.latencies.append(took)
                mode.errors += status != 201

    workers = [threading.Thread(target=work) for _ in range(threads)]
    began = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    mode.seconds += time.perf_counter() - began


def _start_webhook(workdir: Path, kubeconfig: str) -> tuple[cl._Process, bytes, int]:
    """`tjc webhook` in its own process, with a fresh certificate; (process, CA, port)."""
    ca = cl._CertificateAuthority.create("tjc-webhook-bench-ca")
    key, cert = ca.issue("tjc-webhook", server_names=["localhost"], server_ips=[cl.LOOPBACK])
    tls = workdir / "tls"
    tls.mkdir(parents=True)
    (tls / "tls.key").write_bytes(cl._pem_key(key))
    (tls / "tls.crt").write_bytes(cl._pem_cert(cert))
    port = cl._free_ports(1)[0]
    process = cl._Process("tjc-webhook", [
        sys.executable, "-m", "compiler", "webhook", "--kubeconfig", kubeconfig,
        "--tls-dir", str(tls), "--port", str(port), "-v"], workdir / "webhook.log")
    context = ssl.create_default_context(cadata=cl._pem_cert(ca.cert).decode())

    def ready() -> bool:
        connection = http.client.HTTPSConnection(cl.LOOPBACK, port, context=context,
                                                 timeout=5)
        return cl._http_ok(connection, "/readyz")

    cl._wait_until("ready (/readyz)", process, ready, 120.0)
    return process, cl._pem_cert(ca.cert), port


def _configuration(ca: bytes, port: int) -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load(CONFIGURATION.read_text(encoding="utf-8"))
    config["metadata"] = {"name": NAME}
    for hook in config["webhooks"]:
        hook["clientConfig"] = {"url": f"https://{cl.LOOPBACK}:{port}/validate",
                                "caBundle": base64.b64encode(ca).decode()}
    return config


def _switch(client: Client, on: bool, config: dict[str, Any], namespace: str) -> None:
    """Register (or remove) the webhook; return once the API server acts on it (a privileged
    TrainJob is refused, or admitted)."""
    if on:
        status, body = client.request("POST", CONFIGURATIONS, config)
    else:
        status, body = client.request("DELETE", f"{CONFIGURATIONS}/{NAME}")
    if status not in (200, 201):
        raise SystemExit(f"webhook configuration: {status} {body[:300]!r}")
    path = f"/apis/{TRAINER}/namespaces/{namespace}/trainjobs"
    for i in range(600):
        name = f"probe-{time.monotonic_ns()}-{i}"
        status, _ = client.request("POST", path, _trainjob(namespace, name, privileged=True))
        if (status == 403) == on:
            return
        time.sleep(0.1)
    raise SystemExit("the API server did not take the webhook configuration in 60 s")


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _webhook_times(log: Path, pattern: re.Pattern[str] = JUDGED) -> list[float]:
    return [float(m.group(1)) / 1000
            for m in pattern.finditer(log.read_text(errors="replace"))]


def _apiserver_mean_ms(client: Client) -> float:
    """The API server's mean time per call of the webhook (its own histogram's sum/count)."""
    _, body = client.request("GET", "/metrics")
    total = count = 0.0
    for line in body.decode().splitlines():
        if line.startswith("apiserver_admission_webhook_admission_duration_seconds_") and \
                'name="validate.trainjob-compiler.io"' in line:
            value = float(line.rsplit(" ", 1)[1])
            if "_sum{" in line:
                total += value
            elif "_count{" in line:
                count += value
    return total / count * 1000 if count else float("nan")


def run(rounds: int, per_round: int, threads: int) -> dict[str, Mode]:
    binaries = cl.find_binaries()
    if binaries is None:
        raise SystemExit("binaries missing: run e2e/cluster/build.sh")
    modes = {"off": Mode(), "on": Mode()}
    with tempfile.TemporaryDirectory(prefix="tjc-bench-webhook-") as tmp, \
            cl.cluster(binaries) as running:
        plane = running.control_plane
        assert plane is not None
        api = running.api_client()
        cl.install_crds(api, [cl.REPO_ROOT / "deploy" / "crds"])
        for path in sorted((cl.REPO_ROOT / "runtimes").glob("*.yaml")):
            cl.api_request(api, "POST", f"/apis/{TRAINER}/clustertrainingruntimes",
                           yaml.safe_load(path.read_text()))
        process, ca, port = _start_webhook(Path(tmp), running.kubeconfig)
        client = Client(plane)
        try:
            config = _configuration(ca, port)
            for r in range(rounds * 2):
                which = "off" if r % 2 == 0 else "on"
                namespace = f"bench-{r}"
                client.request("POST", "/api/v1/namespaces", {
                    "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
                if which == "on":
                    _switch(client, True, config, namespace)
                cpu = _cpu_seconds(process.popen.pid)
                _round(plane, namespace, per_round, threads, modes[which])
                modes[which].webhook_cpu += _cpu_seconds(process.popen.pid) - cpu
                if which == "on":
                    _switch(client, False, config, namespace)
            log = Path(tmp) / "webhook.log"
            _report(modes, _webhook_times(log), _apiserver_mean_ms(client), threads,
                    _webhook_times(log, HANDSHAKE))
        finally:
            process.stop()
            api.close()
    return modes


def _report(modes: dict[str, Mode], judged: list[float], apiserver_ms: float,
            threads: int, handshakes: list[float]) -> None:
    print(f"{threads} concurrent creates, 1-minute load average {os.getloadavg()[0]:.1f}")
    print(f"{'webhook':<8} {'creates':>8} {'errors':>7} {'creates/s':>10} "
          f"{'p50 ms':>8} {'p99 ms':>8}")
    for name, mode in modes.items():
        print(f"{name:<8} {len(mode.latencies):>8} {mode.errors:>7} {mode.throughput:>10.1f} "
              f"{quantile(mode.latencies, 0.5):>8.1f} {quantile(mode.latencies, 0.99):>8.1f}")
    on = modes["on"]
    print(f"the webhook's CPU per create: {on.webhook_cpu / max(len(on.latencies), 1) * 1000:.2f}"
          f" ms ({on.webhook_cpu / on.seconds if on.seconds else 0:.2f} of a core)")
    print(f"the webhook's own time per review (judged, {len(judged)} reviews): p50 "
          f"{quantile(judged, 0.5):.2f} ms, p99 {quantile(judged, 0.99):.2f} ms, mean "
          f"{statistics.fmean(judged) * 1000 if judged else float('nan'):.2f} ms")
    print(f"the API server's mean webhook call (TLS and HTTP included): {apiserver_ms:.2f} ms;"
          f" {len(handshakes)} connections opened (TLS handshake p50 "
          f"{quantile(handshakes, 0.5):.1f} ms)")
    off = modes["off"]
    print(f"on/off: throughput {on.throughput / off.throughput:.2f}x, p99 latency "
          f"{quantile(on.latencies, 0.99) / quantile(off.latencies, 0.99):.2f}x")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.webhook",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds per mode (default 3)")
    parser.add_argument("--per-round", type=int, default=500,
                        help="TrainJobs created per round (default 500)")
    parser.add_argument("--concurrency", type=int, default=50,
                        help="concurrent creates (default 50)")
    args = parser.parse_args(argv)
    modes = run(args.rounds, args.per_round, args.concurrency)
    return 0 if not any(m.errors for m in modes.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
