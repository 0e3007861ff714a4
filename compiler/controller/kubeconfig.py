"""A kubeconfig read as client-go reads it, before the controller trusts any of it.

client-go (`clientcmd`) decodes the YAML as sigs.k8s.io/yaml does (YAML 1.1 scalars, then
JSON) into typed structs: a string where a bool belongs (`insecure-skip-tls-verify: "false"`),
a number where a string belongs, a list where a mapping belongs is an error, never a value to
coerce (Python's `bool("false")` is True); unknown fields are ignored, as there. Then the
current context's user and cluster must be usable (`ConfirmUsable`): a server, the CA as a file
or as data but not both, a client certificate with its key, files that open, one way to
authenticate. Then the transport: a CA together with `insecure-skip-tls-verify` is refused,
a token file is trimmed of surrounding white space and must not be empty, and a token must be
a valid header value (a line break inside it is refused). Only an `https` server gets the
credentials, as client-go gives them.

Every refusal is a `KubeconfigError`: one line naming the file and the field, with the type
found but never a value, so a token never reaches a message. The oracle test
(`tests/controller/test_controller_kubeconfig.py`) holds this module to client-go's own verdicts.

Called by `kube.client_from_kubeconfig`; `rest` builds its client from `Selected` and reads
tokens again through `bearer_token`.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit

from compiler.common.diagnostics import Diagnostic, one_line
from compiler.common.errors import InputError
from compiler.common.records import dataclass
from compiler.io.loader import iter_source, read_source

TOKEN_MAX_BYTES = 1 << 20


class KubeconfigError(ValueError):
    """No usable kubeconfig: the controller cannot start (a usage error, exit 2)."""


# The typed v1 Config (k8s.io/client-go/tools/clientcmd/api/v1), field by field.
Kind = Any
STR, BOOL, BYTES, ANY = "string", "boolean", "base64 data", "any"


def _obj(**fields: Kind) -> dict[str, Kind]:
    return fields


def _list(item: Kind) -> list[Kind]:
    return [item]


def _map(value: Kind) -> tuple[str, Kind]:
    return ("map", value)


_EXTENSIONS = _list(_obj(name=STR, extension=ANY))
_CLUSTER = {"server": STR, "tls-server-name": STR, "insecure-skip-tls-verify": BOOL,
            "certificate-authority": STR, "certificate-authority-data": BYTES,
            "proxy-url": STR, "disable-compression": BOOL, "extensions": _EXTENSIONS}
_EXEC = _obj(command=STR, args=_list(STR), env=_list(_obj(name=STR, value=STR)),
             apiVersion=STR, installHint=STR, provideClusterInfo=BOOL, interactiveMode=STR)
_USER = {"client-certificate": STR, "client-certificate-data": BYTES, "client-key": STR,
         "client-key-data": BYTES, "token": STR, "tokenFile": STR, "as": STR, "as-uid": STR,
         "as-groups": _list(STR), "as-user-extra": _map(_list(STR)), "username": STR,
         "password": STR, "auth-provider": _obj(name=STR, config=_map(STR)), "exec": _EXEC,
         "extensions": _EXTENSIONS}
_CONTEXT = {"cluster": STR, "user": STR, "namespace": STR, "extensions": _EXTENSIONS}
CONFIG = _obj(kind=STR, apiVersion=STR,
              preferences=_obj(colors=BOOL, extensions=_EXTENSIONS),
              clusters=_list(_obj(name=STR, cluster=_CLUSTER)),
              users=_list(_obj(name=STR, user=_USER)),
              contexts=_list(_obj(name=STR, context=_CONTEXT)),
              **{"current-context": STR, "extensions": _EXTENSIONS})

# What this project's REST client does itself; a user or cluster using anything else (an exec
# plugin, an auth-provider, a proxy, ...) is handed to the kubernetes client once checked.
OWN_CLUSTER_FIELDS = frozenset({"server", "certificate-authority", "certificate-authority-data",
                                "insecure-skip-tls-verify", "extensions"})
OWN_USER_FIELDS = frozenset({"client-certificate", "client-certificate-data", "client-key",
                             "client-key-data", "token", "tokenFile", "extensions"})


@dataclass(frozen=True)
class Selected:
    """The current context's server and credentials, checked as client-go checks them;
    credentials only for an `https` server (client-go gives a plain `http` one none)."""

    server: str
    ca_file: str | None = None
    ca_data: bytes | None = None
    insecure: bool = False
    cert_file: str | None = None
    cert_data: bytes | None = None
    key_file: str | None = None
    key_data: bytes | None = None
    token: str | None = None
    token_file: str | None = None
    others: tuple[str, ...] = ()  # fields only the kubernetes client handles


def decode(path: Path) -> dict[str, Any]:
    """The kubeconfig's YAML, checked against the typed v1 Config (null is an absent field;
    unknown fields are kept but never read); `KubeconfigError` naming the file and field."""
    data = _document(path)
    _check(data, CONFIG, "", lambda where, what: _fail(path, where, what))
    if data.get("apiVersion") not in (None, "", "v1") or \
            data.get("kind") not in (None, "", "Config"):
        _fail(path, "apiVersion", f"expected apiVersion v1 and kind Config, found "
              f"{data.get('apiVersion') or '(none)'} {data.get('kind') or '(none)'}")
    for kind in ("clusters", "users", "contexts"):  # lists that clientcmd makes maps of
        seen: set[str] = set()
        for i, entry in enumerate(data.get(kind) or []):
            name = str((entry or {}).get("name") or "")
            if name in seen:
                _fail(path, f"{kind}[{i}].name", f"duplicate name {name!r}")
            seen.add(name)
    return dict(data)


def _document(path: Path) -> Any:
    """The file's first YAML document as sigs.k8s.io/yaml reads it ({} when empty), bounded
    as every input file is."""
    try:
        source = read_source(str(path))
    except InputError as exc:
        message = exc.diagnostic.message
        raise KubeconfigError(one_line(f"cannot use kubeconfig: {message}")) from None
    source.stream = False  # client-go reads the file as one YAML document, not cut at ---
    for item in iter_source(source):
        if isinstance(item, Diagnostic):
            where = f"line {item.locations[0].line}: " if item.locations else ""
            raise KubeconfigError(one_line(f"kubeconfig {path}: {where}{item.message}"))
        return item.data if not item.base else []  # a List's item: not a Config
    return {}


def _fail(path: Path, where: str, what: str) -> NoReturn:
    field = f"{where}: " if where else ""
    raise KubeconfigError(one_line(f"kubeconfig {path}: {field}{what}"))


_JSON_TYPES = {str: "a string", bool: "a boolean", int: "a number", float: "a number",
               list: "a list", dict: "a mapping"}


def _check(value: Any, kind: Kind, where: str, fail: Callable[[str, str], None]) -> None:
    """Raise (through `fail`) at the first value of another JSON type than its Go field's,
    as encoding/json does; null fits every field."""
    if value is None or kind == ANY:
        return
    found = _JSON_TYPES.get(type(value), type(value).__name__)
    if (kind in (STR, BYTES) and not isinstance(value, str)) or \
            (kind == BOOL and not isinstance(value, bool)):
        fail(where, f"expected a {'string' if kind == BYTES else kind}, found {found}")
    elif kind == BYTES and _base64(value) is None:
        fail(where, "expected base64 data (standard alphabet, padded)")
    elif isinstance(kind, list):
        if not isinstance(value, list):
            fail(where, f"expected a list, found {found}")
        for i, item in enumerate(value):
            _check(item, kind[0], f"{where}[{i}]", fail)
    elif isinstance(kind, (tuple, dict)):
        if not isinstance(value, dict):
            fail(where, f"expected a mapping, found {found}")
        for key, item in value.items():
            field = kind[1] if isinstance(kind, tuple) else kind.get(key, ANY)
            _check(item, field, f"{where}.{key}" if where else key, fail)


def _base64(text: str) -> bytes | None:
    """Go's []byte from a JSON string: standard base64, padded; line breaks skipped."""
    try:
        return base64.b64decode(text.replace("\r", "").replace("\n", ""), validate=True)
    except (binascii.Error, ValueError):
        return None


