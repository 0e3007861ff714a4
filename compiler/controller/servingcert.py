"""The webhook's serving certificate, from a mounted Secret, reloaded when it is rotated.

cert-manager (and any `kubernetes.io/tls` Secret) gives `tls.crt` and `tls.key` in one folder;
the kubelet updates a mounted Secret in place by swapping its `..data` symlink, so the files
are looked at through their resolved paths (`livepolicy.signature`: path, device, inode, size,
modification time). `current()` looks at them (two `stat` calls) for every new connection and
loads the pair again when they changed; the connections already open keep the certificate
they were made with. A new pair that does not load (half written, a key that does not match)
keeps the last good one and is tried again at the next change; only the first load, at the
start, is an error (`CertificateError`). Called by `webhookserver`.
"""

from __future__ import annotations

import logging
import ssl
import threading
from pathlib import Path

from compiler.controller.livepolicy import Signature, signature

LOG = logging.getLogger("tjc.webhook")
CERT, KEY = "tls.crt", "tls.key"


class CertificateError(RuntimeError):
    """The certificate and key cannot be loaded at the start."""


class ServingCertificate:
    """The TLS context for new connections, from `tls.crt` and `tls.key` in a folder."""

    def __init__(self, directory: Path) -> None:
        self.paths = (directory / CERT, directory / KEY)
        self._lock = threading.Lock()
        self._seen = signature(self.paths)
        try:
            self._context = load(*self.paths)
        except (OSError, ssl.SSLError) as exc:
            raise CertificateError(f"cannot load {self.paths[0]} and {self.paths[1]}: "
                                   f"{_reason(exc)}") from None
        self.loads = 1  # the versions loaded so far
        self.problem: str | None = None  # why the newest version is not in use

    def current(self) -> ssl.SSLContext:
        """The context of the newest pair that loaded (the files looked at first)."""
        with self._lock:
            seen = signature(self.paths)
            if seen != self._seen:
                self._reload(seen)
            return self._context

    def _reload(self, seen: Signature) -> None:
        self._seen = seen  # a pair that fails is tried again when the files change again
        try:
            context = load(*self.paths)
        except (OSError, ssl.SSLError) as exc:  # mid-rotation, or broken: keep serving
            message = f"serving certificate not reloaded, the last good one stays in use: " \
                      f"{_reason(exc)}"
            if message != self.problem:
                LOG.error("%s", message)
            self.problem = message
            return
        self._context, self.problem = context, None
        self.loads += 1
        LOG.info("serving certificate reloaded (version %d)", self.loads)


def load(cert: Path, key: Path) -> ssl.SSLContext:
    """A server context for the pair: TLS 1.2 or newer, HTTP/1.1 by ALPN."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(str(cert), str(key))
    context.set_alpn_protocols(["http/1.1"])
    return context


def _reason(exc: Exception) -> str:
    if isinstance(exc, ssl.SSLError):
        return exc.reason or str(exc)
    if isinstance(exc, OSError):
        return f"{exc.strerror or exc}{f': {exc.filename}' if exc.filename else ''}"
    return str(exc)
