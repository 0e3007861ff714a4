"""The parity oracle: upstream's own Go code (Kubeflow Trainer v2.3.0, k8s.io/apimachinery,
sigs.k8s.io/yaml) as one long-running process that answers JSON requests line by line.

`parity/oracle/build.sh` builds it (pinned, cached); `oracle()` starts it once per test
session. `build(release)` builds the oracle of another served Trainer release instead (its
own module versions; `parity/oracle/releases/`). Where Go is missing the parity tests skip,
except in CI (CI=true), where they fail.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from compiler.common.jsondata import Obj

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "parity" / "oracle" / "build.sh"


class Oracle:
    """A running oracle process."""

    def __init__(self, binary: str) -> None:
        crds = str(Path(binary).parent / "crds")
        self._proc = subprocess.Popen([binary, "-crds", crds], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                      encoding="utf-8")

    def ask(self, request: Obj) -> Obj:
        """One request, one answer."""
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(json.dumps(request) + "\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError("the parity oracle exited")
        answer: Obj = json.loads(line)
        if "fatal" in answer:
            raise RuntimeError(f"parity oracle: {answer['fatal']}")
        return answer

    def close(self) -> None:
        """Stop the process."""
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        self._proc.wait(timeout=30)


def build(release: str | None = None) -> str:
    """The oracle binary's path (of `release`, default the newest), building it first if
    needed; skips the calling test where Go is missing outside CI."""
    which = [release] if release else []
    if shutil.which("go") is None and not os.environ.get("CI"):
        printed = subprocess.run([str(BUILD), "--print", *which], capture_output=True,
                                 text=True, check=False).stdout.strip()
        if not printed or not Path(printed).exists():
            pytest.skip("the parity oracle needs Go (make test builds it)")
        return printed
    done = subprocess.run([str(BUILD), *which], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"building the parity oracle failed:\n{done.stderr}")
    return done.stdout.strip().splitlines()[-1]
