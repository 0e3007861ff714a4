"""MPI (reference §3.3): SSH and hostfile wiring, OpenMPI environment, the hostfile ConfigMap
and the SSH Secret.

Active when `mlPolicy.mpi` is set. Enforce: the `node` job's count from numNodes (minus one when
the launcher runs as a node), slots per node (the TrainJob's numProcPerNode, else the GPU count
when the policy says 1), the SSH volume on the `node` and `launcher` jobs and the hostfile
volume on the launcher, their mounts on the `node` containers, and the OpenMPI env on the
launcher's `node` container. Build: the SSH Secret (only when the compile options carry a key
source; otherwise a notice names the Secret the job needs), then the hostfile ConfigMap with
one `<endpoint> slots=<n>` line per node pod. Its size is computed first, without building
it: a hostfile over the ConfigMap limit (1 MiB, which the API server would refuse) is an error,
so that no count, however large, makes the compiler allocate in proportion to it.

Admission (upstream's MPI `Validate`): runLauncherAsNode with 2+ nodes needs the jobs
`launcher` and `node`, and the OpenMPI env names are reserved. What `tjc run --local` needs
(an ssh stand-in for the `sshd` pods) is in `launch`, this package's other module.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

from compiler.common.diagnostics import Diagnostic, Severity, error
from compiler.common.errors import CompileError
from compiler.common.jsondata import Obj
from compiler.core.context import NODE, Context, PodSet
from compiler.core.plugins.base import (
    Edit,
    PluginResult,
    PluginSpec,
    SetCount,
    SetFact,
    UpsertEnv,
    UpsertMounts,
    UpsertVolumes,
    ml_policy_has,
    owned_object,
)
from compiler.core.plugins.checks import NUM_NODES, Admission, reserved_envs
from compiler.core.plugins.hooks import CustomValidation, GpuEffect, NodeCount
from compiler.core.plugins.mpi.launch import Launch
from compiler.core.resources import gpu_count, int32, node_resources

LAUNCHER = "launcher"
OPENMPI = "OpenMPI"
SLOTS = "mpi.numProcPerNode"
RESERVED_ENVS = frozenset({"OMPI_MCA_orte_default_hostfile", "OMPI_MCA_plm_rsh_args",
                           "OMPI_MCA_orte_keep_fqdn_hostnames",
                           "OMPI_MCA_orte_set_default_slots"})
HOSTFILE_DIR = "/etc/mpi"
# The API server's limit on a ConfigMap's data (core validation, MaxSecretSize).
CONFIGMAP_MAX_BYTES = 1024 * 1024


def active(ctx: Context) -> bool:
    """Only for runtimes whose mlPolicy sets mpi."""
    return ml_policy_has(ctx, "mpi")


def _policy(ctx: Context) -> Obj:
    policy: Obj = (ctx.ml_policy or {})["mpi"]
    return policy


def enforce(ctx: Context) -> PluginResult:
    """Counts, slots, volumes, mounts and the launcher's OpenMPI env."""
    policy, trainer = _policy(ctx), ctx.trainer
    edits: list[Edit] = []
    node = ctx.pod_set_by_name(NODE)
    if trainer is not None and isinstance(trainer.get("numNodes"), int) and node is not None:
        note = " (minus one: the launcher runs as a node)" \
            if policy.get("runLauncherAsNode") is True else ""
        edits.append(SetCount(node.index, node_pods(policy, trainer["numNodes"]), note))
    slots = policy.get("numProcPerNode", 1)
    if trainer is not None and isinstance(trainer.get("numProcPerNode"), int):
        slots = trainer["numProcPerNode"]
    elif slots == 1 and gpu_count(node_resources(ctx)) > 1:
        slots = int32(gpu_count(node_resources(ctx)))
    edits.append(SetFact(SLOTS, slots))
    for ps in ctx.pod_sets:
        if ps.name in (NODE, LAUNCHER):
            edits.extend(_wiring(ctx, ps, policy, slots))
    return PluginResult(edits=tuple(edits))


