"""Inputs that once crashed tjc, blew up its memory or misled its output: each now gives one
located diagnostic line and a documented exit code, in bounded time and memory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from compiler.cli.main import main
from compiler.core.compile import compile_trainjob
from compiler.io.loader import Source, parse_source

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = (ROOT / "examples" / "jax-mnist.yaml").read_text()
LOCATED = r"^[^\s:][^:]*:\d+:\d+: (error|warning|notice): .* \[[A-Za-z0-9.-]+\]$"


def tjc(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main([*args[:1], "-q", "--no-default-policies", *args[1:]]) \
        if args[0] in ("render", "validate") else main(args)
    out, err = capsys.readouterr()
    return code, out, err


def _problems(text: str) -> list[str]:
    return [d.text() for d in parse_source(Source("in.yaml", text))[1]]


@pytest.mark.parametrize(("text", "expected"), [
    ("a: 1\n~: 2\n", "in.yaml:2:1: error: cannot parse YAML: a null cannot be a key"),
    ("a: 1\n? [x, y]\n: 2\n", "in.yaml:2:3: error: cannot parse YAML: a collection cannot be"),
    ("a: !!int x\n", "in.yaml:1:4: error: cannot parse YAML: cannot decode !!str `x` as a !!int"),
    ("a: !!bool maybe\n", "in.yaml:1:4: error: cannot parse YAML: cannot decode !!str `maybe` "),
    ("a: !!binary x\n", "in.yaml:1:4: error: cannot parse YAML: !!binary value contains invalid "),
    ("a: .nan\n", "in.yaml:1:4: error: cannot parse YAML: json: unsupported value: NaN"),
    ("a: !!float .nan\n", "in.yaml:1:4: error: cannot parse YAML: json: unsupported value: NaN"),
    ("a: b\nc: \x9b\n", "in.yaml:2:4: error: cannot parse YAML: character U+009B is not allowed"),
    ("a: 1\n---\nb: 2\n---\nc: " + "[" * 25_000 + "]" * 25_000 + "\n",
     "in.yaml:5:103: error: document 3 is nested more than 100 levels deep"),
    ("a: " + "{a: " * 25_000 + "1" + "}" * 25_000 + "\n", "in.yaml:1:400: error: document 1 "),
    ("- " * 25_000 + "x\n", "in.yaml:1:201: error: document 1 is nested more than 100 levels"),
])
def test_malformed_yaml_is_one_located_error(text: str, expected: str) -> None:
    found = _problems(text)
    assert len(found) == 1 and found[0].startswith(expected), found


def test_aliases_are_bounded_in_characters_not_only_in_nodes() -> None:
    text = 'a: &a "' + "x" * 100_000 + '"\nb: &b [' + ", ".join(["*a"] * 100) + \
        "]\nc: [" + ", ".join(["*b"] * 100) + "]\n"
    found = _problems(text)
    assert found == ["in.yaml:1:1: error: YAML aliases expand to more than 1048576 "
                     "characters [TJC-INPUT-ALIAS]"]
    nested = "a: &a " + "[" * 60 + "]" * 60 + "\nb: " + "[" * 45 + "*a" + "]" * 45 + "\n"
    assert ["more than 100 levels" in p for p in _problems(nested)] == [True]


def test_metadata_that_is_a_scalar(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(EXAMPLE.replace("metadata:\n  name: jax-mnist\n  namespace: default",
                                   "metadata: x"))
    for verb in ("validate", "render", "explain"):
        code, _, err = tjc([verb, str(job)], capsys)
        assert code == 1 and "Traceback" not in err


def test_float_quantities_in_exponent_form() -> None:
    """Go's JSON form of the float (`1e-7`), parsed as a quantity; the CRD refuses the number
    (int-or-string) with an error, through the library API as through the CLI."""
    from compiler.kube.quantity import canonical

    assert (canonical(1.0e-7), canonical(1.5e-5), canonical(1e21)) == ("100e-9", "15u", "1e+21")
    doc = yaml.safe_load(EXAMPLE.replace('cpu: "2"', "cpu: 1.0e-7"))
    runtime = yaml.safe_load((ROOT / "runtimes" / "jax-distributed.yaml").read_text())
    result = compile_trainjob(doc, runtime)
    assert [d.rule for d in result.diagnostics] == ["TJC-SCHEMA-TYPE"]


def test_huge_quantity_exponents_are_errors(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(EXAMPLE.replace('cpu: "2"', 'cpu: "1e999999"'))
    code, _, err = tjc(["render", str(job)], capsys)
    assert code == 1 and err.count("\n") == 1 and f"{job}:24:14: error:" in err


@pytest.mark.parametrize(("text", "want"), [
    # Ei and E are the exa suffixes, not an exponent; binary-SI caps at max int64
    # (apimachinery's ParseQuantity; found by the parity test after the exponent bound)
    ("5Ei", "5Ei"), ("0Ei", "0"), ("71Ei", "9223372036854775807"), ("1E", "1E"),
    ("2e3", "2e3")])
def test_exa_suffixes_are_no_exponent(text: str, want: str) -> None:
    from compiler.kube import quantity

    assert quantity.canonical_string(quantity.parse(text)) == want


def test_control_characters_are_escaped_in_output_and_diagnostics(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(EXAMPLE.replace("value: --xla_force_host_platform_device_count=2",
                                   'value: "\\x85\\x9b\\x7f\\u2028 x"').replace(
        "  numNodes: 2", '  numNodes: 2\n    "x\\n/tmp/y.yaml:1:1: error: forged": 1'))
    for fmt in ("yaml", "json"):  # the forged key as a warning, not kubectl's strict error
        code, out, err = tjc(["render", str(job), "-o", fmt, "--field-validation", "warn"],
                             capsys)
        assert code == 0
        loaded = list(yaml.load_all(out, Loader=yaml.CSafeLoader))
        assert "\\u0085\\u009b\\u007f\\u2028" in out and loaded
        assert len(err.splitlines()) == 1 and "spec.trainer[x\\n/tmp/y.yaml" in err


def test_negative_and_fractional_gpus(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = tmp_path / "job.yaml"
    for amount, rule in (("-1", "TJC-RESOURCE-NEGATIVE"), ('"500m"', "TJC-RESOURCE-NOT-INTEGER")):
        job.write_text(EXAMPLE.replace('cpu: "2"', f'cpu: "2"\n        nvidia.com/gpu: {amount}'))
        code, out, _ = tjc(["validate", str(job)], capsys)
        assert code == 1 and f"{job}:25:25: error: TrainJob default/jax-mnist: " \
            f"spec.trainer.resourcesPerNode.requests[nvidia.com/gpu]: nvidia.com/gpu is " in out
        assert f"[{rule}]" in out


def test_a_broken_against_file_is_reported(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job, old = tmp_path / "job.yaml", tmp_path / "old.yaml"
    job.write_text(EXAMPLE)
    old.write_text("a: [\n")
    code, out, _ = tjc(["validate", str(job), "--against", str(old)], capsys)
    assert code == 1 and f"{old}:2:1: error: cannot parse YAML" in out


def _odd_curve_key(path: Path) -> None:
    """A PEM EC key whose named curve is one no library knows (P-256's OID, last arc 99)."""
    import base64

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    der = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.DER, serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption())
    der = der.replace(bytes.fromhex("2a8648ce3d030107"), bytes.fromhex("2a8648ce3d030163"))
    body = base64.encodebytes(der).decode()
    path.write_text(f"-----BEGIN EC PRIVATE KEY-----\n{body}-----END EC PRIVATE KEY-----\n")


