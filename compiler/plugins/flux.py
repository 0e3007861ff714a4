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
The three script templates below are upstream's output format, reproduced byte for byte.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import x25519

from compiler.context import NODE, TRAINER, Context
from compiler.diagnostics import error
from compiler.plugins.base import (
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
from compiler.resources import gpu_count, node_resources

Obj = dict[str, Any]
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
    ps = ctx.pod_set_by_ancestor(TRAINER)
    container = ps.container(NODE) if ps is not None else None
    command = list((container or {}).get("command") or [])
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
        ("/bin/bash", "/etc/flux-config/entrypoint.sh", _original_command(ctx)), clear_args=True)]
    volumes = (
        {"name": "spack-install", "emptyDir": {}},
        {"name": "flux-install", "emptyDir": {}},
        {"name": config, "configMap": {"name": config, "defaultMode": 0o755}},
        {"name": "shared-memory", "emptyDir": {"medium": "Memory"}},
        {"name": "flux-curve", "secret": {"secretName": curve, "defaultMode": 0o400}},
    )
    installer: Obj = {"name": INSTALLER, "command": ["/bin/bash", "/etc/flux-config/init.sh"],
                      "volumeMounts": [{"name": "flux-install", "mountPath": "/mnt/flux"},
                                       {"name": config, "mountPath": "/etc/flux-config",
                                        "readOnly": True}]}
    if settings["FLUX_VIEW_IMAGE"]:  # the builder writes an image only when it is not empty
        installer["image"] = settings["FLUX_VIEW_IMAGE"]
    mounts = (
        {"name": "flux-install", "mountPath": "/mnt/flux"},
        {"name": "spack-install", "mountPath": "/opt/software"},
        {"name": config, "mountPath": "/etc/flux-config", "readOnly": True},
        {"name": "flux-curve", "mountPath": "/curve", "readOnly": True},
        {"name": "shared-memory", "mountPath": "/dev/shm", "readOnly": True},
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
    broker = _fill(_BROKER, f"tcp://{settings['FLUX_NETWORK_DEVICE']}:%p",
                   f"tcp://%h.{fqdn}:%p", hosts, settings["FLUX_QUEUE_POLICY"])
    return _fill(_INIT, "/opt/view", f"{ctx.name}-0", hosts, broker)


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
    return _fill(_ENTRYPOINT, rspec, f"{ctx.name}-{NODE}-0-0", flags)


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
    uid = str(ctx.trainjob.get("metadata", {}).get("uid") or "")
    key = x25519.X25519PrivateKey.from_private_bytes(hashlib.sha256(uid.encode()).digest())
    secret = key.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                               serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.Raw,
                                           serialization.PublicFormat.Raw)
    return ("#  ZeroMQ CURVE Secret Certificate\n#  Generated by Kubeflow Trainer\n\n"
            f'metadata\n    name = "{ctx.name}"\ncurve\n    public-key = "{_z85(public)}"\n'
            f'    secret-key = "{_z85(secret)}"\n')


def build(ctx: Context) -> PluginResult:
    """The entrypoint ConfigMap and the CURVE certificate Secret."""
    missing = _missing(ctx, build=True)
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


PLUGIN = PluginSpec(
    name="flux",
    policy="mlPolicy.flux",
    active=active,
    enforce=enforce,
    build=build,
    provides=frozenset({"volumes", "side-objects"}),
)

