"""Start-up: a one-file `tjc validate` (the pre-commit case) loads only what it uses.

Each command imports its own modules on first use; these tests run the command in a fresh
interpreter and fail when a module that validating one TrainJob does not need (another verb,
the key library, git and process handling, diffing, the controller) is imported again. A
check of what is loaded, not of timing, so it holds on a busy machine. Also checks that the
command still does its whole job there (the policies ran on the compiled JobSet). The runs use
a start-up cache of their own (`compiler.common.diskcache`), warm but for the one test of a
cold one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from compiler.common import diskcache
from compiler.core.plugins.graph import CACHE_AREA

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "torch-mnist.yaml"

PROBE = """
import json, sys
from compiler.cli.main import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""

NOT_NEEDED = (
    "cryptography", "difflib", "tarfile", "zipfile", "subprocess", "pickle", "logging",
    "tempfile", "importlib.resources", "importlib.metadata", "networkx",
    "compiler.cli.render_cmd", "compiler.cli.diff_cmd", "compiler.cli.controller_cmd",
    "compiler.cli.run_cmd", "compiler.cli.krm_cmd", "compiler.cli.explain_cmd",
    "compiler.cli.policies_cmd", "compiler.cli.runtimes_cmd", "compiler.cli.repo",
    "compiler.controller", "compiler.localrun", "compiler.io.sshkeys", "compiler.explain.explainer",
    "compiler.gitops.diffing", "compiler.gitops.krm", "compiler.gitops.passthrough",
    "compiler.render.pipeline",
    # the C fast path reads the file: PyYAML (its reader compiles a large Unicode pattern
    # at import), hashlib (which loads OpenSSL) and the other report formats are not needed
    "yaml", "hashlib", "_hashlib", "compiler.io.yamlread", "compiler.validate.sarif",
    "compiler.validate.junit", "compiler.validate.github", "xml.etree.ElementTree",
    # the CRD rules a usual TrainJob and runtime meet are confirmed in Python (celnative)
    "cel_expr_python",
)
NEEDED = ("compiler.validate.documents", "compiler.core.compile", "compiler.policy.check",
          "compiler.kube.cel")


def _run(*args: str, env: dict[str, str] | None = None) -> tuple[int, set[str], str]:
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True,
                          text=True, cwd=ROOT, check=False, env=env)
    report = json.loads(proc.stderr.strip().splitlines()[-1])
    return report["code"], set(report["modules"]), proc.stdout


@pytest.fixture(scope="module")
def warm(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of a start-up cache of its own, filled by one validate first: the
    budget is that of every run but the first after an install (which fills the cache, and
    imports networkx to order the plugins)."""
    env = {**os.environ, diskcache.CACHE_ENV: str(tmp_path_factory.mktemp("cache"))}
    _run("validate", str(EXAMPLE), env=env)
    return env


def test_one_file_validate_imports_only_what_it_needs(warm: dict[str, str]) -> None:
    code, modules, out = _run("validate", str(EXAMPLE), env=warm)
    assert code == 0, out
    loaded = sorted(m for m in modules
                    if any(m == bad or m.startswith(bad + ".") for bad in NOT_NEEDED))
    assert loaded == []
    assert set(NEEDED) <= modules  # it did validate, compile and check policies


def test_policies_off_loads_no_policy_code(warm: dict[str, str]) -> None:
    code, modules, _ = _run("validate", "--no-default-policies", str(EXAMPLE), env=warm)
    assert code == 0
    assert not any(m.startswith(("compiler.policy", "compiler.policy.cuelib")) for m in modules)


def test_plugin_order_computed_on_a_cold_cache_and_read_on_a_warm_one(tmp_path: Path) -> None:
    """networkx orders the plugins once, on a cold start-up cache; with the order stored, a
    one-file validate does not import it."""
    env = {**os.environ, diskcache.CACHE_ENV: str(tmp_path)}
    code, modules, out = _run("validate", str(EXAMPLE), env=env)
    assert code == 0, out
    assert "networkx" in modules
    assert len(list((tmp_path / CACHE_AREA).iterdir())) == 1  # the example's one plugin set
    code, modules, out = _run("validate", str(EXAMPLE), env=env)
    assert code == 0, out
    assert not any(m == "networkx" or m.startswith("networkx.") for m in modules)
