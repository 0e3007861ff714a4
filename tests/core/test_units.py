"""Unit tests of the small pure pieces: quantities, strategic merge, upserts, the plugin
graph, defaulting and the loader's bounds."""

from __future__ import annotations

import contextlib
import dataclasses
import marshal
import sys
from itertools import combinations
from pathlib import Path

import pytest

from compiler.common import diskcache
from compiler.common.errors import CompileError, PluginGraphError
from compiler.core import upsert
from compiler.core.plugins import REGISTRY
from compiler.core.plugins.base import PluginResult, PluginSpec
from compiler.core.plugins.graph import CACHE_AREA, build_graph, cache_name, plugin_order
from compiler.io.loader import Source, parse_source
from compiler.io.loadlimits import MAX_NODES
from compiler.kube import quantity
from compiler.kube import strategicmerge as smp
from compiler.kube.defaults import apply_defaults


@pytest.mark.parametrize(("given", "canonical"), [
    ("1024Mi", "1Gi"), ("2000m", "2"), ("0.5", "500m"), ("1536Mi", "1536Mi"), ("2000", "2k"),
    ("1.5", "1500m"), ("100m", "100m"), ("0.1m", "100u"), ("1e3", "1e3"), ("1000Ki", "1000Ki"),
    ("1.5Gi", "1536Mi"), ("0", "0"), (2, "2"), (0.5, "500m"), ("0.0000000001", "1n"),
    ("-1", "-1"), ("512Ki", "512Ki"), ("1025", "1025"), ("10G", "10G"), ("1000k", "1M"),
    # ParseQuantity keeps these strings as written (its fast path judges them canonical)
    ("+1", "+1"), ("1E3", "1E3"), ("1.500", "1.500"), ("+1Gi", "+1Gi"), ("08", "08"),
])
def test_quantity_canonical(given: str | int | float, canonical: str) -> None:
    assert quantity.canonical(given) == canonical


def test_quantity_arithmetic_and_ceiling() -> None:
    assert quantity.add("500m", "1500m") == "2"
    assert quantity.add("1Gi", "512Mi") == "1536Mi"
    assert str(quantity.parse("250m") * 4) == "1"
    assert [quantity.parse(q).ceil() for q in ("2.5", "0.7", "3.7", "2500m", "1")] == \
        [3, 1, 4, 3, 1]
    with pytest.raises(quantity.QuantityError):
        quantity.parse("two")


def test_smp_merges_by_key_and_replaces_atomic_lists() -> None:
    original = {"containers": [{"name": "a", "env": [{"name": "X", "value": "1"}]}],
                "tolerations": [{"key": "old"}], "nodeSelector": {"a": "1"}}
    patch = {"containers": [{"name": "a", "env": [{"name": "Y", "value": "2"},
                                                  {"name": "X", "value": "3"}]}],
             "tolerations": [{"key": "new"}], "nodeSelector": {"b": "2", "a": None}}
    merged = smp.strategic_merge(original, patch)
    assert merged["containers"][0]["env"] == [{"name": "Y", "value": "2"},
                                              {"name": "X", "value": "3"}]
    assert merged["tolerations"] == [{"key": "new"}]
    assert merged["nodeSelector"] == {"b": "2"}
    assert original["nodeSelector"] == {"a": "1"}, "the original is not modified"


def test_smp_list_order_is_upstreams_merge_sorted_slice() -> None:
    # patch items keep patch order; an original-only item goes before a patch item only when
    # both are in the original and it came first there, so the new /c leads.
    original = {"volumeMounts": [{"mountPath": "/a"}, {"mountPath": "/b"}]}
    patch = {"volumeMounts": [{"mountPath": "/c"}, {"mountPath": "/b", "readOnly": True}]}
    merged = smp.strategic_merge(original, patch)["volumeMounts"]
    assert [m["mountPath"] for m in merged] == ["/c", "/a", "/b"]
    assert merged[2] == {"mountPath": "/b", "readOnly": True}


def test_smp_rejects_items_without_merge_key() -> None:
    with pytest.raises(CompileError):
        smp.strategic_merge({"env": [{"name": "A"}]}, {"env": [{"value": "x"}]})


def test_upsert_ports_treats_unnamed_ports_as_equal() -> None:
    container = {"ports": [{"containerPort": 8080}, {"name": "m", "containerPort": 9090}]}
    upsert.upsert_ports(container, [{"containerPort": 29500}])
    assert container["ports"] == [{"containerPort": 29500}, {"name": "m", "containerPort": 9090}]


def test_env_conversion_matches_apply_envvar() -> None:
    assert upsert.env_var({"name": "A"}) == {"name": "A", "value": ""}
    converted = upsert.env_var({"name": "B", "value": "ignored", "valueFrom": {
        "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"},
        "resourceFieldRef": {"resource": "limits.cpu"}}})
    assert converted == {"name": "B", "valueFrom": {
        "fieldRef": {"fieldPath": "metadata.name"},
        "resourceFieldRef": {"containerName": "", "resource": "limits.cpu", "divisor": "0"}}}