def _wiring(ctx: Context, ps: PodSet, policy: Obj, slots: int) -> list[Edit]:
    edits: list[Edit] = [UpsertVolumes(ps.index, (_ssh_volume(ctx),))]
    if ps.name == LAUNCHER:
        edits.append(UpsertVolumes(ps.index, (_hostfile_volume(ctx),)))
    if ps.container(NODE) is None:
        return edits
    ssh_mount = {"name": "mpi-ssh-auth", "mountPath": policy.get("sshAuthMountPath", "/root/.ssh")}
    edits.append(UpsertMounts(ps.index, NODE, (ssh_mount,)))
    if ps.name != LAUNCHER:
        return edits
    edits.append(UpsertMounts(ps.index, NODE, ({"name": "mpi-hostfile",
                                                "mountPath": HOSTFILE_DIR},)))
    implementation = policy.get("mpiImplementation", OPENMPI)
    if implementation != OPENMPI:
        raise CompileError(error(
            "TJC-MPI-IMPLEMENTATION",
            f"MPI implementation {implementation!r} is not supported; only OpenMPI is",
            ("spec", "mlPolicy", "mpi", "mpiImplementation"), subject="runtime"))
    edits.append(UpsertEnv(ps.index, NODE, (
        {"name": "OMPI_MCA_orte_default_hostfile", "value": f"{HOSTFILE_DIR}/hostfile"},
        {"name": "OMPI_MCA_orte_keep_fqdn_hostnames", "value": "true"},
        {"name": "OMPI_MCA_orte_set_default_slots", "value": str(slots)},
        {"name": "OMPI_MCA_plm_rsh_args", "value": "-o ConnectionAttempts=10"},
    )))
    return edits


def _ssh_volume(ctx: Context) -> Obj:
    """The SSH Secret volume; its file modes came in v2.3 (`Release.mpi_ssh_modes`)."""
    if not ctx.release.mpi_ssh_modes:
        return {"name": "mpi-ssh-auth", "secret": {
            "secretName": f"{ctx.name}-mpi-ssh-auth",
            "items": [{"key": key, "path": path} for key, path, _ in SSH_ITEMS]}}
    return {"name": "mpi-ssh-auth", "secret": {
        "secretName": f"{ctx.name}-mpi-ssh-auth",
        "defaultMode": 0o400,
        "items": [{"key": key, "path": path, "mode": mode} for key, path, mode in SSH_ITEMS]}}


SSH_ITEMS = (("ssh-privatekey", "id_rsa", 0o640), ("ssh-publickey", "id_rsa.pub", 0o644),
             ("ssh-publickey", "authorized_keys", 0o644))


def _hostfile_volume(ctx: Context) -> Obj:
    return {"name": "mpi-hostfile", "configMap": {
        "name": f"{ctx.name}-mpi-hostfile",
        "items": [{"key": "hostfile", "path": "hostfile", "mode": 0o444}]}}


def build(ctx: Context) -> PluginResult:
    """The SSH Secret (or a notice) and the hostfile ConfigMap."""
    objects: list[Obj] = []
    notes: list[Diagnostic] = []
    secret_name = f"{ctx.name}-mpi-ssh-auth"
    if ctx.options.ssh_keys is None:
        notes.append(Diagnostic(
            Severity.NOTICE, "TJC-MPI-SSH-SECRET",
            f"this TrainJob needs Secret {secret_name} (type kubernetes.io/ssh-auth, keys "
            "ssh-privatekey and ssh-publickey), which the controller creates once; render it "
            "with a key source (tjc render --mpi-ssh-key generate|FILE)"))
    else:
        objects.append(_secret(ctx, secret_name))
    size = hostfile_size(ctx)
    if size > CONFIGMAP_MAX_BYTES:
        notes.append(error("TJC-MPI-HOSTFILE-TOO-LARGE", (
            f"the MPI hostfile of ConfigMap {ctx.name}-mpi-hostfile would hold {size} bytes, "
            f"over the {CONFIGMAP_MAX_BYTES} bytes a ConfigMap may hold; lower numNodes "
            "(or the runtime's replicas/parallelism)"),
            ("spec", "trainer", "numNodes") if "numNodes" in (ctx.trainer or {}) else ()))
        return PluginResult(objects=tuple(objects), diagnostics=tuple(notes))
    objects.append(_hostfile(ctx))
    return PluginResult(objects=tuple(objects), diagnostics=tuple(notes))


def _secret(ctx: Context, name: str) -> Obj:
    assert ctx.options.ssh_keys is not None
    keys = ctx.options.ssh_keys(ctx.namespace, ctx.name)
    return owned_object(ctx, "v1", "Secret", name, type="kubernetes.io/ssh-auth",
                        immutable=True, data={
                            "ssh-privatekey": base64.b64encode(keys.private_pem).decode(),
                            "ssh-publickey": base64.b64encode(keys.public_key).decode()})


