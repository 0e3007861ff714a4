"""From the compiled objects of one TrainJob to the local processes that stand in for its pods.

`build_plan` walks the JobSet's replicated jobs in order and, for every pod (replica x
completion index), resolves what the kubelet would (`compiler.localrun.kubelet`), maps every
pod host name to 127.0.0.1 and every declared container port to a free local port
(`compiler.localrun.hosts`), writes mounted ConfigMaps and Secrets as files below the run
folder (`compiler.localrun.volumes`), and refuses what cannot run here. A pod volume the API
server would refuse (`compiler.kube.podspec.volumefiles`: an item path leaving its volume, a
mode beyond 0777) is refused before any file is written. Called by `compiler.cli.run_cmd`; runs
nothing.

It knows no framework: what a framework's pods need here (a `torchrun`, an ssh stand-in for
the pods that serve SSH and the env that makes `mpirun` use it) comes from the launchers in
`Options.launchers`, the plugins' `LocalLaunch` hooks (`compiler.common.launch`), which the
caller takes from the plugin registry.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import field
from pathlib import Path

from compiler.common.diagnostics import format_path
from compiler.common.jsondata import Obj
from compiler.common.launch import Launcher, LaunchSite, LocalLaunch
from compiler.common.records import dataclass
from compiler.kube.podspec import volumefiles
from compiler.localrun import hosts, kubelet, shims, volumes
from compiler.localrun.kubelet import PodIdentity, PodView


class Refusal(ValueError):
    """Something in the JobSet that cannot run as a local process; the message says what."""


@dataclass
class LocalPod:
    """One pod as a local process."""

    identity: PodIdentity
    argv: list[str]
    env: dict[str, str]
    stand_in: str = ""  # not run: what stands in for it (a launcher's `replaced`)
    ready_port: int | None = None  # local port of a tcpSocket readiness probe

    @property
    def name(self) -> str:
        """The pod's host name, used to prefix its log lines."""
        return self.identity.hostname


@dataclass
class LocalJob:
    """One replicated job: its pods and what it waits for."""

    name: str
    pods: list[LocalPod]
    depends_on: list[tuple[str, str]] = field(default_factory=list)  # (job, Ready|Complete)


@dataclass
class Plan:
    """Everything `compiler.localrun.runner` needs to run a JobSet."""

    jobset: str
    jobs: list[LocalJob]
    in_order: bool
    success_operator: str
    success_targets: list[str]
    max_restarts: int


@dataclass
class Options:
    """How to run: which interpreter stands in for the image, where files go, and the
    frameworks' launcher hooks (every plugin's `LocalLaunch`, in registry order)."""

    python: str
    run_dir: Path
    ignore_gpus: bool = False
    base_env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    launchers: Sequence[LocalLaunch] = field(kw_only=True)


def build_plan(objects: list[Obj], options: Options) -> Plan:
    """The plan for the JobSet among `objects`; raises Refusal for what cannot run here."""
    jobsets = [obj for obj in objects if obj.get("kind") == "JobSet"]
    if len(jobsets) != 1:
        raise Refusal(f"expected one JobSet among the compiled objects, found {len(jobsets)}")
    jobset = jobsets[0]
    spec = jobset.get("spec") or {}
    name = str(jobset["metadata"]["name"])
    if spec.get("suspend"):
        raise Refusal(f"JobSet {name} is suspended (the TrainJob sets spec.suspend: true), so "
                      "a cluster would start none of its pods; resume it to run it")
    side = {(str(o.get("kind")), str(o["metadata"]["name"])): o for o in objects
            if o.get("kind") in ("ConfigMap", "Secret")}
    pods = _identities(jobset)
    _check_volumes(jobset)  # before anything is written
    options.run_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    subdomain = str((spec.get("network") or {}).get("subdomain") or name)
    table = hosts.HostTable.build(pods, subdomain, _declared_ports(jobset))
    launchers = _launchers(options, table)
    bin_dir = shims.write(options.run_dir, options.python,
                          {k: v for launcher in launchers for k, v in launcher.programs.items()})
    replaced = {k: v for launcher in launchers for k, v in launcher.replaced.items()}
    jobs = []
    for rjob in spec.get("replicatedJobs") or []:
        members = [p for p in pods if p[0].replicated_job == rjob["name"]]
        built = [_pod(ident, template, side, table, options, bin_dir, replaced)
                 for ident, template in members]
        depends = [(str(d["name"]), str(d.get("status", "Complete")))
                   for d in rjob.get("dependsOn") or []]
        jobs.append(LocalJob(str(rjob["name"]), built, depends))
    _reach_stand_ins(jobs, launchers)
    return _with_policies(spec, name, jobs)


