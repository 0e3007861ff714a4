"""A small HTTPS client for the API server, from a kubeconfig or the in-cluster service account.

`kubernetes.client` imports every model of the Kubernetes API when it is first imported (about
35 MiB of the controller's memory, most of it at start), and walks every request body to
serialize it; the controller sends and reads plain JSON and needs neither. This client covers
what a controller's credentials are: a server URL with its CA (file or data, or
`insecure-skip-tls-verify`), a client certificate and key (files or data), a bearer token
(`token` or `tokenFile`, read again as it rotates), and the in-cluster service account. The
kubeconfig has been checked as client-go checks it (`kubeconfig`); one whose user needs more
(an `exec` plugin, an `auth-provider`, a username and password) is handed to
`kubernetes.config` (`client_from_kubeconfig`).

`call_api` takes the arguments `kube.Kube` gives `kubernetes.client.ApiClient.call_api`, so
either client serves it; an answer other than 2xx is an `HTTPStatusError` (status, reason,
body), a redirect included (it is never followed: the token would go with it), and a token
that cannot be sent is a `kubeconfig.TokenError` (naming the file, never the token).
"""

from __future__ import annotations

import json
import os
import ssl
import tempfile
import time
from dataclasses import field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import urllib3

from compiler.common.records import dataclass
from compiler.controller.kubeconfig import Selected, TokenError, TokenUnreadable, read_token

SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
TOKEN_REREAD_SECONDS = 60.0


class HTTPStatusError(Exception):
    """An error status from the API server, with its body."""

    def __init__(self, status: int, reason: str, body: str) -> None:
        super().__init__(f"({status}) {reason}")
        self.status, self.reason, self.body = status, reason, body


@dataclass
class Credentials:
    """Where the API server is and how to authenticate to it."""

    server: str
    ca_file: str | None = None
    insecure: bool = False
    cert_file: str | None = None
    key_file: str | None = None
    token: str | None = None
    token_file: str | None = None
    _read: tuple[float, str] = field(default=(0.0, ""), repr=False)

    def bearer(self) -> str | None:
        """The bearer token: a token file's (trimmed, read again at most once a minute) as
        client-go's file token source reads it, else the inline one. A file that cannot be
        read, or holds none, keeps the token read last (or the inline one); a token that
        cannot be a header value raises `TokenError`."""
        if not self.token_file:
            return self.token
        when, text = self._read
        if time.monotonic() - when > TOKEN_REREAD_SECONDS or not text:
            try:
                fresh = read_token(self.token_file)
            except TokenUnreadable:
                fresh = ""
            if fresh:
                text = fresh
                self._read = (time.monotonic(), text)
        if not text and not self.token:
            raise TokenError(f"no token in {self.token_file}")
        return text or self.token


class RestClient:
    """JSON over HTTPS to one API server, through a pool of kept-alive connections."""

    def __init__(self, credentials: Credentials, maxsize: int = 64) -> None:
        self.credentials = credentials
        context = ssl.create_default_context(cafile=credentials.ca_file)
        if credentials.insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if credentials.cert_file:
            context.load_cert_chain(credentials.cert_file, credentials.key_file)
        self.pool = urllib3.PoolManager(num_pools=2, maxsize=maxsize, block=False,
                                        ssl_context=context)

    def call_api(self, path: str, method: str, *, query_params: list[tuple[str, str]],
                 header_params: dict[str, str], body: Any = None,
                 _request_timeout: float | None = None, **_: Any) -> Any:
        """One request; the urllib3 response, unread (the caller reads or streams it)."""
        url = self.credentials.server.rstrip("/") + path
        if query_params:
            url += "?" + urlencode(query_params)
        headers = dict(header_params)
        token = self.credentials.bearer()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        data = None if body is None else json.dumps(body).encode()
        response = self.pool.request(method, url, body=data, headers=headers,
                                     preload_content=False, retries=False, redirect=False,
                                     timeout=urllib3.Timeout(connect=10,
                                                             read=_request_timeout))
        if not 200 <= response.status < 300:
            text = response.read().decode(errors="replace")
            response.release_conn()
            raise HTTPStatusError(response.status, str(response.reason or ""), text)
        return response


def _written(data: bytes | None, temp: Path) -> str | None:
    """Certificate or key data, written to a private file for the TLS library (which reads
    it at once)."""
    if data is None:
        return None
    fd, name = tempfile.mkstemp(dir=temp)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    return name


def client_for(selected: Selected) -> RestClient:
    """The client of a checked kubeconfig's current context (`kubeconfig.load`); ssl.SSLError
    or OSError when its certificates or key cannot be used."""
    with tempfile.TemporaryDirectory(prefix="tjc-kube-") as temp:
        folder = Path(temp)
        return RestClient(Credentials(
            server=selected.server,
            ca_file=_written(selected.ca_data, folder) or selected.ca_file,
            insecure=selected.insecure,
            cert_file=_written(selected.cert_data, folder) or selected.cert_file,
            key_file=_written(selected.key_data, folder) or selected.key_file,
            token=selected.token, token_file=selected.token_file))


def in_cluster() -> RestClient | None:
    """The client of the pod's service account, None outside a cluster."""
    host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), \
        os.environ.get("KUBERNETES_SERVICE_PORT")
    token = SERVICE_ACCOUNT / "token"
    if not host or not port or not token.exists():
        return None
    host = f"[{host}]" if ":" in host else host
    return RestClient(Credentials(server=f"https://{host}:{port}",
                                  ca_file=str(SERVICE_ACCOUNT / "ca.crt"),
                                  token_file=str(token)))
