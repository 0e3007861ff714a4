"""Tests of `compiler.kube.cel`: each CEL rule of the four CRDs failing and passing, the
transition rules and their correlation (list-map items, atomic lists, additional properties),
the Kubernetes details (generateName, ratcheting, set/map list equality, messageExpression,
fieldPath, reason, optionalOldSelf, runtime errors, rules the runtime cannot compile) and the
built-in runtimes passing."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from compiler.common.diagnostics import Diagnostic, Severity
from compiler.common.diagnostics import Path as FieldPath
from compiler.kube import cel
from compiler.kube.defaults import default_in_place
from compiler.kube.structural import sanitize

ROOT = Path(__file__).resolve().parents[2]
RUNTIME_KINDS = ("TrainingRuntime", "ClusterTrainingRuntime")
IMMUTABLE = "TJC-CEL-IMMUTABLE"


def prepared(kind: str, doc: dict[str, Any]) -> dict[str, Any]:
    """What the API server would hold: the document sanitized and defaulted."""
    if kind != "JobSet":  # the structural pass knows the Trainer kinds only
        doc, _ = sanitize(kind, doc, subject="trainjob")
    return default_in_place(kind, doc)


def found(diagnostics: list[Diagnostic]) -> list[tuple[str, FieldPath]]:
    return [(d.rule, d.path) for d in diagnostics]


def trainjob(name: str = "job-1", **spec: Any) -> dict[str, Any]:
    return prepared("TrainJob", {
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"runtimeRef": {"name": "torch-distributed"},
                 "trainer": {"numNodes": 2, "image": "pytorch"}, **spec},
    })


def pod_template(*containers: str) -> dict[str, Any]:
    return {"spec": {"template": {"spec": {
        "containers": [{"name": c, "image": "img"} for c in containers]}}}}


def jobset_spec(**extra: Any) -> dict[str, Any]:
    jobs = extra.pop("replicatedJobs", None) or [
        {"name": "node", "template": pod_template("node")}]
    return {"replicatedJobs": jobs, **extra}


def runtime(kind: str, ml_policy: dict[str, Any] | None = None, **template_spec: Any
            ) -> dict[str, Any]:
    return prepared(kind, {
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": kind,
        "metadata": {"name": "rt"},
        "spec": {"mlPolicy": ml_policy if ml_policy is not None else {"numNodes": 1, "torch": {}},
                 "template": {"spec": jobset_spec(**template_spec)}},
    })


def jobset(**spec: Any) -> dict[str, Any]:
    return prepared("JobSet", {
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": "js", "namespace": "default"}, "spec": jobset_spec(**spec),
    })


@contextlib.contextmanager
def with_plan(schema: dict[str, Any]) -> Iterator[None]:
    """Run `validate("TrainJob", ...)` against a made-up schema for the test's duration."""
    saved = cel._PLANS.get("trainjob")
    node = cel._build(schema)
    assert node is not None
    node.root = True
    cel._PLANS["trainjob"] = node
    try:
        yield
    finally:
        if saved is None:
            cel._PLANS.pop("trainjob", None)
        else:
            cel._PLANS["trainjob"] = saved


# --- TrainJob ---------------------------------------------------------------------------------

def test_a_valid_trainjob_passes_on_create_and_update() -> None:
    doc = trainjob(initializer={"dataset": {"storageUri": "hf://tatsu-lab/alpaca"},
                                "model": {"storageUri": ""}})
    assert cel.validate("TrainJob", doc) == []
    assert cel.validate("TrainJob", doc, copy.deepcopy(doc)) == []


@pytest.mark.parametrize("name", ["Job-1", "1job", "job_1", "job-", "job.1"])
def test_name_format_fails(name: str) -> None:
    [diagnostic] = cel.validate("TrainJob", trainjob(name))
    assert diagnostic.rule == "TJC-CEL-NAME-FORMAT"
    assert diagnostic.message == "metadata.name must match RFC 1035 DNS label format"
    assert diagnostic.severity is Severity.ERROR
    assert diagnostic.path == ("metadata", "name"), "reported at the field it is about"
    assert diagnostic.subject == "document"


@pytest.mark.parametrize("name", ["j", "job-1", "a" * 63, "x9"])
def test_name_format_and_length_pass(name: str) -> None:
    assert cel.validate("TrainJob", trainjob(name)) == []


