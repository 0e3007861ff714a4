"""The API server's pod and Job rules in tjc (`compiler.kube.podspec`, TJC-POD-*): one case per
rule of core and batch validation, the scope each rule waits for (a runtime patch is merged
later, a runtime is completed by the TrainJob and the plugins), admission on runtimes and
runtime patches, and the compile's check of the JobSet it made (`compiler.core.podrefusals`):
what the TrainJob completes is not refused, what the composition breaks is, and upstream's
plugins add nothing the API server refuses. The differential test against kube-apiserver's
own code is `tests/parity/test_parity.py::test_pod_templates_match_the_api_server`.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from compiler import admit, compile_trainjob
from compiler.common.diagnostics import Severity
from compiler.common.jsondata import Obj
from compiler.io.builtin import builtin_runtimes
from compiler.kube import podresources
from compiler.kube.podspec.base import Scope
from compiler.kube.podspec.check import job_problems, pod_problems

PODS, RUNTIME, PATCH = Scope.PODS, Scope.RUNTIME, Scope.PATCH
API = "trainer.kubeflow.org/v1alpha1"


def found(pod: Obj, scope: Scope = PODS) -> set[tuple[str, str]]:
    """(rule, dotted path) of every problem of a pod spec."""
    return {(p.rule, ".".join(map(str, p.path))) for p in pod_problems(pod, scope)}


def pod(**container: Any) -> Obj:
    """A valid pod spec with one container `node`, changed by `container`'s fields."""
    return {"containers": [{"name": "node", "image": "img:1", **container}]}


def job_found(spec: Obj, scope: Scope = PODS) -> set[tuple[str, str]]:
    return {(p.rule, ".".join(map(str, p.path))) for p in job_problems(spec, scope)}


def test_a_plain_pod_and_job_pass() -> None:
    assert found(pod()) == set()
    assert job_found({"template": {"spec": pod()}}) == set()


# ---------------------------------------------------------------- containers


def test_container_names_images_and_policies() -> None:
    spec = {"containers": [{"name": "Node", "image": ""}, {"name": "side", "image": " x ",
                                                           "imagePullPolicy": "Sometimes",
                                                           "terminationMessagePolicy": "Log"}],
            "initContainers": [{"name": "side", "image": "x"}],
            "ephemeralContainers": [{"name": "debug", "image": "x"}]}
    assert found(spec) == {
        ("TJC-POD-CONTAINER", "containers.0.name"), ("TJC-POD-CONTAINER", "containers.0.image"),
        ("TJC-POD-CONTAINER", "containers.1.image"),
        ("TJC-POD-CONTAINER", "containers.1.imagePullPolicy"),
        ("TJC-POD-CONTAINER", "containers.1.terminationMessagePolicy"),
        ("TJC-POD-CONTAINER", "initContainers.0.name"),  # the init container repeats a name
        ("TJC-POD-CONTAINER", "ephemeralContainers")}
    whitespace = [p for p in pod_problems(spec, PODS) if p.path == ("containers", 1, "image")]
    assert [p.pod_only for p in whitespace] == [True]  # a Job takes it, its Pods are refused
    # the image may come from the TrainJob: only the compiled JobSet must have one
    assert ("TJC-POD-CONTAINER", "containers.0.image") not in found(spec, RUNTIME)
    assert found({"containers": []}, RUNTIME) == {("TJC-POD-CONTAINER", "containers")}


def test_init_containers_take_probes_only_as_sidecars() -> None:
    probe = {"exec": {"command": ["true"]}}
    init = {"name": "init", "image": "x", "readinessProbe": probe, "lifecycle": {}}
    assert found({**pod(), "initContainers": [init]}) == {
        ("TJC-POD-CONTAINER", "initContainers.0.readinessProbe"),
        ("TJC-POD-CONTAINER", "initContainers.0.lifecycle")}
    sidecar = {**init, "restartPolicy": "Always", "lifecycle": {"preStop": probe}}
    assert found({**pod(), "initContainers": [sidecar]}) == set()
    assert found({**pod(), "initContainers": [{**sidecar, "restartPolicy": "Sometimes"}]}) >= {
        ("TJC-POD-CONTAINER", "initContainers.0.restartPolicy")}


