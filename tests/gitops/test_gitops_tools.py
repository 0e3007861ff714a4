"""tjc inside the real GitOps tools: kustomize (a pipe and an exec KRM function), Helm 3 (a
post-renderer executable), Helm 4 (a post-renderer plugin) and the Argo CD plugin's commands
run as Argo CD's cmp-server runs them.

kustomize and helm are the versions pinned in e2e/tools/go.mod, Helm 4 (helm4) the one in
e2e/helm4/go.mod, built by e2e/tools/build.sh (`make test` runs it). Without them these tests
skip, except in CI (CI=true), where a missing tool is a failure.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from compiler import __version__
from tests.cli.test_cli import CONNECT, flux_files

pytestmark = pytest.mark.slow  # runs the pinned GitOps tools

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
ARGOCD = ROOT / "deploy" / "argocd"
HELM4_PLUGIN = ROOT / "deploy" / "helm" / "tjc-postrenderer-plugin"
TJC_BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def tools() -> Path:
    """The folder with kustomize, helm and helm4."""
    found = subprocess.run([str(ROOT / "e2e" / "tools" / "build.sh"), "--print-dir"],
                           capture_output=True, text=True, check=True).stdout.strip()
    folder = Path(found)
    if not all((folder / name).is_file() for name in ("kustomize", "helm", "helm4")):
        message = f"kustomize, helm and helm4 not built (run e2e/tools/build.sh): {folder}"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return folder


def env_with(tools: Path, **extra: str) -> dict[str, str]:
    """The environment with kustomize, helm and `tjc` on PATH; `tjc` runs this checkout's
    package (PYTHONPATH), whichever checkout the virtual environment was installed from."""
    path = os.pathsep.join([str(TJC_BIN), str(tools), os.environ.get("PATH", "")])
    python_path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PATH": path, "PYTHONPATH": python_path, **extra}


def sh(argv: list[str], env: dict[str, str], cwd: Path | None = None,
       stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, input=stdin,
                          timeout=300, check=False)


def docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


def parallelism(jobset: dict[str, Any]) -> int:
    node = next(r for r in jobset["spec"]["replicatedJobs"] if r["name"] == "node")
    return int(node["template"]["spec"]["parallelism"])


def test_tools_are_the_pinned_versions(tools: Path) -> None:
    assert sh([str(tools / "kustomize"), "version"], os.environ.copy()).stdout.strip() == \
        "v5.7.1"
    assert 'Version:"v3.19.0"' in sh([str(tools / "helm"), "version"], os.environ.copy()).stdout
    assert 'Version:"v4.3.1"' in sh([str(tools / "helm4"), "version"], os.environ.copy()).stdout


def test_kustomize_build_piped_through_passthrough(tools: Path) -> None:
    env = env_with(tools)
    built = sh(["kustomize", "build", str(EXAMPLES / "gitops" / "overlays" / "prod")], env)
    assert built.returncode == 0, built.stderr
    done = sh(["tjc", "render", "--passthrough", "-q", "-"], env, stdin=built.stdout)
    assert done.returncode == 0, done.stderr
    out = docs(done.stdout)
    assert [d["kind"] for d in out] == [d["kind"] if d["kind"] != "TrainJob" else "JobSet"
                                       for d in docs(built.stdout)]
    namespace, config, jobset = out
    assert namespace["metadata"]["labels"] == {"environment": "prod"}
    assert config["data"] == {"DATASET": "s3://datasets/mnist", "EPOCHS": "3"}
    # the overlay's JSON patch made numNodes 4: the JobSet runs four node pods
    assert jobset["metadata"] == {"name": "mnist", "namespace": "ml-team"} and \
        parallelism(jobset) == 4


def test_kustomize_runs_tjc_as_an_exec_krm_function(tools: Path) -> None:
    env = env_with(tools)
    done = sh(["kustomize", "build", "--enable-alpha-plugins", "--enable-exec",
               str(EXAMPLES / "gitops" / "rendered")], env)
    assert done.returncode == 0, done.stderr
    out = docs(done.stdout)
    assert [(d["kind"], d["metadata"]["name"]) for d in out] == [
        ("Namespace", "ml-team"), ("ConfigMap", "train-config"), ("JobSet", "mnist")]
    assert parallelism(out[2]) == 4
    assert "config.kubernetes.io" not in done.stdout


def test_kustomize_fails_when_the_function_reports_an_error(tools: Path,
                                                            tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "gitops", tmp_path / "gitops")
    config = tmp_path / "gitops" / "rendered" / "tjc.yaml"
    config.write_text(config.read_text().replace("maxNumNodes: 8", "maxNumNodes: 2"))
    done = sh(["kustomize", "build", "--enable-alpha-plugins", "--enable-exec",
               str(tmp_path / "gitops" / "rendered")], env_with(tools))
    assert done.returncode != 0 and done.stdout == ""
    assert "4 trainer nodes, more than the allowed 2" in done.stderr
    assert "[resources.max-nodes]" in done.stderr


def test_helm_template_with_the_post_renderer_wrapper(tools: Path) -> None:
    done = sh(["helm", "template", "demo", str(EXAMPLES / "helm-chart"), "--set", "numNodes=3",
               "--post-renderer", str(ROOT / "deploy" / "helm" / "tjc-post-renderer")],
              env_with(tools))
    assert done.returncode == 0, done.stderr
    out = docs(done.stdout)
    assert [(d["kind"], d["metadata"]["name"]) for d in out] == [
        ("ConfigMap", "demo-config"), ("JobSet", "demo")]
    assert parallelism(out[1]) == 3


def test_helm_post_renderer_is_tjc_itself_with_args(tools: Path) -> None:
    done = sh(["helm", "template", "demo", str(EXAMPLES / "helm-chart"), "--post-renderer",
               str(TJC_BIN / "tjc"), *[f"--post-renderer-args={a}" for a in
                                       ("render", "--passthrough", "--keep-trainjobs", "-q",
                                        "-")]], env_with(tools))
    assert done.returncode == 0, done.stderr
    assert [d["kind"] for d in docs(done.stdout)] == ["ConfigMap", "TrainJob", "JobSet"]


def test_helm_post_renderer_with_the_release_namespace(tools: Path) -> None:
    """Helm gives a post-renderer no namespace: the chart's TrainJob names none, and
    --default-namespace (as Helm applies) puts its objects in the release's."""
    done = sh(["helm", "template", "demo", str(EXAMPLES / "helm-chart"), "-n", "team-a",
               "--post-renderer", str(ROOT / "deploy" / "helm" / "tjc-post-renderer"),
               "--post-renderer-args", "--default-namespace=team-a"], env_with(tools))
    assert done.returncode == 0, done.stderr
    assert [(d["kind"], d["metadata"].get("namespace")) for d in docs(done.stdout)] == [
        ("ConfigMap", None), ("JobSet", "team-a")]


