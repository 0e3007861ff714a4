"""The controller's access to the API server: plain-dict objects over a REST client.

Every call is one REST request through `rest.RestClient` (certificate and token credentials)
or, for other kubeconfigs, `kubernetes.client.ApiClient`, once the kubeconfig has passed
client-go's checks (`kubeconfig`): GET, LIST, WATCH (a stream of
events, `Gone` on 410), server-side apply with one field manager, JSON merge patch of the
status subresource, DELETE, and the create/update a Lease needs. Objects stay JSON dicts, as
the compiler takes and gives them.
"""

from __future__ import annotations

import json
import os
import ssl
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

from compiler.common.diagnostics import one_line
from compiler.common.jsondata import Obj
from compiler.common.records import dataclass
from compiler.controller import kubeconfig
from compiler.controller.kubeconfig import KubeconfigError, TokenError

FIELD_MANAGER = "trainer"


@dataclass(frozen=True)
class Resource:
    """A REST resource: where it lives and whether it is namespaced."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        """`group/version`, or `version` for the core group."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None,
             sub: str | None = None) -> str:
        """The URL path of the collection, or of one object (and a subresource)."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{quote(namespace, safe='')}"
        base += f"/{self.plural}"
        if name:
            base += f"/{quote(name, safe='')}"  # a slash is no path step
        if sub:
            base += f"/{sub}"
        return base


TRAINJOB = Resource("trainer.kubeflow.org", "v1alpha1", "trainjobs", "TrainJob")
TRAINING_RUNTIME = Resource("trainer.kubeflow.org", "v1alpha1", "trainingruntimes",
                            "TrainingRuntime")
CLUSTER_RUNTIME = Resource("trainer.kubeflow.org", "v1alpha1", "clustertrainingruntimes",
                           "ClusterTrainingRuntime", namespaced=False)
JOBSET = Resource("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet")
CONFIGMAP = Resource("", "v1", "configmaps", "ConfigMap")
SECRET = Resource("", "v1", "secrets", "Secret")
EVENT = Resource("", "v1", "events", "Event")
LEASE = Resource("coordination.k8s.io", "v1", "leases", "Lease")
COSCHEDULING_PODGROUP = Resource("scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup")
VOLCANO_PODGROUP = Resource("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup")
POLICY_REPORT = Resource("wgpolicyk8s.io", "v1alpha2", "policyreports", "PolicyReport")
CLUSTER_POLICY_REPORT = Resource("wgpolicyk8s.io", "v1alpha2", "clusterpolicyreports",
                                 "ClusterPolicyReport", namespaced=False)
BY_API = {(r.api_version, r.kind): r for r in (
    TRAINJOB, TRAINING_RUNTIME, CLUSTER_RUNTIME, JOBSET, CONFIGMAP, SECRET, EVENT, LEASE,
    COSCHEDULING_PODGROUP, VOLCANO_PODGROUP, POLICY_REPORT, CLUSTER_POLICY_REPORT)}


class ApiError(Exception):
    """An error status from the API server."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status, self.reason, self.message = status, reason, message


class Gone(ApiError):
    """A watch's resourceVersion is too old (410): list again."""


def resource_of(obj: Obj) -> Resource:
    """The resource of an object by its apiVersion and kind."""
    found = BY_API.get((str(obj.get("apiVersion")), str(obj.get("kind"))))
    if found is None:
        raise ValueError(f"no resource known for {obj.get('apiVersion')} {obj.get('kind')}")
    return found


