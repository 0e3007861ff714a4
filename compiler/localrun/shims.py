"""Small programs that stand in for the image on this machine.

`write` creates `<run dir>/bin`, put first on every pod's PATH: `python`, `python3` and
`torchrun` run the interpreter given with `--python`, and `tjc-ssh` stands in for ssh: it runs
the command on this machine when the host is one of the pods (so that `mpirun` reaches the
"nodes" of the hostfile without an SSH server). Written through `compiler.localrun.safefs`,
like every file of the run folder. Called by the plan.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from compiler.localrun import safefs

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


def write(run_dir: Path, python: str, hosts: list[str]) -> Path:
    """Create the shims; returns their folder."""
    exe = shlex.quote(python)
    scripts = {
        "python": f'#!/bin/sh\nexec {exe} "$@"\n',
        "python3": f'#!/bin/sh\nexec {exe} "$@"\n',
        "torchrun": f'#!/bin/sh\nexec {exe} -m torch.distributed.run "$@"\n',
        "tjc-ssh": _SSH.replace("{hosts}", " ".join(hosts)),
    }
    with safefs.open_dir(run_dir, ["bin"]) as folder:
        for name, text in scripts.items():
            safefs.write_file(folder, [name], text.encode(), 0o755)
    return run_dir / "bin"


def mpi_env(bin_dir: Path) -> dict[str, str]:
    """What an Open MPI launcher needs to start its ranks through the ssh stand-in (a pod's
    own env still wins)."""
    env = {"OMPI_MCA_plm_rsh_agent": str(bin_dir / "tjc-ssh"),
           # Every "node" is this machine. Open MPI 4's orted otherwise maps its hwloc topology
           # into shared memory at the biggest hole it finds in its address space; with some
           # address layouts that hole borders the stack and orted crashes (SIGSEGV in
           # hwloc_shmem_topology_write). The shared copy only saves ranks a topology scan.
           "OMPI_MCA_rtc_hwloc_vmhole": "none"}
    if os.geteuid() == 0:  # containers run as their user; locally mpirun may be root
        env |= {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    return env
