"""Pod templates for the Pod Security Standards differential, and tjc's verdict on them.

`pod_templates(seed, count)` makes pod templates (`{"metadata", "spec"}`) from a seeded
generator that sets every field a check of k8s.io/pod-security-admission reads, with values
each level allows and values it refuses: host namespaces, user namespaces, the OS, pod and
container security contexts (privileged, privilege escalation, capabilities, procMount,
runAsNonRoot, runAsUser, seccomp, AppArmor, SELinux, Windows host processes), sysctls,
volumes of every source type (and none), ports with and without host ports, probes and
lifecycle handlers with hosts, and the AppArmor annotations (not ephemeral containers, which
no pod template may hold). `tjc_verdicts` gives, per
template, the upstream check ids whose pss rule fired for a JobSet holding it (or, with the
security pack, whose pss rule or security counterpart fired). `CHECKS` maps each upstream
check id to its rule.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import Any

from compiler.common.jsondata import Obj
from compiler.policy.engine import PolicySet, Violation
from compiler.policy.packs import BUILTIN_DIR, Loader, Pack, pack_files

# upstream check id (policy.DefaultChecks, v0.36.2) -> the pss rule that is that check
CHECKS = {
    "hostNamespaces": "pss.host-namespaces",
    "privileged": "pss.privileged",
    "capabilities_baseline": "pss.capabilities-baseline",
    "capabilities_restricted": "pss.capabilities-restricted",
    "hostPathVolumes": "pss.host-path-volumes",
    "restrictedVolumes": "pss.restricted-volumes",
    "hostPorts": "pss.host-ports",
    "appArmorProfile": "pss.apparmor",
    "seLinuxOptions": "pss.selinux",
    "procMount": "pss.proc-mount",
    "procMount_restricted": "pss.proc-mount-restricted",
    "seccompProfile_baseline": "pss.seccomp-baseline",
    "seccompProfile_restricted": "pss.seccomp-restricted",
    "sysctls": "pss.sysctls",
    "windowsHostProcess": "pss.windows-host-process",
    "hostProbesAndHostLifecycle": "pss.host-probes",
    "allowPrivilegeEscalation": "pss.allow-privilege-escalation",
    "runAsNonRoot": "pss.run-as-non-root",
    "runAsUser": "pss.run-as-user",
}
# the security pack's rule that reports a check's problem instead (the pss rule defers to it)
SECURITY = {
    "hostNamespaces": "security.host-namespaces",
    "privileged": "security.privileged",
    "capabilities_baseline": "security.capabilities",
    "capabilities_restricted": "security.capabilities",
    "hostPathVolumes": "security.host-path",
    "restrictedVolumes": "security.host-path",
}
LEVELS = ("baseline", "restricted")

CAPABILITIES = ["CHOWN", "KILL", "NET_BIND_SERVICE", "SETUID", "SYS_CHROOT", "AUDIT_WRITE",
                "NET_RAW", "SYS_ADMIN", "SYS_PTRACE", "ALL", "BPF"]
PROFILE_TYPES = ["RuntimeDefault", "Localhost", "Unconfined", ""]
SELINUX_TYPES = ["", "container_t", "container_init_t", "container_kvm_t",
                 "container_engine_t", "spc_t", "unconfined_t"]
SYSCTLS = ["kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_rmem",
           "net.ipv4.tcp_keepalive_time", "net.ipv4.ip_unprivileged_port_start",
           "kernel.msgmax", "net.core.somaxconn", "vm.swappiness", "kernel.shm_rmid_forced2"]
ALLOWED_VOLUMES = {
    "configMap": {"name": "c"}, "secret": {"secretName": "s"}, "emptyDir": {},
    "persistentVolumeClaim": {"claimName": "p"}, "projected": {"sources": []},
    "downwardAPI": {"items": []}, "csi": {"driver": "csi.example.com"},
    "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"]}}},
    "image": {"reference": "registry.example.com/data:1"},
}
RESTRICTED_VOLUMES = {
    "hostPath": {"path": "/data"}, "nfs": {"server": "nfs.example.com", "path": "/x"},
    "gcePersistentDisk": {"pdName": "d"}, "awsElasticBlockStore": {"volumeID": "v"},
    "gitRepo": {"repository": "https://example.com/r.git"}, "iscsi": {
        "targetPortal": "10.0.0.1:3260", "iqn": "iqn.2001-04.com.example:x", "lun": 0},
    "glusterfs": {"endpoints": "e", "path": "p"}, "rbd": {"monitors": ["m"], "image": "i"},
    "flexVolume": {"driver": "example.com/flex"}, "cinder": {"volumeID": "v"},
    "cephfs": {"monitors": ["m"]}, "flocker": {"datasetName": "d"}, "fc": {"wwids": ["w"]},
    "azureFile": {"secretName": "s", "shareName": "x"}, "vsphereVolume": {"volumePath": "p"},
    "quobyte": {"registry": "r", "volume": "v"}, "azureDisk": {"diskName": "d",
                                                               "diskURI": "u"},
    "photonPersistentDisk": {"pdID": "p"}, "portworxVolume": {"volumeID": "v"},
    "scaleIO": {"gateway": "g", "system": "s", "secretRef": {"name": "n"}},
    "storageos": {"volumeName": "v"},
}
APPARMOR_KEY = "container.apparmor.security.beta.kubernetes.io/"
APPARMOR_VALUES = ["", "runtime/default", "localhost/train", "unconfined", "docker/default",
                   "localhost"]


class Gen:
    """One seeded generator: each field is left out more often than set, and set to an
    allowed value more often than to a refused one."""

    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)

    def maybe(self, chance: float = 0.3) -> bool:
        return self.r.random() < chance

    def one(self, values: Sequence[Any]) -> Any:
        return self.r.choice(values)

    def tristate(self, chance: float = 0.25) -> bool | None:
        """Absent (None), true or false."""
        return self.one([True, False]) if self.maybe(chance) else None

    def profile(self, chance: float = 0.2) -> Obj | None:
        if not self.maybe(chance):
            return None
        out: Obj = {}
        kind = self.one(PROFILE_TYPES)
        if kind or self.maybe(0.5):
            out["type"] = kind
        if kind == "Localhost":
            out["localhostProfile"] = "profiles/train.json"
        return out

    def selinux(self) -> Obj | None:
        if not self.maybe(0.15):
            return None
        out: Obj = {}
        for field, values in (("type", SELINUX_TYPES), ("user", ["", "system_u"]),
                              ("role", ["", "system_r"]), ("level", ["s0:c1,c2"])):
            if self.maybe(0.5):
                out[field] = self.one(values)
        return out

    def security_context(self, pod: bool) -> Obj | None:
        if not self.maybe(0.8 if not pod else 0.5):
            return None
        out: Obj = {}
        self._set(out, "runAsNonRoot", self.tristate(0.5))
        if self.maybe(0.2):
            out["runAsUser"] = self.one([0, 1000, 65534])
        self._set(out, "seccompProfile", self.profile())
        self._set(out, "appArmorProfile", self.profile(0.12))
        self._set(out, "seLinuxOptions", self.selinux())
        if self.maybe(0.08):
            out["windowsOptions"] = {"hostProcess": self.one([True, False])} \
                if self.maybe(0.8) else {}
        if pod:
            if self.maybe(0.15):
                out["sysctls"] = [{"name": self.one(SYSCTLS), "value": "1"}
                                  for _ in range(self.r.randint(1, 2))]
            return out
        self._set(out, "privileged", self.tristate(0.1))
        self._set(out, "allowPrivilegeEscalation", self.tristate(0.5))
        if self.maybe(0.4):
            caps: Obj = {}
            if self.maybe(0.7):
                caps["drop"] = self.one([["ALL"], ["all"], ["NET_RAW"], ["NET_RAW", "ALL"], []])
            if self.maybe(0.5):
                caps["add"] = self.r.sample(CAPABILITIES, self.r.randint(0, 2))
            out["capabilities"] = caps
        if self.maybe(0.1):
            out["procMount"] = self.one(["Default", "Unmasked", ""])
        return out

    @staticmethod
    def _set(out: Obj, key: str, value: Any) -> None:
        if value is not None:
            out[key] = value

    def handler(self, lifecycle: bool) -> Obj:
        kind = self.one(["httpGet", "tcpSocket"] + ([] if lifecycle else ["exec"]))
        if kind == "exec":
            return {"exec": {"command": ["true"]}}
        out: Obj = {"port": self.one([8080, 29500])}
        if self.maybe(0.4):
            out["host"] = self.one(["", "127.0.0.1", "metrics.example.com"])
        if kind == "httpGet":
            out["path"] = "/healthz"
        return {kind: out}

    def container(self, name: str, pod_host_network: bool) -> Obj:
        out: Obj = {"name": name, "image": "ghcr.io/acme/trainer:1.0"}
        if self.maybe(0.4 if not pod_host_network else 0.8):
            ports = []
            for number in self.r.sample([8080, 29500, 2222], self.r.randint(1, 2)):
                port: Obj = {"containerPort": number}
                if self.maybe(0.2):
                    port["hostPort"] = self.one([0, number, 30000])
                ports.append(port)
            out["ports"] = ports
        for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
            if self.maybe(0.08):
                out[probe] = self.handler(False)
        if self.maybe(0.08):
            out["lifecycle"] = {hook: self.handler(True)
                                for hook in self.r.sample(["postStart", "preStop"],
                                                          self.r.randint(1, 2))}
        self._set(out, "securityContext", self.security_context(False))
        return out

    def volume(self, index: int) -> Obj:
        out: Obj = {"name": f"v{index}"}
        roll = self.r.random()
        if roll < 0.05:
            return out  # no source: the API server makes it an emptyDir volume
        table = ALLOWED_VOLUMES if roll < 0.5 else RESTRICTED_VOLUMES
        kind = self.one(sorted(table))
        out[kind] = table[kind]
        if self.maybe(0.03):  # a second source (refused by validation, not by the checks)
            other = self.one(sorted(ALLOWED_VOLUMES))
            out.setdefault(other, ALLOWED_VOLUMES[other])
        return out

    def pod_template(self) -> Obj:
        """A template with fields drawn at random, or (one in three) one that passes the
        restricted level but, half the time, for one field drawn at random."""
        if not self.maybe(1 / 3):
            return self.drawn()
        template = self.compliant()
        if self.maybe(0.5):
            self.change_one(template, self.drawn())
        return template

    def compliant(self) -> Obj:
        containers = [{"name": name, "image": "ghcr.io/acme/trainer:1.0", "securityContext": {
            "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}
            for name in ["node", *(["side1"] if self.maybe() else [])]]
        spec: Obj = {"securityContext": {"runAsNonRoot": True,
                                         "seccompProfile": {"type": "RuntimeDefault"}},
                     "containers": containers}
        if self.maybe():
            spec["volumes"] = [{"name": "v0", "emptyDir": {}}]
        return {"spec": spec}

    def change_one(self, template: Obj, other: Obj) -> None:
        """Copy one field of `other` (the template's metadata, a pod field or a field of its
        first container) into `template`."""
        spec, source = template["spec"], other["spec"]
        first, donor = spec["containers"][0], source["containers"][0]
        places: list[tuple[Obj, Obj, str]] = [(template, other, "metadata")]
        places += [(spec, source, k) for k in source if k != "containers"]
        places += [(first, donor, k) for k in donor if k != "name"]
        places += [(first["securityContext"], donor.get("securityContext") or {}, k)
                   for k in donor.get("securityContext") or {}]
        places += [(spec["securityContext"], source.get("securityContext") or {}, k)
                   for k in source.get("securityContext") or {}]
        into, origin, key = self.one(places)
        if key in origin:
            into[key] = origin[key]
        else:
            into.pop(key, None)

    def drawn(self) -> Obj:
        spec: Obj = {}
        for field in ("hostNetwork", "hostPID", "hostIPC"):
            self._set(spec, field, self.tristate(0.06))
        self._set(spec, "hostUsers", self.tristate(0.15))
        if self.maybe(0.08):
            spec["os"] = {"name": self.one(["linux", "windows"])}
        self._set(spec, "securityContext", self.security_context(True))
        if self.maybe(0.3):
            spec["volumes"] = [self.volume(i) for i in range(self.r.randint(1, 2))]
        host_network = spec.get("hostNetwork") is True
        if self.maybe(0.25):
            spec["initContainers"] = [self.container(f"init{i}", host_network)
                                      for i in range(self.r.randint(1, 2))]
        spec["containers"] = [self.container("node" if i == 0 else f"side{i}", host_network)
                              for i in range(self.r.randint(1, 2))]
        template: Obj = {"spec": spec}
        if self.maybe(0.15):
            names = [c["name"] for c in spec["containers"]] + ["ghost"]
            template["metadata"] = {"annotations": {
                APPARMOR_KEY + self.one(names): self.one(APPARMOR_VALUES),
                "example.com/note": "unconfined"}}
        return template


def pod_templates(seed: int, count: int) -> list[Obj]:
    """`count` pod templates from the generator seeded with `seed`."""
    gen = Gen(seed)
    return [gen.pod_template() for _ in range(count)]


def jobset(template: Obj) -> Obj:
    """A JobSet (as tjc compiles one) whose one replicated job's pods come from `template`."""
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "job", "namespace": "team-a"},
            "spec": {"replicatedJobs": [{"name": "node", "replicas": 1, "template": {
                "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step":
                                        "trainer"}},
                "spec": {"template": template}}}]}}


