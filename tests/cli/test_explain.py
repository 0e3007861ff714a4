"""`tjc explain`: plugins in graph order, who set each field with its input line, and the
plugin graph in Graphviz format."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.cli.main import main
from compiler.common.diagnostics import Diagnostic

EXAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "jax-mnist.yaml")


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
    assert code == 1 and "clusterTrainingRuntime must be created before the TrainJob" in err
    assert f"{job}:9:5: error:" in err, "explain checks the TrainJob as render does"
    other = tmp_path / "cm.yaml"
    other.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    code, _, err = run(["explain", str(other)], capsys)
    assert code == 2 and "holds no TrainJob" in err


def test_own_runtime_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runtime = Path(__file__).resolve().parents[2] / "runtimes" / "jax-distributed.yaml"
    mine = tmp_path / "rt.yaml"
    mine.write_text(runtime.read_text().replace("name: jax-distributed", "name: my-jax"))
    job = tmp_path / "job.yaml"
    job.write_text(Path(EXAMPLE).read_text().replace("jax-distributed", "my-jax"))
    code, out, _ = run(["explain", str(job), "--runtime", str(mine)], capsys)
    assert code == 0 and f"ClusterTrainingRuntime my-jax ({mine}:" in out


def test_explain_validates_like_render_and_stays_linear(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """20k env entries: the CLI refuses them as validate does (exit 1, located); the explainer
    itself, handed them anyway, takes seconds, not the minutes a quadratic lookup took."""
    import time

    from compiler.explain.explainer import Explainer, find_runtime
    from compiler.io.builtin import builtin_runtimes
    from compiler.io.loader import Source, parse_source

    env = "".join(f"      - name: E{i}\n        value: v{i}\n" for i in range(20_000))
    text = Path(EXAMPLE).read_text().replace("    env:\n", "    env:\n" + env)
    job = tmp_path / "job.yaml"
    job.write_text(text)
    code, out, err = run(["explain", str(job)], capsys)
    assert (code, out) == (1, "")
    assert f"{job}:20:7: error: TrainJob default/jax-mnist: spec.trainer.env: must have at " \
           "most 128 items" in err
    docs, _ = parse_source(Source("job.yaml", text))
    runtime = find_runtime(docs[0], list(builtin_runtimes()))
    assert not isinstance(runtime, Diagnostic)
    start = time.monotonic()
    lines = Explainer(docs[0], runtime).text().count("<- trainJob spec.trainer.env[")
    assert lines == 20_001 and time.monotonic() - start < 20


def test_explain_reports_every_parse_problem_located(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(Path(EXAMPLE).read_text() + "---\na: [\n")
    code, _, err = run(["explain", str(job)], capsys)
    assert code == 1 and err.startswith(f"{job}:") and "[TJC-INPUT-SYNTAX]" in err


def test_a_folder_or_a_file_of_several_trainjobs(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Every TrainJob in input order; one with errors is reported, the others explained."""
    text = Path(EXAMPLE).read_text()
    both = tmp_path / "both.yaml"
    both.write_text(text + "---\n" + text.replace("name: jax-mnist", "name: second"))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "broken.yaml").write_text(text.replace("name: jax-mnist", "name: b")
                                                  .replace("numNodes: 2", "numNodes: two"))
    code, out, err = run(["explain", str(both)], capsys)
    assert code == 0 and err == ""
    assert [ln.split(" (")[0] for ln in out.splitlines() if ln.startswith("TrainJob ")] == [
        "TrainJob default/jax-mnist", "TrainJob default/second"]
    assert out.count("plugins, in graph order:") == 2
    code, out, err = run(["explain", str(tmp_path)], capsys)
    assert code == 1 and "spec.trainer.numNodes" in err and "default/b" in err
    assert out.count("plugins, in graph order:") == 2
