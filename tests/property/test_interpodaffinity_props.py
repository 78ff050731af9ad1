"""InterPodAffinity: the vectorized plugin equals a deliberately simple per-pod, per-node reference.

The reference below follows upstream's ``filtering.go`` / ``scoring.go`` literally: it walks every
existing pod and every term, fills ``map[(topologyKey, value)]count`` dictionaries and checks each
node on its own. It is written for clarity and used only here. Random clusters draw node labels
(zone, region, hostname, each maybe absent), namespaces with labels (and pods in namespaces the
cache does not know), pods on nodes that are not in the table, and random terms: selectors with
every operator, nil and empty selectors, namespace lists and selectors, topology keys no node has,
weights, ``hardPodAffinityWeight`` and ``ignorePreferredTermsOfExistingPods``. Both the numpy and
the compiled path are checked, and the compiled domain-total kernel against its numpy reference.

A third test drives the cache through random pod add / update / remove / assume / forget and node
add / remove, and checks that the term index equals a recount from the cache's pod entries.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ksched.cache import affinity_terms as at
from ksched.cache.cluster import ClusterCache
from ksched.config.types import InterPodAffinityArgs
from ksched.framework import kernels
from ksched.framework.interface import Code, CycleState
from ksched.framework.plugins.interpodaffinity import new
from ksched.framework.registry import Handle
from ksched.model.namespace import namespace_from_dict
from ksched.model.node import node_from_dict
from ksched.model.pod import Pod, pod_from_dict
from ksched.model.pod_affinity import PodAffinityTerm, parse_pod_affinity_terms
from tests import builders
from tests.builders import make_node, make_pod

KNOWN_NS = {"default": {"team": "t1"}, "a": {"team": "t2"}, "b": {}}
ALL_NS = ["default", "a", "b", "c"]  # "c" is not known to the cache: it has no labels
TOPOLOGY_KEYS = ["zone", "region", "hostname", "rack"]  # no node has "rack"
POD_LABELS = [{}, {"app": "x"}, {"app": "y"}, {"app": "x", "tier": "1"}, {"tier": "2"}]


# ---------------------------------------------------------------------------------------- strategies
requirement = st.one_of(
    st.builds(
        lambda k, op, vs: {"key": k, "operator": op, "values": vs},
        st.sampled_from(["app", "tier"]),
        st.sampled_from(["In", "NotIn"]),
        st.lists(st.sampled_from(["x", "y", "1", "2"]), min_size=1, max_size=2, unique=True),
    ),
    st.builds(
        lambda k, op: {"key": k, "operator": op},
        st.sampled_from(["app", "tier"]),
        st.sampled_from(["Exists", "DoesNotExist"]),
    ),
)
selector = st.one_of(
    st.none(),
    st.just({}),
    st.builds(lambda e: {"matchExpressions": e}, st.lists(requirement, min_size=1, max_size=2)),
    st.builds(lambda v: {"matchLabels": {"app": v}}, st.sampled_from(["x", "y"])),
)
ns_selector = st.one_of(
    st.none(),
    st.just({}),
    st.sampled_from([{"matchLabels": {"team": "t1"}}, {"matchLabels": {"team": "t2"}}]),
)


@st.composite
def term(draw: Any) -> dict[str, Any]:
    t: dict[str, Any] = {"topologyKey": draw(st.sampled_from(TOPOLOGY_KEYS))}
    sel = draw(selector)
    if sel is not None:
        t["labelSelector"] = sel
    nss = draw(st.one_of(st.none(), st.lists(st.sampled_from(ALL_NS), max_size=2)))
    if nss is not None:
        t["namespaces"] = nss
    nsel = draw(ns_selector)
    if nsel is not None:
        t["namespaceSelector"] = nsel
    return t


def weighted(w: int, t: dict[str, Any]) -> dict[str, Any]:
    return {"weight": w, "podAffinityTerm": t}


@st.composite
def affinity(draw: Any, heavy: bool) -> dict[str, Any] | None:
    if not draw(st.booleans()) and not heavy:
        return None
    size = 2 if heavy else 1
    terms = st.lists(term(), max_size=size)
    wterms = st.lists(st.builds(weighted, st.one_of(st.just(0), st.integers(1, 100)), term()), max_size=size)
    out: dict[str, Any] = {}
    for part, req, pref in (("podAffinity", terms, wterms), ("podAntiAffinity", terms, wterms)):
        r, p = draw(req), draw(pref)
        if r or p or draw(st.booleans()):
            out[part] = {}
            if r:
                out[part]["requiredDuringSchedulingIgnoredDuringExecution"] = r
            if p:
                out[part]["preferredDuringSchedulingIgnoredDuringExecution"] = p
    return out


@st.composite
def scenario(draw: Any) -> dict[str, Any]:
    n_nodes = draw(st.integers(1, 7))
    nodes = []
    for i in range(n_nodes):
        labels = {}
        if draw(st.integers(0, 4)):
            labels["zone"] = f"z{draw(st.integers(0, 2))}"
        if draw(st.integers(0, 3)):
            labels["region"] = f"r{draw(st.integers(0, 1))}"
        if draw(st.integers(0, 4)):
            labels["hostname"] = f"n{i}"
        nodes.append((f"n{i}", labels))
    node_names = [n for n, _ in nodes] + ["ghost"]
    pods = []
    for i in range(draw(st.integers(0, 10))):
        pods.append(
            make_pod(
                f"e{i}",
                namespace=draw(st.sampled_from(ALL_NS)),
                labels=draw(st.sampled_from(POD_LABELS)),
                node_name=draw(st.sampled_from(node_names)),
                affinity=draw(affinity(heavy=False)),
            )
        )
    incoming = make_pod(
        "incoming",
        namespace=draw(st.sampled_from(ALL_NS)),
        labels=draw(st.sampled_from(POD_LABELS)),
        affinity=draw(affinity(heavy=draw(st.booleans()))),
    )
    return {
        "nodes": nodes,
        "pods": pods,
        "incoming": incoming,
        "hard": draw(st.integers(0, 3)),
        "ignore": draw(st.booleans()),
    }


# ---------------------------------------------------------------------------------------- the reference
def incoming_matches(t: PodAffinityTerm, ns: str, labels: Mapping[str, str]) -> bool:
    """An incoming term, its namespaceSelector merged: listed or selected namespace, selected labels."""
    if t.namespace_selector is not None and t.namespace_selector.empty:
        in_ns = True
    else:
        selected = {
            n
            for n, nl in KNOWN_NS.items()
            if t.namespace_selector is not None and t.namespace_selector.matches(nl)
        }
        in_ns = ns in t.namespaces or ns in selected
    return in_ns and t.selector is not None and t.selector.matches(labels)


def terms_of(pod: Pod) -> Any:
    return parse_pod_affinity_terms(pod.affinity, pod.namespace, pod.described)


def reference_filter(incoming: Pod, existing: list[Pod], nodes: dict[str, dict[str, str]]) -> Any:
    """``"skip"``, or per node None / "aff" / "anti" / "existing" (the first check that fails)."""
    mine = terms_of(incoming)
    ns_labels = KNOWN_NS.get(incoming.namespace, {})
    existing_counts: Counter[tuple[str, str]] = Counter()
    aff_counts: Counter[tuple[str, str]] = Counter()
    anti_counts: Counter[tuple[str, str]] = Counter()
    for p in existing:
        node_labels = nodes.get(p.node_name)
        if node_labels is None:
            continue
        for t in terms_of(p).required_anti_affinity:
            if t.matches(incoming.namespace, incoming.labels, ns_labels) and t.topology_key in node_labels:
                existing_counts[(t.topology_key, node_labels[t.topology_key])] += 1
        if mine.required_affinity and all(
            incoming_matches(t, p.namespace, p.labels) for t in mine.required_affinity
        ):
            for t in mine.required_affinity:
                if t.topology_key in node_labels:
                    aff_counts[(t.topology_key, node_labels[t.topology_key])] += 1
        for t in mine.required_anti_affinity:
            if incoming_matches(t, p.namespace, p.labels) and t.topology_key in node_labels:
                anti_counts[(t.topology_key, node_labels[t.topology_key])] += 1
    if not existing_counts and not mine.required_affinity and not mine.required_anti_affinity:
        return "skip"
    out: dict[str, str | None] = {}
    for name, labels in nodes.items():
        verdict = None
        if mine.required_affinity:
            pods_exist, keys_ok = True, True
            for t in mine.required_affinity:
                if t.topology_key not in labels:
                    keys_ok = False
                elif aff_counts[(t.topology_key, labels[t.topology_key])] <= 0:
                    pods_exist = False
            self_match = all(
                incoming_matches(t, incoming.namespace, incoming.labels) for t in mine.required_affinity
            )
            if not keys_ok or (not pods_exist and not (not aff_counts and self_match)):
                verdict = "aff"
        if verdict is None:
            for t in mine.required_anti_affinity:
                if t.topology_key in labels and anti_counts[(t.topology_key, labels[t.topology_key])] > 0:
                    verdict = "anti"
        if verdict is None and any(existing_counts[kv] > 0 for kv in labels.items()):
            verdict = "existing"
        out[name] = verdict
    return out


def reference_scores(
    incoming: Pod, existing: list[Pod], nodes: dict[str, dict[str, str]], hard: int, ignore: bool
) -> Any:
    """``"skip"``, or the normalized score of every node (all nodes are scored)."""
    raw_aff = incoming.affinity
    has_constraints = any(
        isinstance(raw_aff.get(part), dict)
        and raw_aff[part].get("preferredDuringSchedulingIgnoredDuringExecution")
        for part in ("podAffinity", "podAntiAffinity")
    )
    if ignore and not has_constraints:
        return "skip"
    mine = terms_of(incoming)
    ns_labels = KNOWN_NS.get(incoming.namespace, {})
    topo: dict[str, dict[str, int]] = defaultdict(dict)

    def add(key: str, labels: Mapping[str, str], amount: int) -> None:
        if key in labels:
            topo[key][labels[key]] = topo[key].get(labels[key], 0) + amount

    for p in existing:
        labels = nodes.get(p.node_name)
        if not labels:
            continue
        theirs = terms_of(p)
        for wt in mine.preferred_affinity:
            if incoming_matches(wt.term, p.namespace, p.labels):
                add(wt.term.topology_key, labels, wt.weight)
        for wt in mine.preferred_anti_affinity:
            if incoming_matches(wt.term, p.namespace, p.labels):
                add(wt.term.topology_key, labels, -wt.weight)
        if hard > 0:
            for t in theirs.required_affinity:
                if t.matches(incoming.namespace, incoming.labels, ns_labels):
                    add(t.topology_key, labels, hard)
        for wt in theirs.preferred_affinity:
            if wt.term.matches(incoming.namespace, incoming.labels, ns_labels):
                add(wt.term.topology_key, labels, wt.weight)
        for wt in theirs.preferred_anti_affinity:
            if wt.term.matches(incoming.namespace, incoming.labels, ns_labels):
                add(wt.term.topology_key, labels, -wt.weight)
    if not topo:
        return "skip"
    raw = {
        name: sum(values.get(labels[key], 0) for key, values in topo.items() if key in labels)
        for name, labels in nodes.items()
    }
    lo, hi = min(raw.values()), max(raw.values())
    return {name: int(100.0 * ((s - lo) / (hi - lo))) if hi > lo else 0 for name, s in raw.items()}


# ---------------------------------------------------------------------------------------- the checks
def build(s: dict[str, Any]) -> tuple[ClusterCache, list[Pod]]:
    cache = ClusterCache()
    for name, labels in KNOWN_NS.items():
        cache.set_namespace(namespace_from_dict({"metadata": {"name": name, "labels": labels}}))
    for name, labels in s["nodes"]:
        cache.add_node(builders.node(name, labels=labels))
    existing = [pod_from_dict(p) for p in s["pods"]]
    for p in existing:
        cache.add_pod(p)
    return cache, existing


def vectorized(s: dict[str, Any], cache: ClusterCache) -> tuple[Any, Any]:
    plugin = new(
        InterPodAffinityArgs(
            hard_pod_affinity_weight=s["hard"], ignore_preferred_terms_of_existing_pods=s["ignore"]
        ),
        Handle("p"),
    )
    incoming = pod_from_dict(s["incoming"])
    names = [n for n, _ in s["nodes"]]
    rows = [cache.nodes.row_of[n] for n in names]
    state = CycleState()
    _, pre = plugin.pre_filter(state, incoming, cache)
    if pre.code == Code.SKIP:
        filtered: Any = "skip"
    else:
        assert pre.ok, pre
        fr = plugin.filter(state, incoming, cache)
        kinds = {0: "aff", 1: "anti", 2: "existing"}
        filtered = {}
        for name, row in zip(names, rows, strict=True):
            bits = 0 if fr.failed is None else int(fr.failed[row])
            assert bits & (bits - 1) == 0, "a row carries one reason"
            filtered[name] = None if bits == 0 else kinds[bits.bit_length() - 1]
    feasible = cache.nodes.valid[: cache.nodes.n_rows].copy()
    status = plugin.pre_score(state, incoming, cache, feasible)
    if status.code == Code.SKIP:
        scored: Any = "skip"
    else:
        assert status.ok, status
        raw = plugin.score(state, incoming, cache, feasible)
        norm = np.broadcast_to(
            np.asarray(plugin.normalize_score(state, incoming, raw, feasible)), (len(feasible),)
        )
        scored = {name: int(norm[row]) for name, row in zip(names, rows, strict=True)}
    return filtered, scored


@pytest.mark.parametrize("path", ["numpy", "compiled"])
@settings(max_examples=150, deadline=None)
@given(s=scenario())
def test_vectorized_equals_simple_reference(path: str, s: dict[str, Any]) -> None:
    if path == "compiled" and kernels.compiled() is None:
        pytest.skip("compiled kernels are not built")
    kernels.use_compiled(path == "compiled")
    try:
        cache, existing = build(s)
        incoming = pod_from_dict(s["incoming"])
        nodes = dict(s["nodes"])
        got_filter, got_scores = vectorized(s, cache)
        assert got_filter == reference_filter(incoming, existing, nodes)
        assert got_scores == reference_scores(incoming, existing, nodes, s["hard"], s["ignore"])
    finally:
        kernels.use_compiled(True)


@settings(max_examples=200, deadline=None)
@given(
    col=st.lists(st.integers(-1, 12), min_size=0, max_size=60),
    data=st.data(),
)
def test_domain_totals_kernel_equals_numpy(col: list[int], data: Any) -> None:
    kernels.use_compiled(True)
    if kernels.extra_module("affinity") is None:
        pytest.skip("compiled affinity kernels are not built")
    w = data.draw(st.lists(st.integers(-(10**6), 10**6), min_size=len(col), max_size=len(col) + 3))
    c = np.asarray(col, dtype=np.int32)
    weights = np.asarray(w, dtype=np.int64)
    want = kernels.affinity_domain_totals_ref(c, weights)
    got = kernels.affinity_domain_totals(c, weights)
    assert got.dtype == np.int64 and np.array_equal(got, want)


def test_domain_totals_long_enough_to_release_the_gil_equals_numpy() -> None:
    """From GIL_KEPT_BELOW_ROWS rows on the kernel releases the GIL: same totals there too."""
    kernels.use_compiled(True)
    if kernels.extra_module("affinity") is None:
        pytest.skip("compiled affinity kernels are not built")
    from ksched._fast import kernels as fast

    rng = np.random.default_rng(3)
    n = fast.GIL_KEPT_BELOW_ROWS + 3
    c = rng.integers(-1, 50, size=n).astype(np.int32)
    weights = rng.integers(-(10**6), 10**6, size=n).astype(np.int64)
    want = kernels.affinity_domain_totals_ref(c, weights)
    assert np.array_equal(kernels.affinity_domain_totals(c, weights), want)


# ---------------------------------------------------------------------------------------- incremental
OPS = st.lists(
    st.tuples(
        st.sampled_from(["add", "add", "assume", "forget", "remove", "node_add", "node_remove"]),
        st.integers(0, 5),  # pod index
        st.integers(0, 3),  # node index (3: a node never added)
        st.integers(0, 2),  # affinity choice
    ),
    max_size=40,
)
AFFINITIES: list[dict[str, Any] | None] = [
    None,
    {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "zone"}
            ]
        }
    },
    {
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                weighted(3, {"labelSelector": {}, "topologyKey": "hostname"}),
                weighted(3, {"labelSelector": {}, "topologyKey": "hostname"}),
            ],
            "requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {}, "topologyKey": "zone"}],
        }
    },
]


def recount(cache: ClusterCache) -> dict[tuple[int, Any], dict[int, int]]:
    want: dict[tuple[int, Any], Counter[int]] = defaultdict(Counter)
    for entry in cache.pods.values():
        if entry.row < 0:
            continue
        parsed = parse_pod_affinity_terms(entry.pod.affinity, entry.pod.namespace, entry.pod.described)
        for t in parsed.required_affinity:
            want[(at.REQUIRED_AFFINITY, (t, 1))][entry.row] += 1
        for t in parsed.required_anti_affinity:
            want[(at.REQUIRED_ANTI_AFFINITY, (t, 1))][entry.row] += 1
        for w in parsed.preferred_affinity:
            want[(at.PREFERRED_AFFINITY, (w.term, w.weight))][entry.row] += 1
        for w in parsed.preferred_anti_affinity:
            want[(at.PREFERRED_ANTI_AFFINITY, (w.term, w.weight))][entry.row] += 1
    return {k: {r: c for r, c in v.items() if c} for k, v in want.items() if any(v.values())}


def index_counts(cache: ClusterCache) -> dict[tuple[int, Any], dict[int, int]]:
    got = {}
    n = cache.nodes.n_rows
    for kind in at.KINDS:
        for key, rc in cache.affinity_terms.terms(kind).items():
            arr = np.zeros(n, dtype=np.int64)
            rc.add_into(arr)
            got[(kind, key)] = {int(r): int(arr[r]) for r in np.flatnonzero(arr)}
    return got


@settings(max_examples=150, deadline=None)
@given(ops=OPS)
def test_term_index_equals_recount_after_any_event_sequence(ops: list[tuple[str, int, int, int]]) -> None:
    cache = ClusterCache(node_capacity=2)  # small, so rows grow and counts turn dense
    node_names = [f"n{i}" for i in range(4)]
    for op, pi, ni, ai in ops:
        name = f"p{pi}"
        uid = f"uid-{name}"
        raw = make_pod(name, uid=uid, labels={"app": "x"}, node_name=node_names[ni], affinity=AFFINITIES[ai])
        if op == "add":
            cache.add_pod(pod_from_dict(raw))
        elif op == "assume" and uid not in cache:
            raw["spec"].pop("nodeName")
            cache.assume(pod_from_dict(raw), node_names[ni])
        elif op == "forget" and cache.is_assumed(uid):
            cache.forget(uid)
        elif op == "remove":
            cache.remove_pod(uid)
        elif op == "node_add" and ni < 3:
            cache.add_node(
                node_from_dict(
                    make_node(node_names[ni], labels={"zone": f"z{ni}", "hostname": node_names[ni]})
                )
            )
        elif op == "node_remove":
            cache.remove_node(node_names[ni])
        assert index_counts(cache) == recount(cache)
