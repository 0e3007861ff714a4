"""Load, side by side: 1,000 TrainJobs at once through tjc's controller, then upstream's.

For each controller in turn, a fresh cluster with the whole control plane (etcd,
kube-apiserver, kube-controller-manager, kube-scheduler, the JobSet controller, kwok with eight
nodes; `tests/e2e/controlplane.py`) and the built-in runtimes; the controller is started and
ready, then 1,000 TrainJobs (`torch-distributed`, one node each) are created by 8 threads.
Measured: seconds from the first create until every JobSet exists, and until every TrainJob
is `Complete` (kwok runs each pod for one second); the controller's CPU seconds (user + system,
from /proc) over that span and its peak resident memory (VmHWM). Then where the time went: when
the last JobSet was Completed by the JobSet controller (its condition's time), and the median
and largest lag from a JobSet's Completed to its TrainJob's Complete (the part a TrainJob
controller adds; condition times have one-second resolution), and the writes the API server
served, by resource (all clients). Prints a table (with the
machine's 1-minute load average when each measurement started and ended: the machine may be
shared) and the ratios.

    python -m bench.controllers [--count N] [--only tjc|upstream] [--upstream-qps N]

Needs the binaries of `e2e/cluster/build.sh` and `e2e/controlplane/build.sh`
(`make bench-controllers` builds them first). Exit code 0, or 1 when a run did not finish.
"""

from __future__ import annotations

import argparse
import http.client
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from tests.e2e import cluster as cl
from tests.e2e import controlplane as cp

RUNTIMES = cl.REPO_ROOT / "runtimes"
TRAINER = "trainer.kubeflow.org/v1alpha1"
NAMESPACE = "load"
TIMEOUT = 1800.0


@dataclass
class Figures:
    """One controller's run."""

    controller: str
    jobsets_s: float
    complete_s: float
    cpu_s: float
    peak_mib: float
    finished: bool
    load: tuple[float, float] = (0.0, 0.0)
    jobsets_done_s: float = float("nan")
    lag_s: tuple[float, float] = (float("nan"), float("nan"))
    writes: dict[str, int] = field(default_factory=dict)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _peak_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _start_tjc(kubeconfig: str, full: cp.FullControlPlane) -> int:
    """tjc's controller (8 workers), stopped with `full`; its pid once /readyz says ok."""
    port = cp._free_port()
    proc = cl._Process("tjc-controller", [
        sys.executable, "-m", "compiler", "controller", "--kubeconfig", kubeconfig,
        "--metrics-port", str(port), "--workers", "8"], full.workdir / "tjc.log")
    full.processes["tjc"] = proc
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        connection = http.client.HTTPConnection(cl.LOOPBACK, port, timeout=2)
        if cl._http_ok(connection, "/readyz"):
            return proc.popen.pid
        time.sleep(0.3)
    raise cl.ClusterError("tjc controller not ready after 60s")


def _list(api: Any, plural: str) -> list[dict[str, Any]]:
    """Every JobSet or TrainJob of the load namespace."""
    group = "jobset.x-k8s.io/v1alpha2" if plural == "jobsets" else TRAINER
    items: list[dict[str, Any]] = cl.api_request(
        api, "GET", f"/apis/{group}/namespaces/{NAMESPACE}/{plural}", timeout=120)["items"]
    return items


def _count(api: Any, plural: str, done: Any = None) -> int:
    return sum(1 for item in _list(api, plural) if done is None or done(item))


