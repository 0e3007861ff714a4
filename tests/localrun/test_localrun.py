"""`tjc run --local` without training: what a pod gets (kubelet env, hosts and ports, mounted
files), what is refused, the JobSet order and policies, and the CLI's exit codes. Runs with the
interpreter of the test suite only."""

from __future__ import annotations

import base64
import io
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from compiler.cli.main import main
from compiler.cli.run_cmd import local_launchers
from compiler.localrun import kubelet, plan, runner
from compiler.localrun.kubelet import PodIdentity, PodView

IDENT = PodIdentity("tj", "ns", "node", 1, 0, 0, 1, "default")


def _view(objects: dict[tuple[str, str], dict[str, Any]] | None = None) -> PodView:
    labels, annotations = kubelet.pod_metadata(IDENT, {})
    return PodView(IDENT, labels, annotations, "default", objects or {})


def test_expansion_follows_kubernetes_rules() -> None:
    env = {"A": "x", "B": "y"}
    assert kubelet.expand("$(A)-$(B)", env) == "x-y"
    assert kubelet.expand("$$(A)", env) == "$(A)"  # escaped
    assert kubelet.expand("$(MISSING) $A", env) == "$(MISSING) $A"  # left as written


def test_env_resolves_field_refs_secret_keys_and_earlier_vars_in_order() -> None:
    secret = {"kind": "Secret", "data": {"k": base64.b64encode(b"s3cret").decode()}}
    container = {"env": [
        {"name": "RANK", "valueFrom": {"fieldRef": {
            "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}},
        {"name": "SET", "valueFrom": {"fieldRef": {
            "fieldPath": "metadata.labels['jobset.sigs.k8s.io/jobset-name']"}}},
        {"name": "WHO", "value": "$(SET)-$(RANK)-$(LATER)"},
        {"name": "PW", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
        {"name": "CPUS", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu",
                                                            "divisor": "100m"}}},
        {"name": "LATER", "value": "z"},
        {"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory",
                                                           "divisor": "1Mi"}}},
    ], "resources": {"limits": {"cpu": "1500m"}}}
    env = kubelet.container_env(container, _view({("Secret", "s"): secret}))
    machine_mib = -(-os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2**20)  # ceil
    assert env == {"RANK": "1", "SET": "tj", "WHO": "tj-1-$(LATER)", "PW": "s3cret",
                   "CPUS": "15", "LATER": "z", "MEM": str(machine_mib)}  # no limit: node's


def test_a_missing_required_key_stops_the_pod() -> None:
    container = {"env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "c",
                                                                          "key": "k"}}}]}
    with pytest.raises(kubelet.KubeletError, match="ConfigMap 'c' has no key 'k'"):
        kubelet.container_env(container, _view())