def test_host_ports_are_taken_once_per_pod() -> None:
    spec: Obj = {"containers": [{"name": "a", "image": "x", "ports": [{"containerPort": 80,
                                                                       "hostPort": 8080}]},
                                {"name": "b", "image": "x", "ports": [{"containerPort": 81,
                                                                       "hostPort": 8080}]}]}
    assert found(spec) == {("TJC-POD-CONTAINER", "containers.1.ports.0.hostPort")}
    spec["containers"][1]["ports"][0]["protocol"] = "UDP"
    assert found(spec) == set()


# ---------------------------------------------------------------- ports


def test_port_numbers_names_and_protocols() -> None:
    ports = [{"containerPort": 0}, {"containerPort": 70000, "hostPort": 70000},
             {"containerPort": 80, "protocol": "ICMP"}, {"containerPort": 81, "name": "HTTP"},
             {"containerPort": 82, "name": "a-very-long-port-name"},
             {"containerPort": 83, "name": "web"}, {"containerPort": 84, "name": "web"}]
    assert found(pod(ports=ports)) == {
        ("TJC-POD-PORT", "containers.0.ports.0.containerPort"),
        ("TJC-POD-PORT", "containers.0.ports.1.containerPort"),
        ("TJC-POD-PORT", "containers.0.ports.1.hostPort"),
        ("TJC-POD-PORT", "containers.0.ports.2.protocol"),
        ("TJC-POD-PORT", "containers.0.ports.3.name"),
        ("TJC-POD-PORT", "containers.0.ports.4.name"),
        ("TJC-POD-PORT", "containers.0.ports.6.name")}  # the second `web`
    assert ("TJC-POD-PORT", "containers.0.ports.6.name") not in found(pod(ports=ports), PATCH)


def test_host_network_needs_host_port_equal_to_the_container_port() -> None:
    spec = {**pod(ports=[{"containerPort": 80, "hostPort": 81}]), "hostNetwork": True}
    assert found(spec) == {("TJC-POD-PORT", "containers.0.ports.0.hostPort")}


# ---------------------------------------------------------------- env


def test_env_names_follow_the_relaxed_rule_and_may_repeat() -> None:
    env = [{"name": "my var.1", "value": "x"}, {"name": "my var.1", "value": "y"},
           {"name": "A=B"}, {"name": "É"}, {"name": ""}]
    assert found(pod(env=env)) == {("TJC-POD-ENV", "containers.0.env.2.name"),
                                   ("TJC-POD-ENV", "containers.0.env.3.name"),
                                   ("TJC-POD-ENV", "containers.0.env.4.name")}


def test_env_value_from_names_one_valid_source() -> None:
    secret = {"name": "s", "key": "k"}
    env = [{"name": "A", "valueFrom": {}},
           {"name": "B", "value": "x", "valueFrom": {"secretKeyRef": secret}},
           {"name": "C", "valueFrom": {"secretKeyRef": secret, "configMapKeyRef": secret}},
           {"name": "D", "valueFrom": {"fieldRef": {"fieldPath": "status.phase"}}},
           {"name": "E", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['a b']"}}},
           {"name": "F", "valueFrom": {"resourceFieldRef": {"resource": "limits.gpu"}}},
           {"name": "G", "valueFrom": {"secretKeyRef": {"name": "Bad", "key": ".."}}},
           {"name": "H", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name",
                                                    "apiVersion": "v2"}}},
           {"name": "I", "valueFrom": {"fieldRef": {"fieldPath": "spec.host"}}}]
    at = "containers.0.env."
    assert found(pod(env=env)) == {
        ("TJC-POD-ENV", at + "0.valueFrom"), ("TJC-POD-ENV", at + "1.valueFrom"),
        ("TJC-POD-ENV", at + "2.valueFrom"), ("TJC-POD-ENV", at + "3.valueFrom.fieldRef.fieldPath"),
        ("TJC-POD-ENV", at + "4.valueFrom.fieldRef"),
        ("TJC-POD-ENV", at + "5.valueFrom.resourceFieldRef.resource"),
        ("TJC-POD-ENV", at + "6.valueFrom.secretKeyRef.name"),
        ("TJC-POD-ENV", at + "6.valueFrom.secretKeyRef.key"),
        ("TJC-POD-ENV", at + "7.valueFrom.fieldRef.fieldPath")}
    # a patch's valueFrom merges with the runtime's: its shape is checked only later
    assert ("TJC-POD-ENV", at + "0.valueFrom") not in found(pod(env=env), PATCH)


