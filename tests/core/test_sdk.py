"""The official Kubeflow Python SDK against the compiler, with no cluster.

The SDK (PyPI `kubeflow`, `kubeflow.trainer.TrainerClient` with its Kubernetes backend) builds the
TrainJobs; each one is compiled with `compile_trainjob` against the built-in runtime it names
(`compiler.io.builtin.builtin_runtimes()`). Checked for a CustomTrainer with a Python function (on
`torch-distributed` and `jax-distributed`), a CustomTrainerContainer (image, command and args
through the SDK's options) and a BuiltinTrainer with a TorchTuneConfig (on
`torchtune-llama3.2-1b`):

- the compile has no error diagnostic;
- the JobSet's trainer container (the replicatedJob labelled
  `trainer.kubeflow.org/trainjob-ancestor-step: trainer`, container `node`) runs exactly the SDK's
  `spec.trainer.command`; for torchtune the SDK's command is a prefix, and the rest is what the
  v2.3.0 torch plugin appends (rendezvous endpoint, recipe, config, the runtime's fixed paths).

A last case sends `resources_per_node` through the SDK, which writes whole numbers as JSON floats
(`cpu: 2.0`); the API server accepts those for the CRD's int-or-string quantities.

The SDK's real code path runs end to end: the kubernetes client's transport (urllib3's
`PoolManager.request`) is replaced by a fake API server, so `TrainerClient()` reads the Trainer
version ConfigMap, `train()` looks the runtime up as usual (namespaced TrainingRuntime: 404, then
the ClusterTrainingRuntime, served from the built-in runtimes) and POSTs the TrainJob as JSON. The
fake server stores it as the API server would (namespace from the URL, uid, creationTimestamp) and
that stored object is what gets compiled. Kube-config loading is refused, so nothing reads the
machine's ~/.kube/config and nothing leaves the process.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import kubernetes.config
import pytest
import urllib3
from kubeflow.trainer import (
    BuiltinTrainer,
    CustomTrainer,
    CustomTrainerContainer,
    DataType,
    HuggingFaceDatasetInitializer,
    HuggingFaceModelInitializer,
    Initializer,
    KubernetesBackendConfig,
    TorchTuneConfig,
    TrainerClient,
)
from kubeflow.trainer.options import Name, TrainerArgs, TrainerCommand
from kubernetes import client as k8s_client

from compiler import CompileResult, compile_trainjob
from compiler.common.jsondata import Obj
from compiler.io.builtin import builtin_runtimes

NAMESPACE = "team-a"
FAKE_HOST = "http://127.0.0.1:9"  # never dialled: every request is answered in-process
TRAINER_API = "/apis/trainer.kubeflow.org/v1alpha1"
VERSION_CONFIGMAP = "/api/v1/namespaces/kubeflow-system/configmaps/kubeflow-trainer-public"
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
CREATED_AT = "2025-01-01T00:00:00Z"


def train_mnist(lr: float = 0.01, epochs: int = 1) -> None:
    """The user's training function: the SDK ships its source in the trainer command."""
    import os

    rank = int(os.environ.get("RANK", "0"))
    for epoch in range(epochs):
        print(f"rank {rank} epoch {epoch} lr {lr}")


def builtin_runtime(name: str) -> Obj:
    """The built-in ClusterTrainingRuntime called `name`."""
    found = builtin_cluster_runtimes()
    assert name in found, f"no built-in ClusterTrainingRuntime {name!r}; packaged: {sorted(found)}"
    return found[name]


def builtin_cluster_runtimes() -> dict[str, Obj]:
    """Every built-in ClusterTrainingRuntime by name."""
    return {str(doc.data["metadata"]["name"]): doc.data for doc in builtin_runtimes()
            if doc.kind == "ClusterTrainingRuntime"}