# --- Helm 4: the post-renderer plugin -----------------------------------------------------------

@pytest.fixture()
def helm4(tools: Path, tmp_path: Path) -> dict[str, str]:
    """The environment of a Helm 4 with its own data, config and cache folders, the plugin
    installed there (`helm plugin install` of a folder links it into $HELM_DATA_HOME/plugins,
    where Helm looks when HELM_PLUGINS is not set)."""
    env = env_with(tools, HELM_DATA_HOME=str(tmp_path / "helm-data"),
                   HELM_CONFIG_HOME=str(tmp_path / "helm-config"),
                   HELM_CACHE_HOME=str(tmp_path / "helm-cache"),
                   KUBECONFIG=str(tmp_path / "no-kubeconfig"))
    env.pop("HELM_PLUGINS", None)
    done = sh(["helm4", "plugin", "install", str(HELM4_PLUGIN)], env)
    assert done.returncode == 0, done.stderr
    listed = sh(["helm4", "plugin", "list"], env)
    assert listed.stdout.split("\n")[1].split()[:3] == ["tjc", __version__, "postrenderer/v1"]
    return env


def test_helm4_template_and_install_with_the_plugin(helm4: dict[str, str]) -> None:
    done = sh(["helm4", "template", "demo", str(EXAMPLES / "helm-chart"), "--set", "numNodes=3",
               "--post-renderer", "tjc"], helm4)
    assert done.returncode == 0, done.stderr
    out = docs(done.stdout)
    assert [(d["kind"], d["metadata"]["name"]) for d in out] == [
        ("ConfigMap", "demo-config"), ("JobSet", "demo")]
    assert parallelism(out[1]) == 3
    # each --post-renderer-args is one more tjc render argument
    done = sh(["helm4", "install", "demo", str(EXAMPLES / "helm-chart"), "--dry-run=client",
               "-o", "json", "--post-renderer", "tjc",
               "--post-renderer-args=--keep-trainjobs"], helm4)
    assert done.returncode == 0, done.stderr
    manifest = docs(json.loads(done.stdout)["manifest"])
    assert [d["kind"] for d in manifest] == ["ConfigMap", "JobSet", "TrainJob"]