def _finished_at(item: dict[str, Any], kind: str) -> float | None:
    """When `item`'s condition `kind` became True (epoch seconds; None: not yet)."""
    for c in (item.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind and c.get("status") == "True" and c.get("lastTransitionTime"):
            stamp = datetime.strptime(c["lastTransitionTime"], "%Y-%m-%dT%H:%M:%SZ")
            return stamp.replace(tzinfo=UTC).timestamp()
    return None


def _where_the_time_went(api: Any, wall0: float) -> tuple[float, tuple[float, float]]:
    """Seconds from the first create until the last JobSet was Completed (by the JobSet
    controller's own condition time), and the median and largest lag from a JobSet's
    Completed to its TrainJob's Complete (what the TrainJob controller adds)."""
    jobsets = {j["metadata"]["name"]: _finished_at(j, "Completed") for j in _list(api, "jobsets")}
    lags = []
    for job in _list(api, "trainjobs"):
        done, jobset_done = _finished_at(job, "Complete"), jobsets.get(job["metadata"]["name"])
        if done is not None and jobset_done is not None:
            lags.append(done - jobset_done)
    ends = [t for t in jobsets.values() if t is not None]
    if not ends or not lags:
        return float("nan"), (float("nan"), float("nan"))
    return max(ends) - wall0, (statistics.median(lags), max(lags))


def _complete(job: dict[str, Any]) -> bool:
    return any(c.get("type") == "Complete" and c.get("status") == "True"
               for c in (job.get("status") or {}).get("conditions") or [])


def run_one(which: str, count: int, upstream_qps: int = 50) -> Figures:
    """A fresh cluster, `which` controller, `count` TrainJobs; the figures."""
    binaries, bin_dir = cl.find_binaries(), cp.find_binaries()
    if binaries is None or bin_dir is None:
        raise SystemExit(f"binaries missing: run e2e/cluster/build.sh and {cp.BUILD_SCRIPT}")
    with cl.cluster(binaries) as running:
        plane = running.control_plane
        assert plane is not None
        api = running.api_client()
        try:
            cl.install_crds(api, [cl.REPO_ROOT / "deploy" / "crds",
                                  cl.REPO_ROOT / "tests" / "e2e" / "crds", bin_dir / "crds"])
            with cp.full_control_plane(plane, bin_dir) as full:
                full.add_nodes(api, 8, prefix="load")
                for path in sorted(RUNTIMES.glob("*.yaml")):
                    runtime = yaml.safe_load(path.read_text())
                    cl.api_request(api, "POST", f"/apis/{TRAINER}/clustertrainingruntimes",
                                   runtime)
                cl.api_request(api, "POST", "/api/v1/namespaces", {
                    "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
                if which == "tjc":
                    pid = _start_tjc(running.kubeconfig, full)
                else:
                    pid = full.start_trainer_controller(upstream_qps).popen.pid
                    time.sleep(2)
                return _measure(which, api, pid, count)
        finally:
            api.close()


def _measure(which: str, api: Any, pid: int, count: int) -> Figures:
    cpu0 = _cpu_seconds(pid)
    load0 = os.getloadavg()[0]
    start, wall0 = time.monotonic(), time.time()

    def create(i: int) -> None:
        cl.api_request(api, "POST", f"/apis/{TRAINER}/namespaces/{NAMESPACE}/trainjobs", {
            "apiVersion": TRAINER, "kind": "TrainJob",
            "metadata": {"name": f"job-{i}", "namespace": NAMESPACE},
            "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 1}}})

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(create, range(count)))
    jobsets_s = complete_s = float("nan")
    while time.monotonic() - start < TIMEOUT:
        if jobsets_s != jobsets_s and _count(api, "jobsets") >= count:
            jobsets_s = time.monotonic() - start
        if jobsets_s == jobsets_s and _count(api, "trainjobs", _complete) >= count:
            complete_s = time.monotonic() - start
            break
        time.sleep(1)
    figures = Figures(which, jobsets_s, complete_s, _cpu_seconds(pid) - cpu0, _peak_mib(pid),
                      finished=complete_s == complete_s, load=(load0, os.getloadavg()[0]))
    figures.jobsets_done_s, figures.lag_s = _where_the_time_went(api, wall0)
    figures.writes = _writes(api)
    return figures


WRITE_VERBS = ("POST", "PUT", "PATCH", "APPLY", "DELETE", "CREATE", "UPDATE")


def _writes(api: Any) -> dict[str, int]:
    """Writes the API server served since it started, by resource (`apiserver_request_total`,
    every client: both controllers, the JobSet and Job controllers, the scheduler, kwok)."""
    response = api.call_api("/metrics", "GET", header_params={"Accept": "text/plain"},
                            auth_settings=["BearerToken"], _preload_content=False,
                            _return_http_data_only=True, _request_timeout=60)
    totals: dict[str, int] = {}
    for line in response.data.decode().splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels = dict(part.split("=", 1) for part in line[line.index("{") + 1:
                                                          line.rindex("}")].split(",")
                      if "=" in part)
        verb = labels.get("verb", "").strip('"')
        if verb in WRITE_VERBS:
            key = f"{labels.get('resource', '').strip(chr(34))}/{verb.lower()}"
            totals[key] = totals.get(key, 0) + int(float(line.rsplit(" ", 1)[1]))
    return totals


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.controllers",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=1000, help="TrainJobs (default 1000)")
    parser.add_argument("--only", choices=("tjc", "upstream"), help="run one controller")
    parser.add_argument("--upstream-qps", type=int, default=50, metavar="N",
                        help="upstream's client rate limit, burst 2N (default 50, its own)")
    args = parser.parse_args(argv)
    runs = [args.only] if args.only else ["tjc", "upstream"]
    results = [run_one(which, args.count, args.upstream_qps) for which in runs]
    print(f"{'controller':<10} {'all JobSets s':>14} {'all Complete s':>15} {'CPU s':>7} "
          f"{'peak MiB':>9} {'load avg':>10}  {'JobSets done s':>14} {'lag p50/max s':>14}")
    for r in results:
        print(f"{r.controller:<10} {r.jobsets_s:>14.1f} {r.complete_s:>15.1f} {r.cpu_s:>7.1f} "
              f"{r.peak_mib:>9.0f} {r.load[0]:>4.1f}->{r.load[1]:<4.1f}  "
              f"{r.jobsets_done_s:>14.0f} {r.lag_s[0]:>6.0f}/{r.lag_s[1]:<7.0f}")
    for r in results:
        top = sorted(r.writes.items(), key=lambda kv: -kv[1])[:8]
        print(f"{r.controller} API writes: {sum(r.writes.values())} "
              f"({', '.join(f'{k} {v}' for k, v in top)})")
    if len(results) == 2:
        ours, theirs = results
        print(f"ratios tjc/upstream: JobSets {ours.jobsets_s / theirs.jobsets_s:.2f}x, Complete "
              f"{ours.complete_s / theirs.complete_s:.2f}x, CPU {ours.cpu_s / theirs.cpu_s:.2f}x,"
              f" peak memory {ours.peak_mib / theirs.peak_mib:.2f}x")
    return 0 if all(r.finished for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
