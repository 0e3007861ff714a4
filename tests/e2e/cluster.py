"""A Kubernetes API server for the end-to-end tests: a real etcd and kube-apiserver on loopback.

`cluster()` yields a `Cluster`. With `KUBECONFIG` set it is that cluster (a kind cluster, say);
otherwise it starts etcd and kube-apiserver, built by `e2e/cluster/build.sh` from the Go modules
pinned in `e2e/cluster/go.mod`, on loopback ports picked at random, with their data, certificates
and logs in a temporary directory, and stops both on exit. The local API server:

- serves HTTPS with a certificate from a throw-away CA (also written into the kubeconfig);
- authenticates client certificates from that CA: the kubeconfig's user is `tjc-e2e-admin` in
  `system:masters`, and `LocalControlPlane.user_kubeconfig` issues one for any other user;
- authorizes with RBAC only, so RBAC rules can be tested;
- runs no controller manager and no scheduler: no garbage collection, no default service
  accounts, no pods ever run. It stores and serves objects, with CRDs, defaulting, validation,
  admission and server-side apply.

`LocalControlPlane.stop_apiserver` / `start_apiserver` stop and start the API server alone (etcd,
and so every object, survives), for tests of what a client does while the API server is away.

`install_crds` applies the CustomResourceDefinitions found in YAML files (server-side apply, so
it can be run again) and waits until they are Established.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import datetime
import http.client
import ipaddress
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

REPO_ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO_ROOT / "e2e" / "cluster" / "build.sh"
ADMIN_USER = "tjc-e2e-admin"
FIELD_MANAGER = "tjc-e2e"
# Only allocated, never routed: no controller turns a Service's clusterIP into traffic here.
SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"
LOOPBACK = "127.0.0.1"


class ClusterError(RuntimeError):
    """etcd or kube-apiserver did not start, did not get ready, or a request to it failed."""


@dataclass(frozen=True)
class Binaries:
    """Paths of the etcd and kube-apiserver executables."""

    etcd: Path
    kube_apiserver: Path


def binary_dir() -> Path:
    """Where build.sh puts (or has put) the binaries: `$TJC_E2E_BIN_DIR` or its cache dir."""
    override = os.environ.get("TJC_E2E_BIN_DIR")
    if override:
        return Path(override)
    out = subprocess.run(
        ["sh", str(BUILD_SCRIPT), "--print-dir"], check=True, capture_output=True, text=True
    )
    return Path(out.stdout.strip())


def find_binaries() -> Binaries | None:
    """The binaries build.sh built for the pinned versions, or None when they are not there."""
    directory = binary_dir()
    found = Binaries(etcd=directory / "etcd", kube_apiserver=directory / "kube-apiserver")
    if all(os.access(p, os.X_OK) for p in (found.etcd, found.kube_apiserver)):
        return found
    return None


# --- certificates ---------------------------------------------------------------------------


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _pem_cert(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


@dataclass(frozen=True)
class _CertificateAuthority:
    key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate

    @classmethod
    def create(cls, common_name: str) -> _CertificateAuthority:
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=7))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True, content_commitment=False, key_encipherment=False,
                    data_encipherment=False, key_agreement=False, key_cert_sign=True,
                    crl_sign=True, encipher_only=False, decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
            .sign(key, hashes.SHA256())
        )
        return cls(key=key, cert=cert)

    def issue(
        self,
        common_name: str,
        *,
        organizations: Sequence[str] = (),
        server_names: Sequence[str] = (),
        server_ips: Sequence[str] = (),
    ) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
        """A key and a certificate for a server (with names/IPs) or for a client (without)."""
        key = ec.generate_private_key(ec.SECP256R1())
        attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
        attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
        server = bool(server_names or server_ips)
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        now = datetime.datetime.now(datetime.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name(attributes))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=7))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()), False
            )
        )
        if server:
            alt_names: list[x509.GeneralName] = [x509.DNSName(n) for n in server_names]
            alt_names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in server_ips]
            builder = builder.add_extension(x509.SubjectAlternativeName(alt_names), False)
        return key, builder.sign(self.key, hashes.SHA256())


# --- processes ------------------------------------------------------------------------------


def _free_ports(count: int) -> list[int]:
    """Loopback ports free right now (all held open together, so they differ)."""
    with contextlib.ExitStack() as stack:
        ports = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind((LOOPBACK, 0))
            ports.append(int(sock.getsockname()[1]))
        return ports


_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child before exec: be killed if the test process dies without stopping us."""
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class _Process:
    """One server process, logging to a file, stopped with SIGTERM (SIGKILL after a grace)."""

    def __init__(self, name: str, argv: Sequence[str], log_path: Path) -> None:
        self.name = name
        self.log_path = log_path
        self._log: TextIO = log_path.open("a", encoding="utf-8")
        self._log.write(f"--- {time.strftime('%H:%M:%S')} {' '.join(argv)}\n")
        self._log.flush()
        self.popen = subprocess.Popen(
            list(argv), stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent,
        )

    def alive(self) -> bool:
        return self.popen.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        text = self.log_path.read_text(encoding="utf-8", errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, grace: float = 20.0) -> None:
        if self.alive():
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        self._log.close()


