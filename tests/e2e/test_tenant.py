"""End to end: a namespace tenant attacks `tjc controller` and changes nothing it builds.

The tenant is a user with the RBAC a tenant has (a Role in its namespace: TrainJobs, ConfigMaps
and Secrets, read-only JobSets, no TrainJob status); the controller runs with exactly the
ClusterRole of `deploy/rbac/` (as its ServiceAccount, by impersonation), so these tests also
show that the least-privilege grant is enough. Each attack: an edited or replaced runtime
snapshot, a planted SSH Secret or hostfile ConfigMap, a TrainJob re-created while the old
JobSet waits for garbage collection, counts no cluster could run.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from compiler.common.jsondata import Obj
from compiler.controller import ownership, snapshot, sshsecret
from compiler.controller.kube import CONFIGMAP, JOBSET, SECRET, TRAINJOB, ApiError, Kube, Resource
from compiler.controller.manager import EVENTS, Controller, Options
from compiler.core.plugins.base import controller_reference
from tests.e2e import cluster as cl
from tests.e2e.poll import condition, eventually

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
RBAC = ROOT / "deploy" / "rbac"
CONTROLLER_USER = "system:serviceaccount:tjc-system:tjc-controller"
TENANT = "tenant-alice"
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
ROLES = Resource("rbac.authorization.k8s.io", "v1", "roles", "Role")
ROLE_BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")
CLUSTER_ROLES = Resource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole",
                         namespaced=False)
CLUSTER_ROLE_BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "clusterrolebindings",
                                 "ClusterRoleBinding", namespaced=False)
TENANT_RULES = [
    {"apiGroups": ["trainer.kubeflow.org"], "resources": ["trainjobs"],
     "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
    {"apiGroups": [""], "resources": ["configmaps", "secrets"],
     "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
    {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"],
     "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["get", "list"]},
]


def impersonating(e2e_cluster: cl.Cluster, user: str) -> Kube:
    """A client that acts as `user` (the admin may impersonate anyone)."""
    api = e2e_cluster.api_client()
    api.set_default_header("Impersonate-User", user)
    return Kube(api)


def apply(kube: Kube, res: Resource, obj: Obj) -> None:
    """Server-side apply of an object of a kind the controller does not know."""
    cl.api_request(kube.api, "PATCH", res.path(None, obj["metadata"]["name"]), obj,
                   query=[("fieldManager", cl.FIELD_MANAGER), ("force", "true")],
                   content_type="application/apply-patch+yaml")


@pytest.fixture(scope="module")
def admin(e2e_api: Any) -> Kube:
    """The admin client; the built-in runtimes and the controller's ClusterRole installed."""
    client = Kube(e2e_api)
    for path in sorted((ROOT / "runtimes").glob("*.yaml")):
        client.apply(yaml.safe_load(path.read_text()))
    apply(client, CLUSTER_ROLES, yaml.safe_load((RBAC / "cluster_role.yaml").read_text()))
    apply(client, CLUSTER_ROLE_BINDINGS, {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "tjc-controller-e2e"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "tjc-controller"},
        "subjects": [{"kind": "User", "name": CONTROLLER_USER,
                      "apiGroup": "rbac.authorization.k8s.io"}]})
    return client


@pytest.fixture(scope="module")
def controller(e2e_cluster: cl.Cluster, admin: Kube) -> Iterator[Controller]:
    """The controller, acting as its ServiceAccount with only the deploy/ ClusterRole."""
    running = Controller(impersonating(e2e_cluster, CONTROLLER_USER),
                         Options(metrics_port=-1, workers=2))
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    yield running
    running.stop.set()
    thread.join(10)


