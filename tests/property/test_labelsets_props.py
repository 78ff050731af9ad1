"""Label sets stay equal to a recount under any sequence of cache events.

Random sequences of node add/remove and pod add/update (labels, node, terminating flag,
affinity)/assume/forget/confirm/remove, interleaved with selector queries so that answers are
memoized *before* the label sets they must later include appear. After every step the per-set,
per-row counts (all and terminating) must equal a recount from the cache's pod entries; after
every query, and at the end for every selector, ``counts(matching_sets(...))`` must equal a
brute-force count with the plain-Python matcher. Storage thresholds, the log length and the memo
limit are drawn too, so dense arrays, id reuse, log resets and memo eviction are all exercised.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ksched.cache import labelsets
from ksched.cache.affinity_pods import has_pod_affinity, has_required_anti_affinity
from ksched.cache.cluster import ClusterCache
from ksched.model.selectors import LabelSelector, parse_label_selector, selector_matches
from tests import builders

NODE_NAMES = [f"n{i}" for i in range(5)]
POD_NAMES = [f"p{i}" for i in range(8)]
NAMESPACES = ["default", "team"]
LABELS = [
    {},
    {"app": "a"},
    {"app": "b"},
    {"app": "a", "tier": "x"},
    {"app": "b", "tier": "y"},
    {"tier": "x"},
    {"app": "a", "tier": "y", "v": "1"},
]
AFFINITY = [
    None,
    {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}},
    {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": "zone"}
            ]
        }
    },
]
NS_CHOICES = [None, frozenset(), frozenset({"default"}), frozenset({"team"}), frozenset(NAMESPACES)]


def uid(name: str) -> str:
    return f"uid-{name}"


def pod(name: str, node_name: str, labels: int, deleting: bool = False, affinity: int = 0):
    return builders.pod(
        name=name,
        namespace=NAMESPACES[POD_NAMES.index(name) % 2],
        uid=uid(name),
        node_name=node_name,
        labels=LABELS[labels],
        affinity=AFFINITY[affinity],
        terminating=deleting,
    )


def node(name: str):
    return builders.node(name, cpu="4", memory="8Gi", pods=10, labels={"zone": name[-1]})


requirement = st.one_of(
    st.fixed_dictionaries(
        {
            "key": st.sampled_from(["app", "tier", "v", "zz"]),
            "operator": st.sampled_from(["In", "NotIn"]),
            "values": st.lists(st.sampled_from(["a", "b", "x", "y", "1"]), min_size=1, max_size=2),
        }
    ),
    st.fixed_dictionaries(
        {
            "key": st.sampled_from(["app", "tier", "v"]),
            "operator": st.sampled_from(["Exists", "DoesNotExist"]),
        }
    ),
)
raw_selectors = st.one_of(
    st.none(),
    st.just({}),
    st.fixed_dictionaries(
        {},
        optional={
            "matchLabels": st.dictionaries(
                st.sampled_from(["app", "tier"]), st.sampled_from(["a", "b", "x", "y"]), max_size=2
            ),
            "matchExpressions": st.lists(requirement, max_size=2),
        },
    ),
)
selectors = raw_selectors.map(lambda raw: parse_label_selector(raw, "test", "selector"))

name = st.sampled_from(POD_NAMES)
nodes_ = st.sampled_from(NODE_NAMES)
ops = st.one_of(
    st.tuples(st.just("add_node"), nodes_),
    st.tuples(st.just("remove_node"), nodes_),
    st.tuples(
        st.just("add_pod"), name, nodes_, st.integers(0, len(LABELS) - 1), st.booleans(), st.integers(0, 2)
    ),
    st.tuples(st.just("assume"), name, nodes_, st.integers(0, len(LABELS) - 1), st.integers(0, 2)),
    st.tuples(st.just("forget"), name),
    st.tuples(st.just("remove_pod"), name),
    st.tuples(st.just("query"), selectors, st.sampled_from(NS_CHOICES), st.booleans()),
)


def check_recount(cache: ClusterCache) -> None:
    ls = cache.labelsets
    n = cache.nodes.n_rows
    want_all: dict[int, np.ndarray] = {}
    want_term: dict[int, np.ndarray] = {}
    members: dict[int, int] = {}
    for entry in cache.pods.values():
        sid = entry.label_set
        assert ls.keys[sid] == (entry.pod.namespace, frozenset(entry.pod.labels.items()))
        members[sid] = members.get(sid, 0) + 1
        if entry.row >= 0:
            want_all.setdefault(sid, np.zeros(n, np.int64))[entry.row] += 1
            if entry.pod.deleting:
                want_term.setdefault(sid, np.zeros(n, np.int64))[entry.row] += 1
    zero = np.zeros(n, np.int64)
    for sid in range(ls.n_ids):
        assert ls.pod_count[sid] == members.get(sid, 0)
        assert np.array_equal(ls.set_counts(sid), want_all.get(sid, zero))
        assert np.array_equal(ls.set_counts(sid, terminating=True), want_term.get(sid, zero))
        assert ls.lookup(*[ls.keys[sid][0], dict(ls.keys[sid][1])]) == sid
    assert len(ls) == len(members)
    aff = cache.affinity_pods
    placed = [e for e in cache.pods.values() if e.row >= 0]
    assert sorted(p.uid for p, _ in aff.with_affinity()) == sorted(
        e.pod.uid for e in placed if has_pod_affinity(e.pod)
    )
    assert sorted((p.uid, r) for p, r in aff.with_required_anti_affinity()) == sorted(
        (e.pod.uid, e.row) for e in placed if has_required_anti_affinity(e.pod)
    )


def brute_force(
    cache: ClusterCache, ns: frozenset[str] | None, sel: LabelSelector | None, exclude: bool
) -> np.ndarray:
    out = np.zeros(cache.nodes.n_rows, np.int64)
    for entry in cache.pods.values():
        p = entry.pod
        if entry.row < 0 or (exclude and p.deleting):
            continue
        if (ns is None or p.namespace in ns) and selector_matches(sel, p.labels):
            out[entry.row] += 1
    return out


def check_query(
    cache: ClusterCache, sel: LabelSelector | None, ns: frozenset[str] | None, exclude: bool
) -> None:
    ls = cache.labelsets
    ids = ls.matching_sets(ns, sel)
    assert list(ids) == sorted(set(ids))
    got = ls.counts(ids, exclude_terminating=exclude)
    assert got.dtype == np.int64 and got.shape == (cache.nodes.n_rows,)
    assert np.array_equal(got, brute_force(cache, ns, sel, exclude))
    # Every live set the selector matches is in the answer (no stale memo).
    live = {
        sid
        for sid in range(ls.n_ids)
        if ls.pod_count[sid] and sel is not None and ls.set_matches(sid, sel, ns)
    }
    assert live <= set(ids)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(ops, max_size=60),
    st.sampled_from([0, labelsets.MIN_DENSE_ROWS]),
    st.sampled_from([2, labelsets.LOG_SLACK]),
    st.sampled_from([2, labelsets.MEMO_LIMIT]),
)
def test_label_sets_match_a_recount(
    events: list[tuple], dense_rows: int, log_slack: int, memo_limit: int
) -> None:
    saved = labelsets.MIN_DENSE_ROWS, labelsets.LOG_SLACK, labelsets.MEMO_LIMIT
    labelsets.MIN_DENSE_ROWS, labelsets.LOG_SLACK, labelsets.MEMO_LIMIT = dense_rows, log_slack, memo_limit
    try:
        run_events(events)
    finally:
        labelsets.MIN_DENSE_ROWS, labelsets.LOG_SLACK, labelsets.MEMO_LIMIT = saved


def run_events(events: list[tuple]) -> None:
    cache = ClusterCache(node_capacity=1)
    queried: list[tuple] = []
    for ev in events:
        kind = ev[0]
        if kind == "add_node":
            cache.add_node(node(ev[1]))
        elif kind == "remove_node":
            cache.remove_node(ev[1])
        elif kind == "add_pod":  # add, update (labels / node / deleting / affinity) or confirm
            cache.add_pod(pod(ev[1], ev[2], ev[3], deleting=ev[4], affinity=ev[5]))
        elif kind == "assume":
            if uid(ev[1]) not in cache:
                cache.assume(pod(ev[1], "", ev[3], affinity=ev[4]), ev[2])
        elif kind == "forget":
            if cache.is_assumed(uid(ev[1])):
                cache.forget(uid(ev[1]))
        elif kind == "remove_pod":
            cache.remove_pod(uid(ev[1]))
        else:
            queried.append(ev[1:])
            check_query(cache, *ev[1:])
        check_recount(cache)
    for q in queried:  # memoized earlier, possibly before their sets existed
        check_query(cache, *q)
        check_query(cache, q[0], q[1], not q[2])
