"""The distribution's dependencies and extras are exactly what the package imports, and a
command whose extra is missing says how to install it (one line, exit 2, no traceback)."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "compiler"
# where an extra's modules may be imported; everything else may import only the base
EXTRA_OWNERS = {"controller": ("compiler/controller/",)}


def _imported(path: Path) -> set[str]:
    """Top-level modules a file imports (statements and `importlib.import_module("...")`)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)):
            found.add(node.args[0].value)
    tops = {name.split(".")[0] for name in found}
    return {t for t in tops if t not in sys.stdlib_module_names
            and t not in ("compiler", "__future__")}


def _distribution(module: str) -> str:
    names = importlib.metadata.packages_distributions().get(module, [module])
    return _normal(names[0])


def _normal(requirement: str) -> str:
    name = re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared() -> dict[str, set[str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {"": {_normal(r) for r in project["dependencies"]}}
    for extra, requirements in project["optional-dependencies"].items():
        declared[extra] = {_normal(r) for r in requirements}
    return declared


def _used() -> dict[str, set[str]]:
    used: dict[str, set[str]] = {"": set(), **{extra: set() for extra in EXTRA_OWNERS}}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        owner = next((extra for extra, prefixes in EXTRA_OWNERS.items()
                      if rel.startswith(prefixes)), "")
        used[owner] |= {_distribution(m) for m in _imported(path)}
    return used


def test_dependencies_and_extras_are_exactly_what_is_imported() -> None:
    declared, used = _declared(), _used()
    assert declared[""] == used[""]
    for extra in EXTRA_OWNERS:
        assert declared[extra] == used[extra] - declared[""], extra


def test_controller_without_its_extra_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """`kubernetes` and `urllib3` made unimportable, as in an install without the extra."""
    blocker = tmp_path / "sitecustomize.py"
    blocker.write_text(
        "import sys\n"
        "for name in ('kubernetes', 'urllib3'):\n"
        "    sys.modules[name] = None  # an import of it raises ImportError\n")
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from compiler.cli.main import main; "
         "sys.exit(main(['controller', '--kubeconfig', 'absent.yaml']))"],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
        env={"PYTHONPATH": f"{tmp_path}:{ROOT}", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr == ("tjc controller: error: tjc controller needs the controller extra "
                           "(kubernetes is not installed): "
                           "pip install 'trainjob-compiler[controller]'\n")
