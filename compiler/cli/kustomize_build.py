"""`kustomize build` of a folder for the Argo CD plugin (`compiler.cli.argocd_cmd`).

kustomize comes from PATH; without a standalone `kustomize` there, `kubectl kustomize` (the
copy kubectl carries) builds instead (`command`). Its output is read no further than an input
file is (`MAX_BYTES`), so a runaway build cannot fill the memory. `offline=True` (discovery)
also bounds the time and keeps the build off the network: the proxy variables point at a
closed local port and git may only use local repositories, so a remote base fails instead of
being fetched. Started as a list of arguments, never through a shell.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from pathlib import Path

from compiler.common.records import dataclass
from compiler.io.loader import MAX_BYTES

KUSTOMIZATIONS = ("kustomization.yaml", "kustomization.yml", "Kustomization")
NOWHERE = "http://127.0.0.1:9"  # the discard port, closed: a connection fails at once
OFFLINE = {**dict.fromkeys(("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy",
                            "https_proxy", "all_proxy"), NOWHERE),
           "NO_PROXY": "", "no_proxy": "", "GIT_ALLOW_PROTOCOL": "file",
           "GIT_TERMINAL_PROMPT": "0"}
STDERR_KEPT = 64 * 1024


@dataclass(frozen=True)
class Built:
    """What one build gave: its output (when it succeeded) or why it failed."""

    text: str | None
    problem: str = ""


def command() -> list[str]:
    """The build command without its folder: `kustomize build`, or `kubectl kustomize` when
    only kubectl is on PATH (when neither is, `kustomize build`, whose failure names it)."""
    if shutil.which("kustomize") is None and shutil.which("kubectl") is not None:
        return ["kubectl", "kustomize"]
    return ["kustomize", "build"]


def has_kustomization(folder: Path) -> bool:
    """Whether kustomize builds this folder."""
    return any((folder / name).is_file() for name in KUSTOMIZATIONS)


def build(folder: Path, *, offline: bool = False, timeout: float | None = None) -> Built:
    """`kustomize build` (or `kubectl kustomize`) in `folder`; never raises for a failed or
    missing kustomize."""
    env = {**os.environ, **OFFLINE} if offline else None
    with tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen([*command(), "."], cwd=folder, env=env,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=err, start_new_session=True)
        except OSError as exc:
            return Built(None, f"cannot run {command()[0]}: {exc.strerror or exc}")
        out, why = _collect(proc, timeout)
        err.seek(0)
        said = " ".join(err.read(STDERR_KEPT).decode(errors="replace").split())
    if why or proc.returncode != 0:
        return Built(None, why or said or f"exit code {proc.returncode}")
    try:
        return Built(out.decode("utf-8"))
    except UnicodeDecodeError:
        return Built(None, "its output is not UTF-8 text")


def _collect(proc: subprocess.Popen[bytes], timeout: float | None) -> tuple[bytes, str]:
    """The process's output, at most MAX_BYTES of it, and why it was stopped (or '')."""
    timed_out = threading.Event()

    def stop() -> None:
        timed_out.set()
        _kill(proc)

    timer = threading.Timer(timeout, stop) if timeout is not None else None
    if timer is not None:
        timer.start()
    try:
        assert proc.stdout is not None
        out = proc.stdout.read(MAX_BYTES + 1)
        if len(out) > MAX_BYTES:
            _kill(proc)
        proc.wait()
    finally:
        if timer is not None:
            timer.cancel()
        if proc.stdout is not None:
            proc.stdout.close()
    if timed_out.is_set():
        return b"", f"it took longer than {timeout:g} seconds"
    if len(out) > MAX_BYTES:
        return b"", f"its output is larger than {MAX_BYTES >> 20} MiB"
    return out, ""


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """Stop the build and whatever it started (git): its whole process group."""
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)
