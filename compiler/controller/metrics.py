"""Prometheus metrics (text exposition format) and the /healthz and /readyz probes.

Counters of reconciles and errors, a histogram of reconcile seconds, the queue depth, served
by a small HTTP server in a daemon thread. No client library: the format is a few lines.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    """The controller's metrics; thread-safe."""

    def __init__(self, depth: Callable[[], int] = lambda: 0) -> None:
        self._lock = threading.Lock()
        self.reconciles = 0
        self.errors = 0
        self._buckets = [0] * len(BUCKETS)
        self._sum = 0.0
        self.depth = depth
        self.ready = threading.Event()

    def observe(self, seconds: float, failed: bool) -> None:
        """Count one reconcile and its duration."""
        with self._lock:
            self.reconciles += 1
            self.errors += failed
            self._sum += seconds
            for i, bound in enumerate(BUCKETS):
                if seconds <= bound:
                    self._buckets[i] += 1

    def text(self) -> str:
        """The exposition text."""
        with self._lock:
            lines = [
                "# HELP tjc_reconcile_total Reconciles of TrainJobs.",
                "# TYPE tjc_reconcile_total counter", f"tjc_reconcile_total {self.reconciles}",
                "# HELP tjc_reconcile_errors_total Reconciles that failed and were retried.",
                "# TYPE tjc_reconcile_errors_total counter",
                f"tjc_reconcile_errors_total {self.errors}",
                "# HELP tjc_reconcile_duration_seconds Time of one reconcile.",
                "# TYPE tjc_reconcile_duration_seconds histogram"]
            lines += [f'tjc_reconcile_duration_seconds_bucket{{le="{b}"}} {n}'
                      for b, n in zip(BUCKETS, self._buckets, strict=True)]
            lines += [f'tjc_reconcile_duration_seconds_bucket{{le="+Inf"}} {self.reconciles}',
                      f"tjc_reconcile_duration_seconds_sum {self._sum}",
                      f"tjc_reconcile_duration_seconds_count {self.reconciles}"]
        lines += ["# HELP tjc_workqueue_depth Keys waiting in the work queue.",
                  "# TYPE tjc_workqueue_depth gauge", f"tjc_workqueue_depth {self.depth()}"]
        return "\n".join(lines) + "\n"


def serve(metrics: Metrics, port: int) -> ThreadingHTTPServer:
    """Serve /metrics, /healthz and /readyz on `port` (0: any free port)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/metrics":
                self._send(200, metrics.text(), "text/plain; version=0.0.4")
            elif self.path == "/healthz":
                self._send(200, "ok\n")
            elif self.path == "/readyz":
                ready = metrics.ready.is_set()
                self._send(200 if ready else 503, "ok\n" if ready else "not ready\n")
            else:
                self._send(404, "not found\n")

        def _send(self, code: int, body: str, kind: str = "text/plain") -> None:
            data = body.encode()
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("0.0.0.0", port), Handler)
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    return server