def test_env_from_prefix_and_source() -> None:
    env_from = [{"prefix": "A=", "configMapRef": {"name": "cm-"}}, {},
                {"configMapRef": {"name": "cm"}, "secretRef": {"name": "s"}},
                {"secretRef": {"name": "Bad"}}]
    assert found(pod(envFrom=env_from)) == {
        ("TJC-POD-ENV", "containers.0.envFrom.0.prefix"), ("TJC-POD-ENV", "containers.0.envFrom.1"),
        ("TJC-POD-ENV", "containers.0.envFrom.2"),
        ("TJC-POD-ENV", "containers.0.envFrom.3.secretRef.name")}


# ---------------------------------------------------------------- resources


def test_resource_names_and_request_limit_relations() -> None:
    resources = {"requests": {"cpu": "2", "nvidia.com/gpu": "1", "example.com/x": "1",
                              "foo": "1"},
                 "limits": {"cpu": "1", "nvidia.com/gpu": "2", "pods": "1",
                            "hugepages-2Mi": "1Mi"}}
    at = "containers.0.resources."
    assert found(pod(resources=resources)) == {
        ("TJC-POD-RESOURCES", at + "requests"),        # cpu above its limit; gpu not equal
        ("TJC-POD-RESOURCES", at + "limits"),          # example.com/x without a limit
        ("TJC-POD-RESOURCES", at + "requests.foo"), ("TJC-POD-RESOURCES", at + "limits.pods"),
        ("TJC-POD-RESOURCES", at + "limits.hugepages-2Mi")}  # half a page
    assert found(pod(resources={"limits": {"hugepages-2Mi": "2Mi"}})) == {
        ("TJC-POD-RESOURCES", "containers.0.resources")}  # hugepages without cpu or memory
    # resourcesPerNode replaces the trainer's resources: the relations wait for the JobSet
    assert found(pod(resources=resources), RUNTIME) == {
        ("TJC-POD-RESOURCES", at + "requests.foo"), ("TJC-POD-RESOURCES", at + "limits.pods"),
        ("TJC-POD-RESOURCES", at + "limits.hugepages-2Mi")}


def test_amounts_are_compared_rounded_up_to_thousandths() -> None:
    resources = {"requests": {"cpu": "0.0001"}, "limits": {"cpu": "1m"}}
    assert found(pod(resources=resources)) == set()


def test_an_extended_resource_too_large_for_thousandths_is_refused() -> None:
    assert podresources.amount_problem("example.com/units", "99999999999999999999") is not None
    assert podresources.amount_problem("example.com/units", "9223372036854775") is None
    assert podresources.amount_problem("memory", "99999999999999999999") is None


# ---------------------------------------------------------------- probes


