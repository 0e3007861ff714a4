"""A benchmark corpus that looks like a real repository of TrainJobs.

Real repositories differ from a corpus of copies in what makes caching work: every TrainJob
has its own image tag, command, env values and resources, some carry runtimePatches (node
selectors, tolerations, labels), a few use the repository's own TrainingRuntimes, and some
documents are wrong. `corpus(n, seed)` gives the documents of `n` TrainJobs (and the
repository's runtimes) deterministically; `write_tree` writes them one file per TrainJob, as
repositories keep them, and `stream` as one multi-document YAML stream.

About 5% of the TrainJobs are invalid in one of the ways people get them wrong: a negative or
string numNodes, a quantity that does not parse, a misspelt field, a reserved env name, a
missing runtime or a request above its limit.
"""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import yaml

from compiler.common.jsondata import Obj

GROUP = "trainer.kubeflow.org"
API = f"{GROUP}/v1alpha1"
BUILTIN = {  # runtime name: (share of the jobs, images users put in the trainer)
    "torch-distributed": (40, "pytorch/pytorch"),
    "deepspeed-distributed": (10, "ghcr.io/kubeflow/trainer/deepspeed-runtime"),
    "jax-distributed": (12, "ghcr.io/example/jax-train"),
    "mlx-distributed": (3, "ghcr.io/kubeflow/trainer/mlx-runtime"),
    "xgboost-distributed": (8, "ghcr.io/example/xgboost-train"),
    "torchtune-llama3.2-1b": (5, ""),
    "torchtune-llama3.2-3b": (4, ""),
    "torchtune-qwen2.5-1.5b": (3, ""),
}
TEAMS = ("vision", "nlp", "speech", "recsys", "research")
INVALID_SHARE = 0.05
VERSION = 1  # of what `corpus` generates: bump on any change, to renew the cached trees
CACHE = Path.home() / ".cache" / "tjc-bench" / "corpus"
REPO_RUNTIMES = 10
REPO_RUNTIME_SHARE = 0.15


def _quantity_cpu(rng: random.Random) -> str:
    return rng.choice(["2", "4", "8", "16", "500m", "1500m", "32"])


def _resources(rng: random.Random, gpus: int) -> Obj:
    cpu, memory = _quantity_cpu(rng), rng.choice(["4Gi", "16Gi", "32Gi", "64Gi", "120Gi"])
    limits: Obj = {"cpu": cpu, "memory": memory}
    if gpus:
        limits["nvidia.com/gpu"] = gpus
    if rng.random() < 0.5:
        return {"limits": limits}
    requests: Obj = {"cpu": cpu, "memory": rng.choice(["2Gi", "8Gi", memory])}
    if gpus:
        requests["nvidia.com/gpu"] = gpus
    return {"requests": requests, "limits": limits}


def _env(rng: random.Random, index: int) -> list[Obj]:
    names = ["LEARNING_RATE", "EPOCHS", "BATCH_SIZE", "WANDB_PROJECT", "HF_HOME",
             "NCCL_DEBUG", "DATASET_REVISION"]
    env: list[Obj] = [{"name": name, "value": f"{rng.randint(1, 9999)}-{index}"}
                      for name in rng.sample(names, rng.randint(0, 5))]
    if rng.random() < 0.2:
        env.append({"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {
            "name": f"hf-token-{rng.choice(TEAMS)}", "key": "token"}}})
    return env


def _patch(rng: random.Random, team: str) -> Obj:
    pod: Obj = {"nodeSelector": {"node-pool": rng.choice(["a100", "h100", "l4", "cpu"])}}
    if rng.random() < 0.5:
        pod["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists",
                               "effect": "NoSchedule"}]
    if rng.random() < 0.3:
        pod["serviceAccountName"] = f"{team}-training"
    return {"manager": "example.com/platform", "trainingRuntimeSpec": {"template": {
        "metadata": {"labels": {"team": team, "cost-center": f"cc-{rng.randint(100, 999)}"}},
        "spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {"template": {
            "spec": pod}}}}]}}}}


def _image(rng: random.Random, repo: str, index: int) -> str:
    roll = rng.random()
    if roll < 0.03:
        return f"{repo}:latest"
    if roll < 0.05:
        return repo
    return f"{repo}:v{rng.randint(0, 3)}.{rng.randint(0, 40)}.{index}"


def trainjob(rng: random.Random, index: int, runtime: str, kind: str, image_repo: str) -> Obj:
    """One valid TrainJob of a team, with its own image tag, env, command and resources."""
    team = TEAMS[index % len(TEAMS)]
    gpus = rng.choice([0, 1, 2, 4, 8])
    trainer: Obj = {"numNodes": rng.choice([1, 1, 2, 2, 4, 8, 16]),
                    "resourcesPerNode": _resources(rng, gpus)}
    if image_repo:
        trainer["image"] = _image(rng, image_repo, index)
        trainer["command"] = ["python", f"train_{team}.py", f"--run={index}",
                              f"--lr={rng.choice(['1e-4', '3e-4', '1e-3'])}"]
    env = _env(rng, index)
    if env:
        trainer["env"] = env
    labels = {"team": team, "app.kubernetes.io/part-of": f"{team}-training"}
    if rng.random() < 0.3:
        labels["kueue.x-k8s.io/queue-name"] = f"{team}-queue"
    spec: Obj = {"runtimeRef": {"name": runtime, "kind": kind, "apiGroup": GROUP},
                 "trainer": trainer}
    if rng.random() < 0.2:
        spec["runtimePatches"] = [_patch(rng, team)]
    return {"apiVersion": API, "kind": "TrainJob",
            "metadata": {"name": f"{team}-run-{index:06d}", "namespace": f"ml-{team}",
                         "labels": labels},
            "spec": spec}


