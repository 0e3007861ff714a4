"""`tjc explain`: plugins in graph order, who set each field with its input line, and the
plugin graph in Graphviz format."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.cli.main import main

EXAMPLE = str(Path(__file__).resolve().parent.parent / "examples" / "jax-mnist.yaml")


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_fields_name_who_set_them_and_where(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["explain", EXAMPLE], capsys)
    assert code == 0
    assert "1. jax [mlPolicy.jax] requires: -; provides: framework-env, pod-counts" in out
    assert "2. jobset [always] requires: pod-counts" in out
    assert (f"spec.replicatedJobs[0].template.spec.parallelism = 2  <- trainJob "
            f"spec.trainer.numNodes, via plugin jax ({EXAMPLE}:11:15)") in out
    assert "env[0] = JAX_NUM_PROCESSES=\"2\"  <- plugin jax" in out
    assert f"env[3] = XLA_FLAGS=\"--xla_force_host_platform_device_count=2\"  <- trainJob " \
           f"spec.trainer.env[0] ({EXAMPLE}:20:9)" in out
    assert "ports[0] = {\"containerPort\": 29500}  <- plugin jax" in out


def test_graph_dot(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["explain", EXAMPLE, "--graph", "dot"], capsys)
    assert code == 0
    assert out.startswith("digraph plugins {\n") and out.endswith("}\n")
    assert '"jax" -> "jobset" [label="framework-env, pod-counts, trainer-port"];' in out


def test_missing_runtime_and_no_trainjob(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(Path(EXAMPLE).read_text().replace("jax-distributed", "nope"))
    code, _, err = run(["explain", str(job)], capsys)
    assert code == 1 and "not found ClusterTrainingRuntime" in err and f"{job}:9:11:" in err
    other = tmp_path / "cm.yaml"
    other.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    code, _, err = run(["explain", str(other)], capsys)
    assert code == 2 and "holds no TrainJob" in err


def test_own_runtime_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runtime = Path(__file__).resolve().parent.parent / "runtimes" / "jax-distributed.yaml"
    mine = tmp_path / "rt.yaml"
    mine.write_text(runtime.read_text().replace("name: jax-distributed", "name: my-jax"))
    job = tmp_path / "job.yaml"
    job.write_text(Path(EXAMPLE).read_text().replace("jax-distributed", "my-jax"))
    code, out, _ = run(["explain", str(job), "--runtime", str(mine)], capsys)
    assert code == 0 and f"ClusterTrainingRuntime my-jax ({mine}:" in out
