"""Label sets, namespaces and the affinity-pod index in the cluster cache (table-free unit cases).

The random-sequence recount lives in ``tests/property/test_labelsets_props.py``; these pin the
individual behaviours: sharing, terminating pods, rows of removed nodes, storage choice, memo
invalidation when label sets appear or ids are reused, namespaces and affinity-carrying pods.
"""

from __future__ import annotations

import numpy as np
import pytest

from ksched.cache import labelsets
from ksched.cache.cluster import ClusterCache
from ksched.model.namespace import Namespace
from ksched.model.node import Node
from ksched.model.pod import Pod
from ksched.model.selectors import EVERYTHING, parse_label_selector
from tests import builders


def sel(raw):
    return parse_label_selector(raw, "test", "selector")


def node(name: str) -> Node:
    """This module's node: room for any pod, zoned by the first two characters of its name."""
    return builders.node(name, cpu="64", memory="64Gi", pods=1000, labels={"zone": name[:2]})


def pod(name, node_name="n1", ns="default", labels=None, deleting=False, affinity=None) -> Pod:
    """This module's pod, bound to ``n1`` unless told otherwise; ``deleting`` makes it terminating."""
    return builders.pod(
        name=name,
        namespace=ns,
        node_name=node_name,
        labels=labels or {},
        affinity=affinity,
        terminating=deleting,
    )


def cache_with(*names: str) -> ClusterCache:
    cache = ClusterCache()
    for n in names:
        cache.add_node(node(n))
    return cache


def test_pods_with_same_namespace_and_labels_share_a_set() -> None:
    cache = cache_with("n1", "n2")
    cache.add_pod(pod("a", labels={"app": "web"}))
    cache.add_pod(pod("b", "n2", labels={"app": "web"}))
    cache.add_pod(pod("c", ns="other", labels={"app": "web"}))
    ls = cache.labelsets
    sa, sb, sc = (
        cache.pods[f"uid-{ns}-{n}"].label_set
        for ns, n in [("default", "a"), ("default", "b"), ("other", "c")]
    )
    assert sa == sb != sc
    assert ls.lookup("default", {"app": "web"}) == sa and ls.lookup("default", {"app": "x"}) == -1
    assert ls.set_counts(sa).tolist() == [1, 1]
    web = sel({"matchLabels": {"app": "web"}})
    assert ls.counts(ls.matching_sets(None, web)).tolist() == [2, 1]
    assert ls.counts(ls.matching_sets(frozenset({"other"}), web)).tolist() == [1, 0]
    assert ls.matching_sets(frozenset(), web) == ()
    assert ls.matching_sets(None, None) == ()  # nil selector: nothing
    assert set(ls.matching_sets(None, EVERYTHING)) == {sa, sc}


def test_terminating_pods_are_counted_apart() -> None:
    cache = cache_with("n1")
    cache.add_pod(pod("a", labels={"app": "web"}))
    cache.add_pod(pod("b", labels={"app": "web"}, deleting=True))
    ls = cache.labelsets
    ids = ls.matching_sets(None, sel({"matchLabels": {"app": "web"}}))
    assert ls.counts(ids).tolist() == [2]
    assert ls.counts(ids, exclude_terminating=True).tolist() == [1]
    cache.update_pod(pod("b", labels={"app": "web"}))  # deletion cancelled is not real, but must undo
    assert ls.counts(ids, exclude_terminating=True).tolist() == [2]


def test_label_change_moves_the_pod_between_sets_and_node_change_moves_rows() -> None:
    cache = cache_with("n1", "n2")
    cache.add_pod(pod("a", labels={"v": "1"}))
    ls = cache.labelsets
    v1, v2 = sel({"matchLabels": {"v": "1"}}), sel({"matchLabels": {"v": "2"}})
    assert ls.counts(ls.matching_sets(None, v2)).tolist() == [0, 0]  # memoized before the set exists
    cache.update_pod(pod("a", "n2", labels={"v": "2"}))
    assert ls.counts(ls.matching_sets(None, v1)).tolist() == [0, 0]
    assert ls.counts(ls.matching_sets(None, v2)).tolist() == [0, 1]