def _wait_until(
    what: str, process: _Process, probe: Callable[[], bool], timeout: float
) -> None:
    """Poll `probe` until it says yes; fail early, with the log's tail, if the process exits."""
    deadline = time.monotonic() + timeout
    while True:
        if not process.alive():
            raise ClusterError(
                f"{process.name} exited ({process.popen.returncode}) before {what}; "
                f"log {process.log_path}:\n{process.log_tail()}"
            )
        if probe():
            return
        if time.monotonic() > deadline:
            raise ClusterError(
                f"{process.name}: not {what} after {timeout:.0f}s; "
                f"log {process.log_path}:\n{process.log_tail()}"
            )
        time.sleep(0.2)


def _http_ok(connection: http.client.HTTPConnection, path: str) -> bool:
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        response.read()
        return response.status == 200
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


# --- the local control plane ----------------------------------------------------------------


@dataclass
class LocalControlPlane:
    """etcd and kube-apiserver on loopback, with everything they need under `workdir`."""

    binaries: Binaries
    workdir: Path
    start_timeout: float = 120.0
    etcd_port: int = 0
    apiserver_port: int = 0
    startup_seconds: float = 0.0
    _etcd: _Process | None = field(default=None, repr=False)
    _apiserver: _Process | None = field(default=None, repr=False)
    _ca: _CertificateAuthority | None = field(default=None, repr=False)

    @property
    def server(self) -> str:
        return f"https://{LOOPBACK}:{self.apiserver_port}"

    @property
    def kubeconfig(self) -> Path:
        return self.workdir / "kubeconfig"

    def start(self) -> None:
        """Write the certificates and keys, start etcd and the API server, write kubeconfig."""
        began = time.monotonic()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._write_pki()
        # A port picked free can be taken before the server binds it: then pick again.
        for attempt in range(3):
            self.etcd_port, peer_port, self.apiserver_port = _free_ports(3)
            try:
                self._start_etcd(peer_port)
                self.start_apiserver()
                break
            except ClusterError as error:
                self.stop()
                if attempt == 2 or "address already in use" not in str(error):
                    raise
        self._write_kubeconfig(self.kubeconfig, ADMIN_USER, ["system:masters"])
        self.startup_seconds = time.monotonic() - began

    def stop(self) -> None:
        """Stop the API server, then etcd. Safe to call more than once."""
        self.stop_apiserver()
        if self._etcd is not None:
            self._etcd.stop()
            self._etcd = None

    def stop_apiserver(self) -> None:
        """Stop the API server alone (etcd keeps running, so all objects survive)."""
        if self._apiserver is not None:
            self._apiserver.stop()
            self._apiserver = None

    def start_apiserver(self) -> None:
        """Start the API server (again, on the same port) and wait until /readyz says ok."""
        if self._apiserver is not None:
            raise ClusterError("kube-apiserver is already running")
        pki = self.workdir / "pki"
        argv = [
            str(self.binaries.kube_apiserver),
            f"--etcd-servers=http://{LOOPBACK}:{self.etcd_port}",
            f"--bind-address={LOOPBACK}",
            f"--advertise-address={LOOPBACK}",
            f"--secure-port={self.apiserver_port}",
            f"--cert-dir={pki}",
            f"--tls-cert-file={pki / 'apiserver.crt'}",
            f"--tls-private-key-file={pki / 'apiserver.key'}",
            f"--client-ca-file={pki / 'ca.crt'}",
            "--authorization-mode=RBAC",
            "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={pki / 'sa.pub'}",
            f"--service-account-signing-key-file={pki / 'sa.key'}",
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            # The `kubernetes` Service's endpoints cannot be a loopback address: keep none.
            "--endpoint-reconciler-type=none",
            "--profiling=false",
        ]
        self._apiserver = _Process("kube-apiserver", argv, self.workdir / "kube-apiserver.log")
        context = self._client_ssl_context(pki / "admin.crt", pki / "admin.key")

        def ready() -> bool:
            connection = http.client.HTTPSConnection(
                LOOPBACK, self.apiserver_port, context=context, timeout=5
            )
            return _http_ok(connection, "/readyz")

        try:
            _wait_until("ready (/readyz)", self._apiserver, ready, self.start_timeout)
        except ClusterError:
            self.stop_apiserver()
            raise

    def restart_apiserver(self) -> None:
        """Stop the API server and start it again; returns when it is ready."""
        self.stop_apiserver()
        self.start_apiserver()

    def user_kubeconfig(self, user: str, groups: Sequence[str] = ()) -> Path:
        """A kubeconfig for `user` (a client certificate; `groups` become its organizations)."""
        path = self.workdir / f"kubeconfig-{user}"
        self._write_kubeconfig(path, user, groups)
        return path

    # -- internals --

    def _start_etcd(self, peer_port: int) -> None:
        client_url = f"http://{LOOPBACK}:{self.etcd_port}"
        peer_url = f"http://{LOOPBACK}:{peer_port}"
        data_dir = self.workdir / "etcd-data"
        shutil.rmtree(data_dir, ignore_errors=True)
        argv = [
            str(self.binaries.etcd),
            "--name=tjc-e2e",
            f"--data-dir={data_dir}",
            f"--listen-client-urls={client_url}",
            f"--advertise-client-urls={client_url}",
            f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=tjc-e2e={peer_url}",
            "--log-level=warn",
            # A throw-away store: no fsync makes every write much cheaper.
            "--unsafe-no-fsync",
        ]
        self._etcd = _Process("etcd", argv, self.workdir / "etcd.log")

        def healthy() -> bool:
            connection = http.client.HTTPConnection(LOOPBACK, self.etcd_port, timeout=5)
            return _http_ok(connection, "/health")

        _wait_until("healthy (/health)", self._etcd, healthy, self.start_timeout)

    def _write_pki(self) -> None:
        pki = self.workdir / "pki"
        pki.mkdir(parents=True, exist_ok=True)
        self._ca = ca = _CertificateAuthority.create("tjc-e2e-ca")
        (pki / "ca.crt").write_bytes(_pem_cert(ca.cert))
        key, cert = ca.issue(
            "kube-apiserver",
            server_names=["localhost", "kubernetes", "kubernetes.default",
                          "kubernetes.default.svc"],
            server_ips=[LOOPBACK],
        )
        (pki / "apiserver.key").write_bytes(_pem_key(key))
        (pki / "apiserver.crt").write_bytes(_pem_cert(cert))
        key, cert = ca.issue(ADMIN_USER, organizations=["system:masters"])
        (pki / "admin.key").write_bytes(_pem_key(key))
        (pki / "admin.crt").write_bytes(_pem_cert(cert))
        sa_key = ec.generate_private_key(ec.SECP256R1())
        (pki / "sa.key").write_bytes(_pem_key(sa_key))
        (pki / "sa.pub").write_bytes(
            sa_key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )

    def _client_ssl_context(self, cert: Path, key: Path) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.workdir / "pki" / "ca.crt"))
        context.load_cert_chain(str(cert), str(key))
        return context

    def _write_kubeconfig(self, path: Path, user: str, groups: Sequence[str]) -> None:
        assert self._ca is not None, "start() first"
        if user == ADMIN_USER:
            key_pem = (self.workdir / "pki" / "admin.key").read_bytes()
            cert_pem = (self.workdir / "pki" / "admin.crt").read_bytes()
        else:
            key, cert = self._ca.issue(user, organizations=groups)
            key_pem, cert_pem = _pem_key(key), _pem_cert(cert)

        def b64(data: bytes) -> str:
            return base64.b64encode(data).decode("ascii")

        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "tjc-e2e", "cluster": {
                "server": self.server,
                "certificate-authority-data": b64(_pem_cert(self._ca.cert)),
            }}],
            "users": [{"name": user, "user": {
                "client-certificate-data": b64(cert_pem),
                "client-key-data": b64(key_pem),
            }}],
            "contexts": [{"name": "tjc-e2e", "context": {"cluster": "tjc-e2e", "user": user}}],
            "current-context": "tjc-e2e",
        }
        path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
        path.chmod(0o600)


