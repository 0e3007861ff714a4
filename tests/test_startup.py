"""Start-up: a one-file `tjc validate` (the pre-commit case) loads only what it uses.

Each command imports its own modules on first use; these tests run the command in a fresh
interpreter and fail when a module that validating one TrainJob does not need (another verb,
the key library, git and process handling, diffing, the controller) is imported again. A
check of what is loaded, not of timing, so it holds on a busy machine. Also checks that the
command still does its whole job there (the policies ran on the compiled JobSet).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "torch-mnist.yaml"

PROBE = """
import json, sys
from compiler.cli.main import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""

NOT_NEEDED = (
    "cryptography", "difflib", "tarfile", "zipfile", "subprocess", "pickle", "logging",
    "tempfile", "importlib.resources", "importlib.metadata",
    "compiler.cli.render_cmd", "compiler.cli.diff_cmd", "compiler.cli.controller_cmd",
    "compiler.cli.run_cmd", "compiler.cli.krm_cmd", "compiler.cli.explain_cmd",
    "compiler.cli.policies_cmd", "compiler.cli.runtimes_cmd", "compiler.cli.repo",
    "compiler.controller", "compiler.localrun", "compiler.io.sshkeys", "compiler.explain.explainer",
    "compiler.gitops.diffing", "compiler.gitops.krm", "compiler.gitops.passthrough",
    "compiler.render.pipeline",
)
NEEDED = ("compiler.validate.documents", "compiler.core.compile", "compiler.policy.check",
          "compiler.kube.cel")


def _run(*args: str) -> tuple[int, set[str], str]:
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True,
                          text=True, cwd=ROOT, check=False)
    report = json.loads(proc.stderr.strip().splitlines()[-1])
    return report["code"], set(report["modules"]), proc.stdout


def test_one_file_validate_imports_only_what_it_needs() -> None:
    code, modules, out = _run("validate", str(EXAMPLE))
    assert code == 0, out
    loaded = sorted(m for m in modules
                    if any(m == bad or m.startswith(bad + ".") for bad in NOT_NEEDED))
    assert loaded == []
    assert set(NEEDED) <= modules  # it did validate, compile and check policies


def test_policies_off_loads_no_policy_code() -> None:
    code, modules, _ = _run("validate", "--no-default-policies", str(EXAMPLE))
    assert code == 0
    assert not any(m.startswith(("compiler.policy", "compiler.policy.cuelib")) for m in modules)