def select(path: Path, config: Mapping[str, Any]) -> Selected:
    """The current context's cluster and user, usable as client-go's `ClientConfig` and
    transport require; relative file names are taken from the kubeconfig's folder."""
    named = {kind: {str((e or {}).get("name") or ""): ((e or {}).get(kind[:-1]) or {}, i)
                    for i, e in enumerate(config.get(kind) or [])}
             for kind in ("clusters", "users", "contexts")}
    current = str(config.get("current-context") or "")
    if current and current not in named["contexts"]:
        _fail(path, "current-context", f"context {current!r} is not in contexts")
    context = named["contexts"].get(current, ({}, -1))[0]
    cluster, c = named["clusters"].get(str(context.get("cluster") or ""), ({}, -1))
    user, u = named["users"].get(str(context.get("user") or ""), ({}, -1))
    base = path.parent
    checked = _Checked(path, base, f"clusters[{c}].cluster", f"users[{u}].user")
    checked.user(user)
    checked.cluster(cluster)
    return checked.selected(cluster, user)


class _Checked:
    """The checks of one cluster and user, with the field paths they are reported at."""

    def __init__(self, path: Path, base: Path, cluster_at: str, user_at: str) -> None:
        self.path, self.base = path, base
        self.cluster_at, self.user_at = cluster_at, user_at

    def fail(self, where: str, what: str) -> NoReturn:
        _fail(self.path, where, what)

    def file(self, entry: Mapping[str, Any], key: str) -> str | None:
        """A file name of the kubeconfig, relative to its folder (client-go expands no
        `~`)."""
        name = entry.get(key)
        return str(self.base / name) if name else None

    def cluster(self, cluster: Mapping[str, Any]) -> None:
        at = self.cluster_at
        if not any(v not in (None, "", False, [], {}) for v in cluster.values()):
            self.fail("current-context", "no cluster with a server is selected")
        if not cluster.get("server"):
            self.fail(f"{at}.server", "expected the API server's URL")
        proxy = cluster.get("proxy-url")
        if proxy and urlsplit(proxy).scheme not in ("http", "https", "socks5"):
            self.fail(f"{at}.proxy-url", "expected an http, https or socks5 URL")
        if cluster.get("certificate-authority") and cluster.get("certificate-authority-data"):
            self.fail(at, "certificate-authority and certificate-authority-data are both set")
        self.opens(cluster, "certificate-authority", at)

    def opens(self, entry: Mapping[str, Any], key: str, at: str) -> None:
        name = self.file(entry, key)
        if name is None:
            return
        try:
            Path(name).open("rb").close()
        except OSError as exc:
            self.fail(f"{at}.{key}", f"cannot read {name}: {exc.strerror or exc}")

    def user(self, user: Mapping[str, Any]) -> None:
        at = self.user_at
        if user.get("client-certificate") or user.get("client-certificate-data"):
            for key in ("client-certificate", "client-key"):
                if user.get(key) and user.get(f"{key}-data"):
                    self.fail(at, f"{key} and {key}-data are both set")
            if not user.get("client-key") and not user.get("client-key-data"):
                self.fail(at, "a client certificate needs client-key or client-key-data")
            self.opens(user, "client-certificate", at)
            self.opens(user, "client-key", at)
        if user.get("exec"):
            self.exec(user, f"{at}.exec")
        basic = bool(user.get("username") or user.get("password"))
        if user.get("token") and basic:
            self.fail(at, "more than one way to authenticate: token and username/password")
        if not user.get("as") and (user.get("as-uid") or user.get("as-groups")
                                   or user.get("as-user-extra")):
            self.fail(at, "as-uid, as-groups or as-user-extra without as (the user to "
                      "impersonate)")

    def exec(self, user: Mapping[str, Any], at: str) -> None:
        plugin = user["exec"]
        if user.get("auth-provider"):
            self.fail(at, "exec and auth-provider are both set")
        for key in ("command", "apiVersion"):
            if not plugin.get(key):
                self.fail(f"{at}.{key}", "expected a value")
        if any(not (env or {}).get("name") for env in plugin.get("env") or []):
            self.fail(f"{at}.env", "every variable needs a name")
        mode = plugin.get("interactiveMode") or (
            "IfAvailable" if plugin.get("apiVersion") in (
                "client.authentication.k8s.io/v1beta1",
                "client.authentication.k8s.io/v1alpha1") else "")
        if mode not in ("Never", "IfAvailable", "Always"):
            self.fail(f"{at}.interactiveMode", "expected Never, IfAvailable or Always")

    def selected(self, cluster: Mapping[str, Any], user: Mapping[str, Any]) -> Selected:
        server = str(cluster["server"])
        if "://" not in server:
            server = "http://" + server  # as client-go's DefaultServerURL makes it
        others = _others(cluster, _CLUSTER, OWN_CLUSTER_FIELDS) + \
            _others(user, _USER, OWN_USER_FIELDS)
        if urlsplit(server).scheme != "https":
            return Selected(server=server, others=others)
        ca_file = self.file(cluster, "certificate-authority")
        ca_data = _base64(cluster.get("certificate-authority-data") or "") or None
        insecure = cluster.get("insecure-skip-tls-verify") is True
        if insecure and (ca_file or ca_data):
            self.fail(self.cluster_at, "a certificate authority and insecure-skip-tls-verify "
                      "true cannot be used together")
        token, token_file = user.get("token") or None, self.file(user, "tokenFile")
        self.check_token(token, token_file)
        return Selected(
            server=server, ca_file=ca_file, ca_data=ca_data, insecure=insecure,
            cert_file=self.file(user, "client-certificate"),
            cert_data=_base64(user.get("client-certificate-data") or "") or None,
            key_file=self.file(user, "client-key"),
            key_data=_base64(user.get("client-key-data") or "") or None,
            token=token, token_file=token_file, others=others)

    def check_token(self, token: str | None, token_file: str | None) -> None:
        """The token requests will carry: the file's (read now, as client-go reads it when
        no inline token is given), else the inline one, each a valid header value."""
        if token_file is not None:
            try:
                if read_token(token_file):
                    return  # the file's token goes with every request
                problem = f"{token_file} holds no token (only white space, or nothing)"
            except TokenUnreadable as exc:
                problem = str(exc)
            except TokenError as exc:  # read, but no header can carry it: sent, and refused
                self.fail(f"{self.user_at}.tokenFile", str(exc))
            if token is None:  # else client-go falls back to the inline token
                self.fail(f"{self.user_at}.tokenFile", problem)
        if token is not None and not valid_header_value(token):
            self.fail(f"{self.user_at}.token", "the token holds a line break or another "
                      "control character (or a non-ASCII one): it cannot be a bearer token")


