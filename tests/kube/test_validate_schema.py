"""Schema layer of validation (`compiler.kube.schema`): one failing and one passing case per
keyword on realistic TrainJobs and runtimes, the Kubernetes extensions, agreement with the
structural pass, and the properties the project wants: every built-in runtime and every JobSet
the golden cases compile validates against its CRD schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from compiler.common.diagnostics import Diagnostic, Severity
from compiler.core.context import CompileOptions
from compiler.io import sshkeys
from compiler.io.builtin import builtin_runtimes
from compiler.io.loader import Source, parse_source, read_source
from compiler.kube import schema
from compiler.kube.defaults import apply_defaults, default_in_place
from compiler.kube.schema import CHECKED, IGNORED, SchemaValidator, validate
from compiler.kube.structural import sanitize
from compiler.pipeline.session import JobResult
from compiler.render.pipeline import render_stream
from tests import goldenfile

ROOT = Path(__file__).resolve().parents[2]
Doc = dict[str, Any]

# Golden cases whose JobSet the API server would reject, on purpose: they pin an upstream quirk
# (reference §8-B8: Build's port write-back matches unnamed ports to each other, so a container
# ends up with the same containerPort/protocol twice, a duplicate list-map key).
KNOWN_INVALID_JOBSETS: dict[str, list[tuple[str, str]]] = {
    "jax-several-unnamed-ports": [
        ("TJC-SCHEMA-DUPLICATE-KEY",
         "spec.replicatedJobs[0].template.spec.template.spec.containers[0].ports[2]"),
    ],
    "plain-two-unnamed-ports": [
        ("TJC-SCHEMA-DUPLICATE-KEY",
         "spec.replicatedJobs[0].template.spec.template.spec.containers[0].ports[1]"),
        ("TJC-SCHEMA-DUPLICATE-KEY",
         "spec.replicatedJobs[0].template.spec.template.spec.containers[1].ports[1]"),
    ],
}


def trainjob(spec: Doc | None = None, **top: Any) -> Doc:
    """A realistic TrainJob on the torch runtime, with `spec` merged into `spec.trainer`-level
    fields and `top` added at the top level, sanitized and defaulted as the validators get it."""
    doc: Doc = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "bert-finetune", "namespace": "ml-team",
                     "labels": {"team": "nlp"}},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {
                "image": "ghcr.io/example/bert:1.2",
                "numNodes": 2,
                "command": ["torchrun", "train.py"],
                "env": [{"name": "NCCL_DEBUG", "value": "INFO"}],
                "resourcesPerNode": {"requests": {"cpu": "4", "memory": "16Gi"},
                                     "limits": {"nvidia.com/gpu": 1}},
            },
            **(spec or {}),
        },
        **top,
    }
    return prepared("TrainJob", doc)


def runtime(container: Doc | None = None, pod: Doc | None = None,
            job: Doc | None = None, ml_policy: Doc | None = None) -> Doc:
    """A realistic TrainingRuntime with extra fields in its node container, pod spec, job
    spec and ML policy, sanitized and defaulted."""
    doc: Doc = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainingRuntime",
        "metadata": {"name": "mpi-runtime", "namespace": "ml-team"},
        "spec": {
            "mlPolicy": {"numNodes": 2, **(ml_policy or {"mpi": {"numProcPerNode": 1}})},
            "template": {"spec": {"replicatedJobs": [{
                "name": "node",
                "template": {
                    "metadata": {"labels": {
                        "trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                    "spec": {
                        **(job or {}),
                        "template": {"spec": {
                            **(pod or {}),
                            "containers": [{"name": "node", "image": "mpi:1.0",
                                            **(container or {})}],
                        }},
                    },
                },
            }]}},
        },
    }
    return prepared("TrainingRuntime", doc)


NODE = ("spec", "template", "spec", "replicatedJobs", 0, "template", "spec", "template", "spec",
        "containers", 0)
POD = NODE[:-2]
JOB = POD[:-2]


def prepared(kind: str, doc: Doc) -> Doc:
    """`doc` as the validators receive it: sanitized and defaulted."""
    out, _ = sanitize(kind, doc, subject="document")
    return default_in_place(kind, out)


def found(kind: str, doc: Doc) -> list[tuple[str, tuple[str | int, ...], str]]:
    """(rule, path, message) of every diagnostic."""
    return [(d.rule, d.path, d.message) for d in validate(kind, doc)]


def test_valid_trainjob_and_runtime_have_no_diagnostics() -> None:
    assert validate("TrainJob", trainjob()) == []
    assert validate("TrainingRuntime", runtime()) == []
    assert validate("ClusterTrainingRuntime", {**runtime(), "kind": "ClusterTrainingRuntime"}) \
        == []


def test_diagnostic_shape() -> None:
    [diag] = validate("TrainJob", trainjob({"activeDeadlineSeconds": 0}))
    assert diag == Diagnostic(Severity.ERROR, "TJC-SCHEMA-MINIMUM",
                              "0 is less than the minimum 1", ("spec", "activeDeadlineSeconds"),
                              subject="document")


# --- one failing and one passing case per keyword ---------------------------------------------

def test_enum() -> None:
    bad = runtime(ml_policy={"mpi": {"mpiImplementation": "Foo"}})
    assert found("TrainingRuntime", bad) == [(
        "TJC-SCHEMA-ENUM", ("spec", "mlPolicy", "mpi", "mpiImplementation"),
        '"Foo" is not one of "OpenMPI", ""')]
    assert validate("TrainingRuntime", runtime(ml_policy={"mpi": {"mpiImplementation": ""}})) \
        == []


def test_minimum() -> None:
    doc = runtime()
    doc["spec"]["template"]["spec"]["ttlSecondsAfterFinished"] = -1
    assert found("TrainingRuntime", doc) == [(
        "TJC-SCHEMA-MINIMUM", ("spec", "template", "spec", "ttlSecondsAfterFinished"),
        "-1 is less than the minimum 0")]
    doc["spec"]["template"]["spec"]["ttlSecondsAfterFinished"] = 0
    assert validate("TrainingRuntime", doc) == []
    assert validate("TrainJob", trainjob({"activeDeadlineSeconds": 1})) == []


def test_maximum() -> None:
    status = {"trainerStatus": {"progressPercentage": 101}}
    assert found("TrainJob", trainjob(status=status)) == [(
        "TJC-SCHEMA-MAXIMUM", ("status", "trainerStatus", "progressPercentage"),
        "101 is greater than the maximum 100")]
    status = {"trainerStatus": {"progressPercentage": 100}}
    assert validate("TrainJob", trainjob(status=status)) == []


def test_min_and_max_length() -> None:
    doc = trainjob({"runtimeRef": {"name": ""}})
    doc["spec"]["trainer"]["image"] = "registry.example.com/" + "x" * 480
    assert found("TrainJob", doc) == [
        ("TJC-SCHEMA-MINLENGTH", ("spec", "runtimeRef", "name"),
         "must have at least 1 character, has 0"),
        ("TJC-SCHEMA-MAXLENGTH", ("spec", "trainer", "image"),
         "must have at most 500 characters, has 501"),
    ]
    doc["spec"]["trainer"]["image"] = "registry.example.com/" + "x" * 479
    doc["spec"]["runtimeRef"]["name"] = "t"
    assert validate("TrainJob", doc) == []


def test_pattern() -> None:
    doc = trainjob()
    doc["spec"]["trainer"]["resourcesPerNode"]["requests"]["cpu"] = "two"
    doc["status"] = {"conditions": [{
        "type": "Complete", "status": "True", "reason": "Job Finished", "message": "",
        "lastTransitionTime": "2025-01-02T03:04:05Z"}]}
    rules = found("TrainJob", doc)
    assert [(rule, path) for rule, path, _ in rules] == [
        ("TJC-SCHEMA-PATTERN", ("spec", "trainer", "resourcesPerNode", "requests", "cpu")),
        ("TJC-SCHEMA-PATTERN", ("status", "conditions", 0, "reason")),
    ]
    assert rules[0][2].startswith('"two" does not match ^(\\+|-)?')
    assert rules[1][2] == ('"Job Finished" does not match '
                           "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
    doc["spec"]["trainer"]["resourcesPerNode"]["requests"]["cpu"] = "500m"
    doc["status"]["conditions"][0]["reason"] = "JobFinished"
    assert validate("TrainJob", doc) == []


def test_max_items() -> None:
    env = [{"name": f"VAR_{i}", "value": str(i)} for i in range(129)]
    assert found("TrainJob", trainjob({"trainer": {"env": env}})) == [(
        "TJC-SCHEMA-MAXITEMS", ("spec", "trainer", "env"),
        "must have at most 128 items, has 129")]
    assert validate("TrainJob", trainjob({"trainer": {"env": env[:128]}})) == []


def test_min_items() -> None:
    target: Doc = {"jobName": "node", "containerNames": []}
    torch: Doc = {"torch": {"envInjection": {"targets": [target]}}}
    assert found("TrainingRuntime", runtime(ml_policy=torch)) == [(
        "TJC-SCHEMA-MINITEMS",
        ("spec", "mlPolicy", "torch", "envInjection", "targets", 0, "containerNames"),
        "must have at least 1 item, has 0")]
    target["containerNames"] = ["node"]
    assert validate("TrainingRuntime", runtime(ml_policy=torch)) == []


def test_min_properties() -> None:
    assert found("TrainJob", trainjob(status={})) == [
        ("TJC-SCHEMA-MINPROPERTIES", ("status",), "must have at least 1 property, has 0")]
    assert validate("TrainJob", trainjob(status={"conditions": []})) == []


def test_list_map_duplicate_key() -> None:
    env = [{"name": "NCCL_DEBUG", "value": "INFO"}, {"name": "OMP_NUM_THREADS", "value": "1"},
           {"name": "NCCL_DEBUG", "value": "WARN"}]
    assert found("TrainJob", trainjob({"trainer": {"env": env}})) == [(
        "TJC-SCHEMA-DUPLICATE-KEY", ("spec", "trainer", "env", 2),
        'duplicate entry for key [name="NCCL_DEBUG"] (first at index 0); entries must be '
        "unique by name")]
    env[2]["name"] = "NCCL_SOCKET_IFNAME"
    assert validate("TrainJob", trainjob({"trainer": {"env": env}})) == []


def test_list_map_compound_key_counts_the_default() -> None:
    """`protocol` defaults to TCP, so 8080 and 8080/TCP are the same entry even before
    defaulting fills it in; 8080/UDP is another one."""
    ports: list[Doc] = [{"containerPort": 8080}, {"containerPort": 8080, "protocol": "TCP"}]
    doc = runtime(container={"ports": ports})
    del doc["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"][
        "spec"]["containers"][0]["ports"][0]["protocol"]
    assert found("TrainingRuntime", doc) == [(
        "TJC-SCHEMA-DUPLICATE-KEY", (*NODE, "ports", 1),
        'duplicate entry for key [containerPort=8080, protocol="TCP"] (first at index 0); '
        "entries must be unique by containerPort, protocol")]
    ports[1]["protocol"] = "UDP"
    assert validate("TrainingRuntime", runtime(container={"ports": ports})) == []


def test_set_duplicate_item() -> None:
    policy: Doc = {"podFailurePolicy": {"rules": [{"action": "FailJob", "onExitCodes": {
        "operator": "In", "values": [1, 42, 1]}}]}}
    assert found("TrainingRuntime", runtime(job=policy)) == [(
        "TJC-SCHEMA-DUPLICATE-ITEM",
        (*JOB, "podFailurePolicy", "rules", 0, "onExitCodes", "values", 2),
        "duplicate value 1 (first at index 0); items must be unique")]
    policy["podFailurePolicy"]["rules"][0]["onExitCodes"]["values"] = [1, 42]
    assert validate("TrainingRuntime", runtime(job=policy)) == []


@pytest.mark.parametrize("port", [8080, "http"])
def test_int_or_string_accepts_both(port: int | str) -> None:
    probe = {"livenessProbe": {"httpGet": {"path": "/healthz", "port": port}}}
    assert validate("TrainingRuntime", runtime(container=probe)) == []


@pytest.mark.parametrize(("port", "got"), [(True, "boolean"), (1.5, "number"),
                                           ([8080], "array")])
def test_int_or_string_rejects_others(port: Any, got: str) -> None:
    probe = {"livenessProbe": {"httpGet": {"path": "/healthz", "port": port}}}
    assert found("TrainingRuntime", runtime(container=probe)) == [(
        "TJC-SCHEMA-TYPE", (*NODE, "livenessProbe", "httpGet", "port"),
        f"expected an integer or string, got {got}")]


def test_preserve_unknown_fields() -> None:
    crd = {"type": "object", "properties": {
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                 "properties": {"replicas": {"type": "integer", "minimum": 0}}},
        "status": {"type": "object", "properties": {"phase": {"type": "string"}}}}}
    checker = SchemaValidator(crd)
    assert checker.validate({"spec": {"replicas": 1, "extra": {"any": ["thing"]}}}) == []
    assert [(d.rule, d.path) for d in checker.validate(
        {"spec": {"replicas": -1, "extra": 1}, "status": {"phase": "Up", "extra": 1}})] == [
        ("TJC-SCHEMA-MINIMUM", ("spec", "replicas")),
        ("TJC-SCHEMA-UNKNOWN-FIELD", ("status", "extra")),
    ]


def test_unknown_fields_are_errors_except_in_top_level_metadata() -> None:
    raw = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
           "metadata": {"name": "j", "anything": {"goes": 1}},
           "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNode": 2}}}
    [diag] = validate("TrainJob", raw)
    assert (diag.rule, diag.path) == ("TJC-SCHEMA-UNKNOWN-FIELD",
                                      ("spec", "trainer", "numNode"))
    assert diag.message.startswith("unknown field; ")
    # `jax: {}` is an empty struct: a field in it is unknown too (the API server prunes it)
    assert [(d.rule, d.path) for d in validate("TrainingRuntime", {
        **runtime(), "spec": {"mlPolicy": {"jax": {"x": 1}}}})] == [
        ("TJC-SCHEMA-UNKNOWN-FIELD", ("spec", "mlPolicy", "jax", "x"))]


def test_required() -> None:
    doc = trainjob({"runtimeRef": {"apiGroup": "trainer.kubeflow.org"}})
    doc["spec"]["trainer"]["env"].append({"value": "1"})
    assert found("TrainJob", doc) == [
        ("TJC-SCHEMA-REQUIRED", ("spec", "runtimeRef"), "required field 'name' is missing"),
        ("TJC-SCHEMA-REQUIRED", ("spec", "trainer", "env", 1),
         "required field 'name' is missing"),
    ]
    assert validate("TrainJob", trainjob({"runtimeRef": {"name": "torch-distributed"}})) == []


def test_type() -> None:
    doc = trainjob()
    doc["spec"]["trainer"]["numNodes"] = "2"
    doc["spec"]["suspend"] = "yes"
    assert found("TrainJob", doc) == [
        ("TJC-SCHEMA-TYPE", ("spec", "suspend"), "expected a boolean, got string"),
        ("TJC-SCHEMA-TYPE", ("spec", "trainer", "numNodes"), "expected an integer, got string"),
    ]
    doc["spec"]["trainer"]["numNodes"] = 2.0  # JSON has one number type
    doc["spec"]["suspend"] = True
    assert validate("TrainJob", doc) == []
    assert found("TrainJob", ["not", "an", "object"]) == [  # type: ignore[arg-type]
        ("TJC-SCHEMA-TYPE", (), "expected an object, got array")]


def test_format_int32() -> None:
    doc = trainjob()
    doc["spec"]["trainer"]["numNodes"] = 2**31
    assert found("TrainJob", doc) == [(
        "TJC-SCHEMA-FORMAT", ("spec", "trainer", "numNodes"),
        "2147483648 does not fit in int32; expected a value from -2147483648 to 2147483647")]
    doc["spec"]["trainer"]["numNodes"] = 2**31 - 1
    assert validate("TrainJob", doc) == []


def test_format_int64_and_date_time() -> None:
    doc = trainjob({"activeDeadlineSeconds": 2**63}, status={"conditions": [{
        "type": "Complete", "status": "True", "reason": "Done", "message": "",
        "lastTransitionTime": "yesterday"}]})
    assert [(d.rule, d.path) for d in validate("TrainJob", doc)] == [
        ("TJC-SCHEMA-FORMAT", ("spec", "activeDeadlineSeconds")),
        ("TJC-SCHEMA-FORMAT", ("status", "conditions", 0, "lastTransitionTime")),
    ]
    doc["spec"]["activeDeadlineSeconds"] = 2**63 - 1
    doc["status"]["conditions"][0]["lastTransitionTime"] = "2025-01-02T03:04:05.5+01:00"
    assert validate("TrainJob", doc) == []


def test_nullable() -> None:
    crd = {"type": "object", "properties": {
        "maybe": {"type": "string", "nullable": True}, "never": {"type": "string"}}}
    checker = SchemaValidator(crd)
    assert checker.validate({"maybe": None, "never": "x"}) == []
    assert [(d.rule, d.path, d.message) for d in checker.validate({"never": None})] == [
        ("TJC-SCHEMA-TYPE", ("never",), "expected a string, got null")]


def test_combinators() -> None:
    crd = {"type": "object", "properties": {
        "any": {"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 2}]},
        "one": {"oneOf": [{"type": "integer"}, {"type": "number"}]},
        "not": {"not": {"type": "string", "enum": ["forbidden"]}},
        "all": {"allOf": [{"type": "integer"}, {"minimum": 3}]}}}
    checker = SchemaValidator(crd)
    assert checker.validate({"any": "ab", "one": 1.5, "not": "fine", "all": 3}) == []
    assert [d.rule for d in checker.validate(
        {"any": "abc", "one": 1, "not": "forbidden", "all": 2})] == [
        "TJC-SCHEMA-MINIMUM", "TJC-SCHEMA-ANYOF", "TJC-SCHEMA-NOT", "TJC-SCHEMA-ONEOF"]


# --- all problems, order, agreement with the structural pass -----------------------------------

def test_every_problem_is_reported_in_path_then_rule_order() -> None:
    env = [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]
    doc = trainjob({"activeDeadlineSeconds": 0, "trainer": {"env": env, "numNodes": 2**40,
                                                            "image": ""}},
                   status={})
    assert [(d.rule, d.field_path) for d in validate("TrainJob", doc)] == [
        ("TJC-SCHEMA-MINIMUM", "spec.activeDeadlineSeconds"),
        ("TJC-SCHEMA-DUPLICATE-KEY", "spec.trainer.env[1]"),
        ("TJC-SCHEMA-FORMAT", "spec.trainer.numNodes"),
        ("TJC-SCHEMA-MINPROPERTIES", "status"),
    ]


def test_type_and_required_agree_with_the_structural_pass() -> None:
    raw: Doc = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                "metadata": {"name": "j"},
                "spec": {"runtimeRef": {"kind": "ClusterTrainingRuntime"},
                         "suspend": "no",
                         "trainer": {"numNodes": "2", "command": "python",
                                     "env": [{"value": "1"}, {"name": 3}]}}}
    doc, structural = sanitize("TrainJob", raw, subject="trainjob")
    ours = validate("TrainJob", default_in_place("TrainJob", doc))
    assert {(d.rule, d.path, d.message) for d in structural} == \
        {(d.rule, d.path, d.message) for d in ours}
    assert len(ours) == 6


# --- loading, keywords, speed ------------------------------------------------------------------

def test_schemas_load_once_and_unknown_kinds_are_refused() -> None:
    assert schema.validator("JobSet") is schema.validator("JobSet")
    assert schema.load_schema("TrainJob") is schema.load_schema("TrainJob")
    with pytest.raises(ValueError, match="no schema for kind 'Pod'"):
        validate("Pod", {})


@pytest.mark.parametrize("kind", ["TrainJob", "TrainingRuntime", "ClusterTrainingRuntime",
                                  "JobSet"])
def test_every_keyword_of_the_shipped_schemas_is_known(kind: str) -> None:
    keywords: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            keywords.update(node)
            for name, sub in node.items():
                if name == "properties":
                    for prop in sub.values():
                        walk(prop)
                elif name in ("items", "additionalProperties", "not"):
                    walk(sub)
                elif name in ("allOf", "anyOf", "oneOf"):
                    for branch in sub:
                        walk(branch)

    walk(schema.load_schema(kind))
    assert keywords - CHECKED - IGNORED == set()
    text = json.dumps(schema.load_schema(kind))
    assert "nullable" not in text or "nullable" in keywords


# --- properties: built-in runtimes and compiled JobSets validate -------------------------------

@pytest.mark.parametrize("path", sorted((ROOT / "runtimes").glob("*.yaml")), ids=lambda p: p.stem)
def test_builtin_runtime_is_valid(path: Path) -> None:
    docs, problems = parse_source(read_source(str(path)))
    assert problems == []
    assert docs
    for doc in docs:
        kind = doc.data["kind"]
        clean, structural = sanitize(kind, doc.data, subject="runtime")
        assert structural == []
        assert validate(kind, default_in_place(kind, clean)) == []


def compiled_jobsets(case: goldenfile.Case) -> list[Doc]:
    """The JobSets rendering a golden case gives (as `goldenfile.run` renders it)."""
    sources = [Source(name, text) for name, text in case.inputs.items()]
    builtin = () if "--no-builtin-runtimes" in case.flags else builtin_runtimes()
    keys = [f.split("=", 1)[1] for f in case.flags if f.startswith("--mpi-ssh-key=")]
    options = CompileOptions(ssh_keys=sshkeys.from_file(str(ROOT / keys[0])) if keys else None)
    return [obj for item in render_stream(sources, builtin, options)
            if isinstance(item, JobResult) for obj in item.objects if obj["kind"] == "JobSet"]


@pytest.mark.parametrize("path", goldenfile.cases(), ids=lambda p: p.stem)
def test_golden_jobsets_validate(path: Path) -> None:
    jobsets = compiled_jobsets(goldenfile.parse(path))
    found_problems = [(d.rule, d.field_path) for obj in jobsets
                      for d in validate("JobSet", obj)]
    assert found_problems == KNOWN_INVALID_JOBSETS.get(path.stem, [])
    # what the API server validates: the object after defaulting
    assert [(d.rule, d.field_path) for obj in jobsets
            for d in validate("JobSet", apply_defaults("JobSet", obj))] == found_problems


def test_golden_cases_compile_jobsets() -> None:
    """The property above is not vacuous: most golden cases compile to a JobSet."""
    cases = goldenfile.cases()
    assert sum(len(compiled_jobsets(goldenfile.parse(p))) for p in cases) >= len(cases) // 2
