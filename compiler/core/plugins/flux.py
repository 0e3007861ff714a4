"""Flux (upstream `pkg/runtime/framework/plugins/flux`): the Flux Framework HPC scheduler
inside the trainer pods.

Active when `mlPolicy.flux` is set (PlainML also runs: it sets the trainer count and env).
Enforce: on every replicatedJob named `node`, the volumes `spack-install`, `flux-install`,
`<name>-flux-entrypoint` (the ConfigMap, mode 0755), `shared-memory` (memory emptyDir) and
`flux-curve` (the Secret, mode 0400); the init container `flux-installer` (image
`FLUX_VIEW_IMAGE`) that installs Flux into the shared volume; five mounts on container `node`.
The trainer's command becomes `/bin/bash /etc/flux-config/entrypoint.sh "<command args>"`
and the TrainJob's args are dropped. Build: the ConfigMap `<name>-flux-entrypoint` (init.sh
with the broker config and host list, entrypoint.sh with the `flux R encode` and `flux run`
flags) and the Secret `<name>-flux-curve`, a ZeroMQ CURVE certificate whose X25519 key is
derived from sha256 of the TrainJob's uid, so it is deterministic.

FLUX_VIEW_IMAGE, FLUX_NETWORK_DEVICE and FLUX_QUEUE_POLICY come from the runtime's trainer env,
then the TrainJob's. Upstream panics (and creates nothing) for a TrainJob without
`spec.trainer` or without `spec.trainer.numNodes`; tjc reports an error for each instead.
The three script templates are upstream's own files, read at the pinned version: they are not
kept in this repository but installed from the Kubeflow Trainer Go module when the package is
built (`compiler/_native/flux/`, by setup.py) or by `make setup` (`build/flux/` of a checkout;
`schemas/fluxtemplates.py` does both). Without them a Flux TrainJob gets an error, never a
ConfigMap that differs from upstream's.

The broker config names the TrainJob's namespace (`tcp://%h.<name>.<namespace>.svc...`): a
TrainJob without metadata.namespace (a GitOps file applied into a namespace it does not name)
is an error at `metadata`, unless the caller placed it (`tjc render --namespace`).

Admission (upstream's Flux `Validate`): numProcPerNode at least 1, and no init container of
its own named `flux-installer` in the `node` job. `tjc validate` also warns that upstream's
controller panics on a Flux TrainJob without spec.trainer.numNodes.
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Iterator

from compiler.common.diagnostics import Diagnostic, error
from compiler.common.jsondata import Obj
from compiler.core.context import NODE, TRAINER, Context
from compiler.core.plugins.base import (
    AddInitContainer,
    Edit,
    PluginResult,
    PluginSpec,
    SetTrainerCommand,
    UpsertMounts,
    UpsertVolumes,
    ml_policy_has,
    owned_object,
)
from compiler.core.plugins.checks import (
    Admission,
    init_container_source,
    job_pods,
    quirk,
    runtime_policy,
    trainer_of,
)
from compiler.core.plugins.hooks import CustomValidation, GpuEffect, Quirks
from compiler.core.resources import gpu_count, node_resources
from compiler.kube.releases import FLUX_TEMPLATES, release_data

INSTALLER = "flux-installer"
DEFAULTS = {"FLUX_VIEW_IMAGE": "ghcr.io/converged-computing/flux-view-ubuntu:tag-jammy",
            "FLUX_NETWORK_DEVICE": "eth0", "FLUX_QUEUE_POLICY": "fcfs"}
Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"


def active(ctx: Context) -> bool:
    """Only for runtimes whose mlPolicy sets flux."""
    return ml_policy_has(ctx, "flux")


def _names(ctx: Context) -> tuple[str, str]:
    return f"{ctx.name}-flux-entrypoint", f"{ctx.name}-flux-curve"


def _missing(ctx: Context, build: bool) -> PluginResult | None:
    """Upstream dereferences spec.trainer (enforce) and spec.trainer.numNodes (build)."""
    trainer = ctx.trainer
    if trainer is None:
        if build:  # enforce reported it already
            return PluginResult()
        return PluginResult(diagnostics=(error(
            "TJC-FLUX-NO-TRAINER", "a Flux TrainJob needs spec.trainer: upstream's Flux plugin "
            "panics without it and creates nothing", ("spec",)),))
    if build and not isinstance(trainer.get("numNodes"), int):
        return PluginResult(diagnostics=(error(
            "TJC-FLUX-NO-NUMNODES", "a Flux TrainJob needs spec.trainer.numNodes: upstream's "
            "Flux plugin panics without it and creates nothing", ("spec", "trainer")),))
    return None


def _settings(ctx: Context) -> dict[str, str]:
    """The broker settings: defaults, then the runtime trainer's env, then the TrainJob's."""
    settings = dict(DEFAULTS)
    ps = ctx.pod_set_by_ancestor(TRAINER)
    container = ps.container(NODE) if ps is not None else None
    for env in (container or {}).get("env") or []:
        if env.get("name") in settings and env.get("value") is not None:
            settings[env["name"]] = env["value"]
    for env in (ctx.trainer or {}).get("env") or []:
        if env.get("name") in settings:
            settings[env["name"]] = env.get("value", "")
    return settings


def _original_command(ctx: Context) -> str:
    """The app the entrypoint runs: the TrainJob's command (else, from v2.3, the runtime
    trainer's: `Release.podset_command`) and args, joined with spaces."""
    ps = ctx.pod_set_by_ancestor(TRAINER)
    container = ps.container(NODE) if ps is not None else None
    command = list((container or {}).get("command") or []) if ctx.release.podset_command \
        else []
    trainer = ctx.trainer or {}
    if isinstance(trainer.get("command"), list):
        command = list(trainer["command"])
    args = trainer.get("args")
    return " ".join([*command, *(args if isinstance(args, list) else [])]).strip()


