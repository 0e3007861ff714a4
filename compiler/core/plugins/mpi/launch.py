"""MPI's launcher knowledge for `tjc run --local` (the `LocalLaunch` hook).

A JobSet of an MPI runtime has `node` pods that only serve SSH (`sshd`) and a launcher whose
`mpirun` reaches the hostfile's hosts over ssh. Locally every host is this machine, so the
`sshd` pods are not run, a `tjc-ssh` stand-in runs the command here when the host is one of
the pods, and every pod that is run gets the Open MPI env that makes `mpirun` use it. Pure:
returns the scripts and env as text; `compiler.localrun` writes and runs them.
"""

from __future__ import annotations

from compiler.core.plugins.hooks import Launcher, LaunchSite, LocalLaunch

SSH_STAND_IN = "tjc-ssh"

_SSH = """#!/bin/sh
# ssh stand-in of tjc run --local: every pod host is this machine.
while [ $# -gt 0 ]; do
  case "$1" in
    -o|-p|-l|-i|-F|-E|-c|-m|-b|-J|-L|-R|-D|-S|-W) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
host="$1"; shift
case " {hosts} " in
  *" $host "*)
    # Each "node" gets its own Open MPI session folder: the daemons of one run all start on
    # this machine at once and otherwise race for the same one ("File exists").
    base="${TMPDIR:-/tmp}/tjc-ompi.$$"
    mkdir -p "$base" || exit 255
    OMPI_MCA_orte_tmpdir_base="$base" sh -c "$*"
    code=$?
    rm -rf "$base"
    exit $code ;;
esac
echo "tjc-ssh: $host is not a pod of this JobSet" >&2
exit 255
"""


class Launch(LocalLaunch):
    """The ssh stand-in, the `sshd` pods it replaces, and the Open MPI env."""

    def local_launch(self, site: LaunchSite) -> Launcher:
        """The stand-in for `site`'s hosts and the env pointing `mpirun` at it."""
        return Launcher(programs={SSH_STAND_IN: _SSH.replace("{hosts}", " ".join(site.hosts))},
                        replaced={"sshd": "ssh stand-in"}, client_env=open_mpi_env(site))


def open_mpi_env(site: LaunchSite) -> dict[str, str]:
    """What an Open MPI launcher needs to start its ranks through the ssh stand-in."""
    env = {"OMPI_MCA_plm_rsh_agent": f"{site.bin_dir}/{SSH_STAND_IN}",
           # Every "node" is this machine. Open MPI 4's orted otherwise maps its hwloc topology
           # into shared memory at the biggest hole it finds in its address space; with some
           # address layouts that hole borders the stack and orted crashes (SIGSEGV in
           # hwloc_shmem_topology_write). The shared copy only saves ranks a topology scan.
           "OMPI_MCA_rtc_hwloc_vmhole": "none"}
    if site.as_root:  # containers run as their user; locally mpirun may be root
        env |= {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    return env