def test_name_length_fails() -> None:
    assert found(cel.validate("TrainJob", trainjob("a" * 64))) == [
        ("TJC-CEL-NAME-LENGTH", ("metadata", "name"))]


def test_name_format_uses_re2_semantics() -> None:
    # Python's `$` would match before the trailing newline; RE2's does not.
    assert found(cel.validate("TrainJob", trainjob("job\n"))) == [
        ("TJC-CEL-NAME-FORMAT", ("metadata", "name"))]


def test_generate_name_is_checked_as_the_generated_name() -> None:
    doc = trainjob()
    doc["metadata"] = {"generateName": "job-"}
    assert cel.validate("TrainJob", doc) == []
    doc["metadata"] = {"generateName": "j" * 80}  # truncated to 58 characters before the suffix
    assert cel.validate("TrainJob", doc) == []
    doc["metadata"] = {"generateName": "Job-"}
    assert found(cel.validate("TrainJob", doc)) == [("TJC-CEL-NAME-FORMAT", ("metadata", "name"))]


def test_a_missing_name_is_a_runtime_error_as_in_kubernetes() -> None:
    doc = trainjob()
    doc["metadata"] = {"namespace": "default"}
    diagnostics = cel.validate("TrainJob", doc)
    assert [d.rule for d in diagnostics] == ["TJC-CEL-ERROR", "TJC-CEL-ERROR"]
    assert diagnostics[0].message == ("no such key: name evaluating rule: metadata.name must "
                                      "match RFC 1035 DNS label format")
    assert all(d.severity is Severity.ERROR for d in diagnostics)


def test_root_rules_see_only_name_and_generate_name_of_metadata() -> None:
    schema = {"type": "object", "x-kubernetes-validations": [
        {"rule": "!has(self.metadata.namespace)", "message": "hidden"}]}
    with with_plan(schema):
        assert cel.validate("TrainJob", trainjob()) == []


def test_managed_by_fails() -> None:
    diagnostics = cel.validate("TrainJob", trainjob(managedBy="example.com/controller"))
    assert found(diagnostics) == [("TJC-CEL-MANAGED-BY", ("spec", "managedBy"))]
    assert diagnostics[0].message.startswith("ManagedBy must be")


@pytest.mark.parametrize("manager", ["trainer.kubeflow.org/trainjob-controller",
                                     "kueue.x-k8s.io/multikueue"])
def test_managed_by_passes(manager: str) -> None:
    assert cel.validate("TrainJob", trainjob(managedBy=manager)) == []


@pytest.mark.parametrize("uri", ["hf", "hf:/x", "://x", "1s3://x", "hf://", "hf://x\n"])
@pytest.mark.parametrize("which", ["dataset", "model"])
def test_storage_uri_fails(which: str, uri: str) -> None:
    diagnostics = cel.validate("TrainJob", trainjob(initializer={which: {"storageUri": uri}}))
    path = ("spec", "initializer", which, "storageUri")
    assert found(diagnostics) == [("TJC-CEL-STORAGE-URI", path)]
    assert diagnostics[0].message == ("storageUri may be empty, or it must be a valid URI "
                                      "(scheme://...)")


@pytest.mark.parametrize("uri", ["", "hf://meta-llama/Llama-3.2-1B", "s3://b/k", "pvc+x.y://a"])
def test_storage_uri_passes(uri: str) -> None:
    doc = trainjob(initializer={"dataset": {"storageUri": uri}, "model": {"storageUri": uri}})
    assert cel.validate("TrainJob", doc) == []


def test_trainer_status_without_last_updated_time_fails() -> None:
    doc = trainjob()
    doc["status"] = {"trainerStatus": {"progressPercentage": 40}}
    diagnostics = cel.validate("TrainJob", doc)
    assert found(diagnostics) == [("TJC-CEL-TRAINER-STATUS", ("status", "trainerStatus"))]
    assert diagnostics[0].message == "lastUpdatedTime is required when trainerStatus is present"


def test_trainer_status_with_last_updated_time_passes() -> None:
    doc = trainjob()
    doc["status"] = {"trainerStatus": {"progressPercentage": 40,
                                       "lastUpdatedTime": "2025-01-01T00:00:00Z"}}
    assert cel.validate("TrainJob", doc) == []