# --- the cluster a test gets ----------------------------------------------------------------


@dataclass
class Cluster:
    """A cluster to test against: the local control plane, or the one `KUBECONFIG` names."""

    kubeconfig: str
    """A `KUBECONFIG` value for clients (the controller under test, kubectl)."""
    control_plane: LocalControlPlane | None = None
    """None when the cluster is an existing one (from `KUBECONFIG`): it cannot be restarted."""

    @property
    def local(self) -> bool:
        return self.control_plane is not None

    def api_client(self) -> Any:
        """A new `kubernetes.client.ApiClient` for the cluster's admin user."""
        return k8s_config.new_client_from_config(config_file=self.kubeconfig)


@contextlib.contextmanager
def cluster(
    binaries: Binaries | None = None, *, workdir: Path | None = None, keep_workdir: bool = False
) -> Iterator[Cluster]:
    """The cluster `KUBECONFIG` names, if set; else a local control plane, stopped on exit.

    `binaries` default to those build.sh built (ClusterError if there are none). The local
    control plane lives in `workdir` (default: a new temporary directory, removed on exit unless
    `keep_workdir`; its logs are useful when a test fails).
    """
    external = os.environ.get("KUBECONFIG")
    if external:
        yield Cluster(kubeconfig=external)
        return
    if binaries is None:
        binaries = find_binaries()
        if binaries is None:
            raise ClusterError(
                f"no etcd/kube-apiserver in {binary_dir()}: run {BUILD_SCRIPT} (or set KUBECONFIG)"
            )
    own_dir = workdir is None
    directory = Path(tempfile.mkdtemp(prefix="tjc-e2e-")) if workdir is None else workdir
    plane = LocalControlPlane(binaries=binaries, workdir=directory)
    try:
        plane.start()
        yield Cluster(kubeconfig=str(plane.kubeconfig), control_plane=plane)
    finally:
        plane.stop()
        if own_dir and not keep_workdir:
            shutil.rmtree(directory, ignore_errors=True)