def _launchers(options: Options, table: hosts.HostTable) -> list[Launcher]:
    """What each framework's launcher hook adds on this machine."""
    site = LaunchSite(python=options.python, hosts=tuple(table.names()),
                      bin_dir=str(options.run_dir / "bin"), as_root=os.geteuid() == 0)
    return [hook.local_launch(site) for hook in options.launchers]


def _reach_stand_ins(jobs: list[LocalJob], launchers: list[Launcher]) -> None:
    """When a launcher's stand-in replaces pods (the SSH servers of MPI nodes), every pod that
    runs gets that launcher's env (so that mpirun goes through the ssh stand-in); a pod's own
    env still wins."""
    pods = [pod for job in jobs for pod in job.pods]
    programs = {os.path.basename(pod.argv[0]) for pod in pods if pod.stand_in}
    for launcher in launchers:
        if programs & set(launcher.replaced):
            for pod in pods:
                if not pod.stand_in:
                    pod.env = {**launcher.client_env, **pod.env}


def _with_policies(spec: Obj, name: str, jobs: list[LocalJob]) -> Plan:
    success = spec.get("successPolicy") or {}
    failure = spec.get("failurePolicy") or {}
    startup = spec.get("startupPolicy") or {}
    return Plan(jobset=name, jobs=jobs,
                in_order=startup.get("startupPolicyOrder") == "InOrder",
                success_operator=str(success.get("operator", "All")),
                success_targets=[str(t) for t in success.get("targetReplicatedJobs") or []]
                or [job.name for job in jobs],
                max_restarts=int(failure.get("maxRestarts", 0)))


MAX_LOCAL_PODS = 1024  # processes one machine is asked to start for one TrainJob


def _check_count(jobset: Obj) -> None:
    """Refuse, before any is planned, more pods than a machine should start: numNodes
    1000000 would build a million pods in memory, then fork a million processes."""
    total = 0
    for rjob in (jobset.get("spec") or {}).get("replicatedJobs") or []:
        job_spec = (rjob.get("template") or {}).get("spec") or {}
        parallelism = int(job_spec.get("parallelism", 1))
        total += int(rjob.get("replicas", 1)) * max(int(job_spec.get("completions",
                                                                     parallelism)), 0)
    if total > MAX_LOCAL_PODS:
        raise Refusal(f"the JobSet has {total} pods; tjc run --local starts at most "
                      f"{MAX_LOCAL_PODS} processes (lower numNodes to try the job here)")


def _check_volumes(jobset: Obj) -> None:
    """Refuse, before any file is written, a pod volume the API server would refuse (an item
    path leaving its volume, a mode beyond 0777): the first one, with its JobSet field path."""
    for index, rjob in enumerate((jobset.get("spec") or {}).get("replicatedJobs") or []):
        pod_spec = (((rjob.get("template") or {}).get("spec") or {}).get("template")
                    or {}).get("spec") or {}
        for path, message in volumefiles.problems(pod_spec):
            where = ("spec", "replicatedJobs", index, "template", "spec", "template", "spec",
                     *path)
            raise Refusal(f"{format_path(where)}: {message} (the API server refuses such a "
                          "pod)")


def _identities(jobset: Obj) -> list[tuple[PodIdentity, Obj]]:
    """Every pod of the JobSet with its pod template, in JobSet order."""
    out: list[tuple[PodIdentity, Obj]] = []
    name = str(jobset["metadata"]["name"])
    namespace = str(jobset["metadata"].get("namespace") or "default")
    _check_count(jobset)
    global_index = 0
    for rjob in (jobset.get("spec") or {}).get("replicatedJobs") or []:
        replicas = int(rjob.get("replicas", 1))
        job_spec = (rjob.get("template") or {}).get("spec") or {}
        parallelism = int(job_spec.get("parallelism", 1))
        completions = int(job_spec.get("completions", parallelism))
        for job_index in range(replicas):
            for index in range(completions):
                out.append((PodIdentity(name, namespace, str(rjob["name"]), replicas, job_index,
                                        global_index, index,
                                        str(rjob.get("groupName", "default"))),
                            job_spec.get("template") or {}))
            global_index += 1
    return out


