"""Provenance by recording (`compiler.core.provenance`): every leaf of every golden output has the
origin its writer recorded, and an origin that says it copied an input value points at that
value in the input.

Leaves are scalars and empty maps or lists. An origin is a plugin or the JobSet builder (a value
the compiler makes), or an input field (`trainjob` or `runtime`): then the input holds a value
at the recorded path, and when the origin claims a verbatim copy (`exact`) that value is the
output's and, when the file itself (not a CRD default) holds it, the file has a position for
exactly that path, which `tjc explain` prints. Nothing falls back to a catch-all: an
unrecorded write makes `lookup` return None.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from compiler import compile_trainjob
from compiler.common.diagnostics import Diagnostic, Path, format_path
from compiler.common.jsondata import Obj, get_at, get_path
from compiler.core.provenance import Origin, Recorder, copied, made, root_of
from compiler.core.release import release_of
from compiler.explain.explainer import Explainer, find_runtime
from compiler.io.builtin import builtin_runtimes
from compiler.io.loader import Document, Source, parse_source
from tests import goldenfile
from tests.strategies import framework_pair, job_and_runtime

BUILTIN = list(builtin_runtimes())


def leaves(value: Any, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    """Every leaf of a JSON-like value: scalars and empty maps or lists."""
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from leaves(item, (*path, key))
    elif isinstance(value, list) and value:
        for index, item in enumerate(value):
            yield from leaves(item, (*path, index))
    else:
        yield path, value


def explainers(path: Any) -> Iterator[Explainer]:
    case = goldenfile.parse(path)
    sources = [Source(name, text) for name, text in case.inputs.items()]
    docs = [d for source in sources for d in parse_source(source)[0]]
    builtin = [] if "--no-builtin-runtimes" in case.flags else \
        list(builtin_runtimes(case.release))
    for doc in docs:
        if doc.data.get("kind") == "TrainJob":
            runtime = find_runtime(doc, [*docs, *builtin])
            if isinstance(runtime, Document):
                yield Explainer(doc, runtime, release=release_of(case.release))


def problems(explainer: Explainer) -> Iterator[str]:
    """What is wrong with the recorded origins of one compile's output."""
    inputs = {"trainjob": explainer.trainjob, "runtime": explainer.prepared.doc}
    files = {"trainjob": explainer.tj, "runtime": explainer.runtime}
    for obj in explainer.result.objects:
        root = root_of(obj)
        for path, value in leaves(obj):
            where = f"{obj['kind']} {format_path(path)}"
            origin = explainer.origins.lookup((*root, *path))
            if origin is None:
                yield f"{where}: no origin recorded"
                continue
            if not origin.input:
                continue
            held = get_path(inputs[origin.input], *origin.path)
            if held is None and not origin.default_note:
                yield f"{where}: {origin.input} holds nothing at {format_path(origin.path)}"
            elif origin.exact and held != value:
                yield f"{where}: {origin.input} {format_path(origin.path)} holds {held!r}, " \
                      f"not {value!r}"
            elif origin.exact and not _positioned(files[origin.input], origin.path):
                yield f"{where}: no file position for {format_path(origin.path)}"


def _positioned(doc: Document, path: Path) -> bool:
    """The file has a position for `path` itself, or does not hold it (a CRD default)."""
    if get_path(doc.data, *path) is None:
        return True
    return (*doc.base, *path) in doc.source.positions(doc.index)


@pytest.mark.parametrize("path", goldenfile.cases(), ids=lambda p: p.stem)
def test_every_golden_leaf_has_an_origin(path: Any) -> None:
    found = [p for explainer in explainers(path) if explainer.result.ok
             for p in problems(explainer)]
    assert not found, "\n".join(found[:20])


def test_the_goldens_cover_every_kind_of_origin() -> None:
    """The property above is not vacuous: the goldens' leaves come from plugins, the builder,
    TrainJob fields, runtime patches and the runtime template, and some of them are exact
    copies whose input line `tjc explain` cites."""
    seen: set[str] = set()
    for path in goldenfile.cases():
        for explainer in explainers(path):
            for obj in explainer.result.objects:
                for leaf, _ in leaves(obj):
                    origin = explainer.origins.lookup((*root_of(obj), *leaf))
                    if origin is not None:
                        seen.add(_kind(origin))
    assert seen >= {"plugin", "builder", "trainjob-field", "runtime-patch", "runtime-template",
                    "exact"}