def test_probes_name_one_valid_handler_and_counts() -> None:
    probes = {
        "livenessProbe": {"successThreshold": 2, "exec": {"command": []}},
        "readinessProbe": {"terminationGracePeriodSeconds": 5, "periodSeconds": -1,
                           "tcpSocket": {"port": "HTTP"}},
        "startupProbe": {"httpGet": {"port": 0, "scheme": "FTP"}, "grpc": {"port": 1}},
        "lifecycle": {"preStop": {"sleep": {"seconds": 31}}, "postStart": {}}}
    at = "containers.0."
    assert found(pod(**probes)) == {
        ("TJC-POD-PROBE", at + "livenessProbe.successThreshold"),
        ("TJC-POD-PROBE", at + "livenessProbe.exec.command"),
        ("TJC-POD-PROBE", at + "readinessProbe.terminationGracePeriodSeconds"),
        ("TJC-POD-PROBE", at + "readinessProbe.periodSeconds"),
        ("TJC-POD-PROBE", at + "readinessProbe.tcpSocket.port"),
        ("TJC-POD-PROBE", at + "startupProbe.grpc"),
        ("TJC-POD-PROBE", at + "startupProbe.httpGet.port"),
        ("TJC-POD-PROBE", at + "startupProbe.httpGet.scheme"),
        ("TJC-POD-PROBE", at + "lifecycle.preStop.sleep"),  # beyond the 30 s grace period
        ("TJC-POD-PROBE", at + "lifecycle.postStart")}
    sleepy = {**pod(lifecycle={"preStop": {"sleep": {"seconds": 31}}}),
              "terminationGracePeriodSeconds": 60}
    assert found(sleepy) == set()


# ---------------------------------------------------------------- volumes and mounts


def test_volumes_have_unique_names_one_source_and_what_it_needs() -> None:
    volumes = [{"name": "a", "emptyDir": {}}, {"name": "a", "secret": {"secretName": ""}},
               {"name": "b", "emptyDir": {}, "downwardAPI": {}},
               {"name": "c", "configMap": {"name": ""}},
               {"name": "d", "persistentVolumeClaim": {"claimName": ""}},
               {"name": "e", "hostPath": {"path": "/x/../y", "type": "Folder"}},
               {"name": "f", "nfs": {"server": "", "path": "rel"}},
               {"name": "g", "emptyDir": {"sizeLimit": "-1Gi"}}, {"name": "h"}]
    assert found({**pod(), "volumes": volumes}) == {
        ("TJC-POD-VOLUME", "volumes.1.name"), ("TJC-POD-VOLUME", "volumes.1.secret.secretName"),
        ("TJC-POD-VOLUME", "volumes.2.downwarAPI"),  # upstream's spelling of the path
        ("TJC-POD-VOLUME", "volumes.3.configMap.name"),
        ("TJC-POD-VOLUME", "volumes.4.persistentVolumeClaim.claimName"),
        ("TJC-POD-VOLUME", "volumes.5.hostPath.path"),
        ("TJC-POD-VOLUME", "volumes.5.hostPath.type"),
        ("TJC-POD-VOLUME", "volumes.6.nfs.server"), ("TJC-POD-VOLUME", "volumes.6.nfs.path"),
        ("TJC-POD-VOLUME", "volumes.7.emptyDir.sizeLimit")}  # `h` is given emptyDir