def _break(rng: random.Random, job: Obj) -> None:
    """Make a TrainJob invalid in one of the ways people do."""
    trainer = job["spec"]["trainer"]
    breakers: list[Callable[[], None]] = [
        lambda: trainer.__setitem__("numNodes", -1),
        lambda: trainer.__setitem__("numNodes", "four"),
        lambda: trainer["resourcesPerNode"].__setitem__("limits", {"memory": "8 Gi"}),
        lambda: trainer.__setitem__("numNode", 2),
        lambda: trainer.__setitem__("env", [{"name": "PET_NNODES", "value": "3"}]),
        lambda: job["spec"]["runtimeRef"].__setitem__("name", "torch-distributed-v2"),
        lambda: trainer.__setitem__("resourcesPerNode", {
            "requests": {"nvidia.com/gpu": 2}, "limits": {"nvidia.com/gpu": 1}}),
    ]
    rng.choice(breakers)()


def repo_runtimes(rng: random.Random) -> list[Obj]:
    """The repository's own TrainingRuntimes: torch jobs on the team's base images."""
    from compiler.io.builtin import builtin_runtimes  # the built-in torch runtime as the base

    base = next(d.data for d in builtin_runtimes()
                if d.data["metadata"]["name"] == "torch-distributed")
    out = []
    for i in range(REPO_RUNTIMES):
        team = TEAMS[i % len(TEAMS)]
        runtime = yaml.safe_load(yaml.safe_dump(base))
        runtime["kind"] = "TrainingRuntime"
        runtime["metadata"] = {"name": f"{team}-torch-{i}", "namespace": f"ml-{team}"}
        pod = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"][
            "template"]["spec"]
        pod["containers"][0]["image"] = f"registry.example.com/{team}/torch:2.{rng.randint(3, 9)}"
        pod["securityContext"] = {"runAsNonRoot": True}
        out.append(runtime)
    return out


def corpus(n: int, seed: int = 16) -> tuple[list[Obj], list[Obj]]:
    """(repository runtimes, `n` TrainJobs), the same for the same arguments."""
    rng = random.Random(seed)
    runtimes = repo_runtimes(rng)
    names, weights = list(BUILTIN), [share for share, _ in BUILTIN.values()]
    jobs = []
    for index in range(n):
        if rng.random() < REPO_RUNTIME_SHARE:
            own = runtimes[rng.randrange(len(runtimes))]
            team = own["metadata"]["namespace"].removeprefix("ml-")
            job = trainjob(rng, index, own["metadata"]["name"], "TrainingRuntime",
                           f"registry.example.com/{team}/trainer")
            job["metadata"]["namespace"] = own["metadata"]["namespace"]
        else:
            name = rng.choices(names, weights)[0]
            job = trainjob(rng, index, name, "ClusterTrainingRuntime", BUILTIN[name][1])
        if rng.random() < INVALID_SHARE:
            _break(rng, job)
        jobs.append(job)
    return runtimes, jobs


def _dump(doc: Obj) -> str:
    return str(yaml.dump(doc, Dumper=yaml.CSafeDumper, sort_keys=False))


def write_tree(root: Path, n: int, seed: int = 16) -> list[Path]:
    """The corpus as a repository: runtimes/<name>.yaml and jobs/<team>/<name>.yaml, one
    document per file; returns the files, runtimes first."""
    runtimes, jobs = corpus(n, seed)
    files = []
    folders: set[Path] = set()
    for doc in runtimes + jobs:
        folder = "runtimes" if doc["kind"] == "TrainingRuntime" else \
            f"jobs/{doc['metadata']['namespace']}"
        path = root / folder / f"{doc['metadata']['name']}.yaml"
        if path.parent not in folders:
            path.parent.mkdir(parents=True, exist_ok=True)
            folders.add(path.parent)
        path.write_text(_dump(doc), encoding="utf-8")
        files.append(path)
    return files


def stream(n: int, seed: int = 16) -> Iterator[str]:
    """The corpus as the documents of one YAML stream (runtimes first)."""
    runtimes, jobs = corpus(n, seed)
    for doc in runtimes + jobs:
        yield "---\n" + _dump(doc)


def cached_tree(n: int, seed: int = 16) -> Path:
    """`write_tree(root, n, seed)` kept under ~/.cache/tjc-bench/corpus/ by generator version,
    size and seed (written once: 100,000 files take a while); the root of the tree."""
    root = CACHE / f"v{VERSION}-{n}-{seed}"
    if (root / ".complete").exists():
        return root
    partial = root.with_name(root.name + f".partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    write_tree(partial, n, seed)
    (partial / ".complete").write_text("")
    shutil.rmtree(root, ignore_errors=True)
    partial.rename(root)
    return root
