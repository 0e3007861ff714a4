"""The plugin hooks: one-method protocols a plugin implements beside its build steps.

Modelled on upstream's framework interfaces (`pkg/runtime/framework/interface.go`: a plugin is
a name plus whichever one-method interfaces it implements). A plugin declares its hooks in
`PluginSpec.hooks`: objects of classes that subclass the protocols they implement (mypy then
checks each method, and a missing one makes the class abstract). The applications find them
through the registry (`compiler.core.plugins.hooked`), never by importing a plugin module:

- `CustomValidation.validate(job)`: admission errors (upstream's `Validate`), asked by
  `compiler.core.webhook`;
- `Quirks.quirks(trainjob, runtime)`: warnings for what upstream accepts but does
  unexpectedly, asked by `compiler.pipeline.quirks`, as are the three below;
- `GpuEffect.gpu_effect(trainer, policy, gpus)`: what counting 0 GPUs instead of `gpus`
  changes;
- `TrainerEnvs.trainer_envs()`: the envs (and port 29500) injected only with `spec.trainer`;
- `NodeCount.node_pods(policy, num_nodes)`: the node job's pods for `trainer.numNodes`, when
  not numNodes itself;
- `LocalLaunch.local_launch(site)`: stand-in programs and env for `tjc run --local`, asked by
  `compiler.localrun` (the CLI hands it the registry's launchers).

The quirk hooks that take a `policy` are asked only for the frameworks the runtime's mlPolicy
sets (`PluginSpec.ml_source`), with that framework's policy. Pure: a hook reads its arguments
only.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple, Protocol, runtime_checkable

from compiler.common.diagnostics import Diagnostic
from compiler.common.jsondata import Obj
from compiler.common.launch import Launcher, LaunchSite, LocalLaunch, python_script
from compiler.core.plugins.checks import Admission

__all__ = ["CustomValidation", "GpuEffect", "InjectedEnvs", "LaunchSite", "Launcher",
           "LocalLaunch", "NodeCount", "Quirks", "TrainerEnvs", "python_script"]


@runtime_checkable
class CustomValidation(Protocol):
    """Admission rules (upstream's `CustomValidationPlugin`)."""

    def validate(self, job: Admission) -> Iterable[Diagnostic]:
        """The admission errors for one TrainJob (nothing when the runtime lacks the
        plugin's policy)."""
        ...


@runtime_checkable
class Quirks(Protocol):
    """Warnings for inputs that hit one of the framework's upstream quirks."""

    def quirks(self, trainjob: Obj, runtime: Obj) -> Iterable[Diagnostic]:
        """The quirk warnings for one TrainJob and its runtime (subject `trainjob` or
        `runtime`)."""
        ...


@runtime_checkable
class GpuEffect(Protocol):
    """What the framework does differently when upstream counts no GPUs (§8-B4)."""

    def gpu_effect(self, trainer: Obj, policy: Obj, gpus: int) -> str | None:
        """What counting 0 GPUs instead of the runtime's `gpus` changes for `trainer` under
        this framework's `policy`; None: nothing."""
        ...


class InjectedEnvs(NamedTuple):
    """The env names a framework injects into the trainer `node` container, with port 29500,
    only when the TrainJob has `spec.trainer`; `note` says what else holds (text appended to
    the names)."""

    names: tuple[str, ...]
    note: str = ""


@runtime_checkable
class TrainerEnvs(Protocol):
    """The framework env that depends on `spec.trainer` being present (§8-B2)."""

    def trainer_envs(self) -> InjectedEnvs:
        """The envs this framework injects only with `spec.trainer`."""
        ...


@runtime_checkable
class NodeCount(Protocol):
    """How the framework counts the node job's pods, when not `trainer.numNodes` itself."""

    def node_pods(self, policy: Obj, num_nodes: int) -> int:
        """The pods of the node job for `num_nodes` under this framework's `policy`."""
        ...