def enforce(ctx: Context) -> PluginResult:
    """Volumes, the installer init container, mounts, and the rewritten trainer command."""
    missing = _missing(ctx, build=False)
    if missing is not None:
        return missing
    settings = _settings(ctx)
    config, curve = _names(ctx)
    edits: list[Edit] = [SetTrainerCommand(
        ("/bin/bash", "/etc/flux-config/entrypoint.sh", _original_command(ctx)), clear_args=True,
        how="rewritten by plugin flux (the Flux entrypoint runs it)")]
    shm = ctx.release.flux_shm_and_cores  # the shared-memory volume came in v2.3
    volumes: tuple[Obj, ...] = (
        {"name": "spack-install", "emptyDir": {}},
        {"name": "flux-install", "emptyDir": {}},
        {"name": config, "configMap": {"name": config, "defaultMode": 0o755}},
        *([{"name": "shared-memory", "emptyDir": {"medium": "Memory"}}] if shm else []),
        {"name": "flux-curve", "secret": {"secretName": curve, "defaultMode": 0o400}},
    )
    installer: Obj = {"name": INSTALLER, "command": ["/bin/bash", "/etc/flux-config/init.sh"],
                      "volumeMounts": [{"name": "flux-install", "mountPath": "/mnt/flux"},
                                       {"name": config, "mountPath": "/etc/flux-config",
                                        "readOnly": True}]}
    if settings["FLUX_VIEW_IMAGE"] or not ctx.release.podset_command:
        # from v2.3 the builder writes an image only when it is not empty; before, the plugin
        # appended the container itself, `image: ""` and all
        installer["image"] = settings["FLUX_VIEW_IMAGE"]
    mounts: tuple[Obj, ...] = (
        {"name": "flux-install", "mountPath": "/mnt/flux"},
        {"name": "spack-install", "mountPath": "/opt/software"},
        {"name": config, "mountPath": "/etc/flux-config", "readOnly": True},
        {"name": "flux-curve", "mountPath": "/curve", "readOnly": True},
        *([{"name": "shared-memory", "mountPath": "/dev/shm", "readOnly": True}] if shm else []),
    )
    for ps in ctx.pod_sets:
        if ps.name != NODE:
            continue
        edits += [UpsertVolumes(ps.index, volumes), AddInitContainer(ps.index, installer)]
        if ps.container(NODE) is not None:
            edits.append(UpsertMounts(ps.index, NODE, mounts))
    return PluginResult(edits=tuple(edits))


