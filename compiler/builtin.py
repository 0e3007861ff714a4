"""The built-in runtimes: Kubeflow Trainer v2.3.0's ClusterTrainingRuntimes, shipped inside the
package (the top-level `runtimes/` folder) and loaded as the default runtime set.

An edge module (it reads package files); the core receives the runtimes as data.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from compiler.loader import Document, parse_source, read_source

RUNTIMES_DIR = Path(__file__).resolve().parent / "runtimes"
# Each built-in runtime is a byte-for-byte copy of this upstream file (same lines), which is
# the URI reports give for a diagnostic inside it.
UPSTREAM = "https://github.com/kubeflow/trainer/blob/v2.3.0/manifests/base/runtimes/"
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


def builtin_uris() -> dict[str, str]:
    """File name of each built-in runtime (as in `<builtin>/NAME`) -> its upstream URI."""
    return {name: UPSTREAM + path for name, path in UPSTREAM_FILES.items()}


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
