"""The Argo CD plugin's commands without Argo CD: the allow-list of an Application's TJC_ARGS,
the platform's settings from the sidecar's environment, and discovery of plain folders (with a
stand-in kustomize where the bounds of the build are the point). The real cmp-server, kustomize
and helm run them in tests/gitops/test_gitops_tools.py."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
import yaml

from compiler.cli import argocd_cmd, kustomize_build
from compiler.cli.main import main
from compiler.gitops.argocd import AppOptions, RefusedArgument, app_options, platform_arguments

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def test_allowed_app_args_become_render_arguments() -> None:
    assert app_options("") == AppOptions()
    assert app_options("  ").render_arguments() == ["--field-validation=strict"]
    found = app_options("-q\t--keep-trainjobs\n--no-builtin-runtimes --field-validation warn")
    assert found.render_arguments() == ["--keep-trainjobs", "--no-builtin-runtimes",
                                        "--field-validation=warn"]
    assert app_options("--quiet --field-validation=ignore") == \
        AppOptions(field_validation="ignore")
    assert app_options("--name-hash").render_arguments() == [
        "--name-hash", "--field-validation=strict"]  # a changed TrainJob syncs


@pytest.mark.parametrize(("text", "named", "why"), [
    ("--skip images", "--skip", "the policies are the platform's"),
    ("--skip=images", "--skip=images", "the policies are the platform's"),
    ("--policy-values=/etc/x.yaml", "--policy-values=/etc/x.yaml", "the platform's"),
    ("--pss-level privileged", "--pss-level", "the policies are the platform's"),
    ("--policy team/", "--policy", "TJC_POLICY, TJC_POLICY_VALUES, TJC_SKIP"),
    ("-q --no-default-policies", "--no-default-policies", "the policies are the platform's"),
    ("--no-validate", "--no-validate", "cannot be turned off"),
    ("--no-val", "--no-val", "not among the options"),  # no abbreviations
    ("-qj4", "-qj4", "not among the options"),  # no combined short options
    ("--jobs 4", "--jobs", "not among the options"),
    ("--keep-trainjobs=no", "--keep-trainjobs=no", "not among the options"),
    ("other-app/", "other-app/", "no paths or patterns"),
    ("../../team-b/*.yaml", "../../team-b/*.yaml", "no paths or patterns"),
    ("-", "-", "no paths or patterns"),
    ("'--skip' images", "'--skip'", "no paths or patterns"),  # no quoting either
    ("--output-dir out", "--output-dir", "the plugin prints the manifests"),
    ("-o json", "-o", "the plugin prints the manifests"),
    ("--check", "--check", "the plugin prints the manifests"),
    ("--mpi-ssh-key generate", "--mpi-ssh-key", "private key"),
    ("--field-validation", "--field-validation", "takes one of strict, warn, ignore"),
    ("--field-validation --skip", "--field-validation --skip", "takes one of"),
    ("--field-validation=Strict", "--field-validation Strict", "takes one of"),
])
def test_refused_app_args_are_named(text: str, named: str, why: str) -> None:
    with pytest.raises(RefusedArgument) as caught:
        app_options(text)
    assert caught.value.argument == named
    assert str(caught.value).startswith(f"TJC_ARGS: {named} is not allowed: ")
    assert why in str(caught.value)
    assert str(caught.value).endswith("(allowed: -q, --quiet, --keep-trainjobs, "
                                      "--no-builtin-runtimes, --name-hash, "
                                      "--field-validation strict|warn|ignore, "
                                      "--trainer-version v2.1.0|v2.2.0|v2.2.1|v2.3.0, "
                                      "--jobset-version v0.10.1|v0.11.1|v0.12.0)")


def test_platform_settings_are_single_arguments() -> None:
    assert platform_arguments({}) == []
    env = {"TJC_POLICY": "/etc/tjc/a::/etc/tjc/b", "TJC_POLICY_VALUES": "-v.yaml",
           "TJC_SKIP": "images,security.run-as-non-root",
           "ARGOCD_ENV_TJC_POLICY": "/tmp/evil", "ARGOCD_ENV_TJC_SKIP": "resources"}
    assert platform_arguments(env) == [
        "--policy=/etc/tjc/a", "--policy=/etc/tjc/b", "--policy-values=-v.yaml",
        "--skip=images,security.run-as-non-root"]
    render = argocd_cmd.render_options(AppOptions(), env, ".")
    assert (render.policy, render.policy_values, render.skip, render.paths) == (
        ["/etc/tjc/a", "/etc/tjc/b"], "-v.yaml", ["images,security.run-as-non-root"], ["."])


@pytest.fixture()
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A plain application folder (a TrainJob on four nodes and its runtime) as the
    cmp-server's current folder, with no plugin or platform settings in the environment."""
    folder = tmp_path / "app"
    shutil.copytree(EXAMPLES / "custom-runtime", folder)
    monkeypatch.chdir(folder)
    for name in ("ARGOCD_ENV_TJC_ARGS", "TJC_POLICY", "TJC_POLICY_VALUES", "TJC_SKIP"):
        monkeypatch.delenv(name, raising=False)
    return folder