# --- CRDs -----------------------------------------------------------------------------------


def _yaml_files(paths: Sequence[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml"))
        else:
            files.append(path)
    return files


def load_crds(paths: Sequence[Path]) -> list[dict[str, Any]]:
    """The CustomResourceDefinitions in the YAML files given, or found below the dirs given.

    Other documents (runtimes, kustomizations) are skipped.
    """
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    crds: list[dict[str, Any]] = []
    for file in _yaml_files(paths):
        with file.open(encoding="utf-8") as stream:
            for doc in yaml.load_all(stream, Loader=loader):
                if (
                    isinstance(doc, dict)
                    and doc.get("kind") == "CustomResourceDefinition"
                    and str(doc.get("apiVersion", "")).startswith("apiextensions.k8s.io/")
                ):
                    crds.append(doc)
    return crds


def api_request(
    api_client: Any,
    method: str,
    path: str,
    body: Any = None,
    *,
    query: Sequence[tuple[str, str]] = (),
    content_type: str = "application/json",
    timeout: float = 60.0,
) -> Any:
    """One JSON request through `api_client`; the answer's JSON, decoded.

    For what the generated API classes make awkward: server-side apply (`content_type=
    "application/apply-patch+yaml"`) and objects kept as plain dicts. Raises the client's
    `ApiException` on an error status.
    """
    response = api_client.call_api(
        path, method,
        query_params=list(query),
        header_params={"Content-Type": content_type, "Accept": "application/json"},
        body=body,
        auth_settings=["BearerToken"],
        _preload_content=False,
        _return_http_data_only=True,
        _request_timeout=timeout,
    )
    data = response.data
    return json.loads(data) if data else None


def _apply_crd(api_client: Any, crd: dict[str, Any]) -> None:
    name = crd["metadata"]["name"]
    api_request(
        api_client, "PATCH", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}",
        crd,
        query=[("fieldManager", FIELD_MANAGER), ("force", "true")],
        content_type="application/apply-patch+yaml",
    )


def _established(crd: dict[str, Any]) -> bool:
    conditions = crd.get("status", {}).get("conditions") or []
    status = {c.get("type"): c.get("status") for c in conditions}
    return status.get("Established") == "True" and status.get("NamesAccepted") == "True"


def wait_for_crds(api_client: Any, names: Sequence[str], timeout: float = 60.0) -> None:
    """Wait until every CRD named is Established (and its names accepted)."""
    pending = list(names)
    deadline = time.monotonic() + timeout
    while pending:
        still = []
        for name in pending:
            try:
                crd = api_request(
                    api_client, "GET",
                    f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}",
                )
            except ApiException as error:
                if error.status != 404:
                    raise
                still.append(name)
                continue
            if not _established(crd):
                still.append(name)
        pending = still
        if pending and time.monotonic() > deadline:
            raise ClusterError(f"CRDs not Established after {timeout:.0f}s: {', '.join(pending)}")
        if pending:
            time.sleep(0.2)


def install_crds(api_client: Any, paths: Sequence[Path], timeout: float = 60.0) -> list[str]:
    """Apply (server-side) every CRD in `paths`, wait until all are Established; their names."""
    crds = load_crds(paths)
    if not crds:
        raise ClusterError(f"no CustomResourceDefinition in {', '.join(map(str, paths))}")
    for crd in crds:
        _apply_crd(api_client, crd)
    names = [crd["metadata"]["name"] for crd in crds]
    wait_for_crds(api_client, names, timeout)
    return names
