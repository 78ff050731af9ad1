"""PodTopologySpread: the vectorized plugin equals a simple per-node reference on random clusters.

Random nodes (zone / hostname / rack labels present, absent, empty or shared; taints), random bound
pods (namespaces, labels, terminating), and a random incoming pod (namespace, labels, nodeSelector,
tolerations, one to three constraints with random keys, maxSkew, minDomains, policies, selectors
and matchLabelKeys). Filter reasons and normalized scores must equal
``tests/property/podtopologyspread_reference.py`` exactly, on the compiled and the numpy path.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ksched.framework import kernels
from ksched.framework.interface import Code, CycleState
from ksched.framework.plugins.podtopologyspread import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    PodTopologySpread,
)
from ksched.framework.plugins.podtopologyspread.constraints import parse_pod_constraints
from ksched.model.pod import Pod
from tests.builders import cluster_of, make_node, make_pod
from tests.property.podtopologyspread_reference import (
    UNRESOLVABLE,
    UNSCHEDULABLE,
    World,
    filter_reference,
    score_reference,
)

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
RACK = "rack"
KEYS = [ZONE, HOST, RACK]
NAMESPACES = ["default", "team"]
POD_LABELS = [{}, {"app": "a"}, {"app": "b"}, {"app": "a", "v": "1"}, {"app": "a", "v": "2"}, {"v": "1"}]
SELECTORS: list[Any] = [
    None,
    {},
    {"matchLabels": {"app": "a"}},
    {"matchLabels": {"app": "b"}},
    {"matchExpressions": [{"key": "app", "operator": "In", "values": ["a", "b"]}]},
    {"matchExpressions": [{"key": "v", "operator": "Exists"}]},
    {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["a"]}]},
]
TAINTS = [
    [],
    [{"key": "t", "value": "1", "effect": "NoSchedule"}],
    [{"key": "u", "value": "", "effect": "NoExecute"}],
]


@st.composite
def node_dicts(draw: st.DrawFn, i: int) -> dict[str, Any]:
    labels: dict[str, str] = {}
    zone = draw(st.sampled_from(["z0", "z1", "z2", "", None]))
    if zone is not None:
        labels[ZONE] = zone
    host = draw(st.sampled_from([f"n{i}", f"n{i}", "shared", None]))
    if host is not None:
        labels[HOST] = host
    rack = draw(st.sampled_from(["r0", "r1", None]))
    if rack is not None:
        labels[RACK] = rack
    if draw(st.booleans()):
        labels["disk"] = draw(st.sampled_from(["ssd", "hdd"]))
    return make_node(f"n{i}", labels=labels, taints=draw(st.sampled_from(TAINTS)))


@st.composite
def constraint_dicts(draw: st.DrawFn) -> dict[str, Any]:
    c: dict[str, Any] = {
        "maxSkew": draw(st.integers(1, 3)),
        "topologyKey": draw(st.sampled_from(KEYS)),
        "whenUnsatisfiable": draw(st.sampled_from(["DoNotSchedule", "ScheduleAnyway"])),
    }
    sel = draw(st.sampled_from(SELECTORS))
    if sel is not None:
        c["labelSelector"] = sel
    if draw(st.booleans()):
        c["minDomains"] = draw(st.integers(1, 4))
    for name in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
        policy = draw(st.sampled_from([None, "Honor", "Ignore"]))
        if policy is not None:
            c[name] = policy
    if draw(st.integers(0, 3)) == 0:
        c["matchLabelKeys"] = draw(st.sampled_from([["v"], ["app"], ["app", "v"]]))
    return c


@st.composite
def scenarios(
    draw: st.DrawFn,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any], list[bool]]:
    n = draw(st.integers(1, 10))
    nodes = [draw(node_dicts(i)) for i in range(n)]
    pods = []
    for j in range(draw(st.integers(0, 25))):
        p = make_pod(
            f"p{j}",
            namespace=draw(st.sampled_from(NAMESPACES)),
            labels=draw(st.sampled_from(POD_LABELS)),
            node_name=f"n{draw(st.integers(0, n - 1))}",
            terminating=draw(st.integers(0, 5)) == 0,
        )
        pods.append(p)
    # constraints: distinct (key, action) pairs, as the API server demands
    raw = draw(st.lists(constraint_dicts(), min_size=1, max_size=3))
    seen: set[tuple[str, str]] = set()
    constraints = []
    for c in raw:
        k = (c["topologyKey"], c["whenUnsatisfiable"])
        if k not in seen:
            seen.add(k)
            constraints.append(c)
    kwargs: dict[str, Any] = {}
    if draw(st.booleans()):
        kwargs["node_selector"] = {"disk": "ssd"}
    if draw(st.booleans()):
        kwargs["tolerations"] = [{"key": "t", "operator": "Exists", "value": "", "effect": ""}]
    incoming = make_pod(
        "incoming",
        namespace=draw(st.sampled_from(NAMESPACES)),
        labels=draw(st.sampled_from(POD_LABELS)),
        topologySpreadConstraints=constraints,
        **kwargs,
    )
    feasible = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return nodes, pods, incoming, feasible


def _world(cluster: Any) -> World:
    nodes = [cluster.nodes.nodes[r] for r in range(cluster.nodes.n_rows)]
    pods_on: dict[str, list[Pod]] = {}
    for entry in cluster.pods.values():
        pods_on.setdefault(entry.node_name, []).append(entry.pod)
    return World([n for n in nodes if n is not None], pods_on)


def _check(scenario: tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any], list[bool]]) -> None:
    from ksched.model.pod import pod_from_dict

    nodes, pods, incoming_raw, feasible_flags = scenario
    cluster = cluster_of(nodes, pods)
    pod = pod_from_dict(incoming_raw)
    plugin = PodTopologySpread()
    own = parse_pod_constraints(pod)
    world = _world(cluster)

    state = CycleState()
    _, status = plugin.pre_filter(state, pod, cluster)
    if own.hard:
        assert status.ok
        result = plugin.filter(state, pod, cluster)
        want = filter_reference(world, pod, own.hard)
        for name, verdict in want.items():
            reasons, code = result.reasons_at(cluster.nodes.row_of[name])
            if verdict is None:
                assert reasons == [], name
            elif verdict == UNRESOLVABLE:
                assert (reasons, code) == (
                    [ERR_REASON_NODE_LABEL_NOT_MATCH],
                    Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                )
            else:
                assert verdict == UNSCHEDULABLE
                assert (reasons, code) == ([ERR_REASON_CONSTRAINTS_NOT_MATCH], Code.UNSCHEDULABLE), name
    else:
        assert status.code == Code.SKIP

    n = cluster.nodes.n_rows
    feasible = np.zeros(n, dtype=np.bool_)
    names = []
    for i, flag in enumerate(feasible_flags):
        if flag:
            feasible[cluster.nodes.row_of[f"n{i}"]] = True
            names.append(f"n{i}")
    status = plugin.pre_score(state, pod, cluster, feasible)
    if not own.soft:
        assert status.code == Code.SKIP
        return
    raw = plugin.score(state, pod, cluster, feasible)
    got = plugin.normalize_score(state, pod, raw, feasible)
    want_scores = score_reference(world, pod, own.soft, names, require_all=True)
    assert isinstance(got, np.ndarray)
    assert {name: int(got[cluster.nodes.row_of[name]]) for name in names} == want_scores


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_vectorized_equals_reference_numpy(scenario: Any) -> None:
    kernels.use_compiled(False)
    try:
        _check(scenario)
    finally:
        kernels.use_compiled(True)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_vectorized_equals_reference_compiled(scenario: Any) -> None:
    kernels.use_compiled(True)
    _check(scenario)


# ----------------------------------------------------------------------------- compiled == numpy kernels
@st.composite
def columns(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    n = draw(st.integers(0, 60))
    n_values = draw(st.integers(1, 12))
    col = np.array(draw(st.lists(st.integers(-1, n_values - 1), min_size=n, max_size=n)), dtype=np.int32)
    rows = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=np.bool_)
    counts = np.array(draw(st.lists(st.integers(0, 1000), min_size=n, max_size=n)), dtype=np.int64)
    return col, rows, counts, n_values


def _fast() -> Any:
    from ksched._fast import spread

    return spread


@settings(max_examples=300, deadline=None)
@given(columns())
def test_domain_sums_kernel_equals_reference(data: tuple[np.ndarray, np.ndarray, np.ndarray, int]) -> None:
    _check_domain_sums(data)


def _check_domain_sums(data: tuple[np.ndarray, np.ndarray, np.ndarray, int]) -> None:
    col, rows, counts, n_values = data
    sums, domains, low = _fast().domain_sums(col, rows.view(np.uint8), counts, n_values)
    want_sums, want_domains, want_low = kernels.spread_domain_sums_ref(col, rows, counts, n_values)
    assert np.array_equal(sums, want_sums) and sums.dtype == want_sums.dtype
    assert (domains, low) == (want_domains, want_low)


@settings(max_examples=300, deadline=None)
@given(columns(), st.integers(-5, 5), st.integers(1, 4), st.data())
def test_filter_pass_kernel_equals_reference(
    data: tuple[np.ndarray, np.ndarray, np.ndarray, int], offset: int, max_skew: int, more: st.DataObject
) -> None:
    n = data[0].shape[0]
    undecided = np.array(more.draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=np.uint8)
    bits = np.array(more.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), dtype=np.uint64)
    _check_filter_pass(data, offset, max_skew, undecided, bits)


def _check_filter_pass(
    data: tuple[np.ndarray, np.ndarray, np.ndarray, int],
    offset: int,
    max_skew: int,
    undecided: np.ndarray,
    bits: np.ndarray,
) -> None:
    col, rows, counts, n_values = data
    sums, _, _ = kernels.spread_domain_sums_ref(col, rows, counts, n_values)
    u1, b1 = undecided.copy(), bits.copy()
    _fast().filter_pass(col, sums, offset, max_skew, u1, b1)
    u2, b2 = undecided.copy(), bits.copy()
    kernels.spread_filter_pass_ref(col, sums, offset, max_skew, u2, b2)
    assert np.array_equal(u1, u2) and np.array_equal(b1, b2)


@settings(max_examples=300, deadline=None)
@given(columns(), st.booleans(), st.floats(1.0, 9.0), st.integers(0, 6))
def test_score_round_normalize_kernels_equal_reference(
    data: tuple[np.ndarray, np.ndarray, np.ndarray, int], by_row: bool, weight: float, addend: int
) -> None:
    _check_score_round_normalize(data, by_row, weight, addend)


def _check_score_round_normalize(
    data: tuple[np.ndarray, np.ndarray, np.ndarray, int], by_row: bool, weight: float, addend: int
) -> None:
    col, rows, counts, n_values = data
    values = counts if by_row else kernels.spread_domain_sums_ref(col, rows, counts, n_values)[0]
    t1 = np.zeros(col.shape[0], dtype=np.float64)
    t2 = t1.copy()
    _fast().score_pass(col, values, by_row, weight, float(addend), t1)
    kernels.spread_score_pass_ref(col, values, by_row, weight, float(addend), t2)
    assert np.array_equal(t1, t2)  # bit-identical floats
    r1 = _fast().round_scores(t1)
    assert np.array_equal(r1, kernels.spread_round_ref(t2))
    ignored = ~rows & (col < 0)
    got = _fast().normalize(r1, rows.view(np.uint8), ignored.view(np.uint8))
    assert np.array_equal(got, kernels.spread_normalize_ref(r1, rows, ignored))


def test_kernels_long_enough_to_release_the_gil_equal_reference() -> None:
    """The kernels release the GIL only from GIL_KEPT_BELOW_ROWS rows on (the columns above are
    short): on a column that long they still give the references' answers."""
    rng = np.random.default_rng(7)
    n, n_values = _fast_kernels().GIL_KEPT_BELOW_ROWS + 3, 40
    col = rng.integers(-1, n_values, size=n).astype(np.int32)
    rows = rng.random(n) < 0.7
    counts = rng.integers(0, 1000, size=n).astype(np.int64)
    data = (col, rows, counts, n_values)
    _check_domain_sums(data)
    undecided = (rng.random(n) < 0.6).astype(np.uint8)
    _check_filter_pass(data, 2, 3, undecided, rng.integers(0, 4, size=n).astype(np.uint64))
    for by_row in (False, True):
        _check_score_round_normalize(data, by_row, 2.5, 3)