def _host_sets(ctx: Context) -> tuple[list[PodSet], Any]:
    """The pod sets listed in the hostfile, and the slots per line (none without OpenMPI)."""
    policy = _policy(ctx)
    if policy.get("mpiImplementation", OPENMPI) != OPENMPI:
        return [], 1
    slots = ctx.facts.get(SLOTS, policy.get("numProcPerNode", 1))
    as_node = policy.get("runLauncherAsNode") is True
    return [ps for ps in ctx.pod_sets
            if ps.name == NODE or (as_node and ps.name == LAUNCHER)], slots


def hostfile_text(ctx: Context) -> str:
    """`<endpoint> slots=<n>` for every pod of `node` (and `launcher` when it runs as a node)."""
    sets, slots = _host_sets(ctx)
    return "".join(f"{endpoint} slots={slots}\n" for ps in sets for endpoint in ctx.endpoints(ps))


def _digits_below(n: int) -> int:
    """The number of decimal digits in 0, 1, ..., n-1 together."""
    total, width, start = 0, 1, 0
    while start < n:
        end = min(n, 10 ** width)
        total += (end - start) * width
        start, width = end, width + 1
    return total


def hostfile_size(ctx: Context) -> int:
    """The byte length of `hostfile_text`, by arithmetic (no line is built): each line is
    `<tj>-<job>-<replica>-<pod>.<subdomain> slots=<n>` and a newline."""
    sets, slots = _host_sets(ctx)
    size = 0
    for ps in sets:
        fixed = len(f"{ctx.name}-{ps.name}--.{ctx.subdomain()} slots={slots}\n".encode())
        replicas = ctx.endpoint_replicas(ps)
        size += replicas * ps.count * fixed + ps.count * _digits_below(replicas) + \
            replicas * _digits_below(ps.count)
    return size


def _hostfile(ctx: Context) -> Obj:
    return owned_object(ctx, "v1", "ConfigMap", f"{ctx.name}-mpi-hostfile",
                        data={"hostfile": hostfile_text(ctx)})


def validate(job: Admission) -> Iterator[Diagnostic]:
    """MPI `Validate`: runLauncherAsNode with 2+ nodes needs jobs `launcher` and `node`;
    reserved OMPI_* envs (from v2.3: `Release.mpi_reserved_envs`)."""
    mpi = job.policy("mlPolicy", "mpi")
    trainer = job.trainer
    if mpi is None or trainer is None:
        return
    if trainer.get("numNodes", 1) >= 2 and mpi.get("runLauncherAsNode") is True and \
            (names := job.job_names()) is not None and not {LAUNCHER, NODE} <= names:
        yield error("TJC-WEBHOOK-MPI-LAUNCHER-AS-NODE",
                    "must have 1 when MPI trainingRuntime with enabled runLauncherAsNode does "
                    "not have either launcher and node", NUM_NODES)
    if job.release.num_proc_strings and isinstance(trainer.get("numProcPerNode"), str):
        yield error("TJC-WEBHOOK-MPI-NUM-PROC-PER-NODE", "must have an int value for MPI "
                    "TrainJob", ("spec", "trainer", "numProcPerNode"))
    if job.release.mpi_reserved_envs:
        yield from reserved_envs("TJC-WEBHOOK-MPI-RESERVED-ENV", trainer, RESERVED_ENVS)


def gpu_effect(trainer: Obj, policy: Obj, gpus: int) -> str | None:
    """What counting no GPUs changes for MPI (§8-B4)."""
    if "numProcPerNode" not in trainer and policy.get("numProcPerNode") == 1 and gpus > 1:
        return "the MPI slots per node stay 1 instead of the GPU count"
    return None


def node_pods(policy: Obj, num_nodes: int) -> int:
    """The `node` job's pods: one fewer when the launcher runs as a node, at least one."""
    return max(num_nodes - 1, 1) if policy.get("runLauncherAsNode") is True else num_nodes


class Hooks(CustomValidation, GpuEffect, NodeCount):
    """MPI's hooks: admission, the GPU effect, the node count (`launch.Launch` is the fourth)."""

    validate = staticmethod(validate)
    gpu_effect = staticmethod(gpu_effect)
    node_pods = staticmethod(node_pods)


PLUGIN = PluginSpec(
    name="mpi",
    policy="mlPolicy.mpi",
    active=active,
    enforce=enforce,
    build=build,
    provides=frozenset({"pod-counts", "framework-env", "volumes", "side-objects"}),
    requires=frozenset(),
    hooks=(Hooks(), Launch()),
)
