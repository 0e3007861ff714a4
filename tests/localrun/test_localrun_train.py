"""`tjc run --local` really trains, on CPU, with the env the plugins compile; a wrong env fails.

Each framework runs two "nodes" as local processes: JAX (coordinator, process count and id,
a cross-process psum), torch (torchrun from PET_*, a gloo all-reduce and a data-parallel loop
whose loss falls), MPI (mpirun from the compiled hostfile, an mpi4py allreduce) and XGBoost
(DMLC_* env, a 2-worker collective training). The interpreters come from `make train-env`
(train-env/setup.sh); without them these tests fail in CI and skip elsewhere.
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from compiler.cli.run_cmd import local_launchers
from compiler.core.context import CompileOptions
from compiler.io.builtin import builtin_runtimes
from compiler.io.loader import read_sources
from compiler.io.sshkeys import generated
from compiler.localrun import hosts, plan, runner
from compiler.pipeline.session import JobResult
from compiler.render.pipeline import render_stream

pytestmark = pytest.mark.training  # real training, on CPU

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "tests" / "data" / "localrun"
DEBIAN_PYTHON = "/usr/bin/python3"  # Debian's CPU-only torch lives here (see train-env/)
TIMEOUT = 120.0  # a generous bound for a shared 2-core machine; the runs take seconds
BROKEN_TIMEOUT = 10.0


def _train_python() -> str:
    digest = hashlib.sha256((ROOT / "train-env" / "requirements.txt").read_bytes()).hexdigest()
    cache = Path(os.environ.get("TJC_TRAIN_CACHE", Path.home() / ".cache" / "tjc-train"))
    return str(cache / digest[:16] / "bin" / "python")


@functools.cache
def _imports(python: str, module: str) -> bool:
    return Path(python).exists() and subprocess.run(
        [python, "-c", f"import {module}"], capture_output=True).returncode == 0


def _need(python: str, module: str, also: str | None = None) -> None:
    """Skip (fail in CI) when the interpreter or a tool of `make train-env` is missing."""
    ok = _imports(python, module) and (also is None or shutil.which(also) is not None)
    if not ok:
        message = f"{python} cannot import {module}{' or ' + also + ' is missing' if also else ''}"
        if os.environ.get("CI"):
            pytest.fail(f"{message}: make test runs make train-env first")
        pytest.skip(f"{message}; run make train-env")


def _objects(tmp_path: Path, text: str) -> list[dict[str, object]]:
    job = tmp_path / "job.yaml"
    job.write_text(text)
    results = [r for r in render_stream(read_sources([str(job)]), builtin_runtimes(),
                                        CompileOptions(ssh_keys=generated()))
               if isinstance(r, JobResult)]
    assert len(results) == 1 and results[0].objects, results
    return results[0].objects


def _trainjob(name: str, runtime: str, command: list[str], env: dict[str, str] | None = None,
              ) -> str:
    lines = [f"apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
             f"metadata: {{name: {name}, namespace: default}}\nspec:\n"
             f"  runtimeRef: {{name: {runtime}}}\n  trainer:\n    numNodes: 2\n"
             f"    command: {command!r}\n".replace("'", '"')]
    if env:
        lines.append("    env:\n" + "".join(f"    - {{name: {k}, value: \"{v}\"}}\n"
                                               for k, v in env.items()))
    return "".join(lines)


def _run(tmp_path: Path, text: str, python: str, *, timeout: float = TIMEOUT,
         breaking: Callable[[plan.Plan], None] | None = None) -> tuple[runner.Outcome, str]:
    built = plan.build_plan(_objects(tmp_path, text),
                            plan.Options(python=python, run_dir=tmp_path / "run",
                                         launchers=local_launchers()))
    if breaking is not None:
        breaking(built)
    out = io.StringIO()
    outcome = runner.run(built, SCRIPTS, out, timeout=timeout)
    print(out.getvalue())
    print(f"{built.jobset}: {'succeeded' if outcome.succeeded else 'failed'} in "
          f"{outcome.seconds:.1f}s ({outcome.reason})", file=sys.stderr)
    return outcome, out.getvalue()


def _pod_env(built: plan.Plan, index: int) -> dict[str, str]:
    return [pod for job in built.jobs for pod in job.pods if not pod.stand_in][index].env


def _wrong_port(variable: str, index: int = 1) -> Callable[[plan.Plan], None]:
    """Point one pod's `variable` (a port, or host:port) at a port nothing listens on."""

    def breaking(built: plan.Plan) -> None:
        env = _pod_env(built, index)
        head, sep, _ = env[variable].rpartition(":")
        env[variable] = f"{head}{sep}{hosts.free_port()}"

    return breaking


@pytest.fixture(autouse=True)
def _timed(request: pytest.FixtureRequest) -> Iterator[None]:
    begin = time.monotonic()
    yield
    print(f"{request.node.name}: {time.monotonic() - begin:.1f}s", file=sys.stderr)


# --- JAX -------------------------------------------------------------------------------------

JAX_EXAMPLE = ROOT / "examples" / "jax-psum.yaml"