def _fast_kernels() -> Any:
    from ksched._fast import kernels as fast

    return fast


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 2**40), min_size=1, max_size=40), st.data())
def test_normalize_kernel_exact_for_large_scores(raw_list: list[int], more: st.DataObject) -> None:
    """The reciprocal-and-correct quotient equals integer division even for large raw scores."""
    raw = np.array(raw_list, dtype=np.int64)
    n = raw.shape[0]
    feasible = np.array(more.draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=np.bool_)
    ignored = np.zeros(n, dtype=np.bool_)
    got = _fast().normalize(raw, feasible.view(np.uint8), ignored.view(np.uint8))
    assert np.array_equal(got, kernels.spread_normalize_ref(raw, feasible, ignored))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.sampled_from(["a", "b"]), st.booleans())
def test_system_defaults_equal_reference(scenario: Any, app: str, compiled: bool) -> None:
    """A pod without constraints, selected by a Service: the system defaults (hostname maxSkew 3,
    zone maxSkew 5, ScheduleAnyway) score like the reference, nodes without a zone included."""
    from ksched.framework.plugins.podtopologyspread.constraints import (
        SYSTEM_DEFAULT_CONSTRAINTS,
        parse_default_constraints,
        with_selector,
    )
    from ksched.model.pod import pod_from_dict
    from ksched.model.workloads import service_from_dict

    kernels.use_compiled(compiled)
    try:
        nodes, pods, incoming_raw, feasible_flags = scenario
        cluster = cluster_of(nodes, pods)
        for ns in NAMESPACES:
            svc = {"metadata": {"name": "s", "namespace": ns}, "spec": {"selector": {"app": app}}}
            cluster.selector_owners.upsert(service_from_dict(svc))
        incoming_raw["spec"]["topologySpreadConstraints"] = []
        pod = pod_from_dict(incoming_raw)
        defaults = parse_default_constraints(SYSTEM_DEFAULT_CONSTRAINTS)
        plugin = PodTopologySpread(defaults, system_defaulted=True)
        n = cluster.nodes.n_rows
        feasible = np.zeros(n, dtype=np.bool_)
        names = []
        for i, flag in enumerate(feasible_flags):
            if flag:
                feasible[cluster.nodes.row_of[f"n{i}"]] = True
                names.append(f"n{i}")
        state = CycleState()
        status = plugin.pre_score(state, pod, cluster, feasible)
        if pod.labels.get("app") != app:
            assert status.code == Code.SKIP
            return
        assert status.ok
        got = plugin.normalize_score(state, pod, plugin.score(state, pod, cluster, feasible), feasible)
        selector = cluster.selector_owners.default_selector(pod.namespace, pod.labels, None)
        assert selector is not None
        want = score_reference(
            _world(cluster), pod, with_selector(defaults, selector, pod.labels), names, require_all=False
        )
        assert {name: int(got[cluster.nodes.row_of[name]]) for name in names} == want
    finally:
        kernels.use_compiled(True)