def _kind(origin: Origin) -> str:
    if origin.who.startswith("plugin "):
        return "plugin"
    if origin.who.startswith("JobSet builder") or origin.who.startswith("the job template"):
        return "builder"
    if "runtimePatches" in origin.who:
        return "runtime-patch"
    if origin.input == "runtime":
        return "runtime-template"
    return "exact" if origin.exact else "trainjob-field"


def test_a_later_write_replaces_an_earlier_one_however_deep() -> None:
    recorder = Recorder()
    recorder.record(("o", "n", "spec"), made("first"))
    recorder.record(("o", "n", "spec", "a", "b"), made("deep"))
    recorder.record(("o", "n", "spec", "a"), made("later and shallower"))
    assert recorder.lookup(("o", "n", "spec", "a", "b")) == made("later and shallower")
    assert recorder.lookup(("o", "n", "spec", "c")) == made("first")
    assert recorder.lookup(("o", "n", "spec")) == made("later and shallower"), \
        "a field reads as its newest writer, even one below it"
    assert recorder.lookup(("o", "n", "metadata")) is None, "no catch-all origin"


def test_a_copied_subtree_maps_list_items_by_key() -> None:
    recorder = Recorder()
    recorder.add_input("runtime", {"env": [{"name": "A", "value": "1"},
                                           {"name": "B", "value": "2"}]})
    recorder.add_output(("v1 Thing", "x"), {"env": [{"name": "B", "value": "2"}]})
    recorder.record(("v1 Thing", "x"), copied("runtime", "runtime", ()))
    found = recorder.lookup(("v1 Thing", "x", "env", 0, "value"))
    assert found == copied("runtime", "runtime", ("env", 1, "value"))


def test_the_golden_inputs_compile() -> None:
    """Guard for the property: it ran on the goldens' compiled outputs, not on none."""
    compiled = [e for p in goldenfile.cases() for e in explainers(p) if e.result.ok]
    assert len(compiled) > 100
    assert all(isinstance(d, Diagnostic) for e in compiled for d in e.result.diagnostics)


@given(st.one_of(job_and_runtime(), framework_pair()))
def test_every_leaf_of_a_generated_output_has_an_origin(pair: tuple[Obj, Obj]) -> None:
    """The same property over generated TrainJobs and runtimes (plain and every framework)."""
    tj, rt = pair
    result = compile_trainjob(tj, rt)
    assert result.ok and result.origins is not None
    for obj in result.objects:
        for path, value in leaves(obj):
            origin = result.origins.lookup((*root_of(obj), *path))
            assert origin is not None, path
            if origin.input and origin.exact:
                held = get_path(result.origins.input(origin.input), *origin.path)
                assert held == value, (path, origin)


def _torch_job(image: str, env: list[Obj]) -> Obj:
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": "job", "namespace": "team"},
            "spec": {"runtimeRef": {"name": "torch-distributed"},
                     "trainer": {"image": image, "numNodes": 2, "env": env}}}


def _torch_node(path: Path) -> Path:
    return ("jobset.x-k8s.io/v1alpha2 JobSet", "job", "spec", "replicatedJobs", 0, "template",
            "spec", "template", "spec", "containers", 0, *path)


def test_every_compile_records_and_the_record_survives_a_copy() -> None:
    """No option turns recording on: the plain compile's record is there, and a pickled or
    copied result keeps it (the writes worked out on lookup are worked out first)."""
    runtime = next(d.data for d in BUILTIN if d.data["metadata"]["name"] == "torch-distributed")
    result = compile_trainjob(_torch_job("repo/train:1", [{"name": "LR", "value": "1"}]), runtime)
    assert result.ok and result.origins is not None
    for copied_result in (pickle.loads(pickle.dumps(result)), copy.deepcopy(result)):
        assert copied_result == result and copied_result.origins is not None
        for path in (("image",), ("env", 0), ("command",)):
            assert copied_result.origins.lookup(_torch_node(path)) == \
                result.origins.lookup(_torch_node(path)) is not None


