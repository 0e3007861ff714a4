"""The controller reads a kubeconfig as client-go does: a table of kubeconfigs goes through
`tjc controller`'s loader (`client_from_kubeconfig`, `compiler.controller.kubeconfig`) and
through client-go itself (the parity oracle's `kubeconfig` request: clientcmd's loading and
validation, the HTTP client, a request never dialled), and both must accept or refuse alike,
with the same effective insecure-skip-tls-verify and bearer token on accept. Each case names
the client-go behaviour it pins."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from compiler.common.jsondata import Obj
from compiler.controller import kubeconfig, rest
from compiler.controller.kube import client_from_kubeconfig
from compiler.controller.kubeconfig import KubeconfigError
from tests.e2e.cluster import _CertificateAuthority, _pem_cert, _pem_key
from tests.parity.oracle import Oracle, build

SERVER = "https://127.0.0.1:1"
CONFIG = """\
apiVersion: v1
kind: Config
current-context: c
clusters:
- name: k
  cluster:
    server: {server}
{cluster}users:
- name: u
  user:
{user}contexts:
- name: c
  context: {{cluster: k, user: u}}
"""

T = "    token: s3cr3t\n"  # a token that must never appear in a message
# name: (cluster lines, user lines, files beside the kubeconfig); `{ca}` is a CA file's name,
# `{ca_data}` its base64, `{cert}`/`{key}` a client certificate and key.
CASES: dict[str, tuple[str, str, dict[str, str]]] = {
    # typed fields: a bool is a YAML bool, never a string (json: cannot unmarshal string)
    "bool-false-bare": ("    insecure-skip-tls-verify: false\n", T, {}),
    "bool-false-quoted": ('    insecure-skip-tls-verify: "false"\n', T, {}),
    "bool-true-quoted": ('    insecure-skip-tls-verify: "true"\n', T, {}),
    "bool-true-bare": ("    insecure-skip-tls-verify: true\n", T, {}),
    "bool-yaml11-yes": ("    insecure-skip-tls-verify: yes\n", T, {}),
    "bool-yaml11-y": ("    insecure-skip-tls-verify: y\n", T, {}),
    "bool-number": ("    insecure-skip-tls-verify: 0\n", T, {}),
    "bool-null": ("    insecure-skip-tls-verify: null\n", T, {}),
    "bool-in-preferences": ("", T, {}),  # preferences: {colors: "no"}
    "string-number-token": ("", "    token: 12345\n", {}),
    "string-list-token": ("", "    token: [abc]\n", {}),
    "mapping-as-string": ("    extensions: []\n", "    exec: abc\n", {}),
    "unknown-field": ("    colour: blue\n", T, {}),
    "wrong-case-field": ("    Insecure-Skip-TLS-Verify: true\n", T, {}),
    # the CA and TLS settings
    "ca-file": ("    certificate-authority: {ca}\n", T, {}),
    "ca-file-and-insecure": ("    certificate-authority: {ca}\n"
                             "    insecure-skip-tls-verify: true\n", T, {}),
    "ca-data-and-insecure": ("    certificate-authority-data: {ca_data}\n"
                             "    insecure-skip-tls-verify: true\n", T, {}),
    "ca-file-missing": ("    certificate-authority: nowhere.crt\n", T, {}),
    "ca-file-and-data": ("    certificate-authority: {ca}\n"
                         "    certificate-authority-data: {ca_data}\n", T, {}),
    "ca-data-not-base64": ("    certificate-authority-data: not*base64\n", T, {}),
    "ca-data-not-pem": ("    certificate-authority-data: aGVsbG8=\n", T, {}),
    "client-cert-and-key": ("    certificate-authority: {ca}\n",
                            "    client-certificate: {cert}\n    client-key: {key}\n", {}),
    "client-cert-without-key": ("    certificate-authority: {ca}\n",
                                "    client-certificate: {cert}\n", {}),
    # tokens: a token file is trimmed (transport's file token source), an inline one is not
    "token-file-trailing-newline": ("", "    tokenFile: token\n", {"token": "s3cr3t\n"}),
    "token-file-crlf": ("", "    tokenFile: token\n", {"token": "s3cr3t\r\n"}),
    "token-file-line-break-inside": ("", "    tokenFile: token\n",
                                     {"token": "s3cr3t\nt0k3n\n"}),
    "token-file-line-break-and-inline": ("", T + "    tokenFile: token\n",
                                         {"token": "s3cr3t\nt0k3n\n"}),
    "token-file-empty-and-inline": ("", T + "    tokenFile: token\n", {"token": "\n"}),
    "token-file-empty": ("", "    tokenFile: token\n", {"token": ""}),
    "token-file-blank": ("", "    tokenFile: token\n", {"token": " \n"}),
    "token-file-missing": ("", "    tokenFile: nowhere\n", {}),
    "token-inline-trailing-newline": ("", "    token: |\n      s3cr3t\n", {}),
    "token-inline-tab": ("", '    token: "s3cr3t\\tt0k3n"\n', {}),
    "token-inline-and-missing-file": ("", "    token: s3cr3t\n    tokenFile: nowhere\n", {}),
    "token-and-basic-auth": ("", "    token: s3cr3t\n    username: admin\n", {}),
    "exec-without-interactive-mode": ("", "    exec: {{command: get-token, apiVersion: "
                                      "client.authentication.k8s.io/v1}}\n", {}),
    "impersonate-groups-without-user": ("", "    token: s3cr3t\n    as-groups: [admins]\n", {}),
    # the server, the contexts, the file as a whole
    "server-plain-http": ("", T, {}),
    "server-without-scheme": ("", T, {}),
    "server-number": ("", T, {}),
    "no-user-for-context": ("", T, {}),
    "no-current-context": ("", T, {}),
    "unknown-current-context": ("", T, {}),
    "duplicate-cluster-name": ("", T, {}),
    "clusters-as-mapping": ("", T, {}),
    "api-version-v2": ("", T, {}),
    "kind-other": ("", T, {}),
    "top-level-list": ("", "", {}),
    "empty-file": ("", "", {}),
    "missing-file": ("", "", {}),
}


# Where tjc is deliberately stricter than client-go (README): client-go takes the last of two
# equal keys (a kubeconfig saying both false and true), and sends a token with non-ASCII
# characters; tjc refuses both. The test checks that client-go does accept them.
STRICTER: dict[str, tuple[str, str, dict[str, str]]] = {
    "duplicate-key": ("    insecure-skip-tls-verify: false\n"
                      "    insecure-skip-tls-verify: true\n", T, {}),
    "token-file-non-ascii": ("", "    tokenFile: token\n", {"token": "s3cr3t\u00e9\n"}),
}


def _text(name: str, cluster: str, user: str) -> str | None:
    """The kubeconfig of a case (None: no file at all)."""
    server = {"server-plain-http": "http://127.0.0.1:1", "server-without-scheme":
              "127.0.0.1:1", "server-number": "6443"}.get(name, SERVER)
    text = CONFIG.format(server=server, cluster=cluster, user=user or "    {}\n")
    if name == "missing-file":
        return None
    edits: dict[str, Callable[[str], str]] = {
        "bool-in-preferences": lambda t: t + 'preferences: {colors: "no"}\n',
        "no-user-for-context": lambda t: t.replace("user: u}", "user: nobody}"),
        "no-current-context": lambda t: t.replace("current-context: c\n", ""),
        "unknown-current-context": lambda t: t.replace("current-context: c", "current-context: d"),
        "duplicate-cluster-name": lambda t: t.replace(
            "users:", "- name: k\n  cluster: {server: https://127.0.0.1:2}\nusers:"),
        "clusters-as-mapping": lambda t: t.replace(
            f"clusters:\n- name: k\n  cluster:\n    server: {SERVER}\n",
            f"clusters:\n  k: {{server: {SERVER}}}\n"),
        "api-version-v2": lambda t: t.replace("apiVersion: v1", "apiVersion: v2"),
        "kind-other": lambda t: t.replace("kind: Config", "kind: Secret"),
        "top-level-list": lambda t: "- apiVersion: v1\n- kind: Config\n",
        "empty-file": lambda t: "",
    }
    edit = edits.get(name)
    return edit(text) if edit is not None else text


@pytest.fixture(scope="module")
def oracle() -> Iterator[Oracle]:
    """One oracle process for the module."""
    running = Oracle(build())
    yield running
    running.close()


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A CA file and a client certificate and key (never used to connect)."""
    folder = tmp_path_factory.mktemp("pki")
    ca = _CertificateAuthority.create("kubeconfig-ca")
    key, cert = ca.issue("tjc-controller")
    (folder / "ca.crt").write_bytes(_pem_cert(ca.cert))
    (folder / "client.crt").write_bytes(_pem_cert(cert))
    (folder / "client.key").write_bytes(_pem_key(key))
    return {"ca": str(folder / "ca.crt"), "cert": str(folder / "client.crt"),
            "key": str(folder / "client.key"),
            "ca_data": base64.b64encode(_pem_cert(ca.cert)).decode()}


