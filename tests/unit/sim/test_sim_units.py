"""Unit tests for the sim's pure parts: selectors, patches, the store's versioning and history."""

from __future__ import annotations

import re

import pytest

from ksched.sim import _heap as heap
from ksched.sim._convert import field_path
from ksched.sim._patch import json_patch, merge_patch, strategic_merge_patch
from ksched.sim._resources import resolve
from ksched.sim._selectors import (
    ObjectFilter,
    match_label_selector,
    parse_field_selector,
    parse_label_selector,
)
from ksched.sim._status import StatusError
from ksched.sim.faults import AuditLog
from ksched.sim.store import Store, _same
from ksched.sim.workloads import ZONE_LABEL, make_nodes, make_pods


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        pytest.param("a=1", {"a": "1"}, True, id="equals"),
        pytest.param("a!=1", {}, True, id="not equals matches missing key"),
        pytest.param("a in (1, 2),b", {"a": "2", "b": ""}, True, id="in and exists"),
        pytest.param("a notin (1)", {"a": "1"}, False, id="notin"),
        pytest.param("!a", {"a": "x"}, False, id="does not exist"),
        pytest.param("", {"a": "x"}, True, id="empty matches all"),
    ],
)
def test_label_selector(selector: str, labels: dict[str, str], expected: bool) -> None:
    pred = parse_label_selector(selector)
    assert (pred is None or pred(labels)) is expected


def test_field_selector_missing_field_is_empty() -> None:
    pred = parse_field_selector("spec.nodeName=,status.phase!=Failed")
    assert pred is not None and pred({"spec": {}, "status": {"phase": "Pending"}})
    with pytest.raises(StatusError):
        parse_field_selector("nonsense")


@pytest.mark.parametrize(
    ("selector", "obj", "expected"),
    [
        pytest.param("status.phase!=Succeeded,status.phase!=Failed", {"status": {"phase": "Pending"}}, True),
        pytest.param("status.phase!=Succeeded,status.phase!=Failed", {"status": {"phase": "Failed"}}, False),
        pytest.param("status.phase!=Succeeded,status.phase!=Failed", {}, True, id="absent reads as empty"),
        pytest.param("spec.nodeName=a,spec.nodeName=a", {"spec": {"nodeName": "a"}}, True),
        pytest.param("spec.nodeName=a,spec.nodeName=b", {"spec": {"nodeName": "a"}}, False, id="two values"),
        pytest.param("spec.nodeName=a,spec.nodeName!=a", {"spec": {"nodeName": "a"}}, False),
        pytest.param("spec.nodeName==a,metadata.name=x", {"spec": {"nodeName": "a"}, "metadata": {}}, False),
        pytest.param("spec.unschedulable=true", {"spec": {"unschedulable": True}}, True, id="booleans"),
        pytest.param("spec.x.y=", {"spec": {"x": "not a dict"}}, True, id="through a non-dict"),
    ],
)
def test_field_selector_requirements(selector: str, obj: dict[str, object], expected: bool) -> None:
    pred = parse_field_selector(selector)
    assert pred is not None and pred(obj) is expected


def test_same_ignores_only_the_resource_version() -> None:
    base = {"kind": "Pod", "metadata": {"name": "a", "resourceVersion": "1"}, "spec": {"n": 1}}
    assert _same({**base, "metadata": {"name": "a", "resourceVersion": "2"}}, base)
    assert _same({**base, "metadata": {"name": "a"}}, base)
    assert _same({**base, "spec": {"n": 1}}, base)
    assert not _same({**base, "spec": {"n": 2}}, base)
    assert not _same({**base, "metadata": {"name": "b", "resourceVersion": "1"}}, base)
    assert not _same({**base, "metadata": {"name": "a", "resourceVersion": "1", "labels": {}}}, base)
    assert not _same({**base, "status": {}}, base)
    assert not _same({"kind": "Pod", "metadata": base["metadata"], "status": {"n": 1}}, base)


