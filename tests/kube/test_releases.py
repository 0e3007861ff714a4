"""Each served Kubeflow Trainer release's packaged data (`compiler.kube.releases`): what the
release's own module has, generated (`schemas/generate.py`), read back whole."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from compiler.kube import releases
from compiler.kube._go_facts import GO_TYPES
from compiler.kube.releases import DEFAULT, RELEASES, merge_patch, release_data

ROOT = Path(__file__).resolve().parents[2]
OLDER = [r for r in RELEASES if r != DEFAULT]


def _at(release: str, *keys: str) -> dict[str, Any]:
    """The TrainJob schema node of a release at a path (`items` steps into a list)."""
    node: dict[str, Any] = release_data(release).schema("trainjob")
    for key in keys:
        node = node["items"] if key == "items" else node["properties"][key]
    return node


def _spec(release: str) -> dict[str, Any]:
    props: dict[str, Any] = _at(release, "spec")["properties"]
    return props


def _runtime_names(release: str) -> list[str]:
    return [p.name for p in release_data(release).runtime_files()]


def test_each_release_has_its_own_trainjob_api() -> None:
    assert "podTemplateOverrides" in _spec("v2.1.0") and "labels" in _spec("v2.1.0")
    assert "runtimePatches" not in _spec("v2.1.0")
    assert _at("v2.1.0", "spec", "trainer", "numProcPerNode")["x-kubernetes-int-or-string"]
    for release in ("v2.2.0", "v2.2.1", "v2.3.0"):
        assert "runtimePatches" in _spec(release) and "podTemplateOverrides" not in _spec(release)
    pod = ("spec", "runtimePatches", "items", "trainingRuntimeSpec", "template", "spec",
           "replicatedJobs", "items", "template", "spec", "template", "spec")
    assert "terminationGracePeriodSeconds" not in _at("v2.2.1", *pod)["properties"]
    assert "terminationGracePeriodSeconds" in _at("v2.3.0", *pod)["properties"]


def test_each_release_names_its_source_and_jobset() -> None:
    for release in RELEASES:
        data = release_data(release)
        for kind in ("trainjob", "trainingruntime", "clustertrainingruntime"):
            source = data.schema(kind)["x-tjc-source"]
            assert source["upstream"] == f"kubeflow/trainer {release}"
            assert f"github.com/kubeflow/trainer/v2@{release}/" in source["crd"]
        jobset = data.schema("jobset")["x-tjc-source"]  # the CRD of the release's own JobSet
        assert jobset["upstream"] == f"kubernetes-sigs/jobset {data.jobset}"
        assert f"sigs.k8s.io/jobset@{data.jobset}/" in jobset["crd"]
    assert [release_data(r).jobset for r in RELEASES] == ["v0.10.1", "v0.11.1", "v0.11.1",
                                                          "v0.12.0"]


def test_each_release_has_its_own_runtimes_and_go_facts() -> None:
    assert "jax-distributed.yaml" not in _runtime_names("v2.1.0")
    assert _runtime_names("v2.2.0") == _runtime_names(DEFAULT)
    xgboost = {r: (release_data(r).folder / "runtimes" / "xgboost-distributed.yaml").read_text()
               for r in ("v2.2.0", "v2.2.1")}
    assert "xgboost-runtime:latest" in xgboost["v2.2.0"]
    assert "xgboost-runtime:v2.2.1" in xgboost["v2.2.1"]
    assert sorted(release_data("v2.1.0").go_types()) == ["jobset_spec", "pod_template_override"]
    assert release_data("v2.2.1").go_types() == GO_TYPES
    assert release_data("v2.2.0").go_types()["jobset_spec"] != GO_TYPES["jobset_spec"]


def test_the_newest_release_is_the_data_the_compiler_reads() -> None:
    data = release_data(DEFAULT)
    for kind in ("trainjob", "trainingruntime", "clustertrainingruntime", "jobset"):
        assert data.schema_source(kind) == (ROOT / "schemas" / f"{kind}.json").read_bytes()
    assert data.runtime_files() == tuple(sorted((ROOT / "compiler" / "runtimes").glob("*.yaml")))
    assert data.go_types() == GO_TYPES and data.go_types() is not GO_TYPES


def test_a_release_not_served_is_refused() -> None:
    with pytest.raises(ValueError, match=r"v2\.0\.1 is not served; expected one of v2\.1\.0, "):
        release_data("v2.0.1")
    with pytest.raises(ValueError, match="no schema for 'pod'"):
        release_data(DEFAULT).schema_source("pod")
    with pytest.raises(FileNotFoundError, match=r"v2\.1\.0 has no Flux template"):
        release_data("v2.1.0").flux_template("init.sh")


def test_merge_patch_is_rfc_7386() -> None:
    # RFC 7386's examples
    assert merge_patch({"a": "b"}, {"a": "c"}) == {"a": "c"}
    assert merge_patch({"a": "b"}, {"a": None}) == {}
    assert merge_patch({"a": [{"b": "c"}]}, {"a": [1]}) == {"a": [1]}
    assert merge_patch({"e": None}, {"a": 1}) == {"e": None, "a": 1}
    assert merge_patch({}, {"a": {"bb": {"ccc": None}}}) == {"a": {"bb": {}}}
    assert merge_patch(["a"], {"a": "b"}) == {"a": "b"}
    target = {"a": {"b": 1}}
    merge_patch(target, {"a": {"b": None}})
    assert target == {"a": {"b": 1}}


def test_the_release_lists_agree() -> None:
    from schemas import fluxtemplates
    oracle = sorted(p.name for p in (ROOT / "parity" / "oracle" / "releases").iterdir())
    gotypes = sorted(p.stem for p in (ROOT / "schemas" / "gotypes" / "releases").glob("*.mod"))
    data = sorted(p.name for p in (ROOT / "schemas" / "releases").iterdir() if p.is_dir())
    assert oracle == gotypes == OLDER and data == [releases.data_key(r) for r in OLDER]
    assert fluxtemplates.VERSION == DEFAULT
    assert list(fluxtemplates.OLDER) == [r for r in OLDER if release_data(r).has_flux]


@pytest.mark.slow  # reads every release's CRDs from Go's module cache
def test_each_release_data_is_its_module() -> None:
    from schemas import generate
    for release in OLDER:
        data = release_data(release)
        for kind in ("trainjob", "trainingruntime", "clustertrainingruntime"):
            assert data.schema(kind) == generate.schema_doc(kind, release), (release, kind)
        files = generate.runtime_files(release)
        assert sorted(files) == [p.name for p in data.runtime_files()]
        for path in data.runtime_files():
            assert path.read_text(encoding="utf-8") == files[path.name]


@pytest.mark.slow  # downloads the modules' Flux templates through Go
def test_each_release_has_its_own_flux_templates(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from schemas import fluxtemplates
    go = shutil.which("go")
    if go is None:
        pytest.skip("needs Go")
    fluxtemplates.install(go, tmp_path)
    monkeypatch.setattr(releases, "_FLUX_DIRS", (tmp_path,))
    newest = release_data(DEFAULT).flux_template("entrypoint.sh")
    assert newest.startswith("# Copyright The Kubeflow Authors.")
    assert "flux R encode --hosts=${hosts} %s" in newest
    for release in ("v2.2.0", "v2.2.1"):
        older = release_data(release).flux_template("entrypoint.sh")
        assert older.startswith("#!/bin/sh") and "--hosts=${hosts} --local" in older
    monkeypatch.setattr(releases, "_FLUX_DIRS", (tmp_path / "missing",))
    with pytest.raises(FileNotFoundError, match=r"of Kubeflow Trainer v2\.2\.0 is not installed"):
        release_data("v2.2.0").flux_template("init.sh")


def test_generated_folders_hold_only_generated_files(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from schemas import generate
    kept = tmp_path / "schemas" / "releases" / "v2_2_1" / "gofacts.patch.json"
    stray = tmp_path / "schemas" / "releases" / "v2_0_1" / "trainjob.patch.json"
    for path in (kept, stray, tmp_path / "runtimes" / "old.yaml"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({}))
    monkeypatch.setattr(generate, "ROOT", tmp_path)
    assert generate.leftovers({kept: "{}\n"}) == [tmp_path / "runtimes" / "old.yaml", stray]
