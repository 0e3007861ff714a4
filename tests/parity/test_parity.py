"""Differential tests against upstream's own Go code (the parity oracle, `tests/parity/oracle.py`).

Generated runtimes and TrainJobs go through both tjc and Kubeflow Trainer v2.3.0 (API server
create path, webhooks, NewObjects); accept/reject, whether kube-apiserver would refuse the Jobs
and Pods of the JobSet built, and the objects must agree. Generated Job templates go through
tjc's pod rules and kube-apiserver's own Job and Pod validation (k8s.io/kubernetes): the same
field paths must be refused. Quantities and strategic merge patches are compared with
k8s.io/apimachinery. Every difference found is collected and reported by class at the end, not
only the first.

Examples: TJC_PARITY_EXAMPLES (default 500; derandomized in CI); `make parity N=...` runs a
longer, random campaign.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.io.builtin import builtin_runtimes
from compiler.kube import quantity
from tests import goldenfile
from tests import parity_strategies as ps
from tests.io import test_yaml_kubectl as yk
from tests.parity import pods as pp
from tests.parity import yaml_strategies as ys
from tests.parity.compare import difference
from tests.parity.oracle import Oracle, build

pytestmark = pytest.mark.parity  # runs the Go oracle

EXAMPLES = int(os.environ.get("TJC_PARITY_EXAMPLES", "500"))
RANDOM = bool(os.environ.get("TJC_PARITY_RANDOM"))
budget = settings(max_examples=EXAMPLES, derandomize=not RANDOM, deadline=None,
                  database=None, suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def oracle() -> Iterator[Oracle]:
    """One oracle process for the module."""
    running = Oracle(build())
    yield running
    running.close()


def _report(found: dict[str, list[str]], compared: int) -> str:
    lines = [f"{compared} examples compared, {sum(map(len, found.values()))} differ:"]
    for cls, details in sorted(found.items()):
        lines.append(f"- {cls} ({len(details)}): {details[0]}")
    return "\n".join(lines)


def test_trainjobs_match_upstream(oracle: Oracle) -> None:
    found: dict[str, list[str]] = {}
    counter = {"n": 0}

    @budget
    @given(ps.parity_case())
    def check(case: tuple[list[dict[str, Any]], dict[str, Any]]) -> None:
        counter["n"] += 1
        diff = difference(oracle, *case)
        if diff is not None:
            found.setdefault(diff[0], []).append(
                f"{diff[1]}\n  runtimes: {json.dumps(case[0])}\n  trainjob: {json.dumps(case[1])}")

    check()
    print(f"\nparity: {counter['n']} TrainJob examples compared with upstream")
    assert counter["n"] >= min(EXAMPLES, 500) and not found, _report(found, counter["n"])


def test_pod_templates_match_the_api_server(oracle: Oracle) -> None:
    """tjc's pod and Job rules (`compiler.kube.podspec`, every rule at `Scope.PODS`) refuse
    exactly the field paths kube-apiserver's Job create path refuses, or else its Pod create
    path (for the Job controller's first Pod), on Job templates valid and invalid."""
    found: dict[str, list[str]] = {}
    counter = {"n": 0, "refused": 0}

    @budget
    @given(pp.job_spec())
    def check(spec: dict[str, Any]) -> None:
        counter["n"] += 1
        mine, theirs = pp.tjc_paths(spec), pp.upstream_paths(oracle, spec)
        counter["refused"] += bool(theirs)
        if mine != theirs:
            cls = "refused or not" if bool(mine) != bool(theirs) else "field paths"
            found.setdefault(cls, []).append(
                f"tjc only {sorted(mine - theirs)}, API server only {sorted(theirs - mine)}\n"
                f"  job spec: {json.dumps(spec)}")

    check()
    print(f"\nparity: {counter['n']} Job templates compared with the API server, "
          f"{counter['refused']} refused")
    assert counter["n"] >= min(EXAMPLES, 500) and 0 < counter["refused"] < counter["n"] \
        and not found, _report(found, counter["n"])


QUANTITY_TEXT = st.one_of(
    st.from_regex(r"[+-]?[0-9]{1,4}(\.[0-9]{1,3})?([eE][+-]?[0-9]{1,2}|[kMGTPE]|[KMGTPE]i|[mnu])?",
                  fullmatch=True),
    st.sampled_from(["0", "1e9", "129e6", "0.1", "1000m", "1.5Gi", "100Mi", ".5", "5.", "1E3"]))


# Numbers as the API server hands them on (manifests may hold `memory: 1e9`, which kubectl
# sends as 1000000000): int64 literals and decimal fractions, written as Go writes them.
QUANTITY_NUMBER = st.one_of(
    st.integers(-2**63, 2**63 - 1).map(str),
    st.from_regex(r"-?[1-9][0-9]{0,5}\.[0-9]{0,5}[1-9]|-?0\.[0-9]{0,5}[1-9]", fullmatch=True))


def test_quantities_match_apimachinery(oracle: Oracle) -> None:
    found: list[str] = []

    @budget
    @given(st.one_of(QUANTITY_TEXT.map(json.dumps), QUANTITY_NUMBER))
    def check(token: str) -> None:
        answer = oracle.ask({"op": "quantity", "text": token})
        text = json.loads(token)
        try:
            mine: str | None = quantity.canonical(text)
        except ValueError:
            mine = None
        theirs = answer.get("json")
        if mine != theirs:
            found.append(f"{text!r}: apimachinery {theirs!r}, tjc {mine!r}")

    check()
    assert not found, f"{len(found)} quantities differ, e.g. {found[:5]}"


PATCH_ENV = st.lists(st.sampled_from(["A", "B", "C"]), unique=True, max_size=3).map(
    lambda keys: [{"name": k, "value": k.lower()} for k in keys])


@st.composite
def _spec(draw: st.DrawFn) -> dict[str, Any]:
    jobs = []
    for name in draw(st.lists(st.sampled_from(["node", "launcher", "init"]), unique=True,
                              max_size=2)):
        pod: dict[str, Any] = {"containers": [{"name": "node", "env": draw(PATCH_ENV)}]}
        if draw(st.booleans()):
            pod["nodeSelector"] = {draw(st.sampled_from(["a", "b"])): "x"}
        if draw(st.booleans()):
            pod["tolerations"] = [{"key": draw(st.sampled_from(["a", "b"])), "operator": "Exists"}]
        if draw(st.booleans()):
            pod["volumes"] = [{"name": draw(st.sampled_from(["v", "w"])), "emptyDir": {}}]
        jobs.append({"name": name, "template": {"spec": {"template": {"spec": pod}}}})
    return {"replicatedJobs": jobs}


def test_strategic_merge_patch_matches_apimachinery(oracle: Oracle) -> None:
    from compiler.kube import strategicmerge as smp
    found: list[str] = []

    @budget
    @given(_spec(), _spec())
    def check(original: dict[str, Any], patch: dict[str, Any]) -> None:
        answer = oracle.ask({"op": "smp", "original": original, "patch": patch})
        theirs = answer.get("json")
        mine = smp.strategic_merge(original, patch)
        if theirs is not None and mine != theirs:
            found.append(f"{json.dumps(original)} + {json.dumps(patch)}: apimachinery "
                         f"{json.dumps(theirs)}, tjc {json.dumps(mine)}")

    check()
    assert not found, f"{len(found)} patches differ, e.g. {found[:3]}"


SCALAR = st.one_of(
    st.text("0123456789+-._eExXoObBaf:", min_size=1, max_size=8).filter(
        lambda s: not s.startswith(("-", ":")) or s[1:2] not in ("", " ")),
    st.from_regex(r"[+-]?[0-9_]{1,6}(\.[0-9_]{0,3})?([eE][+-]?[0-9]{1,3})?", fullmatch=True),
    st.from_regex(r"[+-]?0[xob][0-9a-fA-F_]{0,8}", fullmatch=True),
    st.sampled_from(["y", "Y", "yes", "No", "on", "OFF", "true", "False", "~", "null", "NULL",
                     ".inf", "-.Inf", ".nan", ".5", "1.", "1e9", "129e6", "1_000", "0755", "08",
                     "2001-12-14", "2001-12-14T21:59:43.10-05:00", "9223372036854775808",
                     "18446744073709551616", "1e400", "123456789012345678901", "-0", "1:20",
                     "0b101", "-0b101", "+.5e-3", "0x_1F", "infinity",
                     # number-like strings (a sign inside, a character no number has)
                     "1234-5678", "1.2.3-rc1", "--run=1", "1+2", "1e-3-4", "0x1-2", "-0b1-0",
                     "1e+3", "-1_-2", "2001-12-14 21:59:43", "7:30", "1.0.0"]))


def _api_json(text: str) -> Any:
    """The API server's decoding of kubectl's JSON: integers beyond int64 become floats."""
    return json.loads(text, parse_int=lambda s: int(s) if -2**63 <= int(s) < 2**63
                      else float(s))


def test_plain_scalars_match_kubectl(oracle: Oracle) -> None:
    from compiler.io.loader import Source, parse_source
    found: list[str] = []

    @budget
    @given(SCALAR, st.booleans())
    def check(scalar: str, as_key: bool) -> None:
        text = f"{scalar}: x\n" if as_key else f"a: {scalar}\n"
        answer = oracle.ask({"op": "yaml", "text": text})
        docs, problems = parse_source(Source("s.yaml", text))
        theirs = json.dumps(_api_json(json.dumps(answer["json"]))) if "json" in answer \
            else "error"
        mine = json.dumps(docs[0].data) if docs and not problems else "error"
        if theirs != mine:
            found.append(f"{text.strip()!r}: kubectl {theirs}, tjc {mine}")

    check()
    assert not found, f"{len(found)} scalars differ: {found[:8]}"


MERGES = [
    "a: {<<: {x: 1, y: 2}, y: 3}\n", "a: {y: 3, <<: {x: 1, y: 2}}\n",
    "a: {<<: [{x: 1}, {x: 2, z: 3}]}\n", "b: &b {x: 1}\na: {<<: *b, y: 2}\n",
    "b: &b {x: 1}\nc: &c {x: 2, w: 0}\na: {<<: [*b, *c], x: 9}\n", "a: {'<<': {x: 1}}\n",
    "a: {\"<<\": {x: 1}}\n", "a: {<<: 1}\n", "a: {<<: [1]}\n", "a: {<<: null}\n",
    "a: {<<: []}\n", "a: {<<: {}}\n", "a: {!!merge <<: {x: 1}}\n",
    "a: {<<: {x: 1}, <<: {x: 2}}\n", "a: {<<: {<<: {q: 1}, x: 1}}\n",
    "<<: {kind: X}\napiVersion: v1\n", "a:\n  <<:\n    x: 1\n  y: 2\n",
    "a: {<<: {1: a, on: b}}\n", "a: {<<: [{x: 1}, 2]}\n", "a: {<<: &m {x: 1}, m: *m}\n",
]


@pytest.mark.parametrize("text", MERGES)
def test_merge_keys_match_kubectl(oracle: Oracle, text: str) -> None:
    """`<<` merges as go-yaml v2 merges it (in order, the later entry winning; a sequence's
    mappings from the last), and only where kubectl's reader merges."""
    from compiler.io.loader import Source, parse_source
    answer = oracle.ask({"op": "yaml", "text": text})
    docs, problems = parse_source(Source("s.yaml", text))
    theirs = json.dumps(answer["json"], sort_keys=True) if "json" in answer else "error"
    mine = json.dumps(docs[0].data, sort_keys=True) if docs and not problems else "error"
    assert mine == theirs, (text, answer, [p.text() for p in problems])


ORACLE_CASES = [p for p in goldenfile.cases() if "parity oracle" in goldenfile.parse(p).header]


@pytest.mark.parametrize("path", ORACLE_CASES, ids=lambda p: p.stem)
def test_golden_cases_match_upstream(oracle: Oracle, path: Path) -> None:
    """Golden cases whose header says they were checked with the oracle stay checked: their
    inputs, read as kubectl reads them, give upstream's accept/reject and objects in tjc."""
    builtin = {d.data["metadata"]["name"]: d.data for d in builtin_runtimes()}
    docs = []
    for text in goldenfile.parse(path).inputs.values():
        for chunk in text.split("\n---\n"):
            if chunk.strip():
                docs.append(oracle.ask({"op": "yaml", "text": chunk})["json"])
    runtimes = [d for d in docs if d["kind"] != "TrainJob"]
    for tj in (d for d in docs if d["kind"] == "TrainJob"):
        ref = tj["spec"]["runtimeRef"]["name"]
        if ref in builtin and not any(r["metadata"]["name"] == ref for r in runtimes):
            runtimes.append(builtin[ref])
        assert difference(oracle, runtimes, tj) is None


# --- YAML: tags, directives and document markers as kubectl reads them ----------------------

def _api(value: Any) -> Any:
    """A JSON value as the API server decodes it (integers beyond int64 become floats)."""
    return _api_json(json.dumps(value))


def _kubectl_reads(answer: dict[str, Any]) -> tuple[list[Any], bool]:
    """(documents, refused) of the oracle's `kubectl` answer; a document that is not a mapping
    is refused there (kubectl finds no kind in it), and so are those after it."""
    docs = _api(answer["documents"])
    for index, doc in enumerate(docs):
        if not isinstance(doc, dict):
            return docs[:index], True
    return docs, "error" in answer


def _tjc_reads(text: str, stream: bool = True) -> tuple[list[Any], bool]:
    """(documents, refused) of tjc's loader; a refusal must be located in the file."""
    from compiler.common.diagnostics import Diagnostic
    from compiler.io.loader import Source, iter_source
    source = Source("s.yaml", text)
    source.stream = stream
    docs: list[Any] = []
    for item in iter_source(source):
        if isinstance(item, Diagnostic):
            assert item.rule.startswith("TJC-INPUT-") and item.locations, item.text()
            return docs, True
        docs.append(item.data)
    return docs, False


def _whole_reads(answer: dict[str, Any]) -> tuple[list[Any], bool]:
    """(documents, refused) of the oracle's `yaml` answer: the text's first document, read
    whole as client-go reads a kubeconfig file."""
    if "json" not in answer:
        return [], True
    doc = _api(answer["json"])
    if doc is None:
        return [], False
    return ([doc], False) if isinstance(doc, dict) else ([], True)


def _compare(oracle: Oracle, text: str, found: list[str], whole: bool = False) -> None:
    theirs = _kubectl_reads(oracle.ask({"op": "kubectl", "text": text}))
    mine = _tjc_reads(text)
    if mine != theirs:
        found.append(f"{text!r}: kubectl {theirs}, tjc {mine}")
    if whole:
        theirs = _whole_reads(oracle.ask({"op": "yaml", "text": text}))
        mine = _tjc_reads(text, stream=False)
        if mine != theirs:
            found.append(f"{text!r} (whole): sigs.k8s.io/yaml {theirs}, tjc {mine}")


def test_tagged_yaml_matches_kubectl(oracle: Oracle) -> None:
    """Tagged scalars (every standard tag, `!`, verbatim and unknown tags, in every quoting),
    tagged collections and merge keys: the same JSON as kubectl, or refused by both."""
    found: list[str] = []

    @budget
    @given(ys.tagged_document())
    def check(text: str) -> None:
        _compare(oracle, text, found)

    check()
    assert not found, f"{len(found)} tagged documents differ: {found[:6]}"


def test_yaml_directives_and_markers_match_kubectl(oracle: Oracle) -> None:
    """Streams with %YAML/%TAG/unknown directives, `---` lines (bare, with a comment, with
    content) and `...` ends: kubectl's documents, or its refusal; and read whole (as a
    kubeconfig is), sigs.k8s.io/yaml's first document."""
    found: list[str] = []

    @budget
    @given(ys.stream())
    def check(text: str) -> None:
        _compare(oracle, text, found, whole=True)

    check()
    assert not found, f"{len(found)} streams differ: {found[:6]}"


REPORTED = [text for table in (yk.TAGGED_VALUES, yk.TAGGED_KEYS, yk.REFUSED_VALUES,
                               yk.REFUSED_STREAMS, yk.READ_STREAMS) for text, _ in table]


@pytest.mark.parametrize("text", REPORTED)
def test_reported_yaml_cases_match_kubectl(oracle: Oracle, text: str) -> None:
    """The loader's fixed cases (tests/io/test_yaml_kubectl.py: `! 1`, `!!binary`, `%YAML 1.2`,
    `--- value`, `...`) are kubectl's reading."""
    found: list[str] = []
    _compare(oracle, text, found)
    assert not found, found[0]


def _passthrough(path: Path) -> tuple[int, str]:
    from compiler.cli.main import main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["render", "--passthrough", "-q", "--no-default-policies", str(path)])
    return code, out.getvalue() + err.getvalue() * (code != 0)