def test_a_no_op_write_keeps_the_resource_version() -> None:
    store = Store()
    store.create("namespaces", {"metadata": {"name": "default"}})
    spec = {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}
    created = store.create("pods", {"metadata": {"name": "p", "namespace": "default"}, "spec": spec})
    rv = created["metadata"]["resourceVersion"]
    same = store.mutate("pods", "p", "default", lambda cur: {**cur, "spec": dict(cur["spec"])})
    assert same["metadata"]["resourceVersion"] == rv and store.rv == int(rv)
    changed = store.mutate(
        "pods",
        "p",
        "default",
        lambda cur: {**cur, "spec": {**cur["spec"], "nodeName": "n"}},
        subresource="binding",
    )
    assert int(changed["metadata"]["resourceVersion"]) == int(rv) + 1
    assert created["metadata"]["resourceVersion"] == rv  # the old version is never touched


def test_audit_json_lists_records_after_a_sequence_number() -> None:
    audit = AuditLog()
    for i in range(3):
        audit.record("default", f"p{i}", f"u{i}", "node-0", "bound", 201)
    doc = audit.to_json(1)
    assert [r["name"] for r in doc["items"]] == ["p1", "p2"]
    assert set(doc["items"][0]) == {"seq", "namespace", "name", "uid", "node", "result", "code", "timestamp"}
    assert doc["items"][0]["seq"] == 2 and doc["items"][0]["code"] == 201


def test_label_selector_object() -> None:
    sel = {
        "matchLabels": {"app": "x"},
        "matchExpressions": [{"key": "t", "operator": "NotIn", "values": ["a"]}],
    }
    assert match_label_selector(sel, {"app": "x"})
    assert not match_label_selector(sel, {"app": "x", "t": "a"})
    assert not match_label_selector(None, {})


def test_patches() -> None:
    assert merge_patch({"a": {"b": 1, "c": 2}}, {"a": {"b": None, "d": 3}}) == {"a": {"c": 2, "d": 3}}
    cur = {"conditions": [{"type": "A", "status": "False"}, {"type": "B", "status": "True"}]}
    out = strategic_merge_patch(
        cur,
        {
            "conditions": [{"type": "A", "status": "True"}, {"type": "C"}],
            "$setElementOrder/conditions": [{"type": "A"}],
        },
    )
    assert out["conditions"] == [
        {"type": "A", "status": "True"},
        {"type": "B", "status": "True"},
        {"type": "C"},
    ]
    gone = strategic_merge_patch(cur, {"conditions": [{"type": "B", "$patch": "delete"}]})
    assert gone["conditions"] == [{"type": "A", "status": "False"}]
    assert json_patch({"a": [1]}, [{"op": "add", "path": "/a/-", "value": 2}]) == {"a": [1, 2]}


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"conditions": [{"type": {"a": 1}, "status": "True"}]}, "conditions[0].type: must be a string"),
        ({"conditions": [{"type": "A"}, {"type": ["x"]}]}, "conditions[1].type: must be a string"),
        ({"spec": {"containers": [{"name": {"x": 1}}]}}, "containers[0].name: must be a string"),
        ({"metadata": {"finalizers": [{"f": 1}]}}, "finalizers[0]: must be a string"),
    ],
)
def test_a_strategic_patch_with_an_odd_merge_key_is_a_400_not_a_crash(patch: dict, message: str) -> None:
    """Merge keys are strings (or numbers) in every API type: an object there is the client's error,
    whether or not the target has a list to merge into."""
    for target in ({}, {"conditions": [{"type": "A"}], "spec": {"containers": [{"name": "c"}]}}):
        with pytest.raises(StatusError, match=re.escape(message)) as err:
            strategic_merge_patch(target, patch)
        assert err.value.code == 400


def test_stored_items_with_an_odd_merge_key_match_nothing() -> None:
    cur = {"conditions": [{"type": {"a": 1}}, {"type": "A", "status": "False"}]}
    out = strategic_merge_patch(cur, {"conditions": [{"type": "A", "status": "True"}]})
    assert out["conditions"] == [{"type": {"a": 1}}, {"type": "A", "status": "True"}]