def test_assume_forget_and_confirm_keep_counts() -> None:
    cache = cache_with("n1", "n2")
    ls = cache.labelsets
    app = sel({"matchLabels": {"app": "x"}})
    cache.assume(pod("a", "", labels={"app": "x"}), "n1")
    assert ls.counts(ls.matching_sets(None, app)).tolist() == [1, 0]
    cache.forget("uid-default-a")
    assert ls.counts(ls.matching_sets(None, app)).tolist() == [0, 0]
    cache.assume(pod("a", "", labels={"app": "x"}), "n1")
    cache.add_pod(pod("a", "n2", labels={"app": "x"}))  # confirmed on another node
    assert ls.counts(ls.matching_sets(None, app)).tolist() == [0, 1]


def test_pods_of_a_removed_node_leave_its_row_and_come_back_with_the_node() -> None:
    cache = cache_with("n1", "n2")
    cache.add_pod(pod("a", labels={"app": "x"}, affinity={"podAffinity": {}}))
    ls = cache.labelsets
    ids = ls.matching_sets(None, sel({"matchLabels": {"app": "x"}}))
    cache.remove_node("n1")
    assert ls.counts(ids).tolist() == [0, 0]
    assert list(cache.affinity_pods.with_affinity()) == []
    cache.add_node(node("n3"))  # reuses the freed row: must not inherit the pod
    assert ls.counts(ids).tolist() == [0, 0]
    cache.add_node(node("n1"))
    assert ls.counts(ids).tolist() == [0, 0, 1]
    assert [(p.name, r) for p, r in cache.affinity_pods.with_affinity()] == [("a", 2)]


def test_selector_memoized_before_a_reused_id_is_re_tested() -> None:
    cache = cache_with("n1")
    ls = cache.labelsets
    cache.add_pod(pod("a", labels={"app": "old"}))
    old_id = cache.pods["uid-default-a"].label_set
    new = sel({"matchLabels": {"app": "new"}})
    old = sel({"matchLabels": {"app": "old"}})
    assert ls.matching_sets(None, old) == (old_id,)
    assert ls.matching_sets(None, new) == ()
    cache.remove_pod("uid-default-a")  # the set becomes a zombie...
    cache.add_pod(pod("b", labels={"app": "new"}))  # ...whose id a new key reuses
    assert cache.pods["uid-default-b"].label_set == old_id
    assert ls.matching_sets(None, new) == (old_id,)
    assert ls.matching_sets(None, old) == ()
    assert ls.counts(ls.matching_sets(None, new)).tolist() == [1]


def test_an_update_revives_the_same_set_id() -> None:
    cache = cache_with("n1")
    cache.add_pod(pod("a", labels={"app": "x"}))
    sid = cache.pods["uid-default-a"].label_set
    for _ in range(3):
        cache.update_pod(pod("a", labels={"app": "x"}))
    assert cache.pods["uid-default-a"].label_set == sid
    assert cache.labelsets.n_ids == 1


def test_storage_is_sparse_for_few_rows_and_dense_for_many() -> None:
    cache = ClusterCache(node_capacity=4)
    for i in range(200):
        cache.add_node(node(f"n{i:03d}"))
    for i in range(200):
        cache.add_pod(pod(f"w{i}", f"n{i:03d}", labels={"app": "wide"}))  # one set on every node
        cache.add_pod(pod(f"s{i}", "n000", labels={"app": "sts", "pod": f"s{i}"}))  # unique labels
    ls = cache.labelsets
    wide = ls.lookup("default", {"app": "wide"})
    assert ls._all[wide].dense is not None and not ls._all[wide].sparse
    unique = ls.lookup("default", {"app": "sts", "pod": "s7"})
    assert ls._all[unique].dense is None and ls._all[unique].sparse == {0: 1}
    ids = ls.matching_sets(None, sel({"matchLabels": {"app": "sts"}}))
    assert len(ids) == 200
    got = ls.counts(ids)
    assert got[0] == 200 and got[1:].sum() == 0
    assert ls.counts([wide]).tolist() == [1] * 200
    for i in range(200):
        cache.remove_pod(f"uid-default-w{i}")
    assert ls._all[wide] is None  # storage released with the last pod