def _ours(path: Path) -> Obj:
    """The controller's verdict: the client `client_from_kubeconfig` builds, or its error."""
    try:
        client = client_from_kubeconfig(str(path))
    except KubeconfigError as exc:
        return {"verdict": "error", "error": str(exc)}
    assert isinstance(client, rest.RestClient)
    creds = client.credentials
    return {"verdict": "ok", "insecure": creds.insecure, "token": creds.bearer() is not None}


@pytest.mark.parity
@pytest.mark.parametrize("name", list(CASES))
def test_kubeconfig_verdicts_match_client_go(oracle: Oracle, pki: dict[str, str],
                                             tmp_path: Path, name: str) -> None:
    cluster, user, files = CASES[name]
    text = _text(name, cluster.format(**pki), user.format(**pki))
    path = tmp_path / "kubeconfig"
    if text is not None:
        path.write_text(text)
    for file, content in files.items():
        (tmp_path / file).write_text(content)
    theirs = oracle.ask({"op": "kubeconfig", "path": str(path)})
    mine = _ours(path)
    assert mine["verdict"] == theirs["verdict"], (name, theirs, mine)
    if theirs["verdict"] == "ok":
        assert (mine["insecure"], mine["token"]) == (theirs["insecure"], theirs["token"]), \
            (name, theirs, mine)
    else:  # one line naming the file, never a token
        assert "\n" not in mine["error"] and str(path) in mine["error"], mine
        assert "s3cr3t" not in mine["error"] and "t0k3n" not in mine["error"], mine