def privileged_chart(tmp_path: Path) -> Path:
    """The example chart with its TrainJob on a runtime of the chart that runs privileged."""
    chart = tmp_path / "chart"
    shutil.copytree(EXAMPLES / "helm-chart", chart)
    case = (ROOT / "policies" / "testdata" / "security-privileged-fail.yaml").read_text()
    (chart / "templates" / "runtime.yaml").write_text(
        case.replace("name: policy-case", "name: privileged-runtime"))
    job = chart / "templates" / "trainjob.yaml"
    job.write_text(job.read_text().replace("name: torch-distributed",
                                           "name: privileged-runtime"))
    return chart


def test_helm3_and_helm4_fail_with_tjcs_message(tools: Path, helm4: dict[str, str],
                                                tmp_path: Path) -> None:
    chart = privileged_chart(tmp_path)
    denied = "containers must not run privileged [security.privileged]"
    done = sh(["helm4", "template", "demo", str(chart), "--post-renderer", "tjc"], helm4)
    assert done.returncode == 1 and done.stdout == ""
    # Helm 4.3 drops a plugin's stderr; the plugin writes tjc's lines to Helm's own stderr
    lines = done.stderr.splitlines()
    assert lines[0].startswith("<stdin>:") and lines[0].endswith(denied), done.stderr
    assert 'failed to invoke post-renderer plugin "tjc": plugin "tjc" exited with error' \
        in lines[1]
    done = sh(["helm", "template", "demo", str(chart), "--post-renderer",
               str(ROOT / "deploy" / "helm" / "tjc-post-renderer")], env_with(tools))
    assert done.returncode == 1 and done.stdout == ""
    assert denied in done.stderr and "error while running command" in done.stderr


def test_helm4_plugin_command_outside_helm() -> None:
    """Run by hand, the plugin's command is tjc render --passthrough: the manifests out, or
    tjc's messages on its own stderr and exit code 1; warnings are kept back, as Helm 3
    keeps them back from a post-renderer that succeeds."""
    command = [str(HELM4_PLUGIN / "tjc-post-renderer")]
    env = {**os.environ, "PATH": os.pathsep.join([str(TJC_BIN), os.environ.get("PATH", "")])}
    env.pop("HELM_PLUGIN_NAME", None)
    done = sh([*command, "--keep-trainjobs"], env,
              stdin=(EXAMPLES / "torch-mnist.yaml").read_text())
    assert done.returncode == 0 and done.stderr == ""
    assert [d["kind"] for d in docs(done.stdout)] == ["TrainJob", "JobSet"]
    done = sh(command, env, stdin="kind: [\n")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("<stdin>:2:1: error: cannot parse YAML")


# --- Argo CD: the plugin's commands, run as the cmp-server runs them -----------------------

def plugin() -> dict[str, Any]:
    found: dict[str, Any] = yaml.safe_load((ARGOCD / "plugin.yaml").read_text())
    return found