@pytest.fixture
def namespace(admin: Kube) -> str:
    """A fresh namespace where TENANT has a tenant's Role."""
    name = f"tenant-{uuid.uuid4().hex[:8]}"
    admin.create(NAMESPACES, None, {"apiVersion": "v1", "kind": "Namespace",
                                    "metadata": {"name": name}})
    admin.create(ROLES, name, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                               "metadata": {"name": "tenant", "namespace": name},
                               "rules": TENANT_RULES})
    admin.create(ROLE_BINDINGS, name, {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "tenant", "namespace": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "tenant"},
        "subjects": [{"kind": "User", "name": TENANT,
                      "apiGroup": "rbac.authorization.k8s.io"}]})
    eventually(lambda: may_create_trainjobs(admin, name), what="the tenant's RoleBinding in force")
    return name


def may_create_trainjobs(admin: Kube, namespace: str) -> bool:
    """Whether the API server's authorizer already grants TENANT its Role.

    The RBAC authorizer reads Roles and RoleBindings from an informer cache, so a binding just
    created can take a moment to be in force; a SubjectAccessReview asks the authorizer itself.
    """
    review = cl.api_request(admin.api, "POST",
                            "/apis/authorization.k8s.io/v1/subjectaccessreviews", {
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": TENANT, "resourceAttributes": {
            "namespace": namespace, "verb": "create", "group": "trainer.kubeflow.org",
            "resource": "trainjobs"}}})
    return bool(review.get("status", {}).get("allowed"))


@pytest.fixture
def tenant(e2e_cluster: cl.Cluster) -> Kube:
    """The tenant's client."""
    return impersonating(e2e_cluster, TENANT)


def trainjob(namespace: str, name: str, runtime: str = "torch-distributed",
             **spec: Any) -> Obj:
    body: Obj = {"runtimeRef": {"name": runtime}, "trainer": {"numNodes": 2}, **spec}
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": name, "namespace": namespace}, "spec": body}


def refused(kube: Kube, namespace: str, name: str, reason: str) -> Obj:
    """The TrainJob's Refused condition, once it has this reason."""

    def check() -> Obj | None:
        found = condition(kube.get(TRAINJOB, namespace, name), ownership.CONDITION)
        return found if found and (found["status"], found["reason"]) == ("True", reason) \
            else None

    found: Obj = eventually(check)
    return found


def warning(kube: Kube, namespace: str, reason: str) -> Obj:
    """The Warning event of this reason in the namespace."""
    found: Obj = eventually(lambda: next((e for e in kube.list(EVENTS, namespace)[0]
                                          if e.get("reason") == reason), None))
    return found


def forbidden(call: Callable[[], Any]) -> bool:
    try:
        call()
    except ApiError as exc:
        return exc.status == 403
    return False


def hostile(runtime_text: str) -> str:
    """The snapshot a tenant would like the controller to build from."""
    runtime = yaml.safe_load(runtime_text)
    pod = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"][
        "template"]["spec"]
    pod.update(hostNetwork=True, serviceAccountName="cluster-admin",
               volumes=[{"name": "root", "hostPath": {"path": "/"}}])
    pod["containers"][0].update(image="evil.example/root:latest",
                                securityContext={"privileged": True})
    return yaml.safe_dump(runtime)


def merge_patch(kube: Kube, path: str, body: Obj) -> None:
    """A JSON merge patch (no read-modify-write race with the controller's status patches)."""
    cl.api_request(kube.api, "PATCH", path, body, content_type="application/merge-patch+json")


def suspended_jobset(admin: Kube, tenant: Kube, namespace: str, name: str) -> Obj:
    """A suspended TrainJob created by the tenant, once its JobSet and digest exist."""
    tenant.create(TRAINJOB, namespace, trainjob(namespace, name, suspend=True))
    jobset = eventually(lambda: admin.get(JOBSET, namespace, name))
    eventually(lambda: condition(admin.get(TRAINJOB, namespace, name), snapshot.RECORD))
    return jobset  # type: ignore[no-any-return]


