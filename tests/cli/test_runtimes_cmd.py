"""CLI acceptance tests for `tjc runtimes`: the list table and its JSON/YAML forms, show, unknown
names, user runtimes overriding built-ins, the deprecated label, usage errors and the help."""

from __future__ import annotations

import argparse
import json
import re
import shlex
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from compiler.cli import main as cli_main
from compiler.cli import runtimes_cmd, validate_cmd
from compiler.io.builtin import builtin_runtimes

Run = Callable[[list[str]], tuple[int, str, str]]

BUILTINS = {  # name: (FRAMEWORK, ML POLICY)
    "deepspeed-distributed": ("deepspeed", "mpi"),
    "jax-distributed": ("jax", "jax"),
    "mlx-distributed": ("mlx", "mpi"),
    "torch-distributed": ("torch", "torch"),
    "torchtune-llama3.2-1b": ("torchtune", "torch"),
    "torchtune-llama3.2-3b": ("torchtune", "torch"),
    "torchtune-qwen2.5-1.5b": ("torchtune", "torch"),
    "xgboost-distributed": ("xgboost", "xgboost"),
}
FIELDS = {"name", "kind", "namespace", "framework", "mlPolicy", "numNodes", "images",
          "deprecated", "source"}
RUNTIME = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: {kind}
metadata:
  name: {name}
{meta}spec:
{spec}  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            spec:
              template:
                spec:
                  initContainers:
                    - name: fetch
                      image: busybox
                  containers:
                    - name: node
                      image: {image}
                    - name: sidecar
                      image: busybox