def _declared_ports(jobset: Obj) -> dict[str, list[int]]:
    """Replicated job name -> the container ports its pods declare."""
    out: dict[str, list[int]] = {}
    for rjob in (jobset.get("spec") or {}).get("replicatedJobs") or []:
        pod = ((rjob.get("template") or {}).get("spec") or {}).get("template") or {}
        ports = [int(port["containerPort"]) for c in _containers(pod)
                 for port in c.get("ports") or [] if "containerPort" in port]
        out[str(rjob["name"])] = ports
    return out


def _containers(template: Obj) -> list[Obj]:
    return list((template.get("spec") or {}).get("containers") or [])


def _pod(ident: PodIdentity, template: Obj, side: dict[tuple[str, str], Obj],
         table: hosts.HostTable, options: Options, bin_dir: Path,
         replaced: dict[str, str]) -> LocalPod:
    pod_spec = template.get("spec") or {}
    containers = _containers(template)
    if len(containers) != 1 or pod_spec.get("initContainers"):
        raise Refusal(f"pod {ident.hostname}: only pods with one container and no init "
                      f"containers run locally (it has {len(containers)} and "
                      f"{len(pod_spec.get('initContainers') or [])})")
    container = containers[0]
    _check_gpus(ident, container, options.ignore_gpus)
    labels, annotations = kubelet.pod_metadata(ident, template)
    view = PodView(ident, labels, annotations,
                   str(pod_spec.get("serviceAccountName") or "default"), side)
    try:
        env = kubelet.container_env(container, view)
    except kubelet.KubeletError as exc:
        raise Refusal(f"pod {ident.hostname}: {exc}") from exc
    env.setdefault("JOB_COMPLETION_INDEX", str(ident.completion_index))
    argv = [kubelet.expand(str(part), env) for part in
            [*(container.get("command") or []), *(container.get("args") or [])]]
    try:
        mounts = volumes.mount(ident.hostname, pod_spec, container, side, options.run_dir)
    except volumes.VolumeError as exc:
        raise Refusal(f"pod {ident.hostname}: {exc}") from exc
    env = {key: hosts.remap_paths(table.rewrite(value), mounts) for key, value in
           hosts.remap_port_vars(env, table).items()}
    argv = [hosts.remap_paths(table.rewrite(part), mounts) for part in argv]
    env.setdefault("HOSTNAME", ident.hostname)
    return _finish(ident, container, argv, env, options, bin_dir, table, replaced)


def _finish(ident: PodIdentity, container: Obj, argv: list[str], env: dict[str, str],
            options: Options, bin_dir: Path, table: hosts.HostTable,
            replaced: dict[str, str]) -> LocalPod:
    if not container.get("command"):
        raise Refusal(f"pod {ident.hostname}: container {container.get('name')!r} sets no "
                      f"command, so it runs the entrypoint of image {container.get('image')!r}, "
                      "which does not exist on this machine")
    program = os.path.basename(argv[0])
    if program in replaced:
        return LocalPod(ident, argv, env, stand_in=replaced[program] or program)
    path = f"{bin_dir}{os.pathsep}{options.base_env.get('PATH', os.defpath)}"
    if shutil.which(argv[0], path=path) is None:
        raise Refusal(f"pod {ident.hostname}: {argv[0]!r} (the command of container "
                      f"{container.get('name')!r}) is in the filesystem of image "
                      f"{container.get('image')!r}, not on this machine")
    # unbuffered unless the pod says otherwise, so that output streams as it is printed
    return LocalPod(ident, argv, {"PYTHONUNBUFFERED": "1", **options.base_env, **env,
                                  "PATH": path}, ready_port=_ready_port(ident, container, table))


def _ready_port(ident: PodIdentity, container: Obj, table: hosts.HostTable) -> int | None:
    """The local port a tcpSocket readiness probe checks (a named port is looked up)."""
    port = ((container.get("readinessProbe") or {}).get("tcpSocket") or {}).get("port")
    if isinstance(port, str) and not (port.isascii() and port.isdigit()):  # not "²"
        named = {p.get("name"): p.get("containerPort") for p in container.get("ports") or []}
        port = named.get(port)
    if port is None:
        return None
    return table.ports.get((ident.hostname, int(port)), int(port))


def _check_gpus(ident: PodIdentity, container: Obj, ignore: bool) -> None:
    resources = container.get("resources") or {}
    for section in ("limits", "requests"):
        for key, value in (resources.get(section) or {}).items():
            if "gpu" in str(key).lower() and str(value) not in ("0", "") and not ignore:
                raise Refusal(f"pod {ident.hostname}: container {container.get('name')!r} "
                              f"requests {key}: {value}; run with --ignore-gpus to run it "
                              "without one")
