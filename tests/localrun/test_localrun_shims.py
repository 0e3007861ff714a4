"""The ssh stand-in of `tjc run --local` (MPI's launcher hook) runs a pod host's command on this
machine, each in an Open MPI session folder of its own that it removes afterwards."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from compiler.cli.run_cmd import local_launchers
from compiler.common.launch import LaunchSite
from compiler.localrun import shims


def _shims(tmp_path: Path, hosts: list[str]) -> Path:
    """The bin folder with every framework's stand-ins for `hosts`, as the plan writes it."""
    site = LaunchSite(sys.executable, tuple(hosts), str(tmp_path / "bin"))
    programs = {name: text for hook in local_launchers()
                for name, text in hook.local_launch(site).programs.items()}
    return shims.write(tmp_path, sys.executable, programs)


def _ssh(bin_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(bin_dir / "tjc-ssh"), *args], capture_output=True, text=True,
                          timeout=30, check=False)


def test_each_host_command_gets_its_own_session_folder(tmp_path: Path) -> None:
    bin_dir = _shims(tmp_path, ["a-node-0-0.a", "a-node-0-1.a"])
    show = 'test -d "$OMPI_MCA_orte_tmpdir_base" && echo "$OMPI_MCA_orte_tmpdir_base"'
    first = _ssh(bin_dir, "-o", "BatchMode=yes", "a-node-0-0.a", show)
    second = _ssh(bin_dir, "a-node-0-1.a", show)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    folders = [Path(first.stdout.strip()), Path(second.stdout.strip())]
    assert folders[0] != folders[1] and all(f.name.startswith("tjc-ompi.") for f in folders)
    assert not any(f.exists() for f in folders)  # removed when the command ended


def test_the_command_status_passes_through_and_other_hosts_are_refused(tmp_path: Path) -> None:
    bin_dir = _shims(tmp_path, ["a-node-0-0.a"])
    assert _ssh(bin_dir, "a-node-0-0.a", "exit 7").returncode == 7
    refused = _ssh(bin_dir, "elsewhere", "true")
    assert refused.returncode == 255 and "not a pod of this JobSet" in refused.stderr
