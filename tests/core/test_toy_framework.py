"""A framework is one module: a toy framework, written as a package in a temporary folder and
added to the registry as README's "Adding a plugin" says (its `PLUGIN` in the literal
`REGISTRY`, nothing else), is compiled into the JobSet, admitted and warned about by
`tjc validate`, and run by `tjc run --local` through its hooks; no other file changes."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from compiler import compile_trainjob
from compiler.cli.main import main
from compiler.core import plugins
from compiler.core.plugins import jobset

PACKAGE = '''\
"""The toy framework: TOY_WORLD_SIZE and TOY_RANK on the trainer pods of a runtime labelled
`trainer.kubeflow.org/framework: toy`."""

from collections.abc import Iterator

from compiler.common.diagnostics import Diagnostic, error
from compiler.core.context import NODE, TRAINER, Context
from compiler.core.plugins.base import (
    PluginResult, PluginSpec, UpsertEnv, completion_index_env)
from compiler.core.plugins.checks import NUM_NODES, Admission, as_list, quirk, trainer_of
from compiler.core.plugins.hooks import CustomValidation, Quirks
from toyfw.launch import Launch


def active(ctx: Context) -> bool:
    labels = ctx.runtime.get("metadata", {}).get("labels") or {}
    return labels.get("trainer.kubeflow.org/framework") == "toy"


def enforce(ctx: Context) -> PluginResult:
    ps = ctx.pod_set_by_ancestor(TRAINER)
    if ps is None or ps.container(NODE) is None:
        return PluginResult()
    return PluginResult(edits=(UpsertEnv(ps.index, NODE, (
        {"name": "TOY_WORLD_SIZE", "value": str(ps.count)},
        completion_index_env("TOY_RANK"))),))


class Hooks(CustomValidation, Quirks):
    def validate(self, job: Admission) -> Iterator[Diagnostic]:
        if job.trainer is not None and job.trainer.get("numNodes", 1) > 8:
            yield error("TJC-WEBHOOK-TOY-NODES", "the toy framework runs at most 8 nodes",
                        NUM_NODES)

    def quirks(self, trainjob: dict, runtime: dict) -> Iterator[Diagnostic]:
        trainer = trainer_of(trainjob) or {}
        if not any(env.get("name") == "TOY_SEED" for env in as_list(trainer.get("env"))):
            yield quirk("TJC-QUIRK-TOY-SEED", "without TOY_SEED every toy node draws the "
                        "same numbers; set spec.trainer.env TOY_SEED", ("spec",))


PLUGIN = PluginSpec(
    name="toy",
    policy="runtime label trainer.kubeflow.org/framework: toy",
    active=active,
    enforce=enforce,
    requires=frozenset({"pod-counts"}),
    provides=frozenset({"framework-env"}),
    hooks=(Hooks(), Launch()),
)
'''
LAUNCH = '''\
"""The toy framework's launcher: `toyrun` is the interpreter."""

from compiler.core.plugins.hooks import Launcher, LaunchSite, LocalLaunch, python_script


class Launch(LocalLaunch):
    def local_launch(self, site: LaunchSite) -> Launcher:
        return Launcher(programs={"toyrun": python_script(site.python)})
'''
RUNTIME = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata:
  name: toy-runtime
  namespace: default
  labels: {trainer.kubeflow.org/framework: toy}
spec:
  mlPolicy: {numNodes: 1}
  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            metadata:
              labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}
            spec:
              template:
                spec:
                  containers:
                    - {name: node, image: python:3.12}
"""
SCRIPT = "import os; print('toy', os.environ['TOY_RANK'], 'of', os.environ['TOY_WORLD_SIZE'])"


def trainjob(nodes: int) -> str:
    return f"""\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {{name: toy, namespace: default}}
spec:
  runtimeRef: {{name: toy-runtime, kind: TrainingRuntime}}
  trainer:
    numNodes: {nodes}
    command: [toyrun, -c, "{SCRIPT}"]
"""


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The toy package on sys.path and its PLUGIN in the registry, before the JobSet builder
    (README: "Add it to the literal REGISTRY"); the registry comes back afterwards."""
    package = tmp_path / "toyfw"
    package.mkdir()
    (package / "__init__.py").write_text(PACKAGE)
    (package / "launch.py").write_text(LAUNCH)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("TJC_CACHE_DIR", str(tmp_path / "cache"))
    import toyfw  # type: ignore[import-not-found]

    assert plugins.REGISTRY[-1] is jobset.PLUGIN
    monkeypatch.setattr(plugins, "REGISTRY", (*plugins.REGISTRY[:-1], toyfw.PLUGIN,
                                              jobset.PLUGIN))
    (tmp_path / "runtime.yaml").write_text(RUNTIME)
    yield tmp_path
    for name in [n for n in sys.modules if n == "toyfw" or n.startswith("toyfw.")]:
        del sys.modules[name]


def test_the_toy_edits_reach_the_jobset(toy: Path) -> None:
    result = compile_trainjob(yaml.safe_load(trainjob(3)), yaml.safe_load(RUNTIME))
    assert result.ok, result.diagnostics
    jobset_obj: dict[str, Any] = next(o for o in result.objects if o["kind"] == "JobSet")
    job = jobset_obj["spec"]["replicatedJobs"][0]["template"]["spec"]
    env = {e["name"]: e for e in job["template"]["spec"]["containers"][0]["env"]}
    assert job["parallelism"] == 3 and env["TOY_WORLD_SIZE"]["value"] == "3"
    assert env["TOY_RANK"]["valueFrom"]["fieldRef"]["fieldPath"].endswith(
        "['batch.kubernetes.io/job-completion-index']")


def test_validate_asks_the_toy_admission_and_quirk_hooks(
        toy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (toy / "ok.yaml").write_text(trainjob(2))
    (toy / "big.yaml").write_text(trainjob(9).replace("name: toy,", "name: big,"))
    files = [str(toy / "ok.yaml"), str(toy / "big.yaml"), str(toy / "runtime.yaml")]
    code = main(["validate", "--no-default-policies", *files])
    out = capsys.readouterr().out
    assert code == 1, out
    assert out.count("[TJC-QUIRK-TOY-SEED]") == 2
    big = [line for line in out.splitlines() if "TJC-WEBHOOK-TOY-NODES" in line]
    assert len(big) == 1 and "big.yaml" in big[0] and "spec.trainer.numNodes" in big[0]


def test_run_local_asks_the_toy_launcher(toy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (toy / "job.yaml").write_text(trainjob(2))
    code = main(["run", "--local", str(toy / "job.yaml"), "--runtime", str(toy / "runtime.yaml"),
                 "--timeout", "60"])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert "[toy-node-0-0] toy 0 of 2" in out and "[toy-node-0-1] toy 1 of 2" in out
    assert "TJC-QUIRK-TOY-SEED" in err  # run compiles as render does, quirks included
