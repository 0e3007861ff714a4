"""More inputs, options and surroundings that once gave a traceback, a hang or unbounded memory:
each now gives one located line and a documented exit code."""

from __future__ import annotations

import contextlib
import io
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from compiler.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = (ROOT / "examples" / "jax-mnist.yaml").read_text()


def tjc(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main([*args[:1], "-q", "--no-default-policies", *args[1:]])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_folder_or_fifo_where_an_output_file_goes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job, out = tmp_path / "job.yaml", tmp_path / "out"
    job.write_text(EXAMPLE)
    (out / "default" / "jax-mnist.yaml").mkdir(parents=True)
    os.mkfifo(out / "default" / "jax-mnist.json")
    for fmt in ("yaml", "json"):
        code, _, err = tjc(["render", str(job), "--output-dir", str(out), "-o", fmt], capsys)
        assert code == 1 and err == f"{job}:5:9: error: {out}/default/jax-mnist.{fmt} exists " \
            "and was not written by tjc render (no tjc marker); not overwritten " \
            "[TJC-OUTPUT-EXISTS]\n"


def test_an_output_file_the_file_system_refuses(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A 253-character name is a valid TrainJob name with --no-validate, and 5 characters too
    long for a file name (NAME_MAX 255) once `.yaml` is added."""
    name = ".".join(["a" * 63] * 4)[:253]
    job, out = tmp_path / "job.yaml", tmp_path / "out"
    job.write_text(EXAMPLE.replace("name: jax-mnist", f"name: {name}"))
    code, _, err = tjc(["render", str(job), "--output-dir", str(out), "--no-validate"], capsys)
    assert code == 1 and err.startswith(f"{job}:5:9: error: cannot write {out}/default/{name}")
    assert err.endswith(": File name too long [TJC-OUTPUT-WRITE]\n") and err.count("\n") == 1
    assert os.listdir(out / "default") == []  # the temporary file is gone
    assert '"files": {}' in (out / ".tjc-render-manifest").read_text()


def _bomb(levels: int = 7) -> str:
    """A YAML alias bomb: 10**levels values from a few hundred characters."""
    lines = ["a0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]"
              for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def _krm(stdin: str, capsys: pytest.CaptureFixture[str],
         monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str]:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
    code = main(["krm"])
    out, err = capsys.readouterr()
    return code, out, err


RESOURCE_LIST = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n"


@pytest.mark.parametrize(("stdin", "expected"), [
    # an alias bomb expanded by PyYAML's plain loader: minutes and gigabytes before
    (RESOURCE_LIST + _bomb() + "items: []\n",
     "<stdin>:1:1: error: YAML aliases expand to more than 1000000 values [TJC-INPUT-ALIAS]\n"),
    # libyaml's message spanned three lines
    ("a: [\n", "<stdin>:2:1: error: cannot parse YAML: did not find expected node content "
     "[TJC-INPUT-SYNTAX]\n"),
    # policyValues as YAML text that does not parse: a traceback
    (RESOURCE_LIST + "items: []\nfunctionConfig: {kind: ConfigMap, data: {policyValues: "
     "'a: ['}}\n", "tjc krm: error: functionConfig: policyValues: cannot parse YAML: did not "
     "find expected node content\n"),
    (RESOURCE_LIST + "items: []\nfunctionConfig:\n  kind: ConfigMap\n  data:\n"
     "    policyValues: |\n" + "".join(f"      {line}\n" for line in _bomb().splitlines()),
     "tjc krm: error: functionConfig: policyValues: YAML aliases expand to more than 1000000 "
     "values\n"),
    ("apiVersion: v1\nkind: List\nitems: []\n",
     "tjc krm: error: input is not a ResourceList of config.kubernetes.io/v1\n"),
])
def test_krm_input_that_does_not_parse(stdin: str, expected: str,
                                       capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    assert _krm(stdin, capsys, monkeypatch) == (2, "", expected)


def test_krm_dates_stay_strings(capsys: pytest.CaptureFixture[str],
                                monkeypatch: pytest.MonkeyPatch) -> None:
    """As kubectl reads them (sigs.k8s.io/yaml): `2024-01-01` is a string, printed quoted so
    the next function in the pipeline does not take it for a timestamp."""
    item = "{apiVersion: v1, kind: ConfigMap, metadata: {name: x}, data: {day: 2024-01-01}}"
    code, out, _ = _krm(RESOURCE_LIST + f"items: [{item}]\n"
                        "functionConfig: {kind: X, spec: {defaultPolicies: false}}\n",
                        capsys, monkeypatch)
    assert code == 0 and '    day: "2024-01-01"\n' in out


@pytest.mark.parametrize("kind", ["zero", "fifo", "bomb", "list", "broken"])
def test_policy_values_that_are_not_usable(
        kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--policy-values /dev/zero read without a bound (memory and time without end, deaf to
    Ctrl-C); an alias bomb expanded; a list got a message about apiVersion and kind."""
    job = tmp_path / "job.yaml"
    job.write_text(EXAMPLE)
    values = {"zero": "/dev/zero", "fifo": str(tmp_path / "fifo"),
              "bomb": str(tmp_path / "bomb.yaml"), "list": str(tmp_path / "list.yaml"),
              "broken": str(tmp_path / "broken.yaml")}[kind]
    (tmp_path / "bomb.yaml").write_text(_bomb())
    (tmp_path / "list.yaml").write_text("- 1\n")
    (tmp_path / "broken.yaml").write_text("resources: {maxNumNodes: [\n")
    if kind == "fifo":
        _feed(tmp_path / "fifo", b"x" * (65 << 20))
    expected = {
        "zero": "/dev/zero:1:1: error: policy values: /dev/zero is larger than 64 MiB",
        "fifo": f"{values}:1:1: error: policy values: {values} is larger than 64 MiB",
        "bomb": f"{values}:1:1: error: policy values: YAML aliases expand to more than "
                "1000000 values",
        "list": f"{values}:1:1: error: policy values must be a mapping (such as resources: "
                "{maxNumNodes: 16})",
        "broken": f"{values}:2:1: error: policy values: cannot parse YAML: did not find "
                  "expected node content"}[kind]
    code = main(["validate", str(job), "--policy-values", values])
    out, err = capsys.readouterr()
    assert (code, out, err) == (2, "", expected + " [TJC-POLICY-SETUP]\n")


def _feed(path: Path, data: bytes) -> None:
    os.mkfifo(path)

    def write() -> None:
        with contextlib.suppress(BrokenPipeError), open(path, "wb") as handle:
            handle.write(data)

    threading.Thread(target=write, daemon=True).start()


@pytest.mark.parametrize("verb", [["validate", "JOB"], ["render", "JOB"], ["policies", "list"]])
def test_a_policy_path_that_is_no_folder_nor_file(
        verb: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--policy /dev/zero (or a FIFO) applied no pack at all, silently, exit 0."""
    job = tmp_path / "job.yaml"
    job.write_text(EXAMPLE)
    os.mkfifo(tmp_path / "fifo")
    for odd in ("/dev/zero", str(tmp_path / "fifo")):
        args = [str(job) if a == "JOB" else a for a in verb]
        code = main([*args, "--policy", odd])
        out, err = capsys.readouterr()
        assert (code, out) == (2, "")
        assert err == f"error: --policy {odd}: expected a folder of .cue files or a .cue " \
            "file [TJC-POLICY-SETUP]\n"


UNREACHABLE = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: abc}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""


@pytest.mark.parametrize(("kubeconfig", "expected"), [
    ("/dev/zero", "kubeconfig /dev/zero is not a regular file"),  # was read without end
    ("FIFO", "kubeconfig FIFO is not a regular file"),
    ("DIR", "kubeconfig DIR is not a regular file"),
    ("JOB", "kubeconfig JOB: apiVersion: expected apiVersion v1 and kind Config, found "
     "trainer.kubeflow.org/v1alpha1 TrainJob"),
    ("LIST", "kubeconfig LIST: line 1: document 1 is a list, expected a mapping with "
     "apiVersion and kind"),
    ("MISSING", "cannot use kubeconfig: cannot read MISSING: No such file or directory"),
])
def test_controller_without_a_usable_kubeconfig(
        kubeconfig: str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Each was a traceback (or a hang) at start-up; now one line and exit 2."""
    names = {"FIFO": tmp_path / "fifo", "DIR": tmp_path, "JOB": tmp_path / "job.yaml",
             "LIST": tmp_path / "list.yaml", "MISSING": tmp_path / "home" / ".kube" / "config"}
    os.mkfifo(names["FIFO"])
    names["JOB"].write_text(EXAMPLE)
    names["LIST"].write_text("- 1\n")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    path = str(names.get(kubeconfig, kubeconfig))
    args = [] if kubeconfig == "MISSING" else ["--kubeconfig", path]
    expected = expected.replace(kubeconfig, path)
    code = main(["controller", "--no-default-policies", *args])
    out, err = capsys.readouterr()
    assert (code, out, err) == (2, "", f"tjc controller: error: {expected}\n")


@pytest.mark.parametrize(("flag", "value"), [
    ("--workers", "0"), ("--workers", "-3"), ("--workers", "x"), ("--metrics-port", "99999"),
    ("--metrics-port", "-1")])
def test_controller_numbers_out_of_range(flag: str, value: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """--metrics-port 99999 was an OverflowError traceback once running; --workers 0 ran one."""
    with pytest.raises(SystemExit) as stop:
        main(["controller", flag, value])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.splitlines()[-1] == f"tjc controller: error: argument " \
        f"{flag}: expected an integer from {1 if flag == '--workers' else 0} to " \
        f"{1024 if flag == '--workers' else 65535}, got '{value}'"


def test_controller_metrics_port_taken(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A port another process holds was an OSError traceback."""
    import signal
    import socket

    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(UNREACHABLE)
    taken = socket.socket()
    taken.bind(("", 0))
    taken.listen()
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    try:
        port = taken.getsockname()[1]
        code = main(["controller", "--no-default-policies", "--kubeconfig", str(kubeconfig),
                     "--metrics-port", str(port)])
    finally:
        taken.close()
        signal.signal(signal.SIGINT, before[0])
        signal.signal(signal.SIGTERM, before[1])
    out, err = capsys.readouterr()
    assert (code, out, err) == (2, "", f"tjc controller: error: cannot serve metrics on port "
                                f"{port}: Address already in use\n")


@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf", "x"])
def test_run_timeout_must_be_seconds(value: str, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    """--timeout -1 failed the JobSet at once ('deadline of -1s exceeded'), nan and inf ran
    without one: a usage error now, before anything runs."""
    job = tmp_path / "job.yaml"
    job.write_text(EXAMPLE)
    with pytest.raises(SystemExit) as stop:
        main(["run", "--local", str(job), f"--timeout={value}"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.splitlines()[-1] == "tjc run: error: argument " \
        f"--timeout: expected a number of seconds above 0, got '{value}'"


def test_controller_a_runtime_the_compiler_cannot_take_is_an_event() -> None:
    """A ClusterTrainingRuntime whose spec is no mapping (what a schema-less copy of the CRD
    would store) raised AttributeError out of the reconcile: retried, but the tenant saw
    nothing. Now it is a TrainJobResourcesCreationFailed event, then the same retry."""
    from compiler.controller.kube import CLUSTER_RUNTIME, JOBSET, TRAINJOB
    from compiler.controller.reconcile import ReconcileError, Reconciler
    from tests.controller.test_controller_units import FakeKube, FakeStore, _trainjob

    kube = FakeKube()
    kube.put(CLUSTER_RUNTIME, {"apiVersion": "trainer.kubeflow.org/v1alpha1",
                               "kind": "ClusterTrainingRuntime",
                               "metadata": {"name": "torch-distributed",
                                            "uid": "uid-of-a-bad-runtime"}, "spec": 5})
    kube.put(TRAINJOB, _trainjob(trainer={"numNodes": 1}))
    events: list[tuple[str, str]] = []
    reconciler = Reconciler(kube, FakeStore(kube, TRAINJOB), FakeStore(kube, JOBSET),  # type: ignore[arg-type]
                            lambda ns, name: None,  # type: ignore[arg-type,return-value]
                            lambda _, reason, note: events.append((reason, note)))
    with pytest.raises(ReconcileError, match=r"^AttributeError: "):
        reconciler.reconcile(("ns", "j"))
    assert [reason for reason, _ in events] == ["TrainJobResourcesCreationFailed"]
    assert events[0][1].startswith("TrainJob resources reconciliation failed: AttributeError: ")


def test_runtimes_escape_what_the_runtime_author_wrote(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A runtime's name, labels and images reached the terminal raw: an escape sequence (a
    window title, colours) ran, a newline forged a table row, and in `show` the name's second
    line left the `#` comment, so the YAML printed carried text of the runtime author's."""
    runtime = tmp_path / "rt.yaml"
    runtime.write_text(
        "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\n"
        'metadata: {name: "evil\\nkind: Secret", labels: {trainer.kubeflow.org/framework: '
        '"\\e]0;pwn\\a"}}\nspec: {template: {spec: {replicatedJobs: [{name: node, template: '
        '{spec: {template: {spec: {containers: [{name: node, image: "a\\nb"}]}}}}}]}}}\n')
    code = main(["runtimes", "--no-builtin-runtimes", "-q", "--runtimes", str(runtime)])
    out, _ = capsys.readouterr()
    assert code == 0 and out.splitlines()[1].split() == [
        "evil\\nkind:", "Secret", "ClusterTrainingRuntime", "\\x1b]0;pwn\\x07", "-", "-", "-",
        "a\\nb"]
    code = main(["runtimes", "--no-builtin-runtimes", "-q", "--runtimes", str(runtime), "show",
                 "evil\nkind: Secret"])
    out, _ = capsys.readouterr()
    assert code == 0 and out.startswith(f"# ClusterTrainingRuntime evil\\nkind: Secret from "
                                        f"{runtime}\n---\napiVersion: ")
    code = main(["runtimes", "--no-builtin-runtimes", "-q", "--runtimes", str(runtime), "show",
                 "x"])
    assert code == 1 and capsys.readouterr().err == "tjc runtimes: no runtime named 'x'; " \
        "available: evil\\nkind: Secret\n"


def test_output_files_that_hold_a_private_key_are_the_owners_alone(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With --mpi-ssh-key the files hold the Secret's private key; they were written with the
    umask's mode (0644 under umask 022), readable by every user of the machine."""
    old = os.umask(0o022)
    try:
        for key, mode in (("generate", 0o600), (None, 0o644)):
            out = tmp_path / f"out-{key}"
            args = ["render", str(ROOT / "examples" / "deepspeed-bert.yaml"), "--output-dir",
                    str(out), *(["--mpi-ssh-key", key] if key else [])]
            code, _, err = tjc(args, capsys)
            (written,) = (out / "default").iterdir()
            assert code == 0 and ("kind: Secret" in written.read_text()) == bool(key), err
            assert written.stat().st_mode & 0o777 == mode
    finally:
        os.umask(old)


def test_diff_git_blobs_are_bounded_as_files_are(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`tjc diff --git` read every blob whole whatever its size (a file on disk over the
    bound is refused unread); the bound is lowered here so the test stays small."""
    import subprocess

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c",
                        "user.email=t@t", *args], check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "job.yaml").write_text(EXAMPLE)
    git("add", "-A")
    git("commit", "-qm", "one")
    monkeypatch.chdir(tmp_path)
    assert main(["diff", "--git", "HEAD", "HEAD", "jobs"]) == 0
    monkeypatch.setattr("compiler.cli.diff_sources.MAX_BYTES", 100)
    capsys.readouterr()
    code = main(["diff", "--git", "HEAD", "HEAD", "jobs"])
    assert (code, capsys.readouterr().err) == (
        2, "tjc diff: HEAD:jobs/job.yaml is larger than 0 MiB\n")


def test_policies_test_with_a_values_header_that_is_not_yaml(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A case file's `# values:` header that does not parse was a yaml traceback."""
    (tmp_path / "testdata").mkdir()
    (tmp_path / "p.cue").write_text((ROOT / "compiler" / "policies" / "images.cue").read_text())
    (tmp_path / "testdata" / "case.yaml").write_text(
        "# rule: images.tag\n# expect: fail\n# values: {a: [\n" + EXAMPLE)
    code = main(["policies", "test", str(tmp_path)])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "") and err == f"tjc: a `# values:` header below " \
        f"{tmp_path}/testdata is not YAML: expected the node content, but found " \
        "'<stream end>'\n"


def test_local_run_host_patterns_are_built_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every env value and argument of every pod is rewritten through the table; the regex of
    every host name was built again on each call, so planning a 1000-node TrainJob took 27 s
    (5000: minutes, before any process started). Built once per table now (4 s)."""
    from compiler.localrun import hosts

    built: list[str] = []
    real = hosts.HostTable._pattern

    def spy(self: hosts.HostTable, tail: str) -> Any:
        built.append(tail)
        return real(self, tail)

    monkeypatch.setattr(hosts.HostTable, "_pattern", spy)
    names = {f"j-node-0-{i}": f"j-node-0-{i}" for i in range(1000)}
    names |= {f"j-node-0-{i}.j": f"j-node-0-{i}" for i in range(1000)}
    table = hosts.HostTable(names, {("j-node-0-7", 29500): 40000})
    rewritten = [table.rewrite(f"tcp://j-node-0-{i}.j:29500 j-node-0-{i}") for i in range(1000)]
    assert rewritten[7] == "tcp://127.0.0.1:40000 127.0.0.1"
    assert rewritten[8] == "tcp://127.0.0.1:29500 127.0.0.1"
    assert len(built) == 2


def test_local_run_refuses_more_pods_than_a_machine_should_start(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """numNodes 1025 is a valid TrainJob; run --local built every pod in memory and would
    then have forked them all. Refused before anything is planned, exit 2."""
    job = tmp_path / "job.yaml"
    job.write_text(EXAMPLE.replace("numNodes: 2", "numNodes: 1025"))
    code = main(["run", "--local", str(job)])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "") and err.splitlines()[-1] == "tjc: cannot run " \
        "default/jax-mnist locally: the JobSet has 1025 pods; tjc run --local starts at " \
        "most 1024 processes (lower numNodes to try the job here)"


def test_local_run_of_a_jobset_no_cluster_could_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """numNodes 2000000000: the compile refuses it as validate and render do (an Indexed Job
    runs at most 100,000 pods at once), exit 1 with the located error."""
    job = tmp_path / "job.yaml"
    job.write_text(EXAMPLE.replace("numNodes: 2", "numNodes: 2000000000"))
    code = main(["run", "--local", str(job)])
    out, err = capsys.readouterr()
    assert (code, out) == (1, "") and err.endswith(
        ": error: TrainJob default/jax-mnist: spec.trainer.numNodes: replicated job 'node' "
        "would run 2000000000 pods at once; an Indexed Job may run at most 100000 "
        "[TJC-JOBSET-PARALLELISM]\n")


def test_krm_error_lines_escape_the_orchestrators_annotations(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The item's config.kubernetes.io/path annotation went raw into the stderr line: a
    newline in it forged a second error line."""
    job = EXAMPLE.replace("numNodes: 2", "numNodes: x").replace(
        "  namespace: default", '  namespace: default\n  annotations:\n    '
        'config.kubernetes.io/path: "a.yaml\\nforged.yaml:1:1: error: x"')
    items = "".join(f"  {line}\n" for line in job.splitlines() if not line.startswith("#"))
    code, _, err = _krm(RESOURCE_LIST + "functionConfig: {kind: X, spec: {defaultPolicies: "
                        "false}}\nitems:\n-" + items[1:], capsys, monkeypatch)
    assert code == 1 and err.count("\n") == 1
    assert err.startswith("tjc krm: a.yaml\\nforged.yaml:1:1: error: x: error: TrainJob "
                          "default/jax-mnist: spec.trainer.numNodes: ")


def test_controller_names_never_step_in_the_url_path(
        capsys: pytest.CaptureFixture[str]) -> None:
    """`--namespace ../x` (and a name with a slash) made a request to another URL path:
    the flag takes a namespace name only, and a slash in a path part is escaped."""
    from compiler.controller.kube import TRAINJOB

    assert TRAINJOB.path("a/../b", "x/y", "status") == \
        "/apis/trainer.kubeflow.org/v1alpha1/namespaces/a%2F..%2Fb/trainjobs/x%2Fy/status"
    with pytest.raises(SystemExit) as stop:
        main(["controller", "--namespace", "../x"])
    assert stop.value.code == 2 and capsys.readouterr().err.splitlines()[-1].startswith(
        "tjc controller: error: argument --namespace: '../x' is not a namespace name: ")


@pytest.mark.parametrize(("length", "fails"), [
    (48, None),  # jax-mnist: pods <name>-node-0-1-abcde, 63 characters
    (49, "pod names generated for this JobSet will exceed 63 characters"),
    (57, "job names generated for this JobSet will exceed 63 characters")])
def test_controller_a_trainjob_name_its_jobset_cannot_carry(
        length: int, fails: str | None) -> None:
    """A TrainJob name of up to 63 characters passes Trainer's checks, but JobSet's webhook
    refuses Job names (`<name>-node-0`) or Pod names (`<name>-node-0-<index>-abcde`) over 63:
    the apply failed with 422 on every retry. Now Failed once, with JobSet's own message;
    the compile itself refuses it, so validate, render and the library say the same."""
    import yaml as pyyaml

    from compiler.core.compile import compile_trainjob

    name = "j" * length
    job = pyyaml.safe_load(EXAMPLE.replace("name: jax-mnist", f"name: {name}"))
    runtime = pyyaml.safe_load((ROOT / "runtimes" / "jax-distributed.yaml").read_text())
    result = compile_trainjob(job, runtime)
    found = [d for d in result.diagnostics if d.rule == "TJC-JOBSET-NAME-TOO-LONG"]
    assert result.ok is (fails is None)
    assert (not found) if fails is None else (
        not result.objects and found[0].field_path == "metadata.name"
        and fails in found[0].message)