# --- transition rules -----------------------------------------------------------------------

@pytest.mark.parametrize(("field", "before", "after"), [
    ("trainer", {"numNodes": 2, "image": "pytorch"}, {"numNodes": 4, "image": "pytorch"}),
    ("runtimeRef", {"name": "torch-distributed"}, {"name": "deepspeed-distributed"}),
    ("managedBy", "trainer.kubeflow.org/trainjob-controller", "kueue.x-k8s.io/multikueue"),
    ("activeDeadlineSeconds", 60, 120),
    ("initializer", {"dataset": {"storageUri": "hf://a"}}, {"dataset": {"storageUri": "hf://b"}}),
])
def test_immutable_fields_fail_on_change(field: str, before: Any, after: Any) -> None:
    old = trainjob(**{field: before})
    new = trainjob(**{field: after})
    diagnostics = cel.validate("TrainJob", new, old)
    assert found(diagnostics) == [(IMMUTABLE, ("spec", field))]
    assert diagnostics[0].message == "field is immutable"
    assert cel.validate("TrainJob", new, copy.deepcopy(new)) == []


def test_transition_rule_needs_an_old_object() -> None:
    new = trainjob(trainer={"numNodes": 4, "image": "pytorch"})
    assert cel.validate("TrainJob", new) == []
    assert cel.validate("TrainJob", new, None) == []


def test_transition_rule_needs_an_old_value_at_the_location() -> None:
    old = trainjob()
    new = trainjob(activeDeadlineSeconds=60, initializer={"model": {"storageUri": "hf://m"}})
    assert cel.validate("TrainJob", new, old) == []


def test_runtime_patches_correlate_by_manager() -> None:
    def patched(*patches: tuple[str, list[str]]) -> dict[str, Any]:
        return trainjob(runtimePatches=[
            {"manager": manager, "trainingRuntimeSpec": {"template": {"spec": {
                "replicatedJobs": [{"name": "node", "template": pod_template(*containers)}]}}}}
            for manager, containers in patches])

    old = patched(("kueue", ["a"]), ("tool", ["b", "c"]))
    containers = ("spec", "runtimePatches", 0, "trainingRuntimeSpec", "template", "spec",
                  "replicatedJobs", 0, "template", "spec", "template", "spec", "containers")
    # reordered patches correlate by manager key: only the changed one is reported
    new = patched(("tool", ["b", "d"]), ("kueue", ["a"]))
    assert found(cel.validate("TrainJob", new, old)) == [(IMMUTABLE, containers)]
    # containers is a list-type map: its order does not matter to equality
    assert cel.validate("TrainJob", patched(("tool", ["c", "b"]), ("kueue", ["a"])), old) == []
    # a patch with a new manager has no old value to compare with
    assert cel.validate("TrainJob", patched(("other", ["z"])), old) == []


def test_ratcheting_skips_unchanged_values_on_update() -> None:
    old = trainjob(managedBy="example.com/old-controller")
    assert found(cel.validate("TrainJob", old)) == [("TJC-CEL-MANAGED-BY", ("spec", "managedBy"))]
    updated = copy.deepcopy(old)
    updated["spec"]["trainer"]["numNodes"] = 2
    assert found(cel.validate("TrainJob", updated, old)) == []
    updated["spec"]["managedBy"] = "example.com/new-controller"
    assert found(cel.validate("TrainJob", updated, old)) == [
        ("TJC-CEL-MANAGED-BY", ("spec", "managedBy")), (IMMUTABLE, ("spec", "managedBy"))]


# --- TrainingRuntime and ClusterTrainingRuntime -----------------------------------------------

@pytest.mark.parametrize("kind", RUNTIME_KINDS)
def test_one_ml_policy_fails(kind: str) -> None:
    doc = runtime(kind, {"numNodes": 1, "torch": {}, "mpi": {}})
    diagnostics = cel.validate(kind, doc)
    assert found(diagnostics) == [("TJC-CEL-ONE-ML-POLICY", ("spec", "mlPolicy"))]
    assert diagnostics[0].message == "Only one of the policy can be configured"