def test_a_write_that_leaves_the_template_value_leaves_it_the_template_s() -> None:
    """The TrainJob's image equal to the runtime's: the builder's write is the last one, but
    the runtime's template made the value (the policy diagnostics locate it there)."""
    runtime = next(d.data for d in BUILTIN if d.data["metadata"]["name"] == "torch-distributed")
    node = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"][
        "template"]["spec"]["containers"][0]
    same = compile_trainjob(_torch_job(node["image"], []), runtime).origins
    other = compile_trainjob(_torch_job("repo/train:2", []), runtime).origins
    assert same is not None and other is not None
    image = _torch_node(("image",))
    written = Origin("trainJob spec.trainer.image", "trainjob", ("spec", "trainer", "image"),
                     exact=True)
    assert same.lookup(image) == other.lookup(image) == written
    assert same.template_made(image) and not other.template_made(image)


COPY = ("runtime spec.template.spec",
        "runtime spec.template.spec (normalized as the API server stores it)")


@pytest.mark.parametrize("path", goldenfile.cases(), ids=lambda p: p.stem)
def test_a_value_not_the_template_s_has_a_writer_since_the_copy(path: Any) -> None:
    """Below the JobSet's spec, the runtime's template made a value exactly when the
    JobSet holds there what the template holds (how the policy diagnostics decide to
    locate a finding in the runtime); where it does not, the record names a write since
    the template's copy, or a template value moved there from elsewhere (the builder's
    write-back of unnamed ports): no change goes unrecorded."""
    for explainer in explainers(path):
        jobset = next((o for o in explainer.result.objects if o.get("kind") == "JobSet"), None)
        if jobset is None:
            continue
        root = root_of(jobset)
        for at in _paths(jobset["spec"], ("spec",)):
            template_made = explainer.origins.template_made((*root, *at))
            held = get_at(jobset, at) == get_at(explainer.prepared.spec, at[1:])
            assert template_made == held, at
            origin = explainer.origins.lookup((*root, *at))
            assert template_made or (origin is not None and (
                origin.who not in COPY or origin.path != ("spec", "template", *at))), at


def _paths(value: Any, path: Path) -> Iterator[Path]:
    """`path` and every path below it into `value`."""
    yield path
    items = value.items() if isinstance(value, dict) else enumerate(value) \
        if isinstance(value, list) else ()
    for key, item in items:
        yield from _paths(item, (*path, key))


class _Template:
    """A runtime's template as the output starts from it: here, as written."""

    def template(self, raw: Any) -> Any:
        return raw


def test_a_value_set_back_to_the_template_s_is_the_template_s() -> None:
    """Two writes on one path, the second setting back what the runtime's template held:
    the template made the value (the reference locating compared values, and said so),
    and the last writer is still the one `tjc explain` shows. (No TrainJob field does this
    through the compiler today: runtime patches cannot set images, resources or replicas,
    and admission refuses their env on the containers the TrainJob writes env into.)"""
    root = ("jobset.x-k8s.io/v1alpha2 JobSet", "job")
    spec_at = (*root, "spec")
    template = {"replicatedJobs": [{"name": "node", "replicas": 1}]}
    copy_of = copied("runtime spec.template.spec", "runtime", ("spec", "template", "spec"))
    recorder = Recorder({"runtime": {"spec": {"template": {"spec": template}}}},
                        (spec_at, _Template(), template), [(spec_at, copy_of)])
    output = {"spec": copy.deepcopy(template)}
    recorder.add_output(root, output)
    replicas = (*spec_at, "replicatedJobs", 0, "replicas")
    output["spec"]["replicatedJobs"][0]["replicas"] = 3
    recorder.record(replicas, made("first"))
    assert not recorder.template_made(replicas)
    assert not recorder.template_made((*spec_at, "replicatedJobs"))
    output["spec"]["replicatedJobs"][0]["replicas"] = 1
    recorder.record(replicas, made("set back"))
    assert recorder.template_made(replicas)
    assert recorder.template_made((*spec_at, "replicatedJobs"))
    assert recorder.lookup(replicas) == made("set back")
    assert recorder.lookup((*spec_at, "replicatedJobs", 0, "name")) == copied(
        "runtime spec.template.spec", "runtime",
        ("spec", "template", "spec", "replicatedJobs", 0, "name"))