@dataclass
class FakeApiServer:
    """Answers the kubernetes client's HTTP requests in-process, as an API server with the
    Trainer CRDs and the given ClusterTrainingRuntimes would; keeps every created TrainJob."""

    cluster_runtimes: Mapping[str, Obj]
    requests: list[tuple[str, str]] = field(default_factory=list)
    created: list[Obj] = field(default_factory=list)

    def handle(self, method: str, url: str, body: str | bytes | None) -> tuple[int, Obj]:
        path = urlsplit(url).path
        self.requests.append((method, path))
        if method == "GET" and path == VERSION_CONFIGMAP:
            return 200, {"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": "kubeflow-trainer-public",
                                      "namespace": "kubeflow-system"},
                         "data": {"kubeflow_trainer_version": "v2.3.0"}}
        runtime = re.fullmatch(rf"{TRAINER_API}/clustertrainingruntimes/([^/]+)", path)
        if method == "GET" and runtime and runtime[1] in self.cluster_runtimes:
            return 200, dict(self.cluster_runtimes[runtime[1]])
        create = re.fullmatch(rf"{TRAINER_API}/namespaces/([^/]+)/trainjobs", path)
        if method == "POST" and create and body is not None:
            return 201, self.store(json.loads(body), create[1])
        return 404, {"apiVersion": "v1", "kind": "Status", "status": "Failure",
                     "reason": "NotFound", "code": 404, "message": f"{path} not found"}

    def store(self, trainjob: Obj, namespace: str) -> Obj:
        """What the API server keeps: the body plus the fields the server sets."""
        meta = trainjob.setdefault("metadata", {})
        meta.update(namespace=namespace, generation=1, resourceVersion="1",
                    creationTimestamp=CREATED_AT,
                    uid=str(uuid.uuid5(uuid.NAMESPACE_URL, f"{namespace}/{meta.get('name')}")))
        self.created.append(trainjob)
        return trainjob


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> FakeApiServer:
    """The fake API server, wired in under the kubernetes client for this test only."""
    server = FakeApiServer(builtin_cluster_runtimes())

    def request(_pool: urllib3.PoolManager, method: str, url: str,
                body: str | bytes | None = None, **_options: Any) -> urllib3.HTTPResponse:
        status, payload = server.handle(method, url, body)
        return urllib3.HTTPResponse(body=json.dumps(payload).encode(), status=status,
                                    reason="OK" if status < 400 else "Not Found",
                                    headers={"Content-Type": "application/json"},
                                    preload_content=True)

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the test must not load a kube-config")

    monkeypatch.setattr(urllib3.PoolManager, "request", request)
    monkeypatch.setattr(kubernetes.config, "load_kube_config", refuse)
    monkeypatch.setattr(kubernetes.config, "load_incluster_config", refuse)
    return server


def trainer_client() -> TrainerClient:
    """A TrainerClient on the Kubernetes backend, pointed at the fake server."""
    configuration = k8s_client.Configuration(host=FAKE_HOST)
    configuration.proxy = None
    return TrainerClient(KubernetesBackendConfig(namespace=NAMESPACE,
                                                 client_configuration=configuration))


def submit(api: FakeApiServer, runtime: str,
           trainer: CustomTrainer | CustomTrainerContainer | BuiltinTrainer,
           initializer: Initializer | None = None, options: list[object] | None = None) -> Obj:
    """Run `TrainerClient().train(...)` and return the TrainJob the fake server stored."""
    name = trainer_client().train(runtime=runtime, initializer=initializer, trainer=trainer,
                                  options=options)
    assert api.requests == [
        ("GET", VERSION_CONFIGMAP),
        ("GET", f"{TRAINER_API}/namespaces/{NAMESPACE}/trainingruntimes/{runtime}"),
        ("GET", f"{TRAINER_API}/clustertrainingruntimes/{runtime}"),
        ("POST", f"{TRAINER_API}/namespaces/{NAMESPACE}/trainjobs"),
    ]
    assert len(api.created) == 1
    trainjob = api.created[0]
    assert trainjob["metadata"]["name"] == name
    assert trainjob["spec"]["runtimeRef"] == {"name": runtime, "kind": "ClusterTrainingRuntime"}
    return trainjob


def compiled(trainjob: Obj, runtime: str) -> CompileResult:
    """The compile of `trainjob` against the built-in runtime, asserted free of errors."""
    result = compile_trainjob(trainjob, builtin_runtime(runtime))
    assert result.ok, "\n".join(d.text() for d in result.diagnostics)
    return result


def trainer_node(result: CompileResult) -> tuple[Obj, Obj]:
    """The JobSet's trainer replicatedJob and its `node` container."""
    jobsets = [o for o in result.objects if o.get("kind") == "JobSet"]
    assert len(jobsets) == 1, [o.get("kind") for o in result.objects]
    rjobs = [rj for rj in jobsets[0]["spec"]["replicatedJobs"]
             if ((rj["template"].get("metadata") or {}).get("labels") or {}).get(ANCESTOR_LABEL)
             == "trainer"]
    assert len(rjobs) == 1, [rj["name"] for rj in jobsets[0]["spec"]["replicatedJobs"]]
    nodes = [c for c in rjobs[0]["template"]["spec"]["template"]["spec"]["containers"]
             if c["name"] == "node"]
    assert len(nodes) == 1
    return rjobs[0], nodes[0]