@pytest.mark.parametrize("kind", RUNTIME_KINDS)
@pytest.mark.parametrize("policy", [{}, {"torch": {}}, {"mpi": {}}, {"jax": {}},
                                    {"xgboost": {}}, {"flux": {}}])
def test_one_ml_policy_passes(kind: str, policy: dict[str, Any]) -> None:
    assert cel.validate(kind, runtime(kind, {"numNodes": 1, **policy})) == []


@pytest.mark.parametrize("kind", RUNTIME_KINDS)
def test_flux_num_proc_per_node_fails_below_one(kind: str) -> None:
    diagnostics = cel.validate(kind, runtime(kind, {"flux": {"numProcPerNode": 0}}))
    path = ("spec", "mlPolicy", "flux", "numProcPerNode")
    assert found(diagnostics) == [("TJC-CEL-NUM-PROC-PER-NODE", path)]
    assert diagnostics[0].message == "NumProcPerNode in fluxPolicy must be >= 1"


@pytest.mark.parametrize("kind", RUNTIME_KINDS)
def test_flux_num_proc_per_node_passes(kind: str) -> None:
    assert cel.validate(kind, runtime(kind, {"flux": {"numProcPerNode": 1}})) == []
    assert cel.validate(kind, runtime(kind, {"flux": {}})) == []  # defaulted to 1


@pytest.mark.parametrize("kind", RUNTIME_KINDS)
def test_env_injection_into_node_fails(kind: str) -> None:
    policy = {"torch": {"envInjection": {"targets": [
        {"jobName": "sidecars", "containerNames": ["agent"]},
        {"jobName": "node", "containerNames": ["agent", "node"]}]}}}
    diagnostics = cel.validate(kind, runtime(kind, policy))
    path = ("spec", "mlPolicy", "torch", "envInjection", "targets", 1, "containerNames")
    assert found(diagnostics) == [("TJC-CEL-ENV-INJECTION-NODE", path)]


@pytest.mark.parametrize("kind", RUNTIME_KINDS)
def test_env_injection_into_other_containers_passes(kind: str) -> None:
    policy = {"torch": {"envInjection": {"targets": [
        {"jobName": "node", "containerNames": ["agent", "nodes"]}]}}}
    assert cel.validate(kind, runtime(kind, policy)) == []


DEPENDENT_JOBS = [
    {"name": "init", "template": pod_template("init")},
    {"name": "node", "template": pod_template("node"),
     "dependsOn": [{"name": "init", "status": "Complete"}]},
]


@pytest.mark.parametrize("kind", RUNTIME_KINDS)
def test_startup_policy_with_depends_on_fails(kind: str) -> None:
    doc = runtime(kind, startupPolicy={"startupPolicyOrder": "InOrder"},
                  replicatedJobs=DEPENDENT_JOBS)
    diagnostics = cel.validate(kind, doc)
    assert found(diagnostics) == [("TJC-CEL-STARTUP-DEPENDS-ON", ("spec", "template", "spec"))]
    assert diagnostics[0].message == "StartupPolicy and DependsOn APIs are mutually exclusive"


@pytest.mark.parametrize("kind", RUNTIME_KINDS)
def test_startup_policy_or_depends_on_passes(kind: str) -> None:
    any_order = runtime(kind, startupPolicy={"startupPolicyOrder": "AnyOrder"},
                        replicatedJobs=DEPENDENT_JOBS)
    in_order = runtime(kind, startupPolicy={"startupPolicyOrder": "InOrder"})
    assert cel.validate(kind, any_order) == []
    assert cel.validate(kind, in_order) == []
    assert cel.validate(kind, runtime(kind, replicatedJobs=DEPENDENT_JOBS)) == []


def claim_policy(namespace: str | None) -> list[dict[str, Any]]:
    metadata = {"name": "data"} if namespace is None else {"name": "data", "namespace": namespace}
    return [{"templates": [{"metadata": {"name": "scratch"}},
                           {"metadata": metadata, "spec": {"accessModes": ["ReadWriteOnce"]}}]}]


@pytest.mark.parametrize("kind", RUNTIME_KINDS)
def test_claim_template_namespace_fails(kind: str) -> None:
    diagnostics = cel.validate(kind, runtime(kind, volumeClaimPolicies=claim_policy("team-a")))
    path = ("spec", "template", "spec", "volumeClaimPolicies", 0)
    assert found(diagnostics) == [("TJC-CEL-CLAIM-NAMESPACE", path)]
    assert diagnostics[0].message == "namespace cannot be set for VolumeClaimPolicies templates"