def test_defaults_come_from_the_crds() -> None:
    tj = apply_defaults("TrainJob", {"spec": {"runtimeRef": {"name": "x"}}})
    assert tj["spec"]["runtimeRef"] == {"name": "x", "apiGroup": "trainer.kubeflow.org",
                                        "kind": "ClusterTrainingRuntime"}
    assert tj["spec"]["suspend"] is False
    assert tj["spec"]["managedBy"] == "trainer.kubeflow.org/trainjob-controller"
    rt = apply_defaults("ClusterTrainingRuntime", {"spec": {
        "mlPolicy": {"mpi": {}}, "podGroupPolicy": {"coscheduling": {}},
        "template": {"spec": {"replicatedJobs": [{"name": "n", "template": {"spec": {
            "template": {"spec": {"containers": [{"name": "c", "ports": [
                {"containerPort": 1}]}]}}}}}]}}}})
    mpi = rt["spec"]["mlPolicy"]["mpi"]
    assert mpi == {"numProcPerNode": 1, "mpiImplementation": "OpenMPI",
                   "sshAuthMountPath": "/root/.ssh", "runLauncherAsNode": False}
    assert rt["spec"]["podGroupPolicy"]["coscheduling"] == {"scheduleTimeoutSeconds": 60}
    job = rt["spec"]["template"]["spec"]["replicatedJobs"][0]
    assert (job["replicas"], job["groupName"]) == (1, "default")
    container = job["template"]["spec"]["template"]["spec"]["containers"][0]
    assert container["ports"][0]["protocol"] == "TCP"


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(diskcache.CACHE_ENV, str(tmp_path))
    return tmp_path


def _plugin(name: str, requires: frozenset[str] | set[str] = frozenset(),
            provides: frozenset[str] | set[str] = frozenset()
            ) -> PluginSpec:
    return PluginSpec(name=name, active=lambda ctx: True, enforce=lambda ctx: PluginResult(),
                      requires=frozenset(requires), provides=frozenset(provides))


def test_plugin_graph_orders_by_facts_then_registry(cache_dir: Path) -> None:
    names = [p.name for p in plugin_order(list(REGISTRY))]
    assert names.index("jobset") == len(names) - 1
    order = plugin_order([_plugin("late", {"counts"}), _plugin("early", provides={"counts"})])
    assert [p.name for p in order] == ["early", "late"]


def _names(plugins: list[PluginSpec]) -> list[str]:
    return [p.name for p in plugins]


