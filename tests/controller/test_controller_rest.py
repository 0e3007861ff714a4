"""The controller's own REST client (`compiler.controller.rest`): a kubeconfig's CA, client
certificate and token against a local HTTPS server that checks them, error statuses (and
redirects, never followed) as `ApiError`, watches streamed, a token never sent where it must
not go nor shown, and kubeconfigs it does not handle left to the kubernetes client."""

from __future__ import annotations

import base64
import json
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml

from compiler.common.jsondata import Obj
from compiler.controller import kubeconfig, rest
from compiler.controller.kube import CONFIGMAP, TRAINJOB, ApiError, Kube, client_from_kubeconfig
from compiler.controller.kubeconfig import KubeconfigError
from tests.e2e.cluster import LOOPBACK, _CertificateAuthority, _pem_cert, _pem_key


class Handler(BaseHTTPRequestHandler):
    """Answers as an API server would, recording who asked what."""

    seen: ClassVar[list[tuple[str, str, str | None, str | None, Obj | None]]] = []

    def log_message(self, *_: Any) -> None:
        pass

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        peer = self.connection.getpeercert()
        subject = dict(x[0] for x in peer["subject"]) if peer else {}
        self.seen.append((self.command, self.path, subject.get("commonName"),
                          self.headers.get("Authorization"), body))
        if "watch=true" in self.path:
            events = [{"type": "ADDED", "object": {"metadata": {"name": f"j{i}"}}}
                      for i in range(3)]
            self._send(200, "".join(json.dumps(e) + "\n" for e in events).encode())
        elif self.path.endswith("/missing"):
            self._send(404, json.dumps({"reason": "NotFound", "message": "no"}).encode())
        elif self.path.endswith("/moved"):  # elsewhere: a client following it takes its token
            self.send_response(302)
            self.send_header("Location", self.path.replace("/moved", "/stolen"))
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.command == "POST":
            self._send(409, json.dumps({"reason": "AlreadyExists",
                                        "message": "configmaps \"x\" already exists"}).encode())
        else:
            self._send(200, json.dumps({"metadata": {"name": "j"}}).encode())

    do_GET = do_POST = do_PATCH = _answer

    def _send(self, status: int, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, Obj]]:
    """An HTTPS server that wants a client certificate of its CA; its URL, a folder, and the
    kubeconfig user's certificate and key (base64 PEM)."""
    folder = tmp_path_factory.mktemp("rest")
    ca = _CertificateAuthority.create("test-ca")
    key, cert = ca.issue("server", server_ips=[LOOPBACK])
    (folder / "ca.crt").write_bytes(_pem_cert(ca.cert))
    (folder / "server.crt").write_bytes(_pem_cert(cert) + _pem_key(key))
    client_key, client_cert = ca.issue("tjc-controller")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=folder / "ca.crt")
    context.load_cert_chain(folder / "server.crt")
    context.verify_mode = ssl.CERT_OPTIONAL
    httpd = ThreadingHTTPServer((LOOPBACK, 0), Handler)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    user = {"client-certificate-data": base64.b64encode(_pem_cert(client_cert)).decode(),
            "client-key-data": base64.b64encode(_pem_key(client_key)).decode()}
    yield f"https://{LOOPBACK}:{httpd.server_address[1]}", folder, user
    httpd.shutdown()


def _kubeconfig(path: Path, server: str, cluster: Obj, user: Obj) -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": server, **cluster}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}]}))
    return path