def _jobset(container: dict[str, Any], *, completions: int = 2,
            extra_jobs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    node = {"name": "node", "template": {"spec": {
        "completions": completions, "parallelism": completions,
        "template": {"spec": {"containers": [{"name": "node", **container}]}}}}}
    return {"kind": "JobSet", "metadata": {"name": "tj", "namespace": "default"},
            "spec": {"replicatedJobs": [*(extra_jobs or []), node]}}


def _plan(tmp_path: Path, objects: list[dict[str, Any]], **options: bool) -> plan.Plan:
    return plan.build_plan(objects, plan.Options(python=sys.executable, run_dir=tmp_path,
                                                 launchers=local_launchers(),
                                                 **options))  # type: ignore[arg-type]


def test_pod_hosts_become_loopback_and_a_declared_port_one_free_port(tmp_path: Path) -> None:
    container = {"command": ["python", "-c", "pass"], "ports": [{"containerPort": 29500}],
                 "env": [{"name": "ADDR", "value": "tj-node-0-0.tj"},
                         {"name": "PORT", "value": "29500"},
                         {"name": "BOTH", "value": "tj-node-0-0.tj:29500"},
                         {"name": "SVC", "value": "http://tj-node-0-1.tj.default.svc:8080/"},
                         {"name": "OTHER", "value": "tj-node-0-0.tjx a-tj-node-0-0.tj"},
                         {"name": "RANK", "valueFrom": {"fieldRef": {"fieldPath":
                          "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}}]}
    pods = _plan(tmp_path, [_jobset(container)]).jobs[0].pods
    assert [p.name for p in pods] == ["tj-node-0-0", "tj-node-0-1"]
    port = pods[0].env["PORT"]
    for rank, pod in enumerate(pods):
        assert pod.env["ADDR"] == "127.0.0.1"
        assert pod.env["PORT"] == port and port != "29500"
        assert pod.env["BOTH"] == f"127.0.0.1:{port}"
        assert pod.env["SVC"] == "http://127.0.0.1:8080/"  # an undeclared port stays
        assert pod.env["OTHER"] == "tj-node-0-0.tjx a-tj-node-0-0.tj"  # not pod names
        assert pod.env["RANK"] == pod.env["JOB_COMPLETION_INDEX"] == str(rank)
        assert pod.env["HOSTNAME"] == pod.name
        assert pod.env["PATH"].startswith(str(tmp_path / "bin"))
        assert pod.env["PYTHONUNBUFFERED"] == "1"


def test_mounted_configmap_and_secret_are_files_and_paths_follow(tmp_path: Path) -> None:
    hostfile = {"kind": "ConfigMap", "metadata": {"name": "hf"},
                "data": {"hostfile": "tj-node-0-0.tj slots=1\n"}}
    key = {"kind": "Secret", "metadata": {"name": "ssh"},
           "data": {"ssh-privatekey": base64.b64encode(b"PRIVATE").decode()}}
    container = {"command": ["python", "-c", "pass"], "args": ["--hosts", "/etc/mpi/hostfile"],
                 "env": [{"name": "HOSTFILE", "value": "/etc/mpi/hostfile"}],
                 "volumeMounts": [{"name": "h", "mountPath": "/etc/mpi"},
                                  {"name": "s", "mountPath": "/home/mpiuser/.ssh"}]}
    jobset = _jobset(container, completions=1)
    pod_spec = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod_spec["volumes"] = [
        {"name": "h", "configMap": {"name": "hf", "items": [{"key": "hostfile",
                                                              "path": "hostfile"}]}},
        {"name": "s", "secret": {"secretName": "ssh", "defaultMode": 0o400, "items": [
            {"key": "ssh-privatekey", "path": "id_rsa", "mode": 0o640}]}}]
    pod = _plan(tmp_path, [jobset, hostfile, key]).jobs[0].pods[0]
    local = Path(pod.env["HOSTFILE"])
    assert local.is_relative_to(tmp_path) and local.read_text() == "tj-node-0-0.tj slots=1\n"
    assert pod.argv[-1] == str(local)
    private = local.parent.parent / "s" / "id_rsa"
    # key material is the owner's alone, whatever mode the volume asks for (0640 here)
    assert private.read_bytes() == b"PRIVATE" and private.stat().st_mode & 0o7777 == 0o600


@pytest.mark.parametrize(("container", "options", "message"), [
    ({"command": ["python"], "resources": {"limits": {"nvidia.com/gpu": 1}}}, {},
     "requests nvidia.com/gpu: 1; run with --ignore-gpus"),
    ({"image": "repo/img:1"}, {}, "sets no command, so it runs the entrypoint of image"),
    ({"command": ["/opt/conda/bin/train"], "image": "repo/img:1"}, {},
     "'/opt/conda/bin/train' (the command of container 'node') is in the filesystem of image"),
])
def test_what_cannot_run_here_is_refused(tmp_path: Path, container: dict[str, Any],
                                         options: dict[str, bool], message: str) -> None:
    with pytest.raises(plan.Refusal, match=message.replace("(", r"\(").replace(")", r"\)")):
        _plan(tmp_path, [_jobset(container)], **options)


def test_a_suspended_jobset_is_refused(tmp_path: Path) -> None:
    jobset = _jobset({"command": ["python"]})
    jobset["spec"]["suspend"] = True
    with pytest.raises(plan.Refusal, match="JobSet tj is suspended"):
        _plan(tmp_path, [jobset])


def test_ignore_gpus_runs_a_gpu_pod(tmp_path: Path) -> None:
    container = {"command": ["python"], "resources": {"limits": {"nvidia.com/gpu": 1}}}
    assert _plan(tmp_path, [_jobset(container)], ignore_gpus=True).jobs[0].pods


def _script_job(name: str, script: str, depends: list[tuple[str, str]] | None = None,
                ) -> plan.LocalJob:
    ident = PodIdentity("tj", "default", name, 1, 0, 0, 0, "default")
    return plan.LocalJob(name, [plan.LocalPod(ident, [sys.executable, "-c", script], {})],
                         depends or [])


def test_a_job_waits_for_what_it_depends_on(tmp_path: Path) -> None:
    marker = tmp_path / "initialized"
    jobs = [_script_job("trainer", f"import pathlib; assert pathlib.Path({str(marker)!r})"
                        ".exists(); print('trained')", [("initializer", "Complete")]),
            _script_job("initializer", "import time, pathlib; time.sleep(0.3); "
                        f"pathlib.Path({str(marker)!r}).touch()")]
    built = plan.Plan("tj", jobs, False, "All", ["trainer", "initializer"], 0)
    out = io.StringIO()
    outcome = runner.run(built, tmp_path, out, timeout=60)
    assert outcome.succeeded, out.getvalue()
    assert "[tj-trainer-0-0] trained" in out.getvalue()


def test_success_policy_any_stops_the_rest_and_a_failure_fails_the_set(tmp_path: Path) -> None:
    jobs = [_script_job("server", "import time; time.sleep(60)"),
            _script_job("client", "print('done')")]
    outcome = runner.run(plan.Plan("tj", jobs, False, "Any", ["client"], 0), tmp_path,
                         io.StringIO(), timeout=30)
    assert outcome.succeeded and outcome.seconds < 20
    assert outcome.exit_codes == {"tj-server-0-0": None, "tj-client-0-0": 0}
    failing = [_script_job("node", "import sys; sys.exit(3)")]
    outcome = runner.run(plan.Plan("tj", failing, False, "All", ["node"], 1), tmp_path,
                         io.StringIO(), timeout=30)
    assert not outcome.succeeded and outcome.restarts == 1
    assert outcome.reason == "pod tj-node-0-0 failed with exit code 3"


TRAINJOB = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {{name: hello, namespace: default}}
spec:
  runtimeRef: {{name: jax-distributed}}
  trainer:
    numNodes: 2
    command: [python, -c, "{script}"]
"""


def _cli(tmp_path: Path, script: str, capsys: pytest.CaptureFixture[str],
         *extra: str) -> tuple[int, str, str]:
    job = tmp_path / "job.yaml"
    job.write_text(TRAINJOB.format(script=script))
    code = main(["run", "--local", str(job), "--workdir", str(tmp_path), *extra])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_runs_every_pod_and_prefixes_its_lines(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _cli(tmp_path, "import os; print('id', os.environ['JAX_PROCESS_ID'])",
                          capsys)
    assert code == 0, err
    assert sorted(out.splitlines()) == ["[hello-node-0-0] id 0", "[hello-node-0-1] id 1"]
    assert "tjc: JobSet hello Succeeded" in err


def test_cli_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _cli(tmp_path, "import sys; sys.exit(3)", capsys)
    assert code == 1 and "Failed" in err and "exit 3" in err
    code, _, err = _cli(tmp_path, "pass", capsys, "--python", "/nonexistent/python")
    assert code == 1  # the shim runs, the interpreter is missing: the pods fail
    with pytest.raises(SystemExit) as exc:
        main(["run", str(tmp_path / "job.yaml")])
    assert exc.value.code == 2  # --local is required
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text(TRAINJOB.format(script="pass") + "    resourcesPerNode:\n"
                   "      limits: {nvidia.com/gpu: 1}\n")
    assert main(["run", "--local", str(gpu)]) == 2
    assert "cannot run default/hello locally" in capsys.readouterr().err
    assert main(["run", "--local", str(tmp_path)]) == 2  # job.yaml and gpu.yaml
    assert "must hold exactly one TrainJob, found 2" in capsys.readouterr().err
    assert main(["run", "--local", str(tmp_path / "missing.yaml")]) == 2
    assert main(["run", "--local", str(gpu), "--workdir", str(tmp_path / "no")]) == 2


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_stops_every_process(tmp_path: Path, sig: int) -> None:
    job = tmp_path / "job.yaml"
    marker = f"tjc-stop-test-{sig}-{os.getpid()}"
    job.write_text(TRAINJOB.format(script=f"import time; print('up', flush=True); "
                                   f"time.sleep(120)  # {marker}"))
    proc = subprocess.Popen([sys.executable, "-m", "compiler", "run", "--local", str(job)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=default_sigint)
    assert proc.stdout is not None
    seen = [proc.stdout.readline(), proc.stdout.readline()]
    assert all(line.endswith(" up\n") for line in seen), seen
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "every process of JobSet hello was stopped" in err
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout
    assert left == ""


def test_ready_waits_for_a_tcp_readiness_probe_on_the_mapped_port(tmp_path: Path) -> None:
    server = {"command": ["python", "-c", (
        "import os, socket, time; time.sleep(1); s = socket.socket(); "
        "s.bind(('127.0.0.1', int(os.environ['PORT']))); s.listen(); print('listening'); "
        "s.accept()[0].recv(1); time.sleep(30)")],
        "env": [{"name": "PORT", "value": "9000"}, {"name": "HOST", "value": "tj-server-0-0"}],
        "ports": [{"containerPort": 9000, "name": "svc"}],
        "readinessProbe": {"tcpSocket": {"port": "svc"}}}
    client = {"command": ["python", "-c", (
        "import os, socket; host, port = os.environ['SERVER'].split(':'); "
        "socket.create_connection((host, int(port))).send(b'x'); print('connected')")],
        "env": [{"name": "SERVER", "value": "tj-server-0-0.tj:9000"}]}
    jobset = _jobset(client, completions=1, extra_jobs=[{"name": "server", "template": {
        "spec": {"template": {"spec": {"containers": [{"name": "s", **server}]}}}}}])
    jobset["spec"]["replicatedJobs"][1]["dependsOn"] = [{"name": "server", "status": "Ready"}]
    jobset["spec"]["successPolicy"] = {"operator": "All", "targetReplicatedJobs": ["node"]}
    built = _plan(tmp_path, [jobset])
    assert built.jobs[0].pods[0].ready_port == int(built.jobs[0].pods[0].env["PORT"]) != 9000
    out = io.StringIO()
    outcome = runner.run(built, tmp_path, out, timeout=60)
    assert outcome.succeeded, out.getvalue()
    lines = out.getvalue().splitlines()
    assert lines.index("[tj-server-0-0] listening") < lines.index("[tj-node-0-0] connected")


def default_sigint() -> None:
    """In the child: Ctrl-C's default action. A test run started in the background by a shell
    without job control inherits SIGINT ignored, and so would tjc, which then (rightly) would
    not stop on it: the test is about tjc's handling of a SIGINT it is sent."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class _ExitsAfterFirstPoll:
    """A pod process that is still running at its first poll and has exited 0 at the next:
    it ends between two polls of one runner step (seen under load)."""

    def __init__(self) -> None:
        self.polls = 0
        self.returncode: int | None = None

    def poll(self) -> int | None:
        self.polls += 1
        if self.polls > 1:
            self.returncode = 0
        return self.returncode


def test_a_pod_exiting_during_a_step_is_not_taken_for_a_stalled_set(tmp_path: Path) -> None:
    """One poll per process and step: a pod that exits 0 right after the runner saw it
    running is collected at the next step and the set succeeds (before, the step's second
    poll found nothing running and no exit code collected: "nothing is running and no
    replicated job can start", a false failure)."""
    import threading

    from compiler.localrun import runner
    from compiler.localrun.plan import LocalJob, LocalPod, Plan

    pod = LocalPod(PodIdentity("tiny", "ns", "node", 1, 0, 0, 0, "default"), ["true"], {})
    plan = Plan("tiny", [LocalJob("node", [pod])], False, "All", ["node"], 0)
    attempt = runner._Attempt(plan, tmp_path, io.StringIO(), threading.Lock(),
                              None)  # type: ignore[arg-type]
    attempt.started.add("node")
    attempt.procs[pod.name] = _ExitsAfterFirstPoll()  # type: ignore[assignment]
    assert attempt.step() is None
    assert attempt.step() == (True, "success policy met")