def argocd_env(tools: Path, app: Path) -> dict[str, str]:
    """What Argo CD's repo-server sets for a plugin's commands (build environment and the
    application's plugin env with the ARGOCD_ENV_ prefix)."""
    return env_with(tools, ARGOCD_APP_NAME="mnist-prod", ARGOCD_APP_NAMESPACE="ml-team",
                    ARGOCD_APP_REVISION="0123456789abcdef0123456789abcdef01234567",
                    ARGOCD_APP_REVISION_SHORT="0123456", ARGOCD_APP_SOURCE_PATH=str(app),
                    ARGOCD_APP_SOURCE_REPO_URL="https://git.example.com/ml/apps.git",
                    ARGOCD_APP_SOURCE_TARGET_REVISION="main", KUBE_VERSION="1.35.4",
                    KUBE_API_VERSIONS="v1,apps/v1,batch/v1,jobset.x-k8s.io/v1alpha2,"
                    "trainer.kubeflow.org/v1alpha1")


def run_step(step: dict[str, Any], app: Path, env: dict[str, str]
             ) -> subprocess.CompletedProcess[str]:
    return sh([*step["command"], *step.get("args", [])], env, cwd=app)


WEB = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "nginx:1.27"}]}
"""
PATCH_ONLY = """\
resources: [deployment.yaml]
patches:  # names the TrainJob kind, but the build holds no TrainJob
  - target: {group: trainer.kubeflow.org, kind: TrainJob}
    patch: '[{"op": "replace", "path": "/spec/trainer/numNodes", "value": 2}]'