def test_plugin_order_of_every_registry_subset_is_networkxs(
        cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """For every set of the registry's plugins that has an order, the order `plugin_order`
    gives with a cold cache (computed, then stored) and with a warm one (read back, networkx
    not importable) is networkx's topological order with ties broken by registry position,
    computed here fresh."""
    import networkx as nx

    position = {p.name: i for i, p in enumerate(REGISTRY)}
    expected: dict[tuple[PluginSpec, ...], list[str]] = {}
    for size in range(1, len(REGISTRY) + 1):
        for subset in combinations(REGISTRY, size):
            with contextlib.suppress(PluginGraphError, nx.NetworkXUnfeasible):
                expected[subset] = list(nx.lexicographical_topological_sort(
                    build_graph(subset), key=position.__getitem__))
    assert len(expected) > 400
    assert {s: _names(plugin_order(s)) for s in expected} == expected
    assert len(list((cache_dir / CACHE_AREA).iterdir())) == len(expected)  # one entry a set
    monkeypatch.setitem(sys.modules, "networkx", None)  # `import networkx` now fails
    assert {s: _names(plugin_order(s)) for s in expected} == expected


def test_plugin_order_entry_that_is_no_order_of_the_plugins_is_a_miss(cache_dir: Path) -> None:
    plugins = [_plugin("late", {"counts"}), _plugin("early", provides={"counts"})]
    assert _names(plugin_order(plugins)) == ["early", "late"]
    entry = cache_dir / CACHE_AREA / cache_name(plugins)
    raw = bytearray(entry.read_bytes())
    raw[-1] ^= 1  # corrupt: the checksum no longer matches
    entry.write_bytes(bytes(raw))
    assert _names(plugin_order(plugins)) == ["early", "late"]
    for bad in (("early",), ("early", "early"), ("early", "late", "x"), ["early", "late"],
                (1, 2), "early late"):  # checksummed, but not the two plugins once each
        diskcache.write(CACHE_AREA, entry.name, marshal.dumps(bad))
        assert _names(plugin_order(plugins)) == ["early", "late"]
    diskcache.write(CACHE_AREA, entry.name, b"\xff not marshal")
    assert _names(plugin_order(plugins)) == ["early", "late"]


def test_plugin_order_cache_entry_follows_every_declaration() -> None:
    a, b = _plugin("a", provides={"x"}), _plugin("b", {"x"})
    variants = [[a, b], [b, a], [a], [a, _plugin("b", {"x"}, {"y"})],
                [a, dataclasses.replace(b, after=frozenset({"y"}))],
                [_plugin("a", provides={"x", "y"}), b], [a, _plugin("c", {"x"})],
                [dataclasses.replace(p, provides=p.provides | {"new"}) if p.name == "mpi" else p
                 for p in REGISTRY], list(REGISTRY)]
    assert len({cache_name(v) for v in variants}) == len(variants)
    assert cache_name([a, b]) == cache_name([_plugin("a", provides={"x"}), _plugin("b", {"x"})])


def test_plugins_are_activated_by_the_runtime_alone() -> None:
    """`PreparedRuntime.plugins` decides once per runtime: for every built-in runtime, very
    different TrainJobs (none of spec.trainer, a full one, runtime patches) activate the
    same plugins."""
    from compiler.core.compile import prepare_runtime
    from compiler.core.context import build_context
    from compiler.io.builtin import builtin_runtimes

    base = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": "a", "namespace": "default"}}
    trainer = {"numNodes": 3, "image": "x:1", "env": [{"name": "A", "value": "1"}],
               "resourcesPerNode": {"limits": {"nvidia.com/gpu": 2}}}
    patch = {"manager": "m", "trainingRuntimeSpec": {"template": {"metadata": {
        "labels": {"x": "y"}}, "spec": {"replicatedJobs": [{"name": "node"}]}}}}
    jobs = [{**base, "spec": {}}, {**base, "spec": {"trainer": trainer}},
            {**base, "spec": {"trainer": trainer, "runtimePatches": [patch]}}]
    for doc in builtin_runtimes():
        prepared = prepare_runtime(doc.data)
        seen = {tuple(p.name for p in REGISTRY if p.active(build_context(
            job, prepared.doc, prepared.spec_copy()))) for job in jobs}
        assert len(seen) == 1, (doc.data["metadata"]["name"], seen)


def test_plugin_graph_reports_cycles_and_missing_providers() -> None:
    with pytest.raises(PluginGraphError, match="cycle between a, b"):
        plugin_order([_plugin("a", {"x"}, {"y"}), _plugin("b", {"y"}, {"x"})])
    with pytest.raises(PluginGraphError, match="plugin c requires 'z'"):
        plugin_order([_plugin("c", {"z"})])


def test_loader_bounds_alias_expansion() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    docs, problems = parse_source(Source("bomb.yaml", "\n".join(lines) + "\n"))
    assert not docs
    assert problems[0].rule == "TJC-INPUT-ALIAS"
    assert str(MAX_NODES) in problems[0].message


def test_loader_reports_duplicate_keys_and_builds_no_object_a_tag_names() -> None:
    _, problems = parse_source(Source("d.yaml", "a: 1\na: 2\n"))
    assert problems[0].text().startswith("d.yaml:2:1: error: cannot parse YAML: found "
                                         "duplicate key 'a'")
    # an unknown tag is only a name to kubectl's reader: the data, never a Python object
    docs, problems = parse_source(Source(
        "t.yaml", "a: !!python/object/apply:os.system [ls]\nb: !!python/name:os.system\n"))
    assert not problems and docs[0].data == {"a": ["ls"], "b": ""}


def test_loader_keeps_timestamps_as_strings() -> None:
    docs, _ = parse_source(Source("t.yaml", "a: 2024-01-01\n"))
    assert docs[0].data == {"a": "2024-01-01"}


def test_diagnostic_is_frozen() -> None:
    _, problems = parse_source(Source("x.yaml", "[1\n"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        problems[0].rule = "other"  # type: ignore[misc]


def test_generated_ssh_keys_have_upstreams_format() -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    from compiler.io import sshkeys

    pair = sshkeys.generated()("default", "job")
    assert pair.private_pem.startswith(b"-----BEGIN EC PRIVATE KEY-----\n")
    key = serialization.load_pem_private_key(pair.private_pem, password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name == "secp521r1"
    assert pair.public_key.startswith(b"ecdsa-sha2-nistp521 AAAA")
    assert pair.public_key.endswith(b"\n") and pair.public_key.count(b" ") == 1
    assert sshkeys.generated()("default", "job") != pair, "fresh keys every time"


def test_ssh_key_file_must_be_p521() -> None:
    from compiler.common.errors import InputError
    from compiler.io import sshkeys

    data = Path(__file__).resolve().parents[1] / "data"
    source = sshkeys.from_file(str(data / "test-only-mpi-key.pem"))
    assert source("a", "b") == source("c", "d")
    with pytest.raises(InputError, match="not an ECDSA P-521 key"):
        sshkeys.from_file(str(data / "test-only-p256-key.pem"))
    with pytest.raises(InputError, match="cannot read SSH key"):
        sshkeys.from_file(str(data / "missing.pem"))
    with pytest.raises(InputError, match="not an unencrypted PEM private key"):
        sshkeys.from_file(str(data / "README.md"))
