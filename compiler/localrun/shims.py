"""Small programs that stand in for the image on this machine.

`write` creates `<run dir>/bin`, put first on every pod's PATH: `python` and `python3` run the
interpreter given with `--python`, and each framework's launcher adds its own (the programs of
the `Launcher`s its plugin's `LocalLaunch` hook returns: a `torchrun`, an ssh stand-in). Written
through `compiler.localrun.safefs`, like every file of the run folder. Called by the plan;
knows no framework.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from compiler.common.launch import python_script
from compiler.localrun import safefs


def write(run_dir: Path, python: str, programs: Mapping[str, str]) -> Path:
    """Create the shims: the frameworks' `programs` (name -> script text), then `python` and
    `python3`, which no framework replaces; returns their folder."""
    scripts = {**programs, "python": python_script(python), "python3": python_script(python)}
    with safefs.open_dir(run_dir, ["bin"]) as folder:
        for name, text in scripts.items():
            safefs.write_file(folder, [name], text.encode(), 0o755)
    return run_dir / "bin"