def _range(size: int) -> str:
    return "0" if size == 1 else f"0-{size - 1}"


def _init_script(ctx: Context, settings: dict[str, str], nodes: int) -> str:
    hosts = f"{ctx.name}-{NODE}-0-[{_range(nodes)}]"
    fqdn = f"{ctx.name}.{ctx.namespace}.svc.cluster.local"
    version = ctx.release.version
    broker = _fill(_template(version, "broker.toml"),
                   f"tcp://{settings['FLUX_NETWORK_DEVICE']}:%p", f"tcp://%h.{fqdn}:%p", hosts,
                   settings["FLUX_QUEUE_POLICY"])
    return _fill(_template(version, "init.sh"), "/opt/view", f"{ctx.name}-0", hosts, broker)


def _entrypoint(ctx: Context, trainer: Obj, nodes: int) -> str:
    npp = trainer.get("numProcPerNode")
    tasks = npp if isinstance(npp, int) else int(((ctx.ml_policy or {}).get("flux") or {}).get(
        "numProcPerNode", 1))
    flags = f"-N {nodes} -n {_int32(tasks * nodes)}"
    rspec = f"--cores={_range(tasks)}"
    gpus = gpu_count(node_resources(ctx))
    if gpus > 0:
        flags += f" -g {gpus}"
        rspec += f" --gpu={_range(gpus)}"
    template = _template(ctx.release.version, "entrypoint.sh")
    if not ctx.release.flux_shm_and_cores:  # before v2.3: `flux R encode ... --local`
        return _fill(template, f"{ctx.name}-{NODE}-0-0", flags)
    return _fill(template, rspec, f"{ctx.name}-{NODE}-0-0", flags)


def _int32(value: int) -> int:
    return (value + 2**31) % 2**32 - 2**31


def _fill(template: str, *values: str) -> str:
    """Go's fmt.Sprintf for templates whose only verbs are `%s`."""
    parts = template.split("%s")
    out = [parts[0]]
    for value, part in zip(values, parts[1:], strict=True):
        out += [value, part]
    return "".join(out)


