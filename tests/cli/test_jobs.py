"""Streaming and `-j`: worker processes give the same bytes as one process, on the golden
inputs, the examples and a generated corpus, for render (YAML, JSON, --output-dir) and validate
(text, JSON, SARIF, GitHub); the streamed reports equal the whole-list renderers; positions
of a long stream stay right when only some of its tables are kept."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from bench import corpus
from compiler.cli import jobs
from compiler.cli.main import main
from compiler.io import emit
from compiler.io.builtin import builtin_runtimes
from compiler.io.loader import Document, Source, SourceFiles, iter_source
from compiler.pipeline.session import JobResult
from compiler.render.pipeline import render_stream
from compiler.validate.documents import validate_stream
from compiler.validate.locations import Context
from compiler.validate.report import RENDERERS
from tests.goldenfile import GOLDEN_DIR, parse

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Every golden case's inputs (a folder each), a corpus tree and stream, the examples."""
    root = tmp_path_factory.mktemp("inputs")
    for path in sorted(GOLDEN_DIR.glob("*.txtar")):
        for name, text in parse(path).inputs.items():
            target = root / "golden" / path.stem / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    corpus.write_tree(root / "tree", 120)
    (root / "stream.yaml").write_text("".join(corpus.stream(60, seed=3)), encoding="utf-8")
    return [str(root / "golden"), str(root / "tree"), str(root / "stream.yaml"),
            str(ROOT / "examples")]


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github"])
def test_validate_in_workers_prints_what_one_process_prints(
        fmt: str, inputs: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    one = _run(["validate", "--format", fmt, *inputs, "-j", "1"], capsys)
    assert one[0] == 1 and len(one[1]) > 10_000  # the corpus holds invalid TrainJobs
    assert _run(["validate", "--format", fmt, *inputs, "-j", "3"], capsys) == one


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_render_in_workers_prints_what_one_process_prints(
        fmt: str, inputs: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    one = _run(["render", "-o", fmt, *inputs, "-j", "1"], capsys)
    assert (one[0] == 1 and "kind: JobSet" in one[1]) or '"kind": "JobSet"' in one[1]
    assert _run(["render", "-o", fmt, *inputs, "-j", "2"], capsys) == one


def test_render_to_a_folder_in_workers_writes_what_one_process_writes(
        inputs: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = []
    for count in ("1", "2"):
        out = tmp_path / count
        code, stdout, err = _run(["render", *inputs, "--output-dir", str(out), "-j", count],
                                 capsys)
        results.append((code, stdout, err.replace(str(out), "OUT"), _tree(out)))
    assert results[0] == results[1] and len(results[0][3]) > 100


def test_streamed_json_list_is_the_whole_list(inputs: list[str],
                                              capsys: pytest.CaptureFixture[str]) -> None:
    objects = [o for item in render_stream(SourceFiles(inputs[1:3]), builtin_runtimes())
               if isinstance(item, JobResult) for o in item.objects]
    assert _run(["render", "-o", "json", *inputs[1:3]], capsys)[1] == emit.json_list(objects)
    empty = Path(inputs[0]) / "no-objects.yaml"
    empty.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    try:
        assert _run(["render", "-o", "json", str(empty)], capsys)[1] == emit.json_list([])
    finally:
        empty.unlink()


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github"])
def test_streamed_report_is_the_whole_report(fmt: str, inputs: list[str]) -> None:
    from io import StringIO

    from compiler.cli.report_out import Report

    found = list(validate_stream(SourceFiles(inputs[1:]), builtin_runtimes()))
    for diagnostics in (found, found[:1], []):
        context = Context(exit_code=1 if diagnostics else 0, command_line="tjc validate x",
                          cwd=str(ROOT), root=str(ROOT))
        out = StringIO()
        report = Report(fmt, out, context, strict=False)
        for d in diagnostics:
            report.add(d)
        report.finish(context)
        assert out.getvalue() == RENDERERS[fmt](diagnostics, context)


def test_positions_of_a_long_stream_with_few_tables_kept() -> None:
    text = "".join(f"---\nkind: K{i}\nmetadata:\n  name: n{i}\n" for i in range(200))
    docs = [d for d in iter_source(Source("s.yaml", text)) if isinstance(d, Document)]
    order = [150, 3, 199, 0, 3, 120, *range(0, 200, 7)]
    for i in order:
        where = docs[i].locate(("metadata", "name"))
        assert (where.line, where.col) == (4 * i + 4, 9), i


def test_worker_count() -> None:
    small = SourceFiles([str(ROOT / "examples")])
    assert jobs.workers(None, small) == 1  # small inputs stay in one process
    assert jobs.workers(4, small) == 4
    assert jobs.workers(1000, small) == len(small)
    assert jobs.workers(2, SourceFiles([str(ROOT / "examples" / "jax-mnist.yaml")])) == 1


@pytest.mark.slow
@pytest.mark.parametrize("fork", [True, False])
def test_forked_and_spawned_workers_print_what_one_process_prints(
        fork: bool, inputs: list[str], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jobs, "_can_fork", lambda: fork)
    for argv in (["validate", "--no-default-policies", "--format", "json"], ["render"]):
        one = _run([*argv, *inputs, "-j", "1"], capsys)
        assert one[0] == 1 and len(one[1]) > 10_000
        assert _run([*argv, *inputs, "-j", "2"], capsys) == one


def test_workers_are_forked_only_when_that_is_safe(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys
    import threading
    import types

    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    monkeypatch.setattr(jobs, "_os_threads", lambda: 1)
    cuelib = types.ModuleType("compiler.policy.cuelib")
    monkeypatch.setitem(sys.modules, "compiler.policy.cuelib", cuelib)
    cuelib._LIB = None  # type: ignore[attr-defined]
    assert jobs._can_fork()
    cuelib._LIB = object()  # type: ignore[attr-defined]  # the Go runtime is loaded
    assert not jobs._can_fork()
    cuelib._LIB = None  # type: ignore[attr-defined]
    monkeypatch.setattr(threading, "active_count", lambda: 2)  # another thread
    assert not jobs._can_fork()
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    monkeypatch.setattr(jobs, "_os_threads", lambda: 3)  # threads a native library started
    assert not jobs._can_fork()
    monkeypatch.setattr(jobs, "_os_threads", lambda: 1)
    monkeypatch.setattr(sys, "platform", "darwin")
    assert not jobs._can_fork()


def test_a_process_counts_its_native_threads() -> None:
    import threading

    before = jobs._os_threads()  # more than Python's when a native library started some
    assert before >= threading.active_count() >= 1
    done = threading.Event()
    helper = threading.Thread(target=done.wait)
    helper.start()
    try:
        assert jobs._os_threads() == before + 1
    finally:
        done.set()
        helper.join()


def test_the_size_is_counted_only_as_far_as_the_worker_count_needs(tmp_path: Path) -> None:
    for i in range(5):
        (tmp_path / f"{i}.yaml").write_bytes(b"#" * 100)
    files = SourceFiles([str(tmp_path)])
    assert (files.size(), files.size(enough=250), files.size(enough=10_000)) == (500, 300, 500)


def test_a_workers_input_or_setup_error_is_raised_in_the_parent() -> None:
    from compiler.cli.policy_opts import PolicySetupError
    from compiler.common.diagnostics import error
    from compiler.common.errors import InputError

    problem = error("TJC-INPUT-UNREADABLE", "cannot read x.yaml: gone")

    def unreadable(indices: list[int]) -> None:
        raise InputError(problem)

    def broken_setup(payload: object) -> jobs.Setup:
        raise PolicySetupError([problem])

    def broken_runtimes(shared: object) -> jobs.Task:
        raise InputError(problem)

    try:
        jobs._setup(lambda payload: lambda shared: unreadable, None)
        failure = jobs._run(frozenset(), [0])
        assert isinstance(failure, jobs.Failure)
        with pytest.raises(InputError) as raised:
            failure.raise_it()
        assert raised.value.diagnostic == problem
        jobs._setup(broken_setup, None)
        with pytest.raises(PolicySetupError) as setup:
            jobs._run(frozenset(), [0]).raise_it()
        assert setup.value.diagnostics == [problem]
        jobs._setup(lambda payload: broken_runtimes, None)
        with pytest.raises(InputError) as runtimes:
            jobs._run(frozenset({"r.yaml"}), [0]).raise_it()
        assert runtimes.value.diagnostic == problem
    finally:
        jobs._SETUP = jobs._TASK = None


def test_a_worker_sets_its_task_up_once_per_runtime_files() -> None:
    made: list[object] = []

    def setup(shared: object) -> jobs.Task:
        made.append(shared)
        return lambda indices: (shared, indices)

    try:
        jobs._setup(lambda payload: setup, None)
        first, second = frozenset({"a.yaml"}), frozenset({"b.yaml"})
        results = [jobs._run(s, [i]) for i, s in enumerate([first, first, second, second])]
        assert results == [(first, [0]), (first, [1]), (second, [2]), (second, [3])]
        assert made == [first, second]
    finally:
        jobs._SETUP = jobs._TASK = None