def test_mounts_name_a_sound_volume_once_per_path() -> None:
    volumes = [{"name": "data", "emptyDir": {}}, {"name": "bad", "secret": {"secretName": ""}}]
    mounts = [{"name": "data", "mountPath": "/d"}, {"name": "data", "mountPath": "/d"},
              {"name": "bad", "mountPath": "/b"}, {"name": "missing", "mountPath": "/m"},
              {"name": "data", "mountPath": ""},
              {"name": "data", "mountPath": "/s", "subPath": "a", "subPathExpr": "b"},
              {"name": "data", "mountPath": "/p", "mountPropagation": "Bidirectional"},
              {"name": "data", "mountPath": "/r", "recursiveReadOnly": "Enabled"}]
    spec = {**pod(volumeMounts=mounts), "volumes": volumes}
    at = "containers.0.volumeMounts."
    assert found(spec) - {("TJC-POD-VOLUME", "volumes.1.secret.secretName")} == {
        ("TJC-POD-MOUNT", at + "1.mountPath"), ("TJC-POD-MOUNT", at + "2.name"),
        ("TJC-POD-MOUNT", at + "3.name"), ("TJC-POD-MOUNT", at + "4.mountPath"),
        ("TJC-POD-MOUNT", at + "5.subPathExpr"), ("TJC-POD-MOUNT", at + "6.mountPropagation"),
        ("TJC-POD-MOUNT", at + "7.recursiveReadOnly")}
    # a patch or a plugin may add the volume, and a patch may make the container privileged
    assert ("TJC-POD-MOUNT", at + "3.name") not in found(spec, RUNTIME)
    assert ("TJC-POD-MOUNT", at + "6.mountPropagation") not in found(spec, RUNTIME)
    spec["containers"][0]["securityContext"] = {"privileged": True}
    assert ("TJC-POD-MOUNT", at + "6.mountPropagation") not in found(spec)


# ---------------------------------------------------------------- pod fields and security


def test_pod_level_fields() -> None:
    spec = {**pod(), "restartPolicy": "Sometimes", "dnsPolicy": "None",
            "nodeSelector": {"bad key": "v"}, "serviceAccountName": "Bad_SA",
            "hostname": "a.b", "activeDeadlineSeconds": 0,
            "tolerations": [{"operator": "Equal"}, {"key": "k", "operator": "Exists",
                                                     "value": "v"},
                            {"key": "k", "tolerationSeconds": 5},
                            {"key": "k", "operator": "Lt", "effect": "Sometimes"}]}
    assert found(spec) == {
        ("TJC-POD-SPEC", "restartPolicy"), ("TJC-POD-SPEC", "dnsConfig"),
        ("TJC-POD-SPEC", "nodeSelector"), ("TJC-POD-SPEC", "serviceAccountName"),
        ("TJC-POD-SPEC", "hostname"), ("TJC-POD-SPEC", "activeDeadlineSeconds"),
        ("TJC-POD-SPEC", "tolerations.0.operator"), ("TJC-POD-SPEC", "tolerations.1.operator"),
        ("TJC-POD-SPEC", "tolerations.2.effect"), ("TJC-POD-SPEC", "tolerations.3.operator"),
        ("TJC-POD-SPEC", "tolerations.3.effect")}


def test_security_contexts() -> None:
    context = {"runAsUser": -1, "privileged": True, "allowPrivilegeEscalation": False,
               "procMount": "Unmasked", "seccompProfile": {"type": "Localhost"}}
    spec = {**pod(securityContext=context),
            "securityContext": {"fsGroup": -5, "fsGroupChangePolicy": "Sometimes",
                                "supplementalGroups": [1, 2**31]}}
    at = "containers.0.securityContext"
    assert found(spec) == {
        ("TJC-POD-SECURITY", at + ".runAsUser"), ("TJC-POD-SECURITY", at),
        ("TJC-POD-SECURITY", at + ".procMount"),
        ("TJC-POD-SECURITY", at + ".seccompProfile.localhostProfile"),
        ("TJC-POD-SECURITY", "securityContext.fsGroup"),
        ("TJC-POD-SECURITY", "securityContext.fsGroupChangePolicy"),
        ("TJC-POD-SECURITY", "securityContext.supplementalGroups.1")}
    assert found({**pod(securityContext={"privileged": True}), "hostUsers": False}) == set()


# ---------------------------------------------------------------- the Job