def _z85(data: bytes) -> str:
    out = []
    for i in range(0, len(data) - len(data) % 4, 4):
        value = int.from_bytes(data[i:i + 4], "big")
        out += [Z85[(value // 85 ** p) % 85] for p in (4, 3, 2, 1, 0)]
    return "".join(out) if len(data) % 4 == 0 else ""


def _curve_cert(ctx: Context) -> str:
    # Imported here: only a Flux TrainJob's compile needs the key library (start-up cost).
    # (hashlib too: it loads OpenSSL)
    import hashlib

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import x25519

    uid = str(ctx.trainjob.get("metadata", {}).get("uid") or "")
    key = x25519.X25519PrivateKey.from_private_bytes(hashlib.sha256(uid.encode()).digest())
    secret = key.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                               serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.Raw,
                                           serialization.PublicFormat.Raw)
    return ("#  ZeroMQ CURVE Secret Certificate\n#  Generated by Kubeflow Trainer\n\n"
            f'metadata\n    name = "{ctx.name}"\ncurve\n    public-key = "{_z85(public)}"\n'
            f'    secret-key = "{_z85(secret)}"\n')


def _no_namespace(ctx: Context) -> PluginResult | None:
    """The broker's connect address names the namespace: without one it would be wrong."""
    if ctx.namespace:
        return None
    return PluginResult(diagnostics=(error(
        "TJC-FLUX-NO-NAMESPACE", "this Flux TrainJob has no namespace, but its broker config "
        "names it (tcp://%h.<name>.<namespace>.svc.cluster.local): set metadata.namespace, "
        "or give the namespace it is applied into (tjc render --namespace NS)",
        ("metadata",)),))


def build(ctx: Context) -> PluginResult:
    """The entrypoint ConfigMap and the CURVE certificate Secret."""
    missing = _missing(ctx, build=True) or _no_namespace(ctx) or \
        _templates_missing(ctx.release.version)
    if missing is not None:
        return missing
    trainer = ctx.trainer or {}
    nodes = int(trainer["numNodes"])
    config, curve = _names(ctx)
    data = {"entrypoint.sh": _entrypoint(ctx, trainer, nodes),
            "init.sh": _init_script(ctx, _settings(ctx), nodes)}
    cert = base64.b64encode(_curve_cert(ctx).encode()).decode()
    return PluginResult(objects=(
        owned_object(ctx, "v1", "ConfigMap", config, data=data),
        owned_object(ctx, "v1", "Secret", curve, data={"curve.cert": cert}),
    ))


def validate(job: Admission) -> Iterator[Diagnostic]:
    """Flux `Validate`: numProcPerNode >= 1; no `flux-installer` init container in `node`."""
    flux = job.policy("mlPolicy", "flux")
    spec = job.template_spec() if flux is not None else None
    if flux is None or spec is None:
        return
    trainer = job.trainer or {}
    npp = flux.get("numProcPerNode")
    if job.release.flux_trainer_num_proc:  # from v2.3 the TrainJob's, when set, is checked
        npp = trainer.get("numProcPerNode", npp)
    if isinstance(npp, int) and npp < 1:
        yield error("TJC-WEBHOOK-FLUX-NUM-PROC-PER-NODE",
                    f"numProcPerNode is {npp}: must be greater than or equal to 1 for Flux "
                    "TrainJob", ("spec", "trainer", "numProcPerNode"))
    for name, pod_spec in job_pods(spec):
        if name != NODE:
            continue
        for container in pod_spec.get("initContainers") or []:
            if container.get("name") == INSTALLER:
                subject, path = init_container_source(job, NODE, INSTALLER)
                yield error("TJC-WEBHOOK-FLUX-INSTALLER",
                            "initContainer 'flux-installer' is reserved; the Flux plugin adds "
                            "it, rename this one", path, subject=subject)


def quirks(trainjob: Obj, runtime: Obj) -> Iterator[Diagnostic]:
    """Flux dereferences spec.trainer and spec.trainer.numNodes: without them the webhook
    admits the TrainJob but the controller panics on it and creates nothing."""
    if runtime_policy(runtime, "mlPolicy", "flux") is None:
        return
    trainer = trainer_of(trainjob)
    if trainer is not None and isinstance(trainer.get("numNodes"), int):
        return
    yield quirk(
        "TJC-QUIRK-FLUX-PANIC",
        "the cluster admits this Flux TrainJob, but upstream's Flux plugin panics without "
        "spec.trainer.numNodes and the controller creates nothing; set spec.trainer.numNodes",
        ("spec", "trainer") if trainer is not None else ("spec",))


def gpu_effect(trainer: Obj, policy: Obj, gpus: int) -> str | None:
    """What counting no GPUs changes for Flux (§8-B4)."""
    return "Flux runs without its per-task GPU flag (-g)"


class Hooks(CustomValidation, Quirks, GpuEffect):
    """Flux's hooks: admission, its quirk, the GPU effect."""

    validate = staticmethod(validate)
    quirks = staticmethod(quirks)
    gpu_effect = staticmethod(gpu_effect)


PLUGIN = PluginSpec(
    name="flux",
    policy="mlPolicy.flux",
    active=active,
    enforce=enforce,
    build=build,
    provides=frozenset({"volumes", "side-objects"}),
    hooks=(Hooks(),),
)


TEMPLATES = FLUX_TEMPLATES


@functools.cache
def _template(version: str, name: str) -> str:
    """One of upstream's templates of a release: packaged, else a checkout's build/flux/
    (make setup; `compiler.kube.releases`)."""
    return release_data(version).flux_template(name)


def _templates_missing(version: str) -> PluginResult | None:
    try:
        for name in TEMPLATES:
            _template(version, name)
    except (FileNotFoundError, OSError):
        return PluginResult(diagnostics=(error(
            "TJC-FLUX-TEMPLATES", "upstream's Flux script templates are not installed: "
            "reinstall trainjob-compiler with Go available (or run `make setup` in a "
            "checkout)", ("spec", "runtimeRef")),))
    return None