@pytest.mark.parametrize(("runtime", "launcher"), [
    ("torch-distributed", 'torchrun "test_sdk.py"'),
    ("jax-distributed", 'python "test_sdk.py"'),
])
def test_custom_trainer_function(api: FakeApiServer, runtime: str, launcher: str) -> None:
    trainjob = submit(api, runtime, trainer=CustomTrainer(
        func=train_mnist, func_args={"lr": 0.05, "epochs": 2}, packages_to_install=["numpy"],
        num_nodes=2, env={"LOG_LEVEL": "debug"}))
    command = trainjob["spec"]["trainer"]["command"]
    assert command[:2] == ["bash", "-c"]
    assert "def train_mnist(" in command[2]
    assert command[2].endswith(launcher)
    assert trainjob["spec"]["trainer"]["numNodes"] == 2

    rjob, node = trainer_node(compiled(trainjob, runtime))
    assert node["command"] == command
    assert "args" not in node
    assert node["image"] == builtin_runtime(runtime)["spec"]["template"]["spec"][
        "replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]["image"]
    assert {"name": "LOG_LEVEL", "value": "debug"} in node["env"]
    assert rjob["template"]["spec"]["parallelism"] == 2


@pytest.mark.parametrize("runtime", ["torch-distributed", "jax-distributed"])
def test_custom_trainer_container(api: FakeApiServer, runtime: str) -> None:
    trainjob = submit(
        api, runtime,
        trainer=CustomTrainerContainer(image="ghcr.io/example/trainer:1.0", num_nodes=3),
        options=[Name(name="sdk-container"),
                 TrainerCommand(command=["python", "-m", "trainer.main"]),
                 TrainerArgs(args=["--epochs", "3"])])
    assert trainjob["metadata"]["name"] == "sdk-container"
    assert trainjob["spec"]["trainer"] == {
        "image": "ghcr.io/example/trainer:1.0", "numNodes": 3,
        "command": ["python", "-m", "trainer.main"], "args": ["--epochs", "3"]}

    rjob, node = trainer_node(compiled(trainjob, runtime))
    assert node["command"] == trainjob["spec"]["trainer"]["command"]
    assert node["args"] == trainjob["spec"]["trainer"]["args"]
    assert node["image"] == "ghcr.io/example/trainer:1.0"
    assert rjob["template"]["spec"]["parallelism"] == 3


def test_builtin_trainer_torchtune(api: FakeApiServer) -> None:
    runtime = "torchtune-llama3.2-1b"
    trainjob = submit(
        api, runtime,
        initializer=Initializer(
            dataset=HuggingFaceDatasetInitializer(storage_uri="hf://tatsu-lab/alpaca/data"),
            model=HuggingFaceModelInitializer(storage_uri="hf://meta-llama/Llama-3.2-1B-Instruct")),
        trainer=BuiltinTrainer(config=TorchTuneConfig(
            dtype=DataType.BF16, batch_size=2, epochs=1, num_nodes=1)),
        options=[Name(name="sdk-tune")])
    command = trainjob["spec"]["trainer"]["command"]
    args = trainjob["spec"]["trainer"]["args"]
    assert command == ["tune", "run"]
    assert args == ["dtype=bf16", "batch_size=2", "epochs=1",
                    "dataset.data_dir=/workspace/dataset/data"]

    _, node = trainer_node(compiled(trainjob, runtime))
    assert node["command"][:len(command)] == command
    # v2.3.0's torch plugin: the runtime asks for 2 GPUs on one node, so torchtune gets a
    # rendezvous endpoint, the distributed full-finetune recipe and config, then the runtime's
    # immutable paths (output_dir, tokenizer.path, checkpointer.checkpoint_dir).
    assert node["command"][len(command):] == [
        "--rdzv_endpoint=sdk-tune-node-0-0.sdk-tune:29500",
        "full_finetune_distributed", "--config", "llama3_2/1B_full",
        "output_dir=/workspace/output",
        "tokenizer.path=/workspace/model/original/tokenizer.model",
        "checkpointer.checkpoint_dir=/workspace/model",
    ]
    assert node["args"] == args


def test_resources_per_node(api: FakeApiServer) -> None:
    """The SDK sends whole-number quantities as JSON floats (`cpu: 2.0`); the API server takes
    an integral number where the CRD says int-or-string, so the compiler must too."""
    trainjob = submit(api, "jax-distributed", trainer=CustomTrainer(
        func=train_mnist, resources_per_node={"cpu": 2, "memory": "4Gi", "gpu": 1}))
    resources = trainjob["spec"]["trainer"]["resourcesPerNode"]
    assert resources["limits"] == resources["requests"] == {
        "cpu": 2.0, "memory": "4Gi", "nvidia.com/gpu": 1.0}

    _, node = trainer_node(compiled(trainjob, "jax-distributed"))
    assert node["resources"] == {
        "limits": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "1"},
        "requests": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "1"}}