class Kube:
    """JSON requests to the API server through a `kubernetes.client.ApiClient`."""

    def __init__(self, api_client: Any, timeout: float = 30.0) -> None:
        self.api = api_client
        self.timeout = timeout

    def _call(self, method: str, path: str, body: Any = None, *,
              query: list[tuple[str, str]] | None = None,
              content_type: str = "application/json", stream: bool = False,
              timeout: float | None = None) -> Any:
        from urllib3.exceptions import HTTPError

        try:
            response = self.api.call_api(
                path, method, query_params=query or [],
                header_params={"Content-Type": content_type, "Accept": "application/json"},
                body=body, auth_settings=["BearerToken"], _preload_content=False,
                _return_http_data_only=True, _request_timeout=timeout or self.timeout)
        except (HTTPError, OSError) as exc:  # no answer at all (the API server is away)
            raise ApiError(0, "Unavailable", f"{type(exc).__name__}: {exc}") from None
        except TokenError as exc:  # the token file rotated to something no header can carry
            raise ApiError(0, "InvalidToken", str(exc)) from None
        except Exception as exc:
            if _status_error(exc):
                raise _api_error(exc) from None
            raise
        if stream:
            return response
        try:
            data = response.data
        finally:
            response.release_conn()
        return json.loads(data) if data else None

    def get(self, res: Resource, namespace: str | None, name: str) -> Obj | None:
        """The object, or None when it does not exist."""
        try:
            found: Obj = self._call("GET", res.path(namespace, name))
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise
        found.setdefault("apiVersion", res.api_version)
        found.setdefault("kind", res.kind)
        return found

    def list(self, res: Resource, namespace: str | None = None,
             selector: str | None = None) -> tuple[list[Obj], str]:
        """Every object (of a namespace, or all; with the label selector, if given) and the
        list's resourceVersion."""
        items: list[Obj] = []
        select = [("labelSelector", selector)] if selector else []
        query: list[tuple[str, str]] = [("limit", "500"), *select]
        while True:
            page = self._call("GET", res.path(namespace), query=query)
            for item in page.get("items") or []:
                item.setdefault("apiVersion", res.api_version)
                item.setdefault("kind", res.kind)
                items.append(item)
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return items, str((page.get("metadata") or {}).get("resourceVersion", ""))
            query = [("limit", "500"), *select, ("continue", token)]

    def watch(self, res: Resource, namespace: str | None, resource_version: str,
              *, seconds: int = 300, selector: str | None = None) -> Iterator[tuple[str, Obj]]:
        """(type, object) events after `resource_version`; `Gone` when it is too old."""
        query = [("watch", "true"), ("resourceVersion", resource_version),
                 ("allowWatchBookmarks", "true"), ("timeoutSeconds", str(seconds))]
        if selector:
            query.append(("labelSelector", selector))
        response = self._call("GET", res.path(namespace), query=query, stream=True,
                              timeout=seconds + 30)
        try:
            buffer = b""
            for chunk in response.stream(65536):
                lines = (buffer + chunk).split(b"\n")
                buffer = lines.pop()  # the start of a line still to come
                for line in lines:
                    if line.strip():
                        yield _event(json.loads(line), res)
        finally:
            response.release_conn()

    def apply(self, obj: Obj, *, force: bool = True) -> Obj:
        """Server-side apply with the controller's field manager."""
        res, meta = resource_of(obj), obj.get("metadata") or {}
        query = [("fieldManager", FIELD_MANAGER), ("force", "true" if force else "false")]
        result: Obj = self._call("PATCH", res.path(meta.get("namespace"), meta["name"]), obj,
                                 query=query, content_type="application/apply-patch+yaml")
        return result

    def patch_status(self, res: Resource, namespace: str, name: str, patch: Obj) -> Obj:
        """A JSON merge patch of the status subresource."""
        result: Obj = self._call("PATCH", res.path(namespace, name, "status"), patch,
                                 content_type="application/merge-patch+json")
        return result

    def delete(self, res: Resource, namespace: str, name: str, *,
               uid: str | None = None) -> bool:
        """Delete (background propagation; only the object with this uid, if given); False
        when it was not there."""
        body: Obj = {"kind": "DeleteOptions", "apiVersion": "v1",
                     "propagationPolicy": "Background"}
        if uid:
            body["preconditions"] = {"uid": uid}
        try:
            self._call("DELETE", res.path(namespace, name), body)
        except ApiError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def create(self, res: Resource, namespace: str | None, obj: Obj) -> Obj:
        """Create an object (a conflict raises `ApiError` 409)."""
        result: Obj = self._call("POST", res.path(namespace), obj,
                                 query=[("fieldManager", FIELD_MANAGER)])
        return result

    def update(self, res: Resource, namespace: str | None, obj: Obj) -> Obj:
        """Replace an object (optimistic: a stale resourceVersion raises 409)."""
        result: Obj = self._call("PUT", res.path(namespace, obj["metadata"]["name"]), obj)
        return result