TRAINJOB: Obj = {"metadata": {"name": "job", "namespace": "team-a"}}


def packs(settings: Obj, security: bool) -> list[Pack]:
    """The pss pack (and with `security`, every built-in pack) loaded with `settings`."""
    files = pack_files([], True) if security else [BUILTIN_DIR / "pss.cue"]
    return Loader(settings).load_all(files)


def policy_set(level: str, security: bool, warn: str = "privileged") -> PolicySet:
    settings = {"pss": {"enforce": level, "warn": warn}}
    return PolicySet(packs(settings, security), settings=settings)


def fired(violations: Iterable[Violation], level: str, security: bool) -> set[str]:
    """The upstream check ids whose rule (or, with the security pack, counterpart) fired."""
    rules = {v.rule.id for v in violations}
    out = set()
    for check, rule in CHECKS.items():
        if rule in rules or (security and SECURITY.get(check) in rules
                             and _counterpart_at(check, level)):
            out.add(check)
    return out


def _counterpart_at(check: str, level: str) -> bool:
    """Whether the security counterpart stands for this check at this level (capabilities
    and host paths: the baseline check at baseline, the restricted one at restricted)."""
    if check in ("capabilities_baseline", "hostPathVolumes"):
        return level == "baseline"
    if check in ("capabilities_restricted", "restrictedVolumes"):
        return level == "restricted"
    return True


def tjc_verdicts(templates: Sequence[Obj], level: str, security: bool = False
                 ) -> list[set[str]]:
    """Per template, the upstream check ids tjc finds failing at `level`."""
    policies = policy_set(level, security)
    out = []
    for template in templates:
        found = policies.check("JobSet", jobset(template), TRAINJOB)
        assert not policies.errors, policies.errors[0].text()
        out.append(fired(found, level, security))
    return out
