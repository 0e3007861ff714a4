"""A small HTTPS client for the API server, from a kubeconfig or the in-cluster service account.

`kubernetes.client` imports every model of the Kubernetes API when it is first imported (about
35 MiB of the controller's memory, most of it at start), and walks every request body to
serialize it; the controller sends and reads plain JSON and needs neither. This client covers
what a controller's credentials are: a server URL with its CA (file or data, or
`insecure-skip-tls-verify`), a client certificate and key (files or data), a bearer token
(`token` or `tokenFile`, read again as it rotates), and the in-cluster service account. A
kubeconfig whose user needs more (an `exec` plugin, an `auth-provider`, a username and
password) is handed to `kubernetes.config` as before (`client_from_kubeconfig`).

`call_api` takes the arguments `kube.Kube` gives `kubernetes.client.ApiClient.call_api`, so
either client serves it; errors are `HTTPStatusError` (status, reason, body).
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import urllib3
import yaml

from compiler.common.jsondata import Obj

SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
TOKEN_REREAD_SECONDS = 60.0


class Unsupported(Exception):
    """The kubeconfig needs an authentication this client does not do."""


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
        """The bearer token, a token file's read at most once a minute."""
        if self.token:
            return self.token
        if not self.token_file:
            return None
        when, text = self._read
        if time.monotonic() - when > TOKEN_REREAD_SECONDS or not text:
            text = Path(self.token_file).read_text().strip()
            self._read = (time.monotonic(), text)
        return text


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
                                     preload_content=False, retries=False,
                                     timeout=urllib3.Timeout(connect=10,
                                                             read=_request_timeout))
        if response.status >= 400:
            text = response.read().decode(errors="replace")
            response.release_conn()
            raise HTTPStatusError(response.status, str(response.reason or ""), text)
        return response


def _file(entry: Obj, key: str, base: Path, temp: Path) -> str | None:
    """A kubeconfig's `<key>` (a path, relative to the kubeconfig) or `<key>-data` (base64,
    written to a private file for the TLS library, which reads it at once)."""
    data = entry.get(f"{key}-data")
    if data:
        fd, name = tempfile.mkstemp(dir=temp)
        with os.fdopen(fd, "wb") as out:
            out.write(base64.b64decode(data))
        return name
    path = entry.get(key)
    return str(base / os.path.expanduser(path)) if path else None


# What this client reads of a kubeconfig's cluster and user; anything else (a proxy, a TLS
# server name, an exec plugin, impersonation, ...) is left to the kubernetes client.
_CLUSTER_KEYS = {"server", "certificate-authority", "certificate-authority-data",
                 "insecure-skip-tls-verify", "extensions"}
_USER_KEYS = {"client-certificate", "client-certificate-data", "client-key", "client-key-data",
              "token", "tokenFile", "extensions"}


def from_kubeconfig(path: Path) -> RestClient:
    """The client of the kubeconfig's current context; `Unsupported` when its user
    authenticates otherwise than by certificate or token."""
    config = yaml.safe_load(path.read_text()) or {}
    by_name = {kind: {e.get("name"): e.get(kind[:-1]) or {} for e in config.get(kind) or []}
               for kind in ("clusters", "users", "contexts")}
    context = by_name["contexts"].get(config.get("current-context")) or {}
    cluster = by_name["clusters"].get(context.get("cluster"))
    user = by_name["users"].get(context.get("user"), {})
    if not cluster or not cluster.get("server") or set(cluster) - _CLUSTER_KEYS or \
            set(user) - _USER_KEYS:
        raise Unsupported("kubeconfig needs the kubernetes client")
    base = path.parent
    with tempfile.TemporaryDirectory(prefix="tjc-kube-") as temp:
        return RestClient(Credentials(
            server=str(cluster["server"]),
            ca_file=_file(cluster, "certificate-authority", base, Path(temp)),
            insecure=bool(cluster.get("insecure-skip-tls-verify")),
            cert_file=_file(user, "client-certificate", base, Path(temp)),
            key_file=_file(user, "client-key", base, Path(temp)), token=user.get("token"),
            token_file=str(base / user["tokenFile"]) if user.get("tokenFile") else None))


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
