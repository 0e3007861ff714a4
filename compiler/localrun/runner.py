"""Run a `Plan` as local processes, with JobSet's start order and success and failure policies.

Replicated jobs start in JobSet order: one waits for its `dependsOn` (Ready: its pods are
started; Complete: its pods exited 0) and, under `startupPolicy: InOrder`, for the one before
it; a pod with a tcpSocket readiness probe is Ready once its port accepts a connection.
Each process runs in its own process group with its output streamed line by line, prefixed
with the pod name, and does not outlive tjc (`compiler.localrun.lifetime`: the parent-death
signal and a watchdog). The JobSet succeeds when its success policy is met (`All` or `Any` of
the target jobs complete; the rest are then stopped) and fails when a pod fails, after
`failurePolicy.maxRestarts` restarts of the whole set. A failed pod is not retried by its Job
(`backoffLimit` is not applied locally). Stopping sends SIGTERM to every group and SIGKILL
after a grace period, or at once when the stop itself is interrupted (a second Ctrl-C, or the
SIGTERM or SIGHUP the CLI turns into one). Called by `compiler.cli.run_cmd`, from the thread
that is to start every pod.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import threading
import time
from dataclasses import field
from pathlib import Path
from typing import TextIO

from compiler.common.records import dataclass
from compiler.localrun import lifetime
from compiler.localrun.plan import LocalJob, LocalPod, Plan

_POLL = 0.05
_GRACE = 5.0


@dataclass
class Outcome:
    """How the run ended."""

    succeeded: bool
    reason: str
    exit_codes: dict[str, int | None] = field(default_factory=dict)  # pod -> code (None: killed)
    restarts: int = 0
    seconds: float = 0.0


class _Attempt:
    """One start of every job of the plan."""

    def __init__(self, plan: Plan, workdir: Path, out: TextIO, lock: threading.Lock,
                 watchdog: lifetime.Watchdog) -> None:
        self.plan, self.workdir, self.out, self.lock = plan, workdir, out, lock
        self.watchdog = watchdog
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.codes: dict[str, int | None] = {}
        self.started: set[str] = set()
        self.ready: set[str] = set()
        self.threads: list[threading.Thread] = []

    def step(self) -> tuple[bool, str] | None:
        """Start what may start, collect exits; (succeeded, reason) once the set is done."""
        self._start_ready()
        running = False  # (one poll per process: one that exits after it is seen next step)
        for name, proc in self.procs.items():
            code = proc.poll()
            if code is None:
                running = True
            elif name not in self.codes:
                self.codes[name] = code
                if code != 0:
                    return False, f"pod {name} failed with exit code {code}"
        if self._succeeded():
            return True, "success policy met"
        if not running and not self._startable():
            return False, "nothing is running and no replicated job can start"
        return None

    def _job_state(self, job: LocalJob) -> str:
        if job.name not in self.started:
            return "Pending"
        run = [p for p in job.pods if not p.stand_in]
        if all(self.codes.get(p.name) == 0 for p in run):
            return "Complete"
        return "Ready" if all(self._ready(p) for p in run) else "Started"

    def _ready(self, pod: LocalPod) -> bool:
        if pod.name not in self.ready and pod.name in self.procs and _probe(pod):
            self.ready.add(pod.name)  # probed until it passes once
        return pod.name in self.ready

    def _may_start(self, index: int, job: LocalJob) -> bool:
        states = {j.name: self._job_state(j) for j in self.plan.jobs}
        for dep, wanted in job.depends_on:
            if states.get(dep) in ("Pending", "Started") or (
                    wanted == "Complete" and states[dep] != wanted):
                return False
        return not (self.plan.in_order and index > 0
                    and states[self.plan.jobs[index - 1].name] in ("Pending", "Started"))

    def _startable(self) -> bool:
        return any(job.name not in self.started and self._may_start(i, job)
                   for i, job in enumerate(self.plan.jobs))

    def _start_ready(self) -> None:
        for index, job in enumerate(self.plan.jobs):
            if job.name not in self.started and self._may_start(index, job):
                self.started.add(job.name)
                for pod in job.pods:
                    if not pod.stand_in:
                        self._spawn(pod)

    def _spawn(self, pod: LocalPod) -> None:
        proc = lifetime.spawn(pod.argv, pod.env, self.workdir)
        self.procs[pod.name] = proc
        self.watchdog.watch(proc.pid)
        thread = threading.Thread(target=self._pump, args=(pod.name, proc), daemon=True)
        thread.start()
        self.threads.append(thread)

    def _pump(self, name: str, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        for raw in iter(proc.stdout.readline, b""):
            line = raw.decode(errors="replace").rstrip("\n")
            with self.lock:
                self.out.write(f"[{name}] {line}\n")
                self.out.flush()

    def _succeeded(self) -> bool:
        done = [self._job_state(job) == "Complete" for job in self.plan.jobs
                if job.name in self.plan.success_targets]
        return any(done) if self.plan.success_operator == "Any" else bool(done) and all(done)

    def stop(self) -> None:
        """Stop every process group still running: SIGTERM, then SIGKILL after a grace; at
        once when a second interrupt ends the grace early (it is raised again after)."""
        live = [p for p in self.procs.values() if p.poll() is None]
        for proc in live:
            _signal(proc, signal.SIGTERM)
        try:
            _wait(live, time.monotonic() + _GRACE)
        finally:
            self._kill()
            for name, proc in self.procs.items():
                self.codes.setdefault(name, None if proc in live else proc.returncode)
        for thread in self.threads:
            thread.join(timeout=1.0)

    def _kill(self) -> None:
        """SIGKILL every group (leftovers too, e.g. ranks under mpirun), reap its leader."""
        for proc in self.procs.values():
            _signal(proc, signal.SIGKILL)
        for proc in self.procs.values():
            proc.wait()
            self.watchdog.release(proc.pid)


def _wait(procs: list[subprocess.Popen[bytes]], deadline: float) -> None:
    """Until every process exited or the deadline passed."""
    for proc in procs:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(max(0.0, deadline - time.monotonic()))


def _probe(pod: LocalPod) -> bool:
    """A pod without a tcpSocket readiness probe is ready once started; one with it, once its
    port accepts a connection."""
    if pod.ready_port is None:
        return True
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.2)
        return sock.connect_ex(("127.0.0.1", pod.ready_port)) == 0


def _signal(proc: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def run(plan: Plan, workdir: Path, out: TextIO, timeout: float | None = None) -> Outcome:
    """Run the plan to its end (or `timeout` seconds); Ctrl-C stops every process first."""
    watchdog = lifetime.Watchdog()
    try:
        return _run(plan, workdir, out, timeout, watchdog)
    finally:
        watchdog.close()


def _run(plan: Plan, workdir: Path, out: TextIO, timeout: float | None,
         watchdog: lifetime.Watchdog) -> Outcome:
    lock = threading.Lock()
    begin = time.monotonic()
    restarts = 0
    while True:
        attempt = _Attempt(plan, workdir, out, lock, watchdog)
        try:
            result = _drive(attempt, begin, timeout)
        finally:
            attempt.stop()
        succeeded, reason = result
        if succeeded or restarts >= plan.max_restarts or reason.startswith("deadline"):
            return Outcome(succeeded, reason, attempt.codes, restarts, time.monotonic() - begin)
        restarts += 1
        with lock:
            out.write(f"[tjc] restarting the JobSet ({restarts}/{plan.max_restarts}): {reason}\n")


def _drive(attempt: _Attempt, begin: float, timeout: float | None) -> tuple[bool, str]:
    while True:
        result = attempt.step()
        if result is not None:
            return result
        if timeout is not None and time.monotonic() - begin > timeout:
            return False, f"deadline of {timeout:g}s exceeded"
        time.sleep(_POLL)