@pytest.mark.parametrize("kind", RUNTIME_KINDS)
@pytest.mark.parametrize("namespace", [None, ""])
def test_claim_template_namespace_passes(kind: str, namespace: str | None) -> None:
    assert cel.validate(kind, runtime(kind, volumeClaimPolicies=claim_policy(namespace))) == []


def test_claim_template_without_metadata_is_a_runtime_error() -> None:
    doc = runtime("TrainingRuntime", volumeClaimPolicies=[{"templates": [{"spec": {}}]}])
    [diagnostic] = cel.validate("TrainingRuntime", doc)
    assert diagnostic.rule == "TJC-CEL-ERROR"
    assert diagnostic.message == ("no such key: metadata evaluating rule: namespace cannot be "
                                  "set for VolumeClaimPolicies templates")


@pytest.mark.parametrize("kind", RUNTIME_KINDS)
def test_runtime_jobset_fields_are_immutable(kind: str) -> None:
    old = runtime(kind, network={"subdomain": "a"}, successPolicy={"operator": "All"})
    new = runtime(kind, network={"subdomain": "b"}, successPolicy={"operator": "Any"})
    diagnostics = cel.validate(kind, new, old)
    base = ("spec", "template", "spec")
    assert found(diagnostics) == [(IMMUTABLE, (*base, "network")),
                                  (IMMUTABLE, (*base, "successPolicy"))]
    assert {d.message for d in diagnostics} == {"Value is immutable"}
    assert cel.validate(kind, new) == []


def test_depends_on_correlates_replicated_jobs_by_name() -> None:
    def jobs(*spec: tuple[str, list[str]]) -> list[dict[str, Any]]:
        return [{"name": name, "template": pod_template(name),
                 **({"dependsOn": [{"name": d, "status": "Ready"} for d in deps]} if deps
                    else {})} for name, deps in spec]

    old = runtime("TrainingRuntime",
                  replicatedJobs=jobs(("a", []), ("b", ["a"]), ("c", ["a", "b"])))
    # job b moved to index 0 and changed; c reordered its dependencies (a list-type map, whose
    # order does not matter); d is new: nothing to compare
    new = runtime("TrainingRuntime", replicatedJobs=jobs(
        ("b", ["a", "c"]), ("a", []), ("d", ["a"]), ("c", ["b", "a"])))
    path = ("spec", "template", "spec", "replicatedJobs", 0, "dependsOn")
    assert found(cel.validate("TrainingRuntime", new, old)) == [(IMMUTABLE, path)]


# --- JobSet -----------------------------------------------------------------------------------

def test_jobset_startup_policy_with_depends_on_fails() -> None:
    doc = jobset(startupPolicy={"startupPolicyOrder": "InOrder"}, replicatedJobs=DEPENDENT_JOBS)
    assert found(cel.validate("JobSet", doc)) == [("TJC-CEL-STARTUP-DEPENDS-ON", ("spec",))]


def test_jobset_startup_policy_passes() -> None:
    assert cel.validate("JobSet", jobset(startupPolicy={"startupPolicyOrder": "InOrder"})) == []
    assert cel.validate("JobSet", jobset(replicatedJobs=DEPENDENT_JOBS)) == []


def test_jobset_claim_template_namespace() -> None:
    failing = jobset(volumeClaimPolicies=claim_policy("x"))
    assert found(cel.validate("JobSet", failing)) == [
        ("TJC-CEL-CLAIM-NAMESPACE", ("spec", "volumeClaimPolicies", 0))]
    assert cel.validate("JobSet", jobset(volumeClaimPolicies=claim_policy(None))) == []