@pytest.mark.parity
@pytest.mark.parametrize("name", list(STRICTER))
def test_where_tjc_is_stricter_than_client_go(oracle: Oracle, pki: dict[str, str],
                                              tmp_path: Path, name: str) -> None:
    cluster, user, files = STRICTER[name]
    path = tmp_path / "kubeconfig"
    path.write_text(_text(name, cluster.format(**pki), user.format(**pki)) or "")
    for file, content in files.items():
        (tmp_path / file).write_text(content)
    assert oracle.ask({"op": "kubeconfig", "path": str(path)})["verdict"] == "ok"
    mine = _ours(path)
    assert mine["verdict"] == "error" and "s3cr3t" not in mine["error"], mine


@pytest.mark.parity
def test_the_table_covers_both_verdicts_and_both_insecure_flags(
        oracle: Oracle, pki: dict[str, str], tmp_path: Path) -> None:
    """The table is not all refusals (or all accepts): a guard on the cases themselves."""
    verdicts = set()
    for name in ("bool-false-bare", "bool-true-bare", "bool-false-quoted"):
        cluster, user, _ = CASES[name]
        path = tmp_path / name
        path.write_text(_text(name, cluster.format(**pki), user.format(**pki)) or "")
        answer = oracle.ask({"op": "kubeconfig", "path": str(path)})
        verdicts.add((answer["verdict"], answer["insecure"]))
    assert verdicts == {("ok", False), ("ok", True), ("error", False)}


def test_a_kubeconfig_error_names_the_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(_text("bool-false-quoted", *CASES["bool-false-quoted"][:2]) or "")
    with pytest.raises(KubeconfigError) as refused:
        kubeconfig.load(path)
    assert str(refused.value) == (
        f"kubeconfig {path}: clusters[0].cluster.insecure-skip-tls-verify: expected a "
        "boolean, found a string")
    data = yaml.safe_load(path.read_text())
    assert data["clusters"][0]["cluster"]["insecure-skip-tls-verify"] == "false"