@pytest.mark.parametrize("dense_rows", [0, 64])
def test_counts_follow_node_table_growth(monkeypatch, dense_rows) -> None:
    monkeypatch.setattr(labelsets, "MIN_DENSE_ROWS", dense_rows)
    cache = ClusterCache(node_capacity=1)
    cache.add_node(node("n0"))
    cache.add_pod(pod("a", "n0", labels={"app": "x"}))
    for i in range(1, 40):
        cache.add_node(node(f"n{i}"))
        cache.add_pod(pod(f"p{i}", f"n{i}", labels={"app": "x"}))
    ls = cache.labelsets
    assert ls.counts(ls.matching_sets(None, sel({}))).tolist() == [1] * 40


def test_candidate_narrowing_agrees_with_a_full_scan() -> None:
    cache = cache_with("n1")
    for i in range(30):
        cache.add_pod(pod(f"p{i}", ns=f"ns{i % 3}", labels={"app": f"a{i % 5}", "tier": f"t{i % 2}"}))
    ls = cache.labelsets
    for raw in [
        {"matchLabels": {"app": "a1"}},
        {"matchExpressions": [{"key": "app", "operator": "In", "values": ["a1", "a2"]}]},
        {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["a1"]}]},
        {"matchLabels": {"tier": "t0"}, "matchExpressions": [{"key": "app", "operator": "Exists"}]},
    ]:
        s = sel(raw)
        for ns in (None, frozenset({"ns1"}), frozenset({"ns0", "ns2"})):
            want = tuple(sid for sid in range(ls.n_ids) if ls.set_matches(sid, s, ns))
            assert ls.matching_sets(ns, s) == want


def test_namespaces_labels_and_selector_memo() -> None:
    cache = ClusterCache()
    prod = sel({"matchLabels": {"env": "prod"}})
    assert cache.namespace_labels("nowhere") == {}
    assert cache.namespaces_matching(prod) == frozenset()
    cache.set_namespace(Namespace("a", {"env": "prod"}))
    cache.set_namespace(Namespace("b", {"env": "dev"}))
    assert cache.namespace_labels("a") == {"env": "prod"}
    assert cache.namespaces_matching(prod) == {"a"}
    assert cache.namespaces_matching(EVERYTHING) == {"a", "b"}
    assert cache.namespaces_matching(None) == frozenset()
    cache.set_namespace(Namespace("b", {"env": "prod"}))
    assert cache.namespaces_matching(prod) == {"a", "b"}
    cache.remove_namespace("a")
    assert cache.namespaces_matching(prod) == {"b"}
    assert cache.namespace_labels("a") == {}


ANTI = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "zone"}
        ]
    }
}
PREFERRED_ANTI = {
    "podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "podAffinityTerm": {"labelSelector": {}, "topologyKey": "zone"}}
        ]
    }
}


def test_affinity_pods_are_indexed_with_their_rows() -> None:
    cache = cache_with("n1", "n2")
    cache.add_pod(pod("plain"))
    cache.add_pod(pod("anti", "n2", affinity=ANTI))
    cache.add_pod(pod("pref", "n1", affinity=PREFERRED_ANTI))
    cache.assume(
        pod("aff", "", affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []}}), "n1"
    )
    idx = cache.affinity_pods
    assert sorted((p.name, r) for p, r in idx.with_affinity()) == [("aff", 0), ("anti", 1), ("pref", 0)]
    assert [(p.name, r) for p, r in idx.with_required_anti_affinity()] == [("anti", 1)]
    assert idx.rows_with_affinity().tolist() == [0, 1]
    cache.update_pod(pod("anti", "n1"))  # terms dropped by an update
    assert list(idx.with_required_anti_affinity()) == []
    cache.forget("uid-default-aff")
    cache.remove_pod("uid-default-pref")
    assert idx.with_affinity_count == 0 and idx.rows_with_affinity().tolist() == []


def test_counts_are_int64_over_n_rows() -> None:
    cache = cache_with("n1", "n2", "n3")
    cache.remove_node("n3")
    out = cache.labelsets.counts([])
    assert out.dtype == np.int64 and out.shape == (3,)