def replace(tenant: Kube, namespace: str, res: Resource, obj: Obj) -> None:
    """Delete an object and create another under its name; the controller may take the name
    back in between (it makes a deleted snapshot or Secret again), so try until the tenant
    wins."""
    for _ in range(50):
        tenant.delete(res, namespace, obj["metadata"]["name"])
        try:
            tenant.create(res, namespace, obj)
            return
        except ApiError as exc:
            if exc.status != 409:
                raise
    pytest.fail(f"the tenant never got to create {obj['metadata']['name']}")


def resume(tenant: Kube, namespace: str, name: str) -> None:
    merge_patch(tenant, TRAINJOB.path(namespace, name), {"spec": {"suspend": False}})


def test_the_tenant_cannot_write_what_the_controller_trusts(
        admin: Kube, tenant: Kube, controller: Controller, namespace: str) -> None:
    """The premises: a tenant creates no JobSet and writes no TrainJob status (the digest)."""
    jobset = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
              "metadata": {"name": "mine", "namespace": namespace},
              "spec": {"replicatedJobs": []}}
    assert forbidden(lambda: tenant.create(JOBSET, namespace, jobset))
    suspended_jobset(admin, tenant, namespace, "premise")
    forged = {"status": {"conditions": [{
        "type": snapshot.RECORD, "status": "True", "reason": "Recorded",
        "message": "sha256:" + "0" * 64, "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}
    assert forbidden(lambda: tenant.patch_status(TRAINJOB, namespace, "premise", forged))


@pytest.mark.parametrize("how", ["edit", "delete-and-recreate"])
def test_an_altered_snapshot_builds_nothing(admin: Kube, tenant: Kube, controller: Controller,
                                            namespace: str, how: str) -> None:
    before = suspended_jobset(admin, tenant, namespace, "snap")
    cm = tenant.get(CONFIGMAP, namespace, "snap-runtime-snapshot")
    assert cm is not None
    cm["data"]["runtime"] = hostile(cm["data"]["runtime"])
    if how == "edit":
        tenant.update(CONFIGMAP, namespace, cm)
    else:
        job = tenant.get(TRAINJOB, namespace, "snap") or {}
        replace(tenant, namespace, CONFIGMAP, {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "snap-runtime-snapshot", "namespace": namespace,
                         "labels": cm["metadata"].get("labels") or {},
                         "ownerReferences": [{**controller_reference(
                             "snap", job["metadata"]["uid"]), "blockOwnerDeletion": False}]},
            "data": cm["data"]})
    resume(tenant, namespace, "snap")
    found = refused(admin, namespace, "snap", snapshot.ALTERED)
    assert "ConfigMap " + namespace + "/snap-runtime-snapshot was altered" in found["message"]
    assert warning(admin, namespace, snapshot.ALTERED)["type"] == "Warning"
    time.sleep(2)
    after = admin.get(JOBSET, namespace, "snap")
    assert after is not None and after["spec"] == before["spec"]
    assert after["spec"]["suspend"] is True
    assert "evil.example" not in str(after) and "hostPath" not in str(after)


@pytest.mark.parametrize(("runtime", "kind", "suffix"), [
    ("deepspeed-distributed", "Secret", "-mpi-ssh-auth"),
    ("deepspeed-distributed", "ConfigMap", "-mpi-hostfile"),
    ("torch-distributed", "ConfigMap", "-runtime-snapshot"),
])
def test_a_planted_object_is_neither_used_nor_overwritten(
        admin: Kube, tenant: Kube, controller: Controller, namespace: str, runtime: str,
        kind: str, suffix: str) -> None:
    res = SECRET if kind == "Secret" else CONFIGMAP
    planted = tenant.create(res, namespace, {
        "apiVersion": "v1", "kind": kind,
        "metadata": {"name": "job" + suffix, "namespace": namespace,
                     "labels": {ownership.OWNED_LABEL: "job"}},
        "data": {"ssh-publickey": "YXR0YWNrZXIta2V5", "ssh-privatekey": "a25vd24="}
        if kind == "Secret" else {"hostfile": "evil slots=1\n", "runtime": "planted"}})
    tenant.create(TRAINJOB, namespace, trainjob(namespace, "job", runtime))
    found = refused(admin, namespace, "job", "ObjectNotOwned")
    assert f"{kind} {namespace}/job{suffix}" in found["message"]
    event = warning(admin, namespace, "ObjectNotOwned")
    assert f"{kind} {namespace}/job{suffix}" in event["note"]
    time.sleep(2)
    assert admin.get(JOBSET, namespace, "job") is None
    now = admin.get(res, namespace, "job" + suffix)
    assert now is not None and now["metadata"]["resourceVersion"] == \
        planted["metadata"]["resourceVersion"]
    assert not now["metadata"].get("ownerReferences")
    tenant.delete(res, namespace, "job" + suffix)
    job = tenant.get(TRAINJOB, namespace, "job") or {}
    merge_patch(tenant, TRAINJOB.path(namespace, "job"),  # any event reconciles it
                {"metadata": {"labels": {"retry": "now"}}})
    jobset = eventually(lambda: admin.get(JOBSET, namespace, "job"))
    assert jobset["metadata"]["ownerReferences"][0]["uid"] == job["metadata"]["uid"]
    made = eventually(lambda: admin.get(res, namespace, "job" + suffix))
    assert ownership.controlled_by(made, job["metadata"]["uid"])
    assert made["data"] != planted["data"]


def test_an_ssh_secret_replaced_under_the_trainjobs_owner_is_refused(
        admin: Kube, tenant: Kube, controller: Controller, namespace: str) -> None:
    """The tenant deletes the immutable SSH Secret and makes one with the same ownerReference
    and its own key."""
    job = tenant.create(TRAINJOB, namespace, trainjob(namespace, "mpi", "deepspeed-distributed",
                                                      suspend=True))
    before = eventually(lambda: admin.get(JOBSET, namespace, "mpi"))
    made = eventually(lambda: admin.get(SECRET, namespace, "mpi-mpi-ssh-auth"))
    eventually(lambda: condition(admin.get(TRAINJOB, namespace, "mpi"), sshsecret.RECORD))
    replace(tenant, namespace, SECRET, {
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/ssh-auth",
        "metadata": {"name": "mpi-mpi-ssh-auth", "namespace": namespace,
                     "labels": made["metadata"]["labels"],
                     "ownerReferences": [{**controller_reference("mpi", job["metadata"]["uid"]),
                                          "blockOwnerDeletion": False}]},
        "data": {"ssh-privatekey": "YXR0YWNrZXI=", "ssh-publickey": "YXR0YWNrZXIta2V5"}})
    resume(tenant, namespace, "mpi")
    found = refused(admin, namespace, "mpi", sshsecret.REPLACED)
    assert f"Secret {namespace}/mpi-mpi-ssh-auth" in found["message"]
    time.sleep(2)
    after = admin.get(JOBSET, namespace, "mpi")
    assert after is not None and after["spec"] == before["spec"]
    secret = admin.get(SECRET, namespace, "mpi-mpi-ssh-auth")
    assert secret is not None and secret["data"]["ssh-publickey"] == "YXR0YWNrZXIta2V5"


def test_a_recreated_trainjob_takes_no_status_from_the_old_jobset(
        admin: Kube, tenant: Kube, controller: Controller, namespace: str) -> None:
    tenant.create(TRAINJOB, namespace, trainjob(namespace, "again"))
    old = eventually(lambda: admin.get(JOBSET, namespace, "again"))
    for res, name in ((JOBSET, "again"), (CONFIGMAP, "again-runtime-snapshot")):
        merge_patch(admin, res.path(namespace, name),
                    {"metadata": {"finalizers": ["e2e.tjc/hold"]}})
    tenant.delete(TRAINJOB, namespace, "again")
    eventually(lambda: admin.get(TRAINJOB, namespace, "again") is None)
    created = tenant.create(TRAINJOB, namespace, trainjob(namespace, "again"))
    admin.patch_status(JOBSET, namespace, "again", {"status": {
        "conditions": [{"type": "Completed", "status": "True", "reason": "AllJobsCompleted",
                        "message": "the old run", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
        "replicatedJobsStatus": [{"name": "node", "ready": 0, "succeeded": 2, "failed": 0,
                                  "active": 0, "suspended": 0}]}})
    found = refused(admin, namespace, "again", "ObjectNotOwned")
    assert old["metadata"]["ownerReferences"][0]["uid"] in found["message"]  # the old run's
    time.sleep(3)
    job = admin.get(TRAINJOB, namespace, "again")
    assert condition(job, "Complete") is None and "jobsStatus" not in (job or {})["status"]
    for res, name in ((JOBSET, "again"), (CONFIGMAP, "again-runtime-snapshot")):  # the GC
        merge_patch(admin, res.path(namespace, name), {"metadata": {"finalizers": None}})
        admin.delete(res, namespace, name)
    jobset = eventually(lambda: (js := admin.get(JOBSET, namespace, "again")) and
                        js["metadata"]["uid"] != old["metadata"]["uid"] and js)
    assert jobset["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]
    job = admin.get(TRAINJOB, namespace, "again")
    assert condition(job, "Complete") is None
    assert (condition(job, ownership.CONDITION) or {}).get("status") == "False"


@pytest.mark.parametrize(("runtime", "reason", "rule"), [
    ("deepspeed-distributed", "TrainJobInvalid", "TJC-MPI-HOSTFILE-TOO-LARGE"),
    ("torch-distributed", "TrainJobUnschedulable", "at most 100000"),
])
def test_counts_no_cluster_could_run_fail_once(admin: Kube, tenant: Kube,
                                               controller: Controller, namespace: str,
                                               runtime: str, reason: str, rule: str) -> None:
    big = trainjob(namespace, "huge", runtime)
    big["spec"]["trainer"]["numNodes"] = 2**31 - 1
    tenant.create(TRAINJOB, namespace, big)
    failed = eventually(lambda: condition(admin.get(TRAINJOB, namespace, "huge"), "Failed"))
    assert failed["reason"] == reason and rule in failed["message"]
    assert admin.get(JOBSET, namespace, "huge") is None
    assert admin.get(CONFIGMAP, namespace, "huge-mpi-hostfile") is None
    tenant.create(TRAINJOB, namespace, trainjob(namespace, "small", runtime))
    eventually(lambda: admin.get(JOBSET, namespace, "small"))


def test_only_the_controllers_own_configmaps_and_secrets_are_cached(
        admin: Kube, tenant: Kube, controller: Controller, namespace: str) -> None:
    tenant.create(SECRET, namespace, {"apiVersion": "v1", "kind": "Secret",
                                      "metadata": {"name": "private", "namespace": namespace},
                                      "data": {"password": "aHVudGVyMg=="}})
    tenant.create(CONFIGMAP, namespace, {"apiVersion": "v1", "kind": "ConfigMap",
                                         "metadata": {"name": "other", "namespace": namespace},
                                         "data": {"k": "v"}})
    tenant.create(TRAINJOB, namespace, trainjob(namespace, "ds", "deepspeed-distributed"))
    eventually(lambda: admin.get(JOBSET, namespace, "ds"))
    configmaps, secrets = controller.owned[1], controller.owned[2]
    eventually(lambda: secrets.get(namespace, "ds-mpi-ssh-auth"))
    eventually(lambda: configmaps.get(namespace, "ds-mpi-hostfile"))
    assert secrets.get(namespace, "private") is None
    assert configmaps.get(namespace, "other") is None
    cached = [o for inf in (configmaps, secrets) for o in inf.items()]
    assert cached and all(set(o) <= {"apiVersion", "kind", "metadata"} for o in cached)
    assert all(ownership.OWNED_LABEL in (o["metadata"].get("labels") or {}) for o in cached)
