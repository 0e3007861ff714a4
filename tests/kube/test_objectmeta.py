"""The API server's ObjectMeta rules (`compiler.kube.objectmeta`). Expected values are
the good and bad values of k8s.io/apimachinery's own tests (v0.34.0:
`pkg/util/validation/validation_test.go`, `pkg/api/validation/objectmeta_test.go`,
`generic_test.go`) and the API server's wording of its errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.cli.main import main
from compiler.kube import objectmeta as om

LABEL_GOOD = ["a", "ab", "abc", "a1", "a-1", "a--1--2--b", "0", "01", "012", "1a", "1-a",
              "1--a--b--2", "a" * 63]
LABEL_BAD = ["", "A", "ABC", "aBc", "A1", "A-1", "1-A", "-", "a-", "-a", "1-", "-1", "_", "a_",
             "_a", "a_b", "1_", "_1", "1_2", ".", "a.", ".a", "a.b", "1.", ".1", "1.2", " ",
             "a ", " a", "a b", "1 ", " 1", "1 2", "a" * 64]
SUBDOMAIN_GOOD = ["a", "a--1--2--b", "0.a", "a.1", "1--a--b--2.1", "a.b.c.d.e", "1.2.3.4.5",
                  "11.22.33.44.55", "a" * 253]
SUBDOMAIN_BAD = ["", "A", "aBc", "-", "a-", "-a", "_", "a_b", ".", "a.", ".a", "a..b", "1..2",
                 " ", "a b", "A.a", "ab.A", "0.A", "A.B.C.D.E", "a.B.c.d.e", "a" * 254]
QUALIFIED_GOOD = ["simple", "now-with-dashes", "1-starts-with-num", "1234", "simple/simple",
                  "now.with.dots/simple", "1-num.2-num/3-num", "1.2.3.4/5678",
                  "Uppercase_Is_OK_123", "example.com/Uppercase_Is_OK_123",
                  "requests.storage-foo", "a" * 63, "a" * 253 + "/" + "b" * 63]
QUALIFIED_BAD = ["nospecialchars%^=@", "cantendwithadash-", "-cantstartwithadash-",
                 "only/one/slash", "Example.com/abc", "example_com/abc", "example.com/",
                 "/simple", "a" * 64, "a" * 254 + "/abc"]
VALUE_GOOD = ["simple", "now-with-dashes", "1-starts-with-num", "end-with-num-1", "1234",
              "a" * 63, ""]
VALUE_BAD = ["nospecialchars%^=@", "Tama-nui-te-rā.is.Māori.sun", "\\backslashes\\are\\bad",
             "-starts-with-dash", "ends-with-dash-", ".starts.with.dot", "ends.with.dot.",
             "a" * 64]
SUBDOMAIN_REGEX = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"


@pytest.mark.parametrize(("check", "good", "bad"), [
    (om.is_dns1123_label, LABEL_GOOD, LABEL_BAD),
    (om.is_dns1123_subdomain, SUBDOMAIN_GOOD, SUBDOMAIN_BAD),
    (om.is_qualified_name, QUALIFIED_GOOD, QUALIFIED_BAD),
    (om.is_valid_label_value, VALUE_GOOD, VALUE_BAD),
])
def test_upstream_good_and_bad_values(check: object, good: list[str], bad: list[str]) -> None:
    assert callable(check)
    assert [v for v in good if check(v)] == []
    assert [v for v in bad if not check(v)] == []


def test_messages_are_the_api_servers() -> None:
    assert om.is_dns1123_subdomain("TORCH-RT-1") == [
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
        "'-' or '.', and must start and end with an alphanumeric character (e.g. "
        f"'example.com', regex used for validation is '{SUBDOMAIN_REGEX}')"]
    assert om.is_dns1123_label("a.b") == ["must not contain dots"]
    assert om.is_dns1123_label("a" * 64) == ["must be no more than 63 characters"]
    assert om.is_qualified_name("only/one/slash")[0].startswith(
        "a qualified name must consist of alphanumeric characters")
    assert om.is_qualified_name("/simple") == ["prefix part must be non-empty"]


@pytest.mark.parametrize(("generate", "valid"), [
    ("b-", True), ("-foo-", False), ("foo-", True), ("-", False), ("Foo-", False),
    ("a" * 253 + "-", True)])
def test_generate_name_masks_a_trailing_dash(generate: str, valid: bool) -> None:
    meta = {"name": "x", "generateName": generate}
    found = om.validate("TrainJob", {"metadata": meta})
    assert (not found) is valid, found


def test_annotation_size_limit_is_256_kib_of_keys_and_values() -> None:
    limit = om.TOTAL_ANNOTATION_SIZE
    ok = {"a": "b" * (limit - 1)}
    assert om.validate("TrainJob", {"metadata": {"name": "x", "annotations": ok}}) == []
    for over in ({"a": "b" * limit}, {"a": "b" * (limit // 2), "c": "d" * (limit // 2)}):
        found = om.validate("TrainJob", {"metadata": {"name": "x", "annotations": over}})
        assert [d.rule for d in found] == ["TJC-META-ANNOTATIONS-TOO-LONG"]
    upper = {"metadata": {"name": "x", "annotations": {"UpperCase123": "v"}}}
    assert om.validate("TrainJob", upper) == [], "annotation keys are checked lower-cased"


def test_namespaces_labels_and_cluster_scope() -> None:
    meta = {"name": "x", "namespace": "a.b", "labels": {"k": "-bad", "bad key/x/y": "v"}}
    rules = sorted(d.rule for d in om.validate("TrainingRuntime", {"metadata": meta}))
    assert rules == ["TJC-META-LABEL-KEY", "TJC-META-LABEL-VALUE", "TJC-META-NAMESPACE"]
    cluster = om.validate("ClusterTrainingRuntime", {"metadata": {"name": "x",
                                                                  "namespace": "A_B"}})
    assert cluster == [], "the API server drops a cluster-scoped object's namespace"
    assert [d.rule for d in om.validate("TrainJob", {"metadata": {}})] == ["TJC-META-NAME"]


RUNTIME = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata:
  name: TORCH-RT-1
spec:
  mlPolicy:
    numNodes: 1
  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            metadata:
              labels:
                trainer.kubeflow.org/trainjob-ancestor-step: trainer
            spec:
              template:
                spec:
                  containers:
                    - name: node
                      image: busybox
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: uses-it
spec:
  runtimeRef:
    name: TORCH-RT-1
"""


def test_a_runtime_with_an_invalid_name_is_refused_and_so_are_its_trainjobs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "rt.yaml"
    path.write_text(RUNTIME)
    assert main(["validate", "-q", "--no-default-policies", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"{path}:4:9: error: ClusterTrainingRuntime TORCH-RT-1: metadata.name: invalid " \
           "value 'TORCH-RT-1': a lowercase RFC 1123 subdomain must consist" in out
    assert "TrainJob uses-it: spec.runtimeRef: ClusterTrainingRuntime TORCH-RT-1 has errors" \
           in out and "[TJC-RUNTIME-INVALID]" in out
    assert main(["render", "-q", "--no-default-policies", str(path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "[TJC-META-NAME]" in captured.err