def test_job_counts_modes_and_restart_policy() -> None:
    template = {"spec": {**pod(), "restartPolicy": "Always"}}
    spec = {"template": template, "parallelism": -1, "backoffLimit": -1,
            "completionMode": "Sometimes", "maxFailedIndexes": 1,
            "podReplacementPolicy": "Never"}
    assert job_found(spec) == {
        ("TJC-POD-JOB", "parallelism"), ("TJC-POD-JOB", "backoffLimit"),
        ("TJC-POD-JOB", "backoffLimitPerIndex"), ("TJC-POD-JOB", "completionMode"),
        ("TJC-POD-JOB", "podReplacementPolicy"), ("TJC-POD-JOB", "template.spec.restartPolicy")}
    # the JobSet plugin sets the trainer's parallelism and completions from numNodes
    assert ("TJC-POD-JOB", "parallelism") not in job_found(spec, RUNTIME)
    assert job_found(spec, PATCH) == set()  # a patch holds only the template


def test_indexed_jobs_need_completions_and_failure_policies_never() -> None:
    # JobSet makes every Job Indexed unless told: parallelism alone is not enough
    assert job_found({"template": {"spec": pod()}, "parallelism": 2}) == {
        ("TJC-POD-JOB", "completions")}
    assert job_found({"template": {"spec": pod()}, "parallelism": 2,
                      "completionMode": "NonIndexed", "backoffLimitPerIndex": 1}) == {
        ("TJC-POD-JOB", "backoffLimitPerIndex")}
    failing: Obj = {"template": {"spec": pod()}, "podFailurePolicy": {"rules": []}}
    assert job_found(failing) == {("TJC-POD-JOB", "template.spec.restartPolicy")}
    failing["template"]["spec"]["restartPolicy"] = "Never"
    assert job_found(failing) == set()


# ---------------------------------------------------------------- admission and the compile


def _runtime(**container: Any) -> Obj:
    node = {"name": "node", "image": "img:1", **container}
    return {"apiVersion": API, "kind": "ClusterTrainingRuntime", "metadata": {"name": "rt"},
            "spec": {"mlPolicy": {"numNodes": 1}, "template": {"spec": {"replicatedJobs": [{
                "name": "node", "template": {
                    "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step":
                                            "trainer"}},
                    "spec": {"template": {"spec": {"containers": [node]}}}}}]}}}}


def _trainjob(**trainer: Any) -> Obj:
    return {"apiVersion": API, "kind": "TrainJob", "metadata": {"name": "tj", "namespace": "ns"},
            "spec": {"runtimeRef": {"name": "rt"}, "trainer": trainer}}


def _errors(diagnostics: Any) -> list[tuple[str, tuple[Any, ...], str]]:
    return [(d.rule, d.path, d.subject) for d in diagnostics if d.severity is Severity.ERROR]


NODE_POD = ("spec", "template", "spec", "replicatedJobs", 0, "template", "spec", "template",
            "spec", "containers", 0)


def test_admission_refuses_a_runtime_whose_pods_the_api_server_refuses() -> None:
    runtime = _runtime(env=[{"name": "A=B", "value": "1"}])
    assert ("TJC-POD-ENV", (*NODE_POD, "env", 0, "name"), "runtime") in _errors(
        admit(_trainjob(), runtime))
    result = compile_trainjob(_trainjob(), runtime)
    assert not result.ok and "TJC-RUNTIME-INVALID" in [d.rule for d in result.diagnostics]


def test_admission_refuses_a_runtime_patch_with_a_refused_value() -> None:
    job = _trainjob()
    job["spec"]["runtimePatches"] = [{"manager": "example.com/m", "trainingRuntimeSpec": {
        "template": {"spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {
            "template": {"spec": {"containers": [{"name": "node", "volumeMounts": [
                {"name": "from-elsewhere", "mountPath": "/x", "mountPropagation": "Shared"},
                {"name": "data", "mountPath": "/y", "subPath": "/abs"}]}],
                "volumes": [{"name": "data", "hostPath": {"path": "/d", "type": "Folder"}}],
                "tolerations": [{"key": "k", "operator": "Lt"}]}}}}}]}}}}]
    patch = ("spec", "runtimePatches", 0, "trainingRuntimeSpec", "template", "spec",
             "replicatedJobs", 0, "template", "spec", "template", "spec")
    mounts = (*patch, "containers", 0, "volumeMounts")
    # these values are wrong whatever they merge with; the mounted volume may be the
    # runtime's or another patch's: only the composition says
    assert sorted(_errors(admit(job, _runtime()))) == [
        ("TJC-POD-MOUNT", (*mounts, 0, "mountPropagation"), "trainjob"),
        ("TJC-POD-SPEC", (*patch, "tolerations", 0, "operator"), "trainjob"),
        ("TJC-POD-VOLUME", (*mounts, 1, "subPath"), "trainjob"),
        ("TJC-POD-VOLUME", (*patch, "volumes", 0, "hostPath", "type"), "trainjob")]