"""


def app_repo(root: Path) -> Path:
    """A repository of Argo CD applications, one per folder: kustomize with a TrainJob from
    its base (gitops/overlays/prod), a plain folder with a TrainJob (team-vision), a plain
    kustomize app (web), a kustomize app whose patch only names TrainJobs (patched), a Helm
    chart without Trainer kinds (chart) and a Helm chart templating a TrainJob
    (chart-trainjob), a kustomize app with a remote base that discovery does not fetch
    (remote)."""
    shutil.copytree(EXAMPLES / "gitops", root / "gitops")
    shutil.copytree(EXAMPLES / "custom-runtime", root / "team-vision")
    shutil.copytree(EXAMPLES / "helm-chart", root / "chart-trainjob")
    for name, kustomization in (("web", "resources: [deployment.yaml]\n"),
                                ("patched", PATCH_ONLY)):
        (root / name).mkdir()
        (root / name / "deployment.yaml").write_text(WEB)
        (root / name / "kustomization.yaml").write_text(kustomization)
    chart = root / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: web\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("replicas: 1\n")
    (chart / "templates" / "deployment.yaml").write_text(
        WEB.replace("name: web}", "name: {{ .Release.Name }}}"))
    remote = root / "remote"
    shutil.copytree(EXAMPLES / "custom-runtime", remote)
    (remote / "kustomization.yaml").write_text(
        "resources:\n  - resnet.yaml\n  - runtime.yaml\n"
        "  - https://github.com/example/platform//runtimes?ref=v1\n")
    return root


def test_argocd_discovery(tools: Path, tmp_path: Path) -> None:
    """The find command as the cmp-server runs it: in the application's folder, a match is
    exit 0 with output."""
    find = plugin()["spec"]["discover"]["find"]
    repo = app_repo(tmp_path / "repo")
    for app, matches in [("gitops/overlays/prod", True), ("team-vision", True),
                         ("remote", True),  # offline, the build fails: its own files decide
                         ("web", False), ("patched", False), ("chart", False),
                         ("chart-trainjob", False), ("gitops/rendered", False)]:
        started = time.monotonic()
        done = run_step(find, repo / app, argocd_env(tools, repo / app))
        assert done.returncode == 0, done.stderr
        assert bool(done.stdout.strip()) is matches, (app, done.stdout, done.stderr)
        assert time.monotonic() - started < 15, app  # never a network timeout
    assert run_step(find, repo / "team-vision", argocd_env(tools, repo)).stdout == \
        "TrainJob team-vision/resnet50 (resnet.yaml)\n"
    (tmp_path / "empty").mkdir()
    for folder in (ROOT / "deploy" / "rbac", tmp_path / "empty"):
        assert run_step(find, folder, argocd_env(tools, folder)).stdout == "", folder


def test_argocd_generate_on_a_kustomize_app(tools: Path, tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "gitops", tmp_path / "repo")
    app = tmp_path / "repo" / "overlays" / "prod"
    # the Application's plugin env TJC_ARGS: several allowed options, split on blanks
    args = "--keep-trainjobs\t--field-validation warn  -q"
    env = {**argocd_env(tools, app), "ARGOCD_ENV_TJC_ARGS": args}
    done = run_step(plugin()["spec"]["generate"], app, env)
    assert done.returncode == 0, done.stderr
    assert [d["kind"] for d in docs(done.stdout)] == ["Namespace", "ConfigMap", "TrainJob",
                                                      "JobSet"]
    assert " error: " not in done.stderr


def test_argocd_generate_on_a_plain_folder_and_a_failing_one(tools: Path,
                                                             tmp_path: Path) -> None:
    app = tmp_path / "app"
    shutil.copytree(EXAMPLES / "custom-runtime", app)
    generate = plugin()["spec"]["generate"]
    done = run_step(generate, app, argocd_env(tools, app))
    assert done.returncode == 0, done.stderr
    # files in name order: resnet.yaml (the TrainJob), then runtime.yaml
    assert [d["kind"] for d in docs(done.stdout)] == ["PodGroup", "JobSet", "TrainingRuntime"]
    (app / "resnet.yaml").write_text((app / "resnet.yaml").read_text().replace(
        "numNodes: 4", "numNodes: four"))
    done = run_step(generate, app, argocd_env(tools, app))
    assert done.returncode == 1
    assert "resnet.yaml:15:15: error: TrainJob team-vision/resnet50: spec.trainer.numNodes" \
        in done.stderr
    # a kustomize failure fails the pipe too (pipefail), not an empty manifest set
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "kustomization.yaml").write_text("resources: [missing.yaml]\n")
    done = run_step(generate, tmp_path / "broken", argocd_env(tools, tmp_path / "broken"))
    assert done.returncode != 0 and "missing.yaml" in done.stderr


def test_argocd_component_adds_the_sidecar_and_the_plugin_config(tools: Path,
                                                                 tmp_path: Path) -> None:
    """The component on a stand-in of Argo CD's repo-server Deployment (its volumes
    var-files and plugins, which the real install has)."""
    shutil.copytree(ARGOCD, tmp_path / "argocd")
    (tmp_path / "install").mkdir()
    (tmp_path / "install" / "repo-server.yaml").write_text(yaml.safe_dump({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "argocd-repo-server", "namespace": "argocd"},
        "spec": {"selector": {"matchLabels": {"app": "r"}}, "template": {
            "metadata": {"labels": {"app": "r"}},
            "spec": {"containers": [{"name": "argocd-repo-server", "image": "argocd"}],
                     "volumes": [{"name": "var-files", "emptyDir": {}},
                                 {"name": "plugins", "emptyDir": {}}]}}}}))
    (tmp_path / "install" / "kustomization.yaml").write_text(
        "namespace: argocd\nresources: [repo-server.yaml]\ncomponents: [../argocd]\n")
    done = sh(["kustomize", "build", str(tmp_path / "install")], env_with(tools))
    assert done.returncode == 0, done.stderr
    config, deployment = docs(done.stdout)
    assert config["kind"] == "ConfigMap" and config["metadata"] == {
        "name": "tjc-cmp-plugin", "namespace": "argocd"}
    assert config["data"]["plugin.yaml"] == (ARGOCD / "plugin.yaml").read_text()
    pod = deployment["spec"]["template"]["spec"]
    containers = {c["name"]: c for c in pod["containers"]}
    assert set(containers) == {"argocd-repo-server", "tjc"}
    sidecar = containers["tjc"]
    assert sidecar["command"] == ["/var/run/argocd/argocd-cmp-server"]
    assert sidecar["securityContext"]["runAsUser"] == 999
    mounts = {m["mountPath"]: m for m in sidecar["volumeMounts"]}
    assert mounts["/home/argocd/cmp-server/config/plugin.yaml"]["subPath"] == "plugin.yaml"
    assert {"/var/run/argocd", "/home/argocd/cmp-server/plugins", "/tmp"} <= set(mounts)
    volumes = {v["name"] for v in pod["volumes"]}
    assert {m["name"] for m in sidecar["volumeMounts"]} <= volumes


# --- tjc diff over kustomize overlays ---------------------------------------------------------

def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                    *args], check=True, capture_output=True)


def test_diff_of_an_overlay_in_two_revisions(tools: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLES / "gitops", repo)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "one")
    prod = repo / "overlays" / "prod" / "kustomization.yaml"
    prod.write_text(prod.read_text().replace("value: 4", "value: 6"))
    git(repo, "commit", "-qam", "two")
    prod.write_text("broken: [\n")  # the work tree is not what is compared
    # from a subfolder: PATH is relative to it, as git's own paths are
    done = sh(["tjc", "diff", "--git", "--kustomize", "HEAD~1", "HEAD", "prod"],
              env_with(tools), cwd=repo / "overlays")
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith("# changed TrainJob ml-team/mnist\n--- HEAD~1/ml-team/mnist\n")
    assert "-        parallelism: 4\n" in done.stdout
    assert "+        parallelism: 6\n" in done.stdout
    same = sh(["tjc", "diff", "--kustomize", str(EXAMPLES / "gitops" / "overlays" / "prod"),
               str(EXAMPLES / "gitops" / "rendered" / ".." / "overlays" / "prod")],
              env_with(tools))
    assert (same.returncode, same.stdout) == (0, "")
    broken = sh(["tjc", "diff", "--kustomize", str(repo / "overlays" / "prod"),
                 str(EXAMPLES / "gitops" / "overlays" / "prod")], env_with(tools))
    assert broken.returncode == 2 and broken.stderr.startswith("tjc diff: kustomize build:")


# --- Argo CD's own cmp-server, driven as its repo-server drives it ---------------------------

@contextlib.contextmanager
def running_cmp_server(tools: Path, **sidecar_env: str) -> Iterator[Path]:
    """Argo CD v3.2.0's argocd-cmp-server with deploy/argocd/plugin.yaml, and `sidecar_env`
    in its environment as the sidecar container's own; yields the socket folder (a short
    path: unix socket paths are limited to about 100 bytes)."""
    work = Path(tempfile.mkdtemp(prefix="tjc-cmp-"))
    (work / "config").mkdir()
    (work / "plugins").mkdir()
    shutil.copy(ARGOCD / "plugin.yaml", work / "config" / "plugin.yaml")
    env = env_with(tools, ARGOCD_PLUGINSOCKFILEPATH=str(work / "plugins"),
                   ARGOCD_CMP_WORKDIR=str(work), **sidecar_env)
    log = (work / "server.log").open("wb")
    server = subprocess.Popen([str(tools / "argocd-cmp-harness"), "cmp-server",
                               "--config-dir-path", str(work / "config"), "--loglevel", "warn"],
                              env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while not (work / "plugins" / "tjc-v1.sock").exists():
            assert server.poll() is None, (work / "server.log").read_text()
            assert time.monotonic() < deadline, "cmp-server did not start"
            time.sleep(0.1)
        yield work / "plugins"
    finally:
        server.terminate()  # it stops serving at once; its graceful exit can take a while
        try:
            server.wait(timeout=5)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=30)
        log.close()
        shutil.rmtree(work, ignore_errors=True)


@pytest.fixture()
def cmp_server(tools: Path) -> Iterator[Path]:
    """The cmp-server of `running_cmp_server`, without platform settings."""
    with running_cmp_server(tools) as sockets:
        yield sockets


def repo_generate(tools: Path, sockets: Path, repo: Path, app: str, *flags: str
                  ) -> subprocess.CompletedProcess[str]:
    return sh([str(tools / "argocd-cmp-harness"), "generate", str(repo), app,
               "-app", "mnist-prod", "-namespace", "ml-team", *flags],
              env_with(tools, ARGOCD_PLUGINSOCKFILEPATH=str(sockets)))


def test_argocd_cmp_server_discovers_and_generates(tools: Path, cmp_server: Path,
                                                   tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLES / "gitops", repo / "gitops")
    shutil.copytree(EXAMPLES / "custom-runtime", repo / "team-vision")
    done = repo_generate(tools, cmp_server, repo, "gitops/overlays/prod")  # by discovery
    assert done.returncode == 0, done.stderr
    out = docs(done.stdout)
    assert [(d["kind"], d["metadata"]["name"]) for d in out] == [
        ("Namespace", "ml-team"), ("ConfigMap", "train-config"), ("JobSet", "mnist")]
    assert parallelism(out[2]) == 4
    done = repo_generate(tools, cmp_server, repo, "team-vision", "-plugin", "tjc-v1",
                         "-env", "TJC_ARGS=--keep-trainjobs -q")
    assert done.returncode == 0, done.stderr
    assert [d["kind"] for d in docs(done.stdout)] == ["TrainJob", "PodGroup", "JobSet",
                                                      "TrainingRuntime"]


def test_argocd_cmp_server_reports_tjc_errors(tools: Path, cmp_server: Path,
                                              tmp_path: Path) -> None:
    app = tmp_path / "repo" / "jobs"
    shutil.copytree(EXAMPLES / "custom-runtime", app)
    (app / "resnet.yaml").write_text((app / "resnet.yaml").read_text().replace(
        "numNodes: 4", "numNodes: four"))
    done = repo_generate(tools, cmp_server, tmp_path / "repo", "jobs")
    assert done.returncode == 1 and done.stdout == ""
    assert "CMP processing failed for application \"mnist-prod\"" in done.stderr
    assert "resnet.yaml:15:15: error: TrainJob team-vision/resnet50: spec.trainer.numNodes: " \
        "expected an integer, got string [TJC-SCHEMA-TYPE]" in done.stderr
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.yaml").write_text("a: 1\n")
    done = repo_generate(tools, cmp_server, tmp_path, "empty")
    assert done.returncode == 1 and "could not find plugin supporting" in done.stderr


def test_argocd_cmp_server_renders_in_the_destination_namespace(
        tools: Path, cmp_server: Path, tmp_path: Path) -> None:
    """A Flux TrainJob and its runtime without namespaces, in an Application whose
    destination namespace is ml-team: its broker address and objects name ml-team (without
    it, the address would have no namespace)."""
    repo = tmp_path / "repo"
    flux_files(repo / "hpc", None)
    with running_cmp_server(tools, TJC_SKIP="images") as sockets:  # the platform's skip
        done = repo_generate(tools, sockets, repo, "hpc", "-plugin", "tjc-v1")
    assert done.returncode == 0, done.stderr
    out = docs(done.stdout)
    # files in name order: job.yaml (the TrainJob), then runtime.yaml
    assert [(d["kind"], d["metadata"].get("namespace")) for d in out] == [
        ("ConfigMap", "ml-team"), ("Secret", "ml-team"), ("JobSet", "ml-team"),
        ("ClusterTrainingRuntime", None)]
    assert CONNECT.format("ml-team").replace("\\", "") in out[0]["data"]["init.sh"]


def test_argocd_cmp_server_claims_only_applications_with_trainer_kinds(
        tools: Path, cmp_server: Path, tmp_path: Path) -> None:
    """Argo CD asks the plugins first: a plugin that matched every kustomization would take
    over every kustomize Application of the cluster."""
    repo = app_repo(tmp_path / "repo")
    for app in ("web", "patched", "chart", "chart-trainjob"):
        done = repo_generate(tools, cmp_server, repo, app)  # left to Argo CD's own tools
        assert done.returncode == 1 and done.stdout == "", app
        assert "could not find plugin supporting the given repository" in done.stderr, app
    # naming the plugin does not get past its discovery either
    done = repo_generate(tools, cmp_server, repo, "web", "-plugin", "tjc-v1")
    assert done.returncode == 1
    assert 'could not find cmp-server plugin with name "tjc-v1"' in done.stderr
    for app, kinds in (("gitops/overlays/prod", ["Namespace", "ConfigMap", "JobSet"]),
                       ("team-vision", ["PodGroup", "JobSet", "TrainingRuntime"])):
        done = repo_generate(tools, cmp_server, repo, app)
        assert done.returncode == 0, done.stderr
        assert [d["kind"] for d in docs(done.stdout)] == kinds


REFUSED_APP_ARGS = [
    # the platform's policies
    ("--skip images", "--skip"), ("--skip=images.tag", "--skip=images.tag"),
    ("-q --no-default-policies", "--no-default-policies"), ("--policy /etc", "--policy"),
    ("--policy-values values.yaml", "--policy-values"), ("--no-validate", "--no-validate"),
    ("--no-def", "--no-def"),  # an abbreviation argparse would have taken
    # paths and patterns: other applications' files
    ("../team-vision", "../team-vision"), ("/etc/passwd", "/etc/passwd"),
    ("*.yaml", "*.yaml"), ("-", "-"),
    # the output, and private keys
    ("--output-dir /tmp/out", "--output-dir"), ("-o json", "-o"),
    ("--mpi-ssh-key generate", "--mpi-ssh-key"),
    # a value outside the option's list, a shell's syntax
    ("--field-validation off", "--field-validation off"), ("-q;id", "-q;id"),
]


def test_argocd_cmp_server_refuses_application_args_outside_the_allow_list(
        tools: Path, cmp_server: Path, tmp_path: Path) -> None:
    repo = app_repo(tmp_path / "repo")
    done = repo_generate(tools, cmp_server, repo, "gitops/overlays/prod", "-env",
                         "TJC_ARGS=--keep-trainjobs --field-validation=warn -q")
    assert done.returncode == 0, done.stderr
    assert [d["kind"] for d in docs(done.stdout)] == ["Namespace", "ConfigMap", "TrainJob",
                                                      "JobSet"]
    for args, named in REFUSED_APP_ARGS:
        done = repo_generate(tools, cmp_server, repo, "gitops/overlays/prod", "-env",
                             f"TJC_ARGS={args}")
        assert done.returncode == 1 and done.stdout == "", args  # nothing rendered
        assert f"tjc: TJC_ARGS: {named} is not allowed: " in done.stderr, (args, done.stderr)


def test_argocd_policies_are_the_sidecars_not_the_applications(tools: Path,
                                                               tmp_path: Path) -> None:
    """The platform's settings in the sidecar's environment apply to every application; an
    Application's plugin env of the same name reaches tjc only as ARGOCD_ENV_..., unread."""
    (tmp_path / "values.yaml").write_text("resources: {maxNumNodes: 2}\n")
    repo = app_repo(tmp_path / "repo")
    with running_cmp_server(tools, TJC_POLICY_VALUES=str(tmp_path / "values.yaml"),
                            TJC_SKIP="security.run-as-non-root") as sockets:
        done = repo_generate(tools, sockets, repo, "gitops/overlays/prod", "-env",
                             "TJC_POLICY_VALUES=/dev/null", "-env", "TJC_SKIP=resources")
        assert done.returncode == 1 and done.stdout == ""
        assert "4 trainer nodes, more than the allowed 2 [resources.max-nodes]" in done.stderr
        assert "[security.run-as-non-root]" not in done.stderr  # the platform's skip


def test_the_krm_wrapper_takes_kpt_style_config(tools: Path) -> None:
    """kpt's `-- key=value` pairs arrive as a ConfigMap's data, strings all."""
    resource_list = yaml.safe_dump({
        "apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList",
        "functionConfig": {"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "function-input"},
                           "data": {"keepTrainJobs": "true",
                                    "skip": "images,security.run-as-non-root"}},
        "items": docs((EXAMPLES / "torch-mnist.yaml").read_text())})
    done = sh([str(ROOT / "deploy" / "krm" / "tjc-krm")], env_with(tools), stdin=resource_list)
    assert done.returncode == 0, done.stderr
    result = yaml.safe_load(done.stdout)
    assert [i["kind"] for i in result["items"]] == ["TrainJob", "JobSet"]
    assert result["results"] == []