def test_client_certificate_from_data_and_the_ca_from_a_file(
        server: tuple[str, Path, Obj], tmp_path: Path) -> None:
    url, folder, user = server
    config = _kubeconfig(tmp_path / "kubeconfig", url, {"certificate-authority":
                                                        str(folder / "ca.crt")}, user)
    client = client_from_kubeconfig(str(config))
    assert isinstance(client, rest.RestClient)
    kube = Kube(client)
    Handler.seen.clear()
    assert kube.get(TRAINJOB, "ns", "j") == {
        "metadata": {"name": "j"}, "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob"}
    assert kube.get(TRAINJOB, "ns", "missing") is None
    with pytest.raises(ApiError) as refused:
        kube.create(CONFIGMAP, "ns", {"metadata": {"name": "x"}})
    assert (refused.value.status, refused.value.reason) == (409, "AlreadyExists")
    assert refused.value.message == 'configmaps "x" already exists'
    kube.patch_status(TRAINJOB, "ns", "j", {"status": {"conditions": []}})
    method, path, who, token, body = Handler.seen[-1]
    assert (method, path, who, token, body) == (
        "PATCH", "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/j/status",
        "tjc-controller", None, {"status": {"conditions": []}})
    assert [(m, who) for m, _, who, _, _ in Handler.seen] == [
        ("GET", "tjc-controller"), ("GET", "tjc-controller"), ("POST", "tjc-controller"),
        ("PATCH", "tjc-controller")]
    assert Handler.seen[2][1] == "/api/v1/namespaces/ns/configmaps?fieldManager=trainer"
    names = [obj["metadata"]["name"] for _, obj in kube.watch(TRAINJOB, "ns", "7")]
    assert names == ["j0", "j1", "j2"]
    code = ("import sys; from compiler.controller import manager; "
            f"manager.Kube(manager.client_from_kubeconfig({str(config)!r})).get("
            "manager.TRAINJOB, 'ns', 'j'); print('kubernetes' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=Path(__file__).resolve().parents[2])
    assert done.stdout == "False\n"  # the kubernetes client (and its models) never imported


def test_a_token_and_the_ca_as_data(server: tuple[str, Path, Obj], tmp_path: Path) -> None:
    url, folder, _ = server
    ca = base64.b64encode((folder / "ca.crt").read_bytes()).decode()
    (tmp_path / "token").write_text("s3cret\n")
    config = _kubeconfig(tmp_path / "kubeconfig", url, {"certificate-authority-data": ca},
                         {"tokenFile": "token"})
    Handler.seen.clear()
    Kube(client_from_kubeconfig(str(config))).get(TRAINJOB, "ns", "j")
    assert Handler.seen[-1][2:4] == (None, "Bearer s3cret")


def test_a_server_the_ca_does_not_vouch_for_is_unavailable(
        server: tuple[str, Path, Obj], tmp_path: Path) -> None:
    url, _, user = server
    other = _CertificateAuthority.create("other-ca")
    (tmp_path / "other.crt").write_bytes(_pem_cert(other.cert))
    config = _kubeconfig(tmp_path / "kubeconfig", url,
                         {"certificate-authority": str(tmp_path / "other.crt")}, user)
    with pytest.raises(ApiError) as failed:
        Kube(client_from_kubeconfig(str(config))).get(TRAINJOB, "ns", "j")
    assert failed.value.status == 0 and "CERTIFICATE_VERIFY_FAILED" in failed.value.message


def test_a_redirect_is_an_error_and_is_not_followed(server: tuple[str, Path, Obj],
                                                    tmp_path: Path) -> None:
    """A 3xx answer was taken as success (an AttributeError on its empty body)."""
    url, folder, _ = server
    config = _kubeconfig(tmp_path / "kubeconfig", url,
                         {"certificate-authority": str(folder / "ca.crt")}, {"token": "s3cret"})
    Handler.seen.clear()
    with pytest.raises(ApiError) as answered:
        Kube(client_from_kubeconfig(str(config))).get(TRAINJOB, "ns", "moved")
    assert answered.value.status == 302
    assert [path for _, path, *_ in Handler.seen] == [
        "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/moved"]  # not /stolen


@pytest.mark.parametrize("insecure", [False, "false"])
def test_a_token_never_goes_to_a_server_the_ca_does_not_vouch_for(
        server: tuple[str, Path, Obj], tmp_path: Path, insecure: bool | str) -> None:
    """`insecure-skip-tls-verify: "false"` (a string) turned verification off, and the token
    went to a server whose certificate another CA signed; client-go refuses the string."""
    url, _, _ = server
    other = _CertificateAuthority.create("other-ca")
    (tmp_path / "other.crt").write_bytes(_pem_cert(other.cert))
    config = _kubeconfig(tmp_path / "kubeconfig", url, {
        "certificate-authority": str(tmp_path / "other.crt"),
        "insecure-skip-tls-verify": insecure}, {"token": "s3cret"})
    Handler.seen.clear()
    if insecure == "false":
        with pytest.raises(KubeconfigError) as refused:
            client_from_kubeconfig(str(config))
        assert str(refused.value) == f"kubeconfig {config}: clusters[0].cluster." \
            "insecure-skip-tls-verify: expected a boolean, found a string"
    else:
        with pytest.raises(ApiError) as failed:
            Kube(client_from_kubeconfig(str(config))).get(TRAINJOB, "ns", "j")
        assert failed.value.status == 0 and "CERTIFICATE_VERIFY_FAILED" in failed.value.message
    assert Handler.seen == []


@pytest.mark.parametrize("case", ["token-line-break", "quoted-bool"])
def test_an_unusable_kubeconfig_stops_the_start_in_one_line(
        server: tuple[str, Path, Obj], tmp_path: Path, case: str) -> None:
    """The token with a line break was a traceback that printed the token (http.client
    refusing the header); the quoted bool ran with TLS verification off."""
    url, folder, _ = server
    (tmp_path / "token").write_text("s3cret-first\nsecond-half\n")
    cluster: Obj = {"certificate-authority": str(folder / "ca.crt")}
    user: Obj = {"tokenFile": "token"}
    if case == "quoted-bool":
        cluster, user = {"insecure-skip-tls-verify": "false"}, {"token": "s3cret-first"}
    config = _kubeconfig(tmp_path / "kubeconfig", url, cluster, user)
    Handler.seen.clear()
    done = subprocess.run(
        [sys.executable, "-m", "compiler", "controller", "--kubeconfig", str(config),
         "--no-default-policies", "--metrics-port", "0"], capture_output=True, text=True,
        timeout=60, check=False, cwd=Path(__file__).resolve().parents[2])
    assert (done.returncode, done.stdout) == (2, "")
    told = {"token-line-break": f"users[0].user.tokenFile: the token in {tmp_path / 'token'} "
            "holds a line break or another control character (or a non-ASCII one): it "
            "cannot be a bearer token",
            "quoted-bool": "clusters[0].cluster.insecure-skip-tls-verify: expected a "
            "boolean, found a string"}[case]
    assert done.stderr == f"tjc controller: error: kubeconfig {config}: {told}\n"
    assert Handler.seen == []


def test_a_token_file_rotated_to_a_line_break_is_an_api_error_without_the_token(
        server: tuple[str, Path, Obj], tmp_path: Path) -> None:
    url, folder, _ = server
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    config = _kubeconfig(tmp_path / "kubeconfig", url,
                         {"certificate-authority": str(folder / "ca.crt")}, {"tokenFile": "token"})
    client = client_from_kubeconfig(str(config))
    token.write_text("s3cret-first\nsecond-half\n")
    client.credentials._read = (0.0, "")  # the minute is up: read again
    Handler.seen.clear()
    with pytest.raises(ApiError) as failed:
        Kube(client).get(TRAINJOB, "ns", "j")
    assert failed.value.reason == "InvalidToken" and "s3cret" not in str(failed.value)
    assert Handler.seen == []


def test_other_credentials_are_left_to_the_kubernetes_client(tmp_path: Path) -> None:
    config = _kubeconfig(tmp_path / "kubeconfig", "https://127.0.0.1:1", {}, {
        "exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "true"}})
    assert kubeconfig.load(config).others == ("exec",)
    assert not isinstance(client_from_kubeconfig(str(config)), rest.RestClient)
    proxied = _kubeconfig(tmp_path / "proxied", "https://127.0.0.1:1",
                          {"proxy-url": "http://127.0.0.1:3128"}, {"token": "t"})
    assert kubeconfig.load(proxied).others == ("proxy-url",)


def test_watch_events_split_across_chunks_are_joined() -> None:
    lines = b"".join(json.dumps({"type": "MODIFIED", "object": {"metadata": {"name": n}}})
                     .encode() + b"\n" for n in ("a", "b", "c"))

    class Response:
        released = False

        def stream(self, size: int) -> Iterator[bytes]:
            yield from (lines[i:i + 7] for i in range(0, len(lines), 7))

        def release_conn(self) -> None:
            Response.released = True

    class Client:
        def call_api(self, *_: Any, **__: Any) -> Response:
            return Response()

    events = list(Kube(Client()).watch(TRAINJOB, "ns", "1"))
    assert [(kind, obj["metadata"]["name"], obj["kind"]) for kind, obj in events] == [
        ("MODIFIED", n, "TrainJob") for n in ("a", "b", "c")]
    assert Response.released