def test_what_the_trainjob_completes_is_not_refused() -> None:
    runtime = _runtime(image="", resources={"requests": {"cpu": "4"}, "limits": {"cpu": "2"}})
    runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"][
        "parallelism"] = 2  # no completions: the JobSet plugin writes numNodes to both
    # resourcesPerNode is merged into the trainer's resources, amount by amount
    job = _trainjob(image="img:2", numNodes=2,
                    resourcesPerNode={"requests": {"cpu": "2"}, "limits": {"cpu": "2"}})
    result = compile_trainjob(job, runtime)
    assert result.ok, [d.text() for d in result.diagnostics]


def test_the_compile_refuses_what_the_composition_breaks() -> None:
    result = compile_trainjob(_trainjob(), _runtime(image=""))
    assert _errors(result.diagnostics) == [("TJC-POD-CONTAINER", ("spec", "runtimeRef"),
                                            "trainjob")]
    assert "containers[0].image" in result.diagnostics[0].message and not result.objects
    job = _trainjob(resourcesPerNode={"requests": {"cpu": "4"}, "limits": {"cpu": "2"}})
    result = compile_trainjob(job, _runtime())
    assert _errors(result.diagnostics) == [
        ("TJC-POD-RESOURCES", ("spec", "trainer", "resourcesPerNode"), "trainjob")]
    job = _trainjob(env=[{"name": "S", "valueFrom": {"secretKeyRef": {"name": "S",
                                                                       "key": "k"}}}])
    result = compile_trainjob(job, _runtime())
    assert _errors(result.diagnostics) == [
        ("TJC-POD-ENV", ("spec", "trainer", "env", 0), "trainjob")]


def test_a_volume_claim_policy_gives_its_mount_a_volume() -> None:
    runtime = _runtime(volumeMounts=[{"name": "cache", "mountPath": "/cache"}])
    runtime["spec"]["template"]["spec"]["volumeClaimPolicies"] = [
        {"templates": [{"metadata": {"name": "cache"}, "spec": {
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}]
    assert compile_trainjob(_trainjob(), runtime).ok
    del runtime["spec"]["template"]["spec"]["volumeClaimPolicies"]
    assert [d.rule for d in compile_trainjob(_trainjob(), runtime).diagnostics] == [
        "TJC-POD-MOUNT"]


@pytest.mark.parametrize("name", sorted(d.data["metadata"]["name"] for d in builtin_runtimes()))
def test_upstreams_plugins_add_nothing_the_api_server_refuses(name: str) -> None:
    """Every built-in runtime through its plugins (MPI's SSH volume and mounts, the torch and
    JAX env and ports, the initializers' claims) with a TrainJob that sets a little of
    everything: the JobSet passes every pod rule."""
    runtime = next(d.data for d in builtin_runtimes() if d.data["metadata"]["name"] == name)
    job = copy.deepcopy(_trainjob(numNodes=2, env=[{"name": "EXTRA", "value": "1"}],
                                  resourcesPerNode={"limits": {"cpu": "2", "memory": "4Gi"}}))
    job["spec"]["runtimeRef"]["name"] = name
    result = compile_trainjob(job, runtime)
    assert not [d.text() for d in result.diagnostics if d.rule.startswith("TJC-POD-")]
