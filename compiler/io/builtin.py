"""The built-in runtimes: Kubeflow Trainer v2.3.0's ClusterTrainingRuntimes, shipped inside the
package (the top-level `runtimes/` folder) and loaded as the default runtime set; those of an
older served release (`builtin_runtimes(version)`) are that release's own files
(`compiler.kube.releases`).

An edge module (it reads package files); the core receives the runtimes as data.
"""

from __future__ import annotations

import contextlib
import marshal
from functools import lru_cache
from pathlib import Path
from typing import Any

from compiler.common import diskcache
from compiler.io.loader import Document, Source, parse_source, read_source
from compiler.kube.releases import DEFAULT, release_data

CACHE_AREA = "runtimes"
Parsed = tuple[dict[str, Any], int, tuple[str | int, ...]]

RUNTIMES_DIR = Path(__file__).resolve().parent.parent / "runtimes"
# Each built-in runtime is a byte-for-byte copy of this upstream file (same lines), which is
# the URI reports give for a diagnostic inside it.
UPSTREAM = "https://github.com/kubeflow/trainer/blob/{}/manifests/base/runtimes/"
UPSTREAM_FILES = {
    "deepspeed-distributed.yaml": "deepspeed_distributed.yaml",
    "jax-distributed.yaml": "jax_distributed.yaml",
    "mlx-distributed.yaml": "mlx_distributed.yaml",
    "torch-distributed.yaml": "torch_distributed.yaml",
    "torchtune-llama3.2-1b.yaml": "torchtune/llama3_2/llama3_2_1B.yaml",
    "torchtune-llama3.2-3b.yaml": "torchtune/llama3_2/llama3_2_3B.yaml",
    "torchtune-qwen2.5-1.5b.yaml": "torchtune/qwen2_5/qwen2_5_1.5B.yaml",
    "xgboost-distributed.yaml": "xgboost_distributed.yaml",
}


def builtin_uris(version: str = DEFAULT) -> dict[str, str]:
    """File name of each built-in runtime (as in `<builtin>/NAME`) -> its upstream URI (of
    the Kubeflow Trainer release `version`)."""
    names = {path.name for path in _files(version)}
    return {name: UPSTREAM.format(version) + path for name, path in UPSTREAM_FILES.items()
            if name in names}


def _files(version: str) -> tuple[Path, ...]:
    if version == DEFAULT:
        return tuple(sorted(RUNTIMES_DIR.glob("*.yaml")))
    return release_data(version).runtime_files()


@lru_cache(maxsize=4)
def builtin_runtimes(version: str = DEFAULT) -> tuple[Document, ...]:
    """Every document in the packaged runtimes folder (of the Kubeflow Trainer release
    `version`: `compiler.kube.releases`), in file-name order.

    The files are read every time; what parsing them gives is kept in the start-up cache
    (`compiler.common.diskcache`) under the digest of their names and texts, so a changed file is
    parsed again."""
    sources = []
    for path in _files(version):
        source = read_source(str(path))
        source.name = f"<builtin>/{path.name}"
        sources.append(source)
    name = diskcache.key(CACHE_AREA, *(part for s in sources for part in (s.name, s.text)))
    parsed = _decode(diskcache.read(CACHE_AREA, name), len(sources))
    if parsed is None:
        parsed = [[(d.data, d.index, d.base) for d in _parse(source)] for source in sources]
        if all(source.limit is None for source in sources):
            with contextlib.suppress(ValueError):  # a value marshal cannot hold: not kept
                diskcache.write(CACHE_AREA, name, marshal.dumps(parsed))
    return tuple(Document(data, source, index, base)
                 for source, found in zip(sources, parsed, strict=True)
                 for data, index, base in found)


def _parse(source: Source) -> list[Document]:
    found, problems = parse_source(source)
    if problems:
        raise RuntimeError(f"built-in runtime {source.name} is broken: {problems[0].text()}")
    return found


def _decode(raw: bytes | None, files: int) -> list[list[Parsed]] | None:
    """The parsed documents of a cache entry, if it has the expected shape."""
    try:
        parsed = marshal.loads(raw) if raw is not None else None
    except (EOFError, ValueError, TypeError):
        return None
    if not (isinstance(parsed, list) and len(parsed) == files and all(
            isinstance(found, list) and all(
                isinstance(d, tuple) and len(d) == 3 and isinstance(d[0], dict)
                and isinstance(d[1], int) and isinstance(d[2], tuple) for d in found)
            for found in parsed)):
        return None
    return parsed
