"""`tjc run --local` writes only below its run folder and leaves no process behind.

Volume files: an item path or mode the API server refuses (`compiler.kube.podspec.volumefiles`) is
refused before anything is written; the writer itself never leaves a volume's folder (not
through `..`, an absolute path or a planted symbolic link) and chooses the modes: 0600 for
Secret keys, never set-uid, set-gid or sticky bits. Processes: whatever signals tjc gets
(SIGKILL, SIGHUP, a second Ctrl-C or SIGTERM during the grace period), no pod process and no
process a pod started outlives it. Runs with the interpreter of the test suite only.
"""

from __future__ import annotations

import base64
import json
import os
import select
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from compiler.cli.main import main
from compiler.core.context import CompileOptions
from compiler.io.builtin import builtin_runtimes
from compiler.io.loader import read_sources
from compiler.io.sshkeys import generated
from compiler.kube.podspec import volumefiles
from compiler.localrun import plan, volumes
from compiler.pipeline.session import JobResult
from compiler.render.pipeline import render_stream
from tests.localrun.test_localrun import TRAINJOB, _jobset, _plan, default_sigint

PRIVATE = b"-----BEGIN OPENSSH PRIVATE KEY-----\n"


def _tree(root: Path) -> dict[str, tuple[int, bytes | None]]:
    """Every path below `root` with its full mode and, for a file, its bytes."""
    out: dict[str, tuple[int, bytes | None]] = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        body = path.read_bytes() if stat.S_ISREG(info.st_mode) else None
        out[str(path.relative_to(root))] = (info.st_mode, body)
    return out


def _mounting(volume: dict[str, Any]) -> dict[str, Any]:
    """A one-pod JobSet whose container mounts `volume`, with its ConfigMap and Secret."""
    container = {"command": ["python", "-c", "pass"],
                 "volumeMounts": [{"name": volume["name"], "mountPath": "/etc/v"}]}
    jobset = _jobset(container, completions=1)
    pod_spec = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod_spec["volumes"] = [volume]
    return jobset