def _event(raw: Obj, res: Resource) -> tuple[str, Obj]:
    kind, obj = str(raw.get("type", "")), raw.get("object") or {}
    if kind == "ERROR":
        status = int(obj.get("code", 500))
        error = Gone if status == 410 else ApiError
        raise error(status, str(obj.get("reason", "")), str(obj.get("message", "")))
    obj.setdefault("apiVersion", res.api_version)
    obj.setdefault("kind", res.kind)
    return kind, obj


def _status_error(exc: Exception) -> bool:
    """Whether the client raised an error status: `rest.HTTPStatusError`, or the kubernetes
    client's `ApiException` (only imported where that client is in use)."""
    from compiler.controller.rest import HTTPStatusError

    if isinstance(exc, HTTPStatusError):
        return True
    module = sys.modules.get("kubernetes.client.exceptions")
    return module is not None and isinstance(exc, module.ApiException)


def _api_error(exc: Any) -> ApiError:
    status = int(getattr(exc, "status", 0) or 0)
    try:
        body = json.loads(getattr(exc, "body", "") or "{}")
    except ValueError:
        body = {}
    error = Gone if status == 410 else ApiError
    return error(status, str(body.get("reason") or getattr(exc, "reason", "")),
                 str(body.get("message") or exc))


def client_from_kubeconfig(path: str | None) -> Any:
    """A client from a kubeconfig file (or in-cluster config, or $KUBECONFIG, or
    ~/.kube/config), every file checked as client-go checks it first (`kubeconfig`):
    `rest.RestClient` for certificate and token credentials, else a
    `kubernetes.client.ApiClient`."""
    from compiler.controller import rest

    if not path:
        found = rest.in_cluster()
        if found is not None:
            return found
    file = path or os.environ.get("KUBECONFIG") or "~/.kube/config"
    parts = [Path(part).expanduser() for part in file.split(os.pathsep) if part]
    for part in parts:
        _check_kubeconfig(part)
    if len(parts) == 1:
        selected = kubeconfig.load(parts[0])
        if not selected.others:
            try:
                return rest.client_for(selected)
            except (OSError, ssl.SSLError) as exc:  # PEM that is no certificate or key
                raise KubeconfigError(one_line(
                    f"kubeconfig {parts[0]}: its certificate authority, client certificate "
                    f"or key cannot be used: {getattr(exc, 'reason', None) or exc}")) from None
    else:  # a list of files, merged by the kubernetes client: each is checked as typed
        for part in parts:
            if part.exists():
                kubeconfig.decode(part)
    try:
        return _kubernetes_client(path)
    except Exception as exc:  # the client's ConfigException, or what its parsing raises
        told = " ".join(str(exc).split()) if type(exc).__name__ == "ConfigException" else \
            "not a kubeconfig (a mapping of clusters, users, contexts, current-context)"
        raise KubeconfigError(f"cannot use kubeconfig {file}: {told}") from exc


KUBECONFIG_MAX_BYTES = 16 << 20


def _check_kubeconfig(path: Path) -> None:
    """A kubeconfig that is there must be a regular file of sane size: /dev/zero or a FIFO
    would be read without end by the kubernetes client."""
    try:
        info = path.stat()
    except OSError:
        return  # absent: in-cluster config, or the client says that none was found
    if not stat.S_ISREG(info.st_mode):
        raise KubeconfigError(f"kubeconfig {path} is not a regular file")
    if info.st_size > KUBECONFIG_MAX_BYTES:
        raise KubeconfigError(f"kubeconfig {path} is larger than "
                              f"{KUBECONFIG_MAX_BYTES >> 20} MiB")


def _kubernetes_client(path: str | None) -> Any:
    from kubernetes import client, config

    if path:
        return config.new_client_from_config(config_file=path)
    try:
        config.load_incluster_config()
        return client.ApiClient()
    except config.ConfigException:
        return config.new_client_from_config()
