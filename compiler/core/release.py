"""The served Kubeflow Trainer releases, as the compiler tells them apart: named gates.

A `Release` is one release's behaviour: its version and a small number of named gates, each
standing for one difference between the releases (docs/releases.md is the catalogue, with the
cases that show each one; README's gate table names the releases on each side and the
upstream file that changed). Each gate is read in exactly one place: the plugin, the context
build or the admission rule that owns the behaviour, through `ctx.release` (the compile) or
the release the admission functions are given. What differs as data (the CRD schemas and CEL
rules, the built-in runtimes, the Go facts, the Flux templates) is not a gate: it comes from
`compiler.kube.releases`, generated from each release's module, by `version`.

`release_of(version)` gives the Release of a served version and raises `UnservedRelease`, whose
message says why, for any other. Pure: a table of constants, no I/O, no globals that change.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final, Literal

from compiler.common.records import dataclass
from compiler.kube.releases import DEFAULT as DEFAULT_VERSION
from compiler.kube.releases import RELEASES, release_data

ResourcesPerNode = Literal["builder", "replace", "merge"]
PatchMerge = Literal["overrides", "jobs", "spec"]


class UnservedRelease(ValueError):
    """A Kubeflow Trainer version tjc does not reproduce; the message says why."""


@dataclass(frozen=True)
class Release:
    """One served Kubeflow Trainer release and its gates (see the module docstring and
    README's gate table; the comment after each gate names its catalogue entries)."""

    version: str
    # C1: how a TrainJob's resourcesPerNode reaches the trainer's `node` container and the
    # PodGroup: only through the JobSet builder (the PodGroup counts the runtime's), also
    # replacing the runtime info's (the PodGroup counts the TrainJob's), or merged over the
    # runtime's (only with an mlPolicy).
    resources_per_node: ResourcesPerNode = "merge"
    mpi_ssh_modes: bool = True  # C2: file modes on the MPI SSH Secret volume
    hostfile_all_replicas: bool = True  # C3: hostfile endpoints of every replica
    torchtune_bool_args: bool = True  # C4: QLoRA and DoRA need `=true`
    torchtune_strict_args: bool = True  # V4: no LoRA on many nodes, no immutable args
    flux_shm_and_cores: bool = True  # C5: /dev/shm volume, `flux R encode --cores`
    podset_command: bool = True  # C5: the PodSet carries the runtime's command (Flux's app)
    jax_trainer_job_required: bool = False  # C7: JAX dereferences the trainer PodSet
    patch_merge: PatchMerge = "spec"  # C8, C9: runtimePatches on the whole spec or per job,
    # or v2.1's podTemplateOverrides (and spec.labels / spec.annotations)
    num_proc_strings: bool = False  # C10: numProcPerNode auto/cpu/gpu, the policy's own
    absent_plugins: frozenset[str] = frozenset()  # C11: plugins the release does not have
    torch_checks_need_num_proc: bool = False  # V9, C12: torch's Validate needs numProcPerNode
    initializer_mount_check: bool = True  # V2: initializer containers mount `initializer`
    mpi_reserved_envs: bool = True  # V3: the OpenMPI env names are reserved
    flux_trainer_num_proc: bool = True  # V5: Flux checks the TrainJob's numProcPerNode
    runtime_webhook_selector: bool = True  # V1: webhook-validation: disabled skips runtimes
    patch_change_suspended_before: bool = True  # K4: suspended before or after the update
    # (v2.1's podTemplateOverrides: after only)
    managed_by_skip: bool = True  # K1: kueue.x-k8s.io/multikueue TrainJobs are left alone

    @property
    def jobset(self) -> str:
        """The JobSet release this Trainer release is built with (and needs installed)."""
        return release_data(self.version).jobset

    @property
    def newest(self) -> bool:
        """Whether this is the default, newest served release."""
        return self.version == DEFAULT_VERSION

    def has_plugin(self, name: str) -> bool:
        """Whether the release registers the plugin `name` (a plugin of tjc's registry)."""
        return name not in self.absent_plugins

    def gates(self) -> dict[str, object]:
        """Gate name -> value (what `tjc diff --to-trainer-version` compares)."""
        return {name: getattr(self, name) for name in GATES}


GATES: Final = ("resources_per_node", "mpi_ssh_modes", "hostfile_all_replicas",
                "torchtune_bool_args", "torchtune_strict_args", "flux_shm_and_cores",
                "podset_command", "jax_trainer_job_required", "patch_merge",
                "num_proc_strings", "absent_plugins", "torch_checks_need_num_proc",
                "initializer_mount_check", "mpi_reserved_envs", "flux_trainer_num_proc",
                "runtime_webhook_selector", "patch_change_suspended_before", "managed_by_skip")

# gate -> (catalogue entries of docs/releases.md, what it decides, the upstream file that changed)
GATE_DOCS: Final = {
    "resources_per_node": ("C1", "resourcesPerNode replaced (v2.1, v2.2) or merged over the "
                           "runtime's (v2.3); which requests the PodGroup counts",
                           "pkg/runtime/core/trainingruntime.go"),
    "mpi_ssh_modes": ("C2", "file modes on the MPI SSH Secret volume",
                      "pkg/runtime/framework/plugins/mpi/mpi.go"),
    "hostfile_all_replicas": ("C3", "MPI hostfile lines for every replica of a job",
                              "pkg/runtime/framework/plugins/jobset/jobset.go"),
    "torchtune_bool_args": ("C4", "TorchTune QLoRA/DoRA need `=true`",
                            "pkg/runtime/framework/plugins/torch/torchtune.go"),
    "torchtune_strict_args": ("V4", "TorchTune refuses LoRA on many nodes and immutable args",
                              "pkg/runtime/framework/plugins/torch/torchtune.go"),
    "flux_shm_and_cores": ("C5", "Flux /dev/shm volume, `flux R encode --cores`",
                           "pkg/runtime/framework/plugins/flux/flux.go"),
    "podset_command": ("C5", "the PodSet carries image and command (Flux's app command)",
                       "pkg/runtime/runtime.go"),
    "jax_trainer_job_required": ("C7", "JAX without a trainer job fails the reconcile",
                                 "pkg/runtime/framework/plugins/jax/jax.go"),
    "patch_merge": ("C8, C9", "runtimePatches merged per job (v2.2) or on the whole spec "
                    "(v2.3); podTemplateOverrides (v2.1)", "pkg/runtime/core/trainingruntime.go"),
    "num_proc_strings": ("C10", "numProcPerNode auto/cpu/gpu and the torch policy's own",
                         "pkg/runtime/framework/plugins/torch/torch.go"),
    "absent_plugins": ("C11", "no JAX, XGBoost or Flux plugin (PlainML runs)",
                       "pkg/runtime/framework/plugins/registry.go"),
    "torch_checks_need_num_proc": ("V9, C12", "torch's checks run only with numProcPerNode",
                                   "pkg/runtime/framework/plugins/torch/torch.go"),
    "initializer_mount_check": ("V2", "initializer containers must mount `initializer`",
                                "pkg/runtime/framework/plugins/jobset/jobset.go"),
    "mpi_reserved_envs": ("V3", "OpenMPI env names are reserved",
                          "pkg/runtime/framework/plugins/mpi/mpi.go"),
    "flux_trainer_num_proc": ("V5", "Flux checks the TrainJob's numProcPerNode",
                              "pkg/runtime/framework/plugins/flux/flux.go"),
    "runtime_webhook_selector": ("V1", "runtimes labelled webhook-validation: disabled skip "
                                 "the webhook", "manifests/base/webhook/patch_validating.yaml"),
    "patch_change_suspended_before": ("K4", "runtimePatches change when suspended before "
                                      "(or after) the update",
                                      "pkg/runtime/framework/plugins/jobset/jobset.go"),
    "managed_by_skip": ("K1", "TrainJobs managed by MultiKueue get no objects",
                        "pkg/controller/trainjob_controller.go"),
}
assert tuple(GATE_DOCS) == GATES, "a gate without its documentation"

_V2_2: Final = Release(
    "v2.2.1", resources_per_node="replace", mpi_ssh_modes=False, hostfile_all_replicas=False,
    torchtune_bool_args=False, torchtune_strict_args=False, flux_shm_and_cores=False,
    podset_command=False, jax_trainer_job_required=True, patch_merge="jobs",
    initializer_mount_check=False, mpi_reserved_envs=False, flux_trainer_num_proc=False,
    runtime_webhook_selector=False, managed_by_skip=False)

_TABLE: Final = {
    "v2.3.0": Release("v2.3.0"),
    "v2.2.1": _V2_2,
    "v2.2.0": replace(_V2_2, version="v2.2.0", patch_change_suspended_before=False),
    "v2.1.0": replace(_V2_2, version="v2.1.0", resources_per_node="builder",
                      patch_change_suspended_before=False,
                      jax_trainer_job_required=False, patch_merge="overrides",
                      num_proc_strings=True, torch_checks_need_num_proc=True,
                      absent_plugins=frozenset({"jax", "xgboost", "flux"})),
}
assert tuple(sorted(_TABLE)) == tuple(sorted(RELEASES)), "a served release without gates"

DEFAULT: Final = _TABLE[DEFAULT_VERSION]
SERVED: Final = RELEASES  # oldest first


def release_of(version: str) -> Release:
    """The Release of a served version; UnservedRelease (saying why) for any other."""
    found = _TABLE.get(version)
    if found is not None:
        return found
    raise UnservedRelease(_why(version))


def _why(version: str) -> str:
    served = ", ".join(SERVED)
    if version.startswith(("v2.0.", "v1.", "v0.")):
        return (f"Kubeflow Trainer {version} is not served: tjc reproduces v2.1.0 and later "
                "only (it has no CRDs, built-in runtimes or parity oracle of older releases); "
                f"use one of {served}")
    if not version.startswith("v"):
        return f"Kubeflow Trainer version {version!r} must look like vX.Y.Z; one of {served}"
    return f"Kubeflow Trainer {version} is not served; use one of {served}"