def _others(entry: Mapping[str, Any], fields: Mapping[str, Kind],
            own: frozenset[str]) -> tuple[str, ...]:
    """The fields of a cluster or user that are set and that only the kubernetes client
    handles (unknown fields are ignored, as client-go ignores them)."""
    return tuple(sorted(k for k, v in entry.items()
                        if k in fields and k not in own and v not in (None, "", False, [], {})))


class TokenError(ValueError):
    """A token that cannot be sent (or, `TokenUnreadable`, a token file that cannot be
    read); the message names the file, never the token."""


class TokenUnreadable(TokenError):
    """A token file that cannot be read (gone, too large, not text)."""


# Go's strings.TrimSpace: Unicode white space (Python's str.strip also strips \x1c-\x1f).
_LATIN_SPACE = "\t\n\v\f\r \x85\xa0"


def _go_trim(text: str) -> str:
    def space(ch: str) -> bool:
        return ch in _LATIN_SPACE or (ord(ch) > 0xFF and ch.isspace())

    start, end = 0, len(text)
    while start < end and space(text[start]):
        start += 1
    while end > start and space(text[end - 1]):
        end -= 1
    return text[start:end]


def valid_header_value(token: str) -> bool:
    """Whether `Bearer <token>` is a header value to send: printable ASCII or tabs (Go's
    net/http refuses control characters; non-ASCII is refused here too)."""
    return all(ch == "\t" or " " <= ch <= "~" for ch in token)


def read_token(path: str) -> str:
    """A token file's token as client-go's file token source reads it (white space around it
    trimmed; empty when there is none); `TokenError` when it cannot be read or sent."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(TOKEN_MAX_BYTES + 1)
    except OSError as exc:
        raise TokenUnreadable(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(raw) > TOKEN_MAX_BYTES:
        raise TokenUnreadable(f"{path} is larger than {TOKEN_MAX_BYTES >> 20} MiB")
    try:
        token = _go_trim(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise TokenUnreadable(f"{path} is not UTF-8 text") from None
    if not valid_header_value(token):
        raise TokenError(f"the token in {path} holds a line break or another control "
                         "character (or a non-ASCII one): it cannot be a bearer token")
    return token


def load(path: Path) -> Selected:
    """The kubeconfig's current context, checked as client-go checks it."""
    return select(path, decode(path))