def test_ssh_key_files_that_are_not_keys(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo, odd = tmp_path / "fifo", tmp_path / "odd.pem"
    os.mkfifo(fifo)
    _odd_curve_key(odd)
    expected = {"/dev/zero": "is not a regular file", str(fifo): "is not a regular file",
                str(odd): "is not an unencrypted PEM private key"}
    for key, message in expected.items():
        code, out, err = tjc(["render", str(ROOT / "examples"), "--mpi-ssh-key", key], capsys)
        assert (code, out) == (2, "") and len(err.splitlines()) == 1 and message in err


def test_a_hidden_folder_above_the_input_does_not_hide_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / ".config" / "jobs"
    (folder / ".skipped").mkdir(parents=True)
    (folder / "job.yaml").write_text(EXAMPLE.replace("numNodes: 2", "numNodes: x"))
    (folder / ".skipped" / "job.yaml").write_text("not: [valid\n")
    code, out, _ = tjc(["validate", str(folder)], capsys)
    assert code == 1 and out.count("error:") == 1 and "[TJC-SCHEMA-TYPE]" in out


def test_a_closed_stdout_keeps_the_exit_code(tmp_path: Path) -> None:
    job = tmp_path / "jobs.yaml"
    job.write_text(EXAMPLE + "---\n" + EXAMPLE.replace("name: jax-mnist", "name: BAD_x"))
    read, write = os.pipe()
    os.close(read)
    try:
        for verb in ("render", "validate"):
            done = subprocess.run([sys.executable, "-m", "compiler", verb, "-q", str(job)],
                                  stdout=write, stderr=subprocess.PIPE, text=True, timeout=120)
            assert done.returncode == 1 and "Traceback" not in done.stderr
    finally:
        os.close(write)


def test_found_by_the_fuzzer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A runtime whose metadata is a scalar (runtime lookup crashed); explain of a file that
    does not parse (a located error, then an unlocated 'holds no TrainJob')."""
    runtime = tmp_path / "rt.yaml"
    runtime.write_text("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainingRuntime\n"
                       "metadata: ' '\nspec: {}\n")
    code, out, _ = tjc(["validate", str(runtime)], capsys)
    assert code == 1 and "Traceback" not in out and f"{runtime}:3:11: error:" in out
    broken = tmp_path / "broken.yaml"
    broken.write_text("[")
    code, out, err = tjc(["explain", str(broken)], capsys)
    assert (code, out) == (1, "")
    assert err.startswith(f"{broken}:2:1: error: cannot parse YAML") and err.count("\n") == 1