@pytest.mark.parametrize(("field", "before", "after"), [
    ("network", {"enableDNSHostnames": True}, {"enableDNSHostnames": False}),
    ("failurePolicy", {"maxRestarts": 1}, {"maxRestarts": 2}),
    ("startupPolicy", {"startupPolicyOrder": "AnyOrder"}, {"startupPolicyOrder": "InOrder"}),
    ("successPolicy", {"operator": "All"}, {"operator": "All", "targetReplicatedJobs": ["a"]}),
    ("volumeClaimPolicies", claim_policy(None), claim_policy("")),
])
def test_jobset_immutable_fields(field: str, before: Any, after: Any) -> None:
    old, new = jobset(**{field: before}), jobset(**{field: after})
    assert found(cel.validate("JobSet", new, old)) == [(IMMUTABLE, ("spec", field))]
    assert cel.validate("JobSet", new, copy.deepcopy(new)) == []
    assert cel.validate("JobSet", new) == []


def test_atomic_lists_do_not_correlate_their_items() -> None:
    # volumeClaimPolicies is atomic: the list is compared whole, its items never on their own
    schema = {"type": "object", "properties": {"list": {
        "type": "array", "x-kubernetes-list-type": "atomic",
        "items": {"type": "object", "properties": {"v": {
            "type": "integer", "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}}}}}
    with with_plan(schema):
        assert cel.validate("TrainJob", {"list": [{"v": 2}]}, {"list": [{"v": 1}]}) == []


def test_additional_properties_correlate_by_key() -> None:
    schema = {"type": "object", "properties": {"labels": {
        "type": "object", "additionalProperties": {
            "type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}}}
    with with_plan(schema):
        diagnostics = cel.validate("TrainJob", {"labels": {"a": "1", "b": "3", "c": "4"}},
                                   {"labels": {"b": "2", "a": "1"}})
        assert found(diagnostics) == [(IMMUTABLE, ("labels", "b"))]
        assert diagnostics[0].message == "failed rule: self == oldSelf"


def test_set_lists_compare_equal_in_any_order() -> None:
    schema = {"type": "object", "properties": {"names": {
        "type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"},
        "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}}
    with with_plan(schema):
        assert cel.validate("TrainJob", {"names": ["b", "a"]}, {"names": ["a", "b"]}) == []
        assert found(cel.validate("TrainJob", {"names": ["a"]}, {"names": ["a", "b"]})) == [
            (IMMUTABLE, ("names",))]


# --- rule options, errors and odd input --------------------------------------------------------

def test_message_expression_field_path_and_reason() -> None:
    schema = {"type": "object", "properties": {"spec": {
        "type": "object", "x-kubernetes-validations": [
            {"rule": "self.replicas <= self.max", "fieldPath": ".replicas",
             "messageExpression": "'replicas ' + string(self.replicas) + ' exceed the maximum'",
             "reason": "FieldValueForbidden", "message": "static"},
            {"rule": "self.replicas > 0", "fieldPath": "['odd.key']",
             "messageExpression": "''", "message": "static fallback"},
            {"rule": "self.replicas != 5"},
        ]}}}
    with with_plan(schema):
        diagnostics = cel.validate("TrainJob", {"spec": {"replicas": 5, "max": 3}})
        assert [(d.rule, d.path, d.message) for d in diagnostics] == [
            ("TJC-CEL", ("spec", "replicas"), "forbidden: replicas 5 exceed the maximum"),
            ("TJC-CEL", ("spec",), "failed rule: self.replicas != 5"),
        ]
        diagnostics = cel.validate("TrainJob", {"spec": {"replicas": 0, "max": 3}})
        assert found(diagnostics) == [("TJC-CEL", ("spec", "odd.key"))]
        assert diagnostics[0].message == "static fallback"


def test_optional_old_self_is_evaluated_with_and_without_an_old_value() -> None:
    schema = {"type": "object", "properties": {"size": {
        "type": "integer", "x-kubernetes-validations": [
            {"rule": "!oldSelf.hasValue() || self >= oldSelf.value()", "optionalOldSelf": True,
             "message": "size may only grow"},
            {"rule": "oldSelf.hasValue() || self < 100", "optionalOldSelf": True,
             "message": "new sizes stay below 100"}]}}}
    with with_plan(schema):
        assert cel.validate("TrainJob", {"size": 5}) == []
        assert [d.message for d in cel.validate("TrainJob", {"size": 500})] == [
            "new sizes stay below 100"]
        assert cel.validate("TrainJob", {"size": 5}, {"size": 3}) == []
        assert [d.message for d in cel.validate("TrainJob", {"size": 2}, {"size": 3})] == [
            "size may only grow"]
        assert cel.validate("TrainJob", {"size": 500}, {}) != []


def test_old_self_inside_a_string_literal_is_no_transition_rule() -> None:
    schema = {"type": "object", "properties": {"s": {
        "type": "string", "x-kubernetes-validations": [{"rule": "self != 'oldSelf'"}]}}}
    with with_plan(schema):
        assert found(cel.validate("TrainJob", {"s": "oldSelf"})) == [("TJC-CEL", ("s",))]


def test_a_rule_that_cannot_compile_is_reported_not_raised() -> None:
    schema = {"type": "object", "properties": {"xs": {
        "type": "array", "items": {"type": "integer"},
        "x-kubernetes-validations": [{"rule": "self.isSorted()", "message": "sorted"},
                                     {"rule": "size(self) < 3"}]}}}
    with with_plan(schema):
        diagnostics = cel.validate("TrainJob", {"xs": [3, 1, 2]})
        assert [(d.rule, d.severity, d.path) for d in diagnostics] == [
            ("TJC-CEL-UNSUPPORTED", Severity.WARNING, ("xs",)),
            ("TJC-CEL", Severity.ERROR, ("xs",))]
        assert "isSorted" in diagnostics[0].message


def test_a_type_mismatch_is_a_no_such_overload_error() -> None:
    doc = runtime("TrainingRuntime", {"flux": {"numProcPerNode": 1}})
    doc["spec"]["mlPolicy"]["flux"]["numProcPerNode"] = "two"
    [diagnostic] = cel.validate("TrainingRuntime", doc)
    assert diagnostic.rule == "TJC-CEL-ERROR"
    assert diagnostic.message.startswith("'no such overload")
    assert diagnostic.message.endswith("for rule: NumProcPerNode in fluxPolicy must be >= 1")


def test_unknown_kind_is_a_warning() -> None:
    [diagnostic] = cel.validate("Pod", {"metadata": {"name": "x"}})
    assert (diagnostic.rule, diagnostic.severity) == ("TJC-CEL-UNSUPPORTED", Severity.WARNING)


@pytest.mark.parametrize("doc", [
    {}, {"metadata": None}, {"metadata": {"name": 7}}, {"metadata": {"name": "a"}, "spec": []},
    {"metadata": {"name": "a"}, "spec": {"managedBy": 2**70, "initializer": {"dataset": 1}}},
    {"metadata": {"name": "a"}, "spec": {"managedBy": ("tuple",), "trainer": object()}},
    {"metadata": {"name": "a"}, "status": {"trainerStatus": []}},
])
def test_odd_documents_never_raise(doc: dict[str, Any]) -> None:
    for diagnostic in cel.validate("TrainJob", doc) + cel.validate("TrainJob", doc, doc):
        assert diagnostic.rule.startswith("TJC-CEL")
    assert cel.validate("TrainJob", "not a mapping") == []  # type: ignore[arg-type]


def test_every_rule_of_the_schemas_has_an_id_and_compiles() -> None:
    for kind in ("TrainJob", "TrainingRuntime", "ClusterTrainingRuntime", "JobSet"):
        plan = cel._plan(kind)
        assert isinstance(plan, cel._Node)
        pending = [plan]
        while pending:
            node = pending.pop()
            for rule in node.rules:
                assert rule.rule_id != cel.GENERIC_ID, rule.rule
                assert not cel._program(rule.rule, rule.optional_old).problem
            pending.extend(node.props.values())
            pending.extend(n for n in (node.items, node.extra) if n is not None)


# --- the built-in runtimes ------------------------------------------------------------------

@pytest.mark.parametrize("path", sorted((ROOT / "runtimes").glob("*.yaml")), ids=lambda p: p.name)
def test_builtin_runtimes_pass(path: Path) -> None:
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    kind = doc["kind"]
    ready = prepared(kind, doc)
    assert cel.validate(kind, ready) == []
    assert cel.validate(kind, ready, copy.deepcopy(ready)) == []


def test_example_trainjob_passes() -> None:
    doc = yaml.safe_load((ROOT / "examples" / "jax-mnist.yaml").read_text(encoding="utf-8"))
    assert cel.validate("TrainJob", prepared("TrainJob", doc)) == []