def test_generate_refuses_before_it_renders(app: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ARGOCD_ENV_TJC_ARGS", "--keep-trainjobs --skip\x1b[2J resources")
    assert main(["argocd", "generate"]) == 2
    out, err = capsys.readouterr()
    assert out == ""  # nothing rendered
    assert err.startswith("tjc: TJC_ARGS: --skip\\x1b[2J is not allowed: ")
    assert err.count("\n") == 1  # one line, the control character escaped
    monkeypatch.setenv("ARGOCD_ENV_TJC_ARGS", "--keep-trainjobs")
    assert main(["argocd", "generate"]) == 0
    assert [d["kind"] for d in yaml.safe_load_all(capsys.readouterr().out)] == [
        "TrainJob", "PodGroup", "JobSet", "TrainingRuntime"]


def test_generate_applies_the_platforms_policies(app: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "values.yaml").write_text("resources: {maxNumNodes: 2}\n")
    monkeypatch.setenv("TJC_POLICY_VALUES", str(tmp_path / "values.yaml"))
    monkeypatch.setenv("ARGOCD_ENV_TJC_ARGS", "--field-validation warn")
    assert main(["argocd", "generate"]) == 1
    err = capsys.readouterr().err
    assert "resnet.yaml:" in err and "more than the allowed 2 [resources.max-nodes]" in err
    monkeypatch.setenv("TJC_SKIP", "resources.max-nodes")  # the platform may skip a rule
    assert main(["argocd", "generate"]) == 0
    assert "[resources.max-nodes]" not in capsys.readouterr().err


TRAINJOB = (EXAMPLES / "custom-runtime" / "resnet.yaml").read_text()
CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n" \
    "  note: 'apiVersion: trainer.kubeflow.org/v1alpha1'\n"


def discovered(folder: Path, files: dict[str, str | bytes]) -> str:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            (folder / name).write_bytes(text)
        else:
            (folder / name).write_text(text)
    return argocd_cmd.claim(folder) or ""


@pytest.mark.parametrize(("files", "claimed"), [
    ({"jobs/resnet.yaml": TRAINJOB}, "TrainJob team-vision/resnet50 ("),
    ({"rt.yaml": (EXAMPLES / "custom-runtime" / "runtime.yaml").read_text()},
     "TrainingRuntime team-vision/vision-torch ("),
    ({"list.json": '{"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": '
                   '"trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime", '
                   '"metadata": {"name": "r"}}]}'}, "ClusterTrainingRuntime r ("),
    # a version tjc refuses is still claimed: the sync then fails, saying why
    ({"a.yaml": TRAINJOB.replace("v1alpha1", "v1beta1")}, "TrainJob team-vision/resnet50 ("),
    # unreadable and broken files are passed over, not the end of the search
    ({"a.yaml": b"\xff\xfe trainer.kubeflow.org", "b.yaml": "trainer.kubeflow.org: [",
      "c.yaml": TRAINJOB}, "TrainJob team-vision/resnet50 (")])
def test_discover_claims_a_folder_with_a_trainer_kind(tmp_path: Path,
                                                      files: dict[str, str | bytes],
                                                      claimed: str) -> None:
    assert discovered(tmp_path, files).startswith(claimed)


@pytest.mark.parametrize("files", [
    {},
    {"cm.yaml": CONFIGMAP},  # the group's name in a value is not a Trainer kind
    {"a.yaml": TRAINJOB.replace("kind: TrainJob", "kind: Job")},
    {"a.yaml": TRAINJOB.replace("trainer.kubeflow.org/v1alpha1", "trainer.kubeflow.org")},
    {".hidden/a.yaml": TRAINJOB, "notes.txt": TRAINJOB},  # as tjc render skips them
    {"Chart.yaml": "apiVersion: v2\nname: c\nversion: 1.0.0\n", "extra/a.yaml": TRAINJOB},
    {"templates/a.yaml": TRAINJOB.replace("resnet50", "{{ .Release.Name }}")}])
def test_discover_leaves_other_folders_alone(tmp_path: Path,
                                             files: dict[str, str | bytes]) -> None:
    assert discovered(tmp_path, files) == ""


def fake_kustomize(folder: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> None:
    """A `kustomize` on PATH that runs `script` (sh)."""
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "kustomize").write_text(f"#!/bin/sh\n{script}\n")
    (folder / "bin" / "kustomize").chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder / 'bin'}:/usr/bin:/bin")


def test_discover_builds_offline_and_bounded(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    app = tmp_path / "app"
    app.mkdir()
    (app / "kustomization.yaml").write_text("resources: [job.yaml]\n")
    (app / "job.yaml").write_text(TRAINJOB)
    fake_kustomize(tmp_path, monkeypatch, 'echo "$HTTPS_PROXY $GIT_ALLOW_PROTOCOL" >&2; '
                   'printf "apiVersion: v1\\nkind: ConfigMap\\nmetadata: {name: c}\\n"')
    assert argocd_cmd.claim(app) is None  # the build decides: it holds no Trainer kind
    built = kustomize_build.build(app, offline=True)
    assert built.text is not None and built.text.startswith("apiVersion: v1")
    fake_kustomize(tmp_path / "o", monkeypatch, 'echo "$HTTPS_PROXY $GIT_ALLOW_PROTOCOL" >&2; '
                   'exit 1')
    assert kustomize_build.build(app, offline=True).problem == "http://127.0.0.1:9 file"
    # a build that fails (here: it hangs), or runs too long, leaves it to the folder's files
    fake_kustomize(tmp_path / "s", monkeypatch, "sleep 60")
    monkeypatch.setattr(argocd_cmd, "DISCOVER_TIMEOUT", 0.5)
    started = time.monotonic()
    assert argocd_cmd.claim(app) == "TrainJob team-vision/resnet50 (" + str(app / "job.yaml") + ")"
    assert time.monotonic() - started < 10
    assert kustomize_build.build(app, offline=True, timeout=0.2).problem == \
        "it took longer than 0.2 seconds"
    fake_kustomize(tmp_path / "l", monkeypatch, "yes 'apiVersion: v1'")
    monkeypatch.setattr(kustomize_build, "MAX_BYTES", 1000)
    assert kustomize_build.build(app).problem.startswith("its output is larger than ")
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert kustomize_build.build(app).problem.startswith("cannot run kustomize: ")


def test_discover_prints_a_line_only_when_it_claims(app: Path,
                                                    capsys: pytest.CaptureFixture[str]
                                                    ) -> None:
    assert main(["argocd", "discover"]) == 0
    assert capsys.readouterr().out == "TrainJob team-vision/resnet50 (resnet.yaml)\n"
    assert main(["argocd", "discover", str(app / "missing")]) == 0
    assert capsys.readouterr().out == ""