_BROKER = (
    "[access]\n"
    "allow-guest-user = true\n"
    "allow-root-owner = true\n"
    "\n"
    "# Point to resource definition generated with flux-R(1).\n"
    "[resource]\n"
    'path = "/mnt/flux/config/etc/flux/system/R"\n'
    "\n"
    "[bootstrap]\n"
    'curve_cert = "/mnt/flux/config/etc/curve/curve.cert"\n'
    "default_port = 8050\n"
    'default_bind = "%s"\n'
    'default_connect = "%s"\n'
    "hosts = [\n"
    '{ host="%s"},\n'
    "]\n"
    "\n"
    "[archive]\n"
    'dbpath = "/mnt/flux/config/var/lib/flux/job-archive.sqlite"\n'
    'period = "1m"\n'
    'busytimeout = "50s"\n'
    "\n"
    "[sched-fluxion-qmanager]\n"
    'queue-policy = "%s"\n'
)
_INIT = (
    "# Copyright The Kubeflow Authors.\n"
    "#\n"
    '# Licensed under the Apache License, Version 2.0 (the "License");\n'
    "# you may not use this file except in compliance with the License.\n"
    "# You may obtain a copy of the License at\n"
    "#\n"
    "#     http://www.apache.org/licenses/LICENSE-2.0\n"
    "#\n"
    "# Unless required by applicable law or agreed to in writing, software\n"
    '# distributed under the License is distributed on an "AS IS" BASIS,\n'
    "# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.\n"
    "# See the License for the specific language governing permissions and\n"
    "# limitations under the License.\n"
    "\n"
    "#!/bin/sh\n"
    "fluxroot=%s\n"
    "mainHost=%s\n"
    "\n"
    '# We need to "install" config assets separately. We may not have write to /opt/view.\n'
    "installRoot=/mnt/flux/config\n"
    'echo "Hello I am hostname $(hostname) running setup."\n'
    "\n"
    "# Always use verbose, no reason to not here\n"
    'echo "Flux install root: ${fluxroot}"\n'
    "export fluxroot\n"
    "\n"
    "# Add flux to the path (if using view)\n"
    "export PATH=/opt/view/bin:$PATH\n"
    "\n"
    "# If the view doesn't exist, ensure basic paths do\n"
    "mkdir -p $fluxroot/bin\n"
    "\n"
    "# Cron directory\n"
    "mkdir -p $installRoot/etc/flux/system/cron.d\n"
    "mkdir -p $installRoot/var/lib/flux\n"
    "\n"
    "# These actions need to happen on all hosts\n"
    "mkdir -p $installRoot/etc/flux/system\n"
    'hosts="%s"\n'
    "\n"
    "# Echo hosts here in case the main container needs to generate\n"
    'echo "${hosts}" > ${installRoot}/etc/flux/system/hostlist\n'
    "\n"
    "# Write the broker configuration\n"
    "mkdir -p ${installRoot}/etc/flux/config\n"
    "cat <<EOT >> ${installRoot}/etc/flux/config/broker.toml\n"
    "%s\n"
    "EOT\n"
    "\n"
    "echo\n"
    'echo "🐸 Broker Configuration"\n'
    "cat ${installRoot}/etc/flux/config/broker.toml\n"
    "\n"
    "# The rundir needs to be created first, and owned by user flux\n"
    "# Along with the state directory and curve certificate\n"
    "mkdir -p ${installRoot}/run/flux ${installRoot}/etc/curve\n"
    "\n"
    "viewroot=/mnt/flux\n"
    "mkdir -p $viewroot/view\n"
    "\n"
    "# Now prepare to copy finished spack view over\n"
    'echo "Moving content from /opt/view to be in shared volume at $viewroot"\n'
    "# Note that /opt/view is a symlink to here\n"
    "view=$(ls /opt/views/._view/)\n"
    'view="/opt/views/._view/${view}"\n'
    "\n"
    "# We have to move both of these paths - spack makes link to /opt/software\n"
    "# /opt/software will need to be restored in application container\n"
    "cp -R ${view}/* $viewroot/view\n"
    "cp -R /opt/software $viewroot/\n"
    "\n"
    "# This is a marker to indicate the copy is done\n"
    "touch $viewroot/flux-operator-done.txt\n"
    'echo "Application is done."\n'
)
_ENTRYPOINT = (
    "# Copyright The Kubeflow Authors.\n"
    "#\n"
    '# Licensed under the Apache License, Version 2.0 (the "License");\n'
    "# you may not use this file except in compliance with the License.\n"
    "# You may obtain a copy of the License at\n"
    "#\n"
    "#     http://www.apache.org/licenses/LICENSE-2.0\n"
    "#\n"
    "# Unless required by applicable law or agreed to in writing, software\n"
    '# distributed under the License is distributed on an "AS IS" BASIS,\n'
    "# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.\n"
    "# See the License for the specific language governing permissions and\n"
    "# limitations under the License.\n"
    "\n"
    "#!/bin/sh\n"
    "\n"
    "fluxuser=$(whoami)\n"
    "fluxuid=$(id -u $fluxuser)\n"
    "\n"
    "# Ensure spack view is on the path, wherever it is mounted\n"
    'viewbase="/mnt/flux"\n'
    "viewroot=${viewbase}/view\n"
    "configroot=${viewbase}/config\n"
    'software="${viewbase}/software"\n'
    'viewbin="${viewroot}/bin"\n'
    "fluxpath=${viewbin}/flux\n"
    "\n"
    "# Important to add AFTER in case software in container duplicated (e.g., Python)\n"
    "export PATH=$PATH:${viewbin}\n"
    "\n"
    "# Copy mount software to /opt/software\n"
    "cp -R ${viewbase}/software/* /opt/software/\n"
    "\n"
    "# Flux should use the Python with its install\n"
    "foundroot=$(find $viewroot -maxdepth 2 -type d -path $viewro"
    "ot/lib/python3*) > /dev/null 2>&1\n"
    "pythonversion=$(basename ${foundroot})\n"
    "pythonversion=${viewroot}/bin/${pythonversion}\n"
    'echo "Python version: $pythonversion"\n'
    'echo "Python root: $foundroot"\n'
    "\n"
    "# If we found the right python, ensure it's linked (old link does not work)\n"
    'if [[ -f "${pythonversion}" ]]; then\n'
    "   rm -rf $viewroot/bin/python3\n"
    "   rm -rf $viewroot/bin/python\n"
    "   ln -s ${pythonversion} $viewroot/lib/python  || true\n"
    "   ln -s ${pythonversion} $viewroot/lib/python3 || true\n"
    "fi\n"
    "\n"
    "# Ensure we have flux's python on the path\n"
    'export PYTHONPATH=${PYTHONPATH:-""}:${foundroot}/site-packages\n'
    "export FLUX_RC_EXTRA=$viewroot/etc/flux/rc1.d\n"
    "\n"
    "# Write a script to load fluxion\n"
    "cat <<EOT >> /tmp/load-fluxion.sh\n"
    "flux module remove sched-simple\n"
    "flux module load sched-fluxion-resource\n"
    "flux module load sched-fluxion-qmanager\n"
    "EOT\n"
    "mv /tmp/load-fluxion.sh ${viewbase}/load-fluxion.sh\n"
    "\n"
    "# Write an easy file we can source for the environment\n"
    "cat <<EOT >> /tmp/flux-view.sh\n"
    "#!/bin/bash\n"
    "export PATH=$PATH\n"
    "export PYTHONPATH=$PYTHONPATH\n"
    'export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-""}:$viewroot/lib\n'
    "export fluxsocket=local://${configroot}/run/flux/local\n"
    "EOT\n"
    "mv /tmp/flux-view.sh ${viewbase}/flux-view.sh\n"
    "\n"
    "# Variables we can use again\n"
    'cfg="${configroot}/etc/flux/config"\n'
    'command="$@"\n'
    "\n"
    "# Copy mounted curve to expected location\n"
    "curvepath=/mnt/flux/config/etc/curve/curve.cert\n"
    "cp /curve/curve.cert ${curvepath}\n"
    "\n"
    "# Remove group and other read\n"
    "chmod o-r ${curvepath}\n"
    "chmod g-r ${curvepath}\n"
    "chown -R ${fluxuid} ${curvepath}\n"
    "\n"
    "# Generate host resources\n"
    "hosts=$(cat ${configroot}/etc/flux/system/hostlist)\n"
    "flux R encode --hosts=${hosts} %s > /tmp/R\n"
    "mv /tmp/R ${configroot}/etc/flux/system/R\n"
    "\n"
    "# Put the state directory in /var/lib on shared view\n"
    "export STATE_DIR=${configroot}/var/lib/flux\n"
    "export FLUX_OUTPUT_DIR=/tmp/fluxout\n"
    "mkdir -p ${STATE_DIR} ${FLUX_OUTPUT_DIR}\n"
    "\n"
    "# Main host <name>-0 and the fully qualified domain name\n"
    'mainHost="%s"\n'
    "workdir=$(pwd)\n"
    "\n"
    "# Make cron.d directory\n"
    "mkdir -p ${configroot}/etc/flux/system/cron.d\n"
    'brokerOptions="-Scron.directory=${configroot}/etc/flux/system/cron.d \\\n'
    "  -Stbon.fanout=256 \\\n"
    "  -Srundir=${configroot}/run/flux  \\\n"
    "  -Sstatedir=${STATE_DIR} -Slocal-uri=local://$configroot/run/flux/local \\\n"
    "  -Slog-stderr-level=0  \\\n"
    '  -Slog-stderr-mode=local"\n'
    "\n"
    "# Run an interactive cluster, giving no command to flux start\n"
    "run_interactive_cluster() {\n"
    '    echo "🌀 flux broker --config-path ${cfg} ${brokerOptions}"\n'
    "    flux broker --config-path ${cfg} ${brokerOptions}\n"
    "}\n"
    "\n"
    "# Start flux with the original entrypoint\n"
    'if [ "$(hostname)" = "${mainHost}" ]; then\n'
    "\n"
    '  echo "Command provided is: ${command}"\n'
    '  if [ -z "${command}" ]; then\n'
    "    run_interactive_cluster\n"
    "  else\n"
    "\n"
    "    # If tasks are == 0, then only define nodes\n"
    '    flags="%s  "\n'
    '    echo "Flags for flux are ${flags}"\n'
    '    echo "🌀 flux start  -o --config ${cfg} ${brokerOptions} '
    'flux submit ${flags} --quiet --watch ${command}"\n'
    "\tflux start  -o --config ${cfg} ${brokerOptions} flux run ${flags} ${command}\n"
    "  fi\n"
    "\n"
    "# Block run by workers\n"
    "else\n"
    "\n"
    "    # We basically sleep/wait until the lead broker is ready\n"
    '    echo "🌀 flux start  -o --config ${configroot}/etc/flux/config ${brokerOptions}"\n'
    "\n"
    "    # We can keep trying forever, don't care if worker is successful or not\n"
    "    # Unless retry count is set, in which case we stop after retries\n"
    "    while true\n"
    "    do\n"
    "        flux start -o --config ${configroot}/etc/flux/config ${brokerOptions}\n"
    "        retval=$?\n"
    '        if [[ "${retval}" -eq 0 ]] || [[ "false" == "true" ]]; then\n'
    '             echo "The follower worker exited cleanly. Goodbye!"\n'
    "             break\n"
    "        fi\n"
    '        echo "Return value for follower worker is ${retval}"\n'
    '        echo "😪 Sleeping 15s to try again..."\n'
    "        sleep 15\n"
    "    done\n"
    "fi\n"
    "\n"
    "# Marker of completion, if needed\n"
    "touch $viewbase/flux-operator-complete.txt\n"
)