def test_jax_example_joins_two_processes_and_sums_across_them(tmp_path: Path) -> None:
    python = _train_python()
    _need(python, "jax")
    outcome, out = _run(tmp_path, JAX_EXAMPLE.read_text(), python)
    assert outcome.succeeded, out
    assert "[jax-psum-node-0-0] process 0/2: psum over 4 devices = 4.0" in out
    assert "[jax-psum-node-0-1] process 1/2: psum over 4 devices = 4.0" in out


def test_jax_with_a_wrong_coordinator_port_fails(tmp_path: Path) -> None:
    python = _train_python()
    _need(python, "jax")
    outcome, out = _run(tmp_path, JAX_EXAMPLE.read_text(), python, timeout=BROKEN_TIMEOUT,
                        breaking=_wrong_port("JAX_COORDINATOR_ADDRESS"))
    assert not outcome.succeeded
    assert "psum over" not in out


def test_jax_initialize_without_arguments_reads_only_the_coordinator(tmp_path: Path) -> None:
    """Stock JAX reads JAX_COORDINATOR_ADDRESS but not the plugin's JAX_NUM_PROCESSES and
    JAX_PROCESS_ID (on a cluster it asks the Kubernetes API instead), so the bare
    `jax.distributed.initialize()` of examples/jax-mnist.yaml stops here."""
    python = _train_python()
    _need(python, "jax")
    outcome, out = _run(tmp_path, (ROOT / "examples" / "jax-mnist.yaml").read_text(), python)
    assert not outcome.succeeded
    assert "ValueError: Number of processes must be defined." in out


# --- torch -----------------------------------------------------------------------------------

# Debian's torch 1.13 on Python 3.11 reads torchrun's default "0" for --redirects and --tee as
# None (an IntFlag change of 3.11); an explicit per-rank value avoids that, through torchrun's
# own PET_* options.
TORCH_ENV = {"PET_REDIRECTS": "1:0", "PET_TEE": "1:0", "PET_MONITOR_INTERVAL": "0.2"}


def test_torch_torchrun_all_reduces_and_the_loss_falls(tmp_path: Path) -> None:
    _need(DEBIAN_PYTHON, "torch.distributed")
    text = _trainjob("torch-ddp", "torch-distributed", ["torchrun", "torch_train.py"], TORCH_ENV)
    outcome, out = _run(tmp_path, text, DEBIAN_PYTHON)
    assert outcome.succeeded, out
    for rank in (0, 1):
        assert f"rank {rank}/2: all_reduce(rank + 1) = 3.0" in out
        assert f"] rank {rank}: loss " in out and "replicas equal: True" in out


def test_torch_with_a_wrong_master_port_fails(tmp_path: Path) -> None:
    _need(DEBIAN_PYTHON, "torch.distributed")
    text = _trainjob("torch-ddp", "torch-distributed", ["torchrun", "torch_train.py"], TORCH_ENV)
    outcome, out = _run(tmp_path, text, DEBIAN_PYTHON, timeout=BROKEN_TIMEOUT,
                        breaking=_wrong_port("PET_MASTER_PORT"))
    assert not outcome.succeeded
    assert "all_reduce" not in out


# --- MPI -------------------------------------------------------------------------------------

MPI_JOB = ["mpirun", "python", "mpi_allreduce.py"]


def test_mpi_mpirun_reaches_both_hostfile_nodes(tmp_path: Path) -> None:
    python = _train_python()
    _need(python, "mpi4py", also="mpirun")
    outcome, out = _run(tmp_path, _trainjob("mpi-sum", "deepspeed-distributed", MPI_JOB), python)
    assert outcome.succeeded, out
    assert "rank 0/2 on " in out and "rank 1/2 on " in out
    assert out.count("allreduce = 3") == 2


def test_mpi_with_a_wrong_hostfile_fails(tmp_path: Path) -> None:
    python = _train_python()
    _need(python, "mpi4py", also="mpirun")

    def breaking(built: plan.Plan) -> None:
        env = _pod_env(built, 0)
        env["OMPI_MCA_orte_default_hostfile"] += ".missing"

    outcome, out = _run(tmp_path, _trainjob("mpi-sum", "deepspeed-distributed", MPI_JOB), python,
                        timeout=BROKEN_TIMEOUT, breaking=breaking)
    assert not outcome.succeeded
    assert "allreduce = " not in out


# --- XGBoost ---------------------------------------------------------------------------------

XGB_JOB = ["python", "xgboost_train.py"]


def test_xgboost_two_workers_train_one_model(tmp_path: Path) -> None:
    python = _train_python()
    _need(python, "xgboost")
    outcome, out = _run(tmp_path, _trainjob("xgb", "xgboost-distributed", XGB_JOB), python)
    assert outcome.succeeded, out
    assert "Task 0 got rank 0" in out and "Task 1 got rank 1" in out
    assert "rank 0: logloss " in out and "rank 1: logloss " in out


def test_xgboost_with_a_wrong_tracker_port_fails(tmp_path: Path) -> None:
    python = _train_python()
    _need(python, "xgboost")
    outcome, out = _run(tmp_path, _trainjob("xgb", "xgboost-distributed", XGB_JOB), python,
                        timeout=BROKEN_TIMEOUT, breaking=_wrong_port("DMLC_TRACKER_PORT"))
    assert not outcome.succeeded
    assert "logloss" not in out
