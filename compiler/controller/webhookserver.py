"""`tjc webhook`: the validating admission webhook's HTTPS server.

POST `/validate` takes an AdmissionReview for a TrainJob, TrainingRuntime or
ClusterTrainingRuntime (create or update) and answers with what `judge` decides (`review`
writes the answer); GET `/healthz` says the process is up, `/readyz` that the runtime
informers have filled their stores. Each connection gets the serving certificate current
when it opens (`servingcert`: a rotated Secret is served without a restart); the TLS
handshake is made in the connection's own thread, so a slow client holds up no other.
Connections are kept alive (HTTP/1.1), as the API server reuses them. A request the webhook
cannot judge (a policy evaluation over its limits, a failure reading the cluster) is refused
with the reason: the webhook never lets through what it could not check.
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from compiler.common.diagnostics import Diagnostic, one_line
from compiler.common.jsondata import Obj
from compiler.controller import review
from compiler.controller.judge import Judge
from compiler.controller.servingcert import ServingCertificate

if TYPE_CHECKING:
    from compiler.controller.kube import Kube
    from compiler.controller.livepolicy import LivePolicies
    from compiler.policy.engine import PolicySet

LOG = logging.getLogger("tjc.webhook")
PATH = "/validate"
IDLE_SECONDS = 120  # an idle kept-alive connection is closed after this
HANDSHAKE_SECONDS = 10


class WebhookServer(ThreadingHTTPServer):
    """A threading HTTP server whose connections are TLS, each with the current certificate."""

    daemon_threads = True
    block_on_close = False
    request_queue_size = 128  # the API server opens many connections at once (default 5)

    def __init__(self, address: tuple[str, int], judge: Judge,
                 certificate: ServingCertificate,
                 ready: Callable[[], bool] = lambda: True) -> None:
        self.judge, self.certificate, self.ready = judge, certificate, ready
        super().__init__(address, _Handler)

    def finish_request(self, request: Any, client_address: Any) -> None:
        """Make the TLS handshake (in the connection's thread), then serve the connection."""
        request.settimeout(HANDSHAKE_SECONDS)
        request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        began = time.perf_counter()
        try:
            tls = self.certificate.current().wrap_socket(request, server_side=True)
        except (OSError, ssl.SSLError) as exc:  # a port scan, a client that gave up
            LOG.debug("TLS handshake with %s failed: %s", client_address, exc)
            return
        LOG.debug("connection from %s, TLS handshake in %.1f ms", client_address,
                  (time.perf_counter() - began) * 1000)
        try:
            tls.settimeout(IDLE_SECONDS)
            _Handler(tls, client_address, self)
        finally:
            tls.close()

    def answer(self, body: bytes) -> tuple[int, bytes]:
        """The HTTP status and body answering one POSTed AdmissionReview."""
        try:
            request = review.read_request(body)
        except review.ReviewError as exc:
            return 400, one_line(str(exc)).encode() + b"\n"
        if not review.judged(request):
            return 200, review.dumps(review.allow(request))
        began = time.perf_counter()
        try:
            found = self.judge.judge(request)
        except Exception as exc:  # whatever it was, the object was not checked: refused
            LOG.error("cannot judge %s: %s: %s", _describe(request), type(exc).__name__, exc)
            found = [_unjudged(exc)]
        LOG.debug("%s judged in %.1f ms", _describe(request),
                  (time.perf_counter() - began) * 1000)
        return 200, review.dumps(review.answer(request, found))


def _unjudged(exc: Exception) -> Diagnostic:
    from compiler.common.diagnostics import error
    from compiler.common.errors import TjcError

    reason = exc.diagnostic.message if isinstance(exc, TjcError) else \
        f"{type(exc).__name__}: {exc}"
    return error("TJC-WEBHOOK-UNJUDGED", f"the admission webhook could not check this object "
                 f"({reason}); try again")


def _describe(request: Obj) -> str:
    obj = request.get("object") or {}
    meta = obj.get("metadata") or {} if isinstance(obj, dict) else {}
    where = f"{meta.get('namespace')}/" if meta.get("namespace") else ""
    return f"{request.get('operation')} {obj.get('kind')} {where}{meta.get('name')}"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    wbufsize = 1 << 16  # a response goes out in one write (flushed after each request)
    server: WebhookServer

    def do_POST(self) -> None:
        if self.path.split("?", 1)[0] != PATH:
            self._send(404, b"not found\n")
            return
        try:
            length = int(self.headers.get("Content-Length") or "-1")
        except ValueError:
            length = -1
        if not 0 <= length <= review.MAX_BODY:
            self._send(413 if length > review.MAX_BODY else 411, b"bad Content-Length\n")
            self.close_connection = True
            return
        body = self.rfile.read(length)
        code, data = self.server.answer(body)
        self._send(code, data, "application/json" if code == 200 else "text/plain")

    def do_GET(self) -> None:
        if self.path == "/healthz":
            self._send(200, b"ok\n")
        elif self.path == "/readyz":
            ready = self.server.ready()
            self._send(200 if ready else 503, b"ok\n" if ready else b"not ready\n")
        else:
            self._send(404, b"not found\n")

    def _send(self, code: int, body: bytes, kind: str = "text/plain") -> None:
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def start(judge: Judge, certificate: ServingCertificate, port: int, host: str = "0.0.0.0",
          ready: Callable[[], bool] = lambda: True) -> WebhookServer:
    """Serve in a daemon thread; returns the server (its `server_address` has the port)."""
    server = WebhookServer((host, port), judge, certificate, ready)
    threading.Thread(target=server.serve_forever, name="webhook", daemon=True).start()
    return server


class StartupError(RuntimeError):
    """The webhook cannot start (a usage error, exit 2)."""


def run(kube: Kube, certificate: ServingCertificate, port: int,
        policies: PolicySet | LivePolicies | None, stop: threading.Event | None = None) -> int:
    """Watch the runtimes, serve until SIGTERM/SIGINT (or `stop`), return 0."""
    import signal

    from compiler.controller.judge import Runtimes

    runtimes = Runtimes(kube)
    try:
        server = start(Judge(runtimes, policies), certificate, port, ready=runtimes.synced)
    except OSError as exc:
        raise StartupError(f"cannot serve on port {port}: {exc.strerror or exc}") from None
    runtimes.start()
    stop = stop or threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    LOG.info("webhook serving on port %d", server.server_address[1])
    while not stop.wait(0.5):
        pass
    server.shutdown()
    runtimes.stop()
    return 0