SIDE = [{"kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"hostfile": "h slots=1\n"}},
        {"kind": "Secret", "metadata": {"name": "sec"},
         "data": {"ssh-privatekey": base64.b64encode(PRIVATE).decode()}}]
VOLUME_PATH = "spec.replicatedJobs[0].template.spec.template.spec.volumes[0]"


def _secret(items: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"name": "keys", "secret": {"secretName": "sec", "items": items, **extra}}


def _config(items: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"name": "hosts", "configMap": {"name": "cm", "items": items, **extra}}


# Each case: the volume, where the refusal points and what it says. Relative to the volume's
# folder (<run>/pods/tj-node-0-0/volumes/<name>), four `..` reach the folder holding <run>.
REFUSED = {
    "dotdot": (_secret([{"key": "ssh-privatekey", "path": "../../../../victim"}]),
               "secret.items[0].path", "'../../../../victim' of volume 'keys' has a '..' "
               "element; expected a relative path inside the volume"),
    "absolute": (_config([{"key": "hostfile", "path": "{victim}"}]),
                 "configMap.items[0].path", "of volume 'hosts' is an absolute path"),
    "mode 06777": (_secret([{"key": "ssh-privatekey", "path": "id_rsa", "mode": 3583}]),
                   "secret.items[0].mode", "mode 3583 (octal 0o6777) of volume 'keys': "
                   "expected a number between 0 and 0777 (octal), both inclusive"),
    "defaultMode 01000": (_config([{"key": "hostfile", "path": "hostfile"}],
                                  defaultMode=0o1000),
                          "configMap.defaultMode", "defaultMode 512 (octal 0o1000) of volume "
                          "'hosts': expected a number between 0 and 0777"),
    "defaultMode -1": (_secret([{"key": "ssh-privatekey", "path": "id_rsa"}], defaultMode=-1),
                       "secret.defaultMode", "defaultMode -1"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_volume_the_api_server_refuses_is_refused_before_anything_is_written(
        tmp_path: Path, case: str) -> None:
    volume, field, message = REFUSED[case]
    victim = tmp_path / "victim"
    victim.write_text("original\n")
    victim.chmod(0o644)
    volume = json.loads(json.dumps(volume).replace("{victim}", str(victim)))
    before = _tree(tmp_path)
    with pytest.raises(plan.Refusal) as refused:
        _plan(tmp_path / "run", [_mounting(volume), *SIDE])
    assert str(refused.value).startswith(f"{VOLUME_PATH}.{field}: ")
    assert message in str(refused.value) and "\n" not in str(refused.value)
    assert _tree(tmp_path) == before  # nothing written, not even the run folder


def test_the_cli_refuses_a_runtime_volume_leaving_its_folder_in_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The reported attack: an MPI runtime mounting the SSH Secret with `../` item paths and
    mode 06777 overwrote a file next to the run folder, set-uid and world-writable. Admission
    refuses such a runtime first (as validate and render do: the API server would refuse its
    Pods), so nothing is planned."""
    scratch = tmp_path / "tmp"  # where the run folder goes; the victim is next to it
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    victim = scratch / "victim"
    victim.write_text("original\n")
    victim.chmod(0o644)
    runtime = tmp_path / "runtime.yaml"
    runtime.write_text(EVIL_RUNTIME)
    job = tmp_path / "job.yaml"
    job.write_text(TRAINJOB.format(script="pass").replace("jax-distributed",
                                                          "evil, kind: TrainingRuntime"))
    before = _tree(tmp_path)
    assert main(["run", "--local", str(job), "--runtime", str(runtime)]) == 1
    err = capsys.readouterr().err
    assert ".volumes[0].secret.items[0].path: '../../../../../victim' of volume 'extra' " \
        "has a '..' element" in err and "[TJC-POD-VOLUME]" in err
    assert _tree(tmp_path) == before


EVIL_RUNTIME = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata: {name: evil, namespace: default}
spec:
  mlPolicy:
    numNodes: 1
    mpi: {numProcPerNode: 1, mpiImplementation: OpenMPI, sshAuthMountPath: /root/.ssh,
          runLauncherAsNode: true}
  template:
    spec:
      replicatedJobs:
        - name: launcher
          template:
            spec:
              template:
                spec:
                  containers:
                    - name: node
                      image: x
                      command: [python, -c, pass]
                      volumeMounts: [{name: extra, mountPath: /extra}]
                  volumes:
                    - name: extra
                      secret:
                        secretName: hello-mpi-ssh-auth
                        items: [{key: ssh-privatekey, path: ../../../../../victim, mode: 3583}]
        - name: node
          template:
            spec:
              template:
                spec:
                  containers:
                    - {name: node, image: x, command: [/usr/sbin/sshd]}
"""


def _modes(root: Path) -> dict[str, int]:
    return {key: mode for key, (mode, _) in _tree(root).items()}


def test_secret_keys_are_0600_and_no_file_gets_special_bits(tmp_path: Path) -> None:
    volume_list = [
        _secret([{"key": "ssh-privatekey", "path": "ssh/id_rsa", "mode": 0o644}],
                defaultMode=0o444),
        _config([{"key": "hostfile", "path": "hostfile", "mode": 0o777},
                 {"key": "hostfile", "path": "copy"}], defaultMode=0o440)]
    jobset = _mounting(volume_list[0])
    pod_spec = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod_spec["volumes"] = volume_list
    pod_spec["containers"][0]["volumeMounts"].append({"name": "hosts", "mountPath": "/etc/h"})
    _plan(tmp_path / "run", [jobset, *SIDE])
    modes = _modes(tmp_path / "run")
    base = "pods/tj-node-0-0/volumes"
    assert modes[f"{base}/keys/ssh/id_rsa"] == stat.S_IFREG | 0o600  # asked 0644
    assert modes[f"{base}/hosts/hostfile"] == stat.S_IFREG | 0o755  # asked 0777
    assert modes[f"{base}/hosts/copy"] == stat.S_IFREG | 0o440
    assert all(mode & 0o7000 == 0 for mode in modes.values()), modes
    assert all(mode & 0o777 == 0o700 for mode in modes.values() if stat.S_ISDIR(mode)), modes


def test_the_generated_mpi_private_key_is_0600(tmp_path: Path) -> None:
    text = TRAINJOB.format(script="pass").replace("jax-distributed", "deepspeed-distributed")
    job = tmp_path / "job.yaml"
    job.write_text(text)
    results = [r for r in render_stream(read_sources([str(job)]), builtin_runtimes(),
                                        CompileOptions(ssh_keys=generated()))
               if isinstance(r, JobResult)]
    _plan(tmp_path / "run", results[0].objects)
    keys = sorted((tmp_path / "run").rglob("id_rsa"))
    assert keys and all(key.read_bytes().startswith(b"-----BEGIN") for key in keys)
    assert {key.stat().st_mode & 0o7777 for key in keys} == {0o600}  # the runtime asks 0640


def test_the_writer_refuses_what_leaves_the_volume_even_unchecked(tmp_path: Path) -> None:
    """`volumes.mount` does not trust the plan's check: `..` and absolute item paths."""
    (tmp_path / "run").mkdir()
    for path in ("../outside", str(tmp_path / "outside"), "a/../../outside"):
        jobset = _mounting(_config([{"key": "hostfile", "path": path}]))
        pod_spec = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
        side = {("ConfigMap", "cm"): SIDE[0]}
        with pytest.raises(volumes.VolumeError, match="volume 'hosts': item path"):
            volumes.mount("tj-node-0-0", pod_spec, pod_spec["containers"][0], side,
                          tmp_path / "run")
    assert not [path for path in tmp_path.rglob("*") if not path.is_dir()]  # no file at all


def test_a_planted_link_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "hostfile").write_text("original\n")
    base = tmp_path / "run" / "pods" / "tj-node-0-0" / "volumes"
    base.mkdir(parents=True)
    (base / "hosts").symlink_to(outside)  # the volume folder is a link
    before = _tree(outside)
    with pytest.raises(plan.Refusal, match="'hosts' is not a folder below the run folder"):
        _plan(tmp_path / "run", [_mounting(_config([{"key": "hostfile", "path": "hostfile"}])),
                                 *SIDE])
    (base / "hosts").unlink()
    (base / "hosts").mkdir()
    (base / "hosts" / "hostfile").symlink_to(outside / "hostfile")  # the file is a link
    _plan(tmp_path / "run", [_mounting(_config([{"key": "hostfile", "path": "hostfile"}])),
                             *SIDE])
    assert _tree(outside) == before
    written = base / "hosts" / "hostfile"
    assert not written.is_symlink() and written.read_text() == "h slots=1\n"


@pytest.mark.parametrize(("pod_spec", "expected"), [
    ({"volumes": [{"name": "v", "configMap": {"name": "c", "defaultMode": 0o777, "items": [
        {"key": "k", "path": "a/b..c/.d", "mode": 0}]}}]}, []),
    ({"volumes": [{"name": "v", "secret": {"secretName": "s", "items": [
        {"key": "", "path": "..data"}, {"key": "k", "path": "/abs/../x", "mode": True}]}}]},
     [(("volumes", 0, "secret", "items", 0, "key"), "has no key"),
      (("volumes", 0, "secret", "items", 0, "path"), "starts with '..'"),
      (("volumes", 0, "secret", "items", 1, "path"), "is an absolute path"),
      (("volumes", 0, "secret", "items", 1, "path"), "has a '..' element"),
      (("volumes", 0, "secret", "items", 1, "mode"), "mode True")]),
    ({"volumes": [{"name": "Bad_Name", "downwardAPI": {"defaultMode": 512, "items": [
        {"path": "", "fieldRef": {"fieldPath": "metadata.name"}}]}}]},
     [(("volumes", 0, "name"), "is not a DNS-1123 label"),
      (("volumes", 0, "downwardAPI", "defaultMode"), "defaultMode 512"),
      (("volumes", 0, "downwardAPI", "items", 0, "path"), "has no path")]),
    ({"volumes": [{"name": "p", "projected": {"defaultMode": 0o7777, "sources": [
        {"secret": {"name": "s", "items": [{"key": "k", "path": "x", "mode": 0o1777}]}},
        {"serviceAccountToken": {"path": "../token"}}]}}],
      "containers": [{"name": "c", "volumeMounts": [
          {"name": "p", "mountPath": "/p", "subPath": "..ok"},
          {"name": "p", "mountPath": "/q", "subPathExpr": "$(X)/../y"}]}]},
     [(("volumes", 0, "projected", "defaultMode"), "defaultMode 4095 (octal 0o7777)"),
      (("volumes", 0, "projected", "sources", 0, "secret", "items", 0, "mode"), "mode 1023"),
      (("volumes", 0, "projected", "sources", 1, "serviceAccountToken", "path"),
       "has a '..' element"),
      (("containers", 0, "volumeMounts", 1, "subPathExpr"), "has a '..' element")]),
])
def test_podvolumes_follows_the_api_server(pod_spec: dict[str, Any],
                                           expected: list[tuple[tuple[Any, ...], str]]) -> None:
    found = volumefiles.problems(pod_spec)
    assert [path for path, _ in found] == [path for path, _ in expected], found
    assert all(part in message for (_, message), (_, part) in zip(found, expected, strict=True))


# --- processes ---------------------------------------------------------------------------

# A pod that outlasts SIGTERM: it says so, and so does the child it started (same group).
POD = """\
import os, signal, subprocess, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen(["sleep", "300"])
signal.signal(signal.SIGTERM, lambda *_: print("term", flush=True))
print("pids", os.getpid(), child.pid, flush=True)
while True:
    time.sleep(1)
"""


def _read_until(proc: subprocess.Popen[bytes], word: str, count: int, seen: list[str],
                seconds: float = 60.0) -> None:
    """Read tjc's output into `seen` until `count` lines end in a line starting with `word`."""
    assert proc.stdout is not None
    deadline = time.monotonic() + seconds
    buffer = b""
    while sum(line.split("] ", 1)[-1].startswith(word) for line in seen) < count:
        left = deadline - time.monotonic()
        assert left > 0, f"no {count} {word!r} lines: {seen}"
        if select.select([proc.stdout], [], [], left)[0]:
            chunk = os.read(proc.stdout.fileno(), 4096)
            assert chunk, f"tjc ended early: {seen}"
            buffer += chunk
            *lines, rest = buffer.split(b"\n")
            buffer = rest
            seen += [line.decode() for line in lines]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")  # a zombie has exited; its new parent reaps it


def _survivors(pids: list[int], seconds: float = 10.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while (left := [pid for pid in pids if _alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


@pytest.mark.parametrize("signals", [
    (signal.SIGKILL,), pytest.param((signal.SIGHUP,), marks=pytest.mark.slow),
    (signal.SIGINT, signal.SIGINT),
    (signal.SIGINT, signal.SIGTERM), (signal.SIGTERM, signal.SIGHUP)],
    ids=lambda sigs: "+".join(signal.Signals(s).name for s in sigs))
def test_no_pod_process_outlives_tjc(tmp_path: Path, signals: tuple[int, ...]) -> None:
    script = tmp_path / "pod.py"
    script.write_text(POD)
    job = tmp_path / "job.yaml"
    job.write_text(TRAINJOB.format(script=f"import runpy; runpy.run_path('{script}')"))
    proc = subprocess.Popen([sys.executable, "-m", "compiler", "run", "--local", str(job)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=default_sigint)
    seen: list[str] = []
    pids: list[int] = []
    try:
        _read_until(proc, "pids", 2, seen)
        pids = [int(pid) for line in seen if "] pids " in line for pid in line.split()[2:]]
        assert len(pids) == 4 and all(_alive(pid) for pid in pids), seen
        proc.send_signal(signals[0])
        if len(signals) > 1:
            _read_until(proc, "term", 2, seen)  # tjc is stopping; its grace period runs
            proc.send_signal(signals[1])
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == (-signal.SIGKILL if signals[0] == signal.SIGKILL else 130), err
        assert _survivors(pids) == [], seen
    finally:
        proc.kill()
        proc.wait()
        for pid in pids:  # on failure, leave nothing behind
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


SPAWNER = """\
import os, sys, time
from pathlib import Path
from compiler.localrun import lifetime
proc = lifetime.spawn(["sleep", "300"], dict(os.environ), Path("."))
print(proc.pid, flush=True)
time.sleep(300)
"""


def test_a_pod_process_dies_with_its_parent_without_the_watchdog(tmp_path: Path) -> None:
    """The parent-death signal alone: SIGKILL of the process that started a pod kills the
    pod, though it runs in a session of its own and no watchdog knows it."""
    parent = subprocess.Popen([sys.executable, "-c", SPAWNER], stdout=subprocess.PIPE,
                              text=True, cwd=Path(__file__).resolve().parents[2])
    assert parent.stdout is not None
    pid = int(parent.stdout.readline())
    try:
        assert _alive(pid) and os.getsid(pid) == pid  # a session and process group of its own
        parent.kill()
        parent.wait()
        assert _survivors([pid]) == []
    finally:
        parent.kill()
        parent.wait()
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