def _krm(objects: list[str]) -> tuple[int, str]:
    from compiler.cli.main import main
    items = "".join("- " + text.replace("\n", "\n  ").rstrip(" ") for text in objects)
    stdin = ("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nfunctionConfig:\n"
             "  apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: c}\n  data:\n"
             "    defaultPolicies: 'false'\nitems:\n" + items)
    out, err = io.StringIO(), io.StringIO()
    with mock.patch("sys.stdin", io.TextIOWrapper(io.BytesIO(stdin.encode()))), \
            contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["krm"])
    return code, out.getvalue() if code == 0 else err.getvalue()


def test_passthrough_keeps_what_objects_mean(oracle: Oracle, tmp_path: Path) -> None:
    """`tjc render --passthrough` and `tjc krm` print every other object so that kubectl reads
    the output as it reads the input: strings stay strings, numbers numbers, binary decoded."""
    found: list[str] = []
    counter = {"n": 0}
    path = tmp_path / "in.yaml"

    @budget
    @given(ys.manifest())
    def check(objects: list[str]) -> None:
        text = "---\n" + "---\n".join(objects)
        docs, refused = _kubectl_reads(oracle.ask({"op": "kubectl", "text": text}))
        path.write_text(text)
        code, out = _passthrough(path)
        if refused:  # kubectl refuses the input: so must tjc (test_tagged_yaml_... says why)
            if code == 0:
                found.append(f"{text!r}: kubectl refuses it, tjc passes it through")
            return
        counter["n"] += 1
        again = _kubectl_reads(oracle.ask({"op": "kubectl", "text": out}))
        if code != 0 or again != (docs, False):
            found.append(f"{text!r}: kubectl reads {docs}, then from tjc's {out!r} {again}")
        code, out = _krm(objects)
        items = _kubectl_reads(oracle.ask({"op": "kubectl", "text": out}))[0]
        if code != 0 or not items or items[0].get("items") != docs:
            found.append(f"{text!r} (krm): kubectl reads {docs}, then from tjc's {out!r} "
                         f"{items}")

    check()
    assert not found, f"{len(found)} manifests change meaning: {found[:4]}"
    assert counter["n"] >= min(EXAMPLES, 500) // 4
