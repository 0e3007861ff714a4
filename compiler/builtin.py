"""The built-in runtimes: Kubeflow Trainer v2.3.0's ClusterTrainingRuntimes, shipped inside the
package (the top-level `runtimes/` folder) and loaded as the default runtime set.

An edge module (it reads package files); the core receives the runtimes as data.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from compiler.loader import Document, parse_source, read_source

RUNTIMES_DIR = Path(__file__).resolve().parent / "runtimes"


@lru_cache(maxsize=1)
def builtin_runtimes() -> tuple[Document, ...]:
    """Every document in the packaged runtimes folder, in file-name order."""
    docs: list[Document] = []
    for path in sorted(RUNTIMES_DIR.glob("*.yaml")):
        source = read_source(str(path))
        source.name = f"<builtin>/{path.name}"
        found, problems = parse_source(source)
        if problems:
            raise RuntimeError(f"built-in runtime {path.name} is broken: {problems[0].text()}")
        docs.extend(found)
    return tuple(docs)