def test_store_versions_and_history_window() -> None:
    store = Store(history_window=3)
    made = [store.create("pods", p) for p in make_pods(5)]
    rvs = [int(p["metadata"]["resourceVersion"]) for p in made]
    assert rvs == [1, 2, 3, 4, 5]
    assert [e.rv for e in store.events_since(store.table("pods").rtype, 2)] == [3, 4, 5]
    with pytest.raises(StatusError) as err:
        store.events_since(store.table("pods").rtype, 1)
    assert err.value.code == 410
    stale = made[0]
    store.update("pods", {**stale, "metadata": {**stale["metadata"], "labels": {"x": "1"}}})
    with pytest.raises(StatusError) as err:
        store.update("pods", {**stale, "metadata": {**stale["metadata"], "labels": {"x": "2"}}})
    assert err.value.code == 409
    assert store.get("pods", "pod-0", "default")["metadata"]["labels"] == {"x": "1"}
    # a no-op write does not bump the version
    before = store.rv
    store.mutate("pods", "pod-1", "default", lambda p: dict(p))
    assert store.rv == before


def test_make_nodes_zones_and_defaults() -> None:
    nodes = make_nodes(4, zones=2)
    assert [n["metadata"]["labels"][ZONE_LABEL] for n in nodes] == ["zone-0", "zone-1", "zone-0", "zone-1"]
    assert nodes[0]["status"]["allocatable"] == {"cpu": "4", "memory": "32Gi", "pods": "110"}
    assert nodes[3]["metadata"]["labels"]["kubernetes.io/hostname"] == "node-3"


def _page_names(
    store: Store, field_selector: str | None, limit: int
) -> tuple[list[list[str]], list[int | None]]:
    """Every page of a paginated pod list: names per page, and each page's remaining count."""
    rtype = resolve("pods")
    flt = ObjectFilter.parse("default", None, field_selector, field_path(rtype))
    pages, remaining, after = [], [], None
    while True:
        _, entries, after, left = store.list_entries(rtype, flt, limit, after)
        pages.append([e.obj["metadata"]["name"] for e in entries])
        remaining.append(left)
        if after is None:
            return pages, remaining


def _add_pod(store: Store, n: int, node: str) -> None:
    pod = make_pods(1, name_prefix="p", start=n)[0]
    pod["spec"]["nodeName"] = node
    store.create("pods", pod, namespace="default")


@pytest.mark.parametrize("field_selector", [None, "spec.nodeName=n1"], ids=["all", "selector"])
def test_list_order_follows_creates_and_deletes(field_selector: str | None) -> None:
    """Lists and their pages stay in name order, with the same remaining counts, while the key
    set changes between them (the sorted keys are cached per key set, not per write)."""
    store = Store()
    for n in (3, 1, 5):
        _add_pod(store, n, "n1")
    counted = field_selector is None  # under a selector kube-apiserver gives no remaining count
    assert _page_names(store, field_selector, 2) == ([["p1", "p3"], ["p5"]], [1 if counted else None, 0])
    _add_pod(store, 2, "n1")
    _add_pod(store, 4, "n2")
    store.delete("pods", "p3", "default", grace_period_s=0)
    expected = ["p1", "p2", "p4", "p5"] if field_selector is None else ["p1", "p2", "p5"]
    assert [p["metadata"]["name"] for p in store.list("pods", "default", None, field_selector)] == expected
    pages, remaining = _page_names(store, field_selector, 2)
    assert pages == [expected[:2], expected[2:]]
    assert remaining == [len(expected) - 2 if counted else None, 0]


def test_periodic_collections_free_cycles_among_frozen_objects() -> None:
    """A cycle frozen by a bulk creation or an earlier pass is freed by the next whole-heap pass,
    and :func:`set_aside` leaves an in-process host's collector alone."""
    import gc
    import weakref

    class Node:
        peer: object = None

    before = gc.get_freeze_count()
    heap.set_aside()
    assert gc.get_freeze_count() == before  # not serving: nothing frozen
    with heap.serving():
        a, b = Node(), Node()
        a.peer, b.peer = b, a
        ref = weakref.ref(a)
        heap.set_aside()
        del a, b
        for n in range(1, heap.RESCAN_EVERY):
            heap.collect_pass(n)
            assert ref() is not None  # frozen: only the objects made since are walked
        heap.collect_pass(heap.RESCAN_EVERY)
        assert ref() is None
    assert gc.get_freeze_count() == before