"""


def runtime_text(name: str, *, kind: str = "ClusterTrainingRuntime", meta: str = "",
                 spec: str = "  mlPolicy:\n    torch: {}\n", image: str = "me/trainer:1") -> str:
    return RUNTIME.format(kind=kind, name=name, meta=meta, spec=spec, image=image)


def _registered() -> bool:
    parser = cli_main.build_parser()
    return any(isinstance(action, argparse._SubParsersAction) and "runtimes" in action.choices
               for action in parser._actions)


@pytest.fixture
def tjc(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Run:
    """`tjc` with the runtimes verb (registered here until compiler.cli.main does it)."""
    if not _registered():
        def register(verbs: object) -> None:
            validate_cmd.register(verbs)
            runtimes_cmd.register(verbs)
        monkeypatch.setattr(cli_main, "validate_cmd", SimpleNamespace(register=register))

    def run(args: list[str]) -> tuple[int, str, str]:
        code = cli_main.main(args)
        out, err = capsys.readouterr()
        return code, out, err
    return run


def rows_of(table: str) -> tuple[list[str], list[dict[str, str]]]:
    """Header titles and one dict per row, checking that every column is aligned."""
    header, *lines = table.rstrip("\n").split("\n")
    titles = re.split(r"\s{2,}", header.strip())
    starts = [header.index(title) for title in titles]
    rows = []
    for line in lines:
        cells = re.split(r"\s{2,}", line.strip())
        assert len(cells) == len(titles), line
        assert [line.index(cell, start) for cell, start in zip(cells, starts, strict=True)] == \
            starts, f"misaligned: {line!r}"
        rows.append(dict(zip(titles, cells, strict=True)))
    return titles, rows


def test_list_is_the_default_and_shows_every_builtin(tjc: Run) -> None:
    code, out, err = tjc(["runtimes"])
    assert (code, err) == (0, "")
    assert tjc(["runtimes", "list"])[1] == out
    titles, rows = rows_of(out)
    assert titles == ["NAME", "KIND", "FRAMEWORK", "ML POLICY", "NODES", "DEPRECATED", "IMAGES"]
    assert [row["NAME"] for row in rows] == sorted(BUILTINS)
    for row in rows:
        assert (row["FRAMEWORK"], row["ML POLICY"]) == BUILTINS[row["NAME"]]
        assert (row["KIND"], row["NODES"], row["DEPRECATED"]) == \
            ("ClusterTrainingRuntime", "1", "-")
    images = {row["NAME"]: row["IMAGES"].split(",") for row in rows}
    assert images["deepspeed-distributed"] == ["ghcr.io/kubeflow/trainer/deepspeed-runtime"]
    assert images["torchtune-llama3.2-1b"] == [
        "ghcr.io/kubeflow/trainer/dataset-initializer",
        "ghcr.io/kubeflow/trainer/model-initializer", "ghcr.io/kubeflow/trainer/torchtune-trainer"]


def test_json_and_yaml_lists(tjc: Run) -> None:
    code, out, _ = tjc(["runtimes", "-o", "json"])
    assert code == 0
    as_json = json.loads(out)
    code, out, _ = tjc(["runtimes", "list", "-o", "yaml"])
    assert code == 0 and yaml.safe_load(out) == as_json
    assert [item["name"] for item in as_json] == sorted(BUILTINS)
    for item in as_json:
        assert set(item) == FIELDS
        assert (item["framework"], item["mlPolicy"]) == BUILTINS[item["name"]]
        assert item["kind"] == "ClusterTrainingRuntime" and item["namespace"] is None
        assert item["numNodes"] == 1 and item["deprecated"] is False
        assert item["source"] == f"<builtin>/{item['name']}.yaml"
        assert item["images"] and all(isinstance(image, str) for image in item["images"])


def _builtin(name: str) -> dict[str, object]:
    return next(doc.data for doc in builtin_runtimes() if doc.data["metadata"]["name"] == name)


def test_show_yaml_and_json(tjc: Run) -> None:
    code, out, err = tjc(["runtimes", "show", "torch-distributed"])
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == \
        "# ClusterTrainingRuntime torch-distributed from <builtin>/torch-distributed.yaml"
    assert list(yaml.safe_load_all(out)) == [_builtin("torch-distributed")]
    code, out, _ = tjc(["runtimes", "show", "mlx-distributed", "-o", "json"])
    assert code == 0 and json.loads(out) == _builtin("mlx-distributed")


def test_unknown_name_exits_1_listing_the_names(tjc: Run) -> None:
    code, out, err = tjc(["runtimes", "show", "pytorch-distributed"])
    assert (code, out) == (1, "")
    assert "no runtime named 'pytorch-distributed'" in err
    assert all(name in err for name in BUILTINS)


def test_user_runtime_overrides_builtin(tmp_path: Path, tjc: Run) -> None:
    (tmp_path / "torch.yaml").write_text(runtime_text("torch-distributed", image="me/torch:2"))
    code, out, err = tjc(["runtimes", "--runtimes", str(tmp_path)])
    assert code == 0
    assert "notice:" in err and "ClusterTrainingRuntime torch-distributed overrides the " \
        "built-in runtime" in err and str(tmp_path / "torch.yaml") in err
    rows = {row["NAME"]: row for row in rows_of(out)[1]}
    assert len(rows) == len(BUILTINS)
    assert rows["torch-distributed"]["IMAGES"] == "busybox,me/torch:2"
    assert rows["torch-distributed"]["FRAMEWORK"] == "-"
    code, out, err = tjc(["runtimes", "-q", "--runtimes", str(tmp_path), "-o", "json"])
    item = next(i for i in json.loads(out) if i["name"] == "torch-distributed")
    assert (code, err, item["source"]) == (0, "", str(tmp_path / "torch.yaml"))
    code, out, _ = tjc(["runtimes", "show", "torch-distributed", "--runtimes", str(tmp_path)])
    assert out.startswith(f"# ClusterTrainingRuntime torch-distributed from {tmp_path}")


@pytest.mark.parametrize(("support", "shown"), [
    ("deprecated", "yes"), ("Deprecated", "-"), ("deprecated ", "-"), ("stable", "-")])
def test_deprecated_label(tmp_path: Path, tjc: Run, support: str, shown: str) -> None:
    meta = f"  labels:\n    trainer.kubeflow.org/support: {json.dumps(support)}\n" \
        "    trainer.kubeflow.org/framework: torch\n"
    (tmp_path / "old.yaml").write_text(runtime_text("old-torch", meta=meta))
    code, out, _ = tjc(["runtimes", "--runtimes", str(tmp_path / "old.yaml")])
    rows = {row["NAME"]: row for row in rows_of(out)[1]}
    assert code == 0 and rows["old-torch"]["DEPRECATED"] == shown
    assert rows["torch-distributed"]["DEPRECATED"] == "-"


def test_policy_nodes_and_namespaces(tmp_path: Path, tjc: Run) -> None:
    docs = [
        runtime_text("no-policy", spec=""),
        runtime_text("plain", spec="  mlPolicy:\n    numNodes: 3\n"),
        runtime_text("mpi", kind="TrainingRuntime", meta="  namespace: team-a\n",
                     spec="  mlPolicy:\n    numNodes: 4\n    mpi: {}\n"),
        runtime_text("torch-distributed", kind="TrainingRuntime"),  # namespace "default"
    ]
    (tmp_path / "all.yaml").write_text("---\n".join(docs))
    code, out, err = tjc(["runtimes", "--no-builtin-runtimes", "--runtimes",
                          str(tmp_path / "all.yaml")])
    assert (code, err) == (0, "")
    titles, rows = rows_of(out)
    assert titles[:3] == ["NAME", "KIND", "NAMESPACE"]
    assert [(r["NAME"], r["KIND"], r["NAMESPACE"], r["ML POLICY"], r["NODES"]) for r in rows] == [
        ("no-policy", "ClusterTrainingRuntime", "-", "-", "-"),
        ("plain", "ClusterTrainingRuntime", "-", "plain", "3"),
        ("mpi", "TrainingRuntime", "team-a", "mpi", "4"),
        ("torch-distributed", "TrainingRuntime", "default", "torch", "-"),
    ]
    code, out, _ = tjc(["runtimes", "--no-builtin-runtimes", "--runtimes",
                        str(tmp_path / "all.yaml"), "--namespace", "team-a", "-o", "json"])
    assert [item["name"] for item in json.loads(out)] == ["mpi"]


def test_show_every_runtime_of_a_name_or_one_namespace(tmp_path: Path, tjc: Run) -> None:
    docs = [runtime_text("torch-distributed", kind="TrainingRuntime", meta=f"  namespace: {ns}\n",
                         image=f"{ns}/torch") for ns in ("b", "a")]
    (tmp_path / "rt.yaml").write_text("---\n".join(docs))
    base = ["runtimes", "show", "torch-distributed", "--runtimes", str(tmp_path)]
    code, out, _ = tjc(base)
    headers = [line for line in out.splitlines() if line.startswith("# ")]
    assert code == 0 and headers == [
        "# ClusterTrainingRuntime torch-distributed from <builtin>/torch-distributed.yaml",
        f"# TrainingRuntime a/torch-distributed from {tmp_path / 'rt.yaml'}",
        f"# TrainingRuntime b/torch-distributed from {tmp_path / 'rt.yaml'}"]
    assert len(list(yaml.safe_load_all(out))) == 3
    code, out, _ = tjc([*base, "-o", "json"])
    listed = json.loads(out)
    assert code == 0 and listed["kind"] == "List" and len(listed["items"]) == 3
    code, out, _ = tjc([*base, "--namespace", "a", "-o", "json"])
    assert code == 0 and json.loads(out)["metadata"] == {"name": "torch-distributed",
                                                         "namespace": "a"}
    code, out, err = tjc([*base, "--namespace", "c"])
    assert (code, out) == (1, "") and "no TrainingRuntime 'torch-distributed' in namespace c" \
        in err and "available: none" in err


def test_broken_user_runtimes_exit_1_and_unreadable_exit_2(tmp_path: Path, tjc: Run) -> None:
    (tmp_path / "bad.yaml").write_text("kind: [\n")
    code, out, err = tjc(["runtimes", "--runtimes", str(tmp_path / "bad.yaml")])
    assert code == 1 and "torch-distributed" in out
    assert f"{tmp_path / 'bad.yaml'}:" in err and "error: cannot parse YAML" in err
    code, _, err = tjc(["runtimes", "--runtimes", str(tmp_path / "missing.yaml")])
    assert code == 2 and "cannot read" in err


@pytest.mark.parametrize("args", [["show"], ["list", "torch-distributed"], ["frobnicate"],
                                  ["-o", "table"]])
def test_usage_errors_exit_2(tjc: Run, args: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        tjc(["runtimes", *args])
    assert exc.value.code == 2


def test_no_runtimes_at_all(tjc: Run) -> None:
    code, out, err = tjc(["runtimes", "--no-builtin-runtimes"])
    assert (code, out) == (0, "") and "no runtimes" in err
    assert tjc(["runtimes", "--no-builtin-runtimes", "-o", "json"])[1] == "[]\n"
    assert tjc(["runtimes", "--no-builtin-runtimes", "-o", "yaml"])[1] == "[]\n"


def test_help_ends_with_runnable_examples(tjc: Run, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        tjc(["runtimes", "--help"])
    out = capsys.readouterr().out
    assert exc.value.code == 0
    examples = out.split("examples:\n", 1)[1].rstrip().splitlines()
    assert examples and out.rstrip().splitlines()[-1] == examples[-1]
    parser = cli_main.build_parser()
    for line in examples:
        command = re.split(r"\s{2,}", line.strip())[0]
        argv = shlex.split(command)
        assert argv[:2] == ["tjc", "runtimes"]
        assert parser.parse_args(argv[1:]).func is runtimes_cmd.run
