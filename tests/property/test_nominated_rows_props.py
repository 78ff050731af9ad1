"""The nominated-pods pass on a few rows equals upstream's node-by-node two-pass rule.

When every filter that runs either never looks at the pods on a node (NodeUnschedulable,
TaintToleration, NodeAffinity, NodeName) or can answer for a handful of rows (``filter_rows``:
NodeResourcesFit, NodePorts), the runtime re-asks only those rows with the nominated pods counted.
The reference is upstream's ``RunFilterPluginsWithNominatedPods`` written out node by node on the
same default profile with Fit and NodePorts wrapped so that they cannot answer for a few rows:
each node with nominated pods is filtered with them assumed there and, when that passes, without
them. Both must give the same feasible rows, the same first failure (plugin, reasons, code) per row
(the pass with nominated pods speaks first) and the same reason histogram, and leave the cache
exactly as they found it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from ksched.cache.cluster import ClusterCache
from ksched.config import default_config
from ksched.framework.interface import CycleState, FilterResult, PreFilterResult, Status
from ksched.framework.messages import reason_histogram
from ksched.framework.profile import build_profiles
from ksched.framework.runtime import Framework
from ksched.model.pod import Pod
from ksched.scheduler.queue.nominator import Nominator
from tests.builders import cluster_of, container, make_node, make_pod, pod
from tests.unit.framework.test_nominated_filter import assert_same, snapshot

N_NODES = 6
DONGLE = "example.com/dongle"


class WholePass:
    """A filter without ``filter_rows``: the nominated pass must re-run the whole profile."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.row_local = True

    def pre_filter(
        self, state: CycleState, pod: Pod, cluster: ClusterCache
    ) -> tuple[PreFilterResult | None, Status]:
        return self.inner.pre_filter(state, pod, cluster)  # type: ignore[no-any-return]

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterCache) -> FilterResult:
        return self.inner.filter(state, pod, cluster)  # type: ignore[no-any-return]


def frameworks() -> tuple[Framework, Framework]:
    """(the default profile, the same with Fit and NodePorts answering only for every row)."""
    fast = build_profiles(default_config(), seed=0)["default-scheduler"]
    slow = build_profiles(default_config(), seed=0)["default-scheduler"]
    wrap = {"NodeResourcesFit", "NodePorts"}
    wrapped = {p.name: WholePass(p) for p in slow.filter_plugins if p.name in wrap}
    slow.filter_plugins = [wrapped.get(p.name, p) for p in slow.filter_plugins]
    slow.pre_filter_plugins = [wrapped.get(p.name, p) for p in slow.pre_filter_plugins]
    rebuilt = Framework(
        slow.profile,
        pre_filter=slow.pre_filter_plugins,
        filters=slow.filter_plugins,
        pre_score=slow.pre_score_plugins,
        scores=slow.score_plugins,
        rng=np.random.default_rng(0),
    )
    return fast, rebuilt


# (cpu millis, memory Mi, dongles, host port or 0)
shape_st = st.tuples(
    st.sampled_from([0, 100, 500, 1000, 1500]),
    st.sampled_from([0, 256, 1024, 3072]),
    st.sampled_from([0, 0, 1]),
    st.sampled_from([0, 0, 0, 80, 443]),
)
running_st = st.lists(st.tuples(st.integers(0, N_NODES - 1), shape_st), max_size=14)
nominated_st = st.lists(
    st.tuples(st.integers(0, N_NODES - 1), st.sampled_from([0, 5, 10, 100]), shape_st), max_size=10
)
nodes_st = st.lists(
    st.tuples(
        st.sampled_from(["1", "2", "4"]),
        st.sampled_from(["2Gi", "4Gi"]),
        st.integers(1, 5),
        st.sampled_from([0, 0, 1, 2]),
        st.booleans(),
    ),
    min_size=N_NODES,
    max_size=N_NODES,
)


def _container(shape: tuple[int, int, int, int]) -> dict[str, Any]:
    cpu, mem, dongles, port = shape
    req: dict[str, str] = {}
    if cpu:
        req["cpu"] = f"{cpu}m"
    if mem:
        req["memory"] = f"{mem}Mi"
    if dongles:
        req[DONGLE] = str(dongles)
    return container(requests=req, host_ports=[("TCP", "", port)] if port else [])


def _cache(nodes: list[tuple[str, str, int, int, bool]], running: list[Any]) -> ClusterCache:
    raw_nodes = []
    for i, (cpu, mem, pods, dongles, cordoned) in enumerate(nodes):
        alloc = {DONGLE: str(dongles)} if dongles else None
        raw = make_node(f"n{i}", cpu=cpu, memory=mem, pods=pods, allocatable=alloc)
        if cordoned:
            raw["spec"]["unschedulable"] = True
        raw_nodes.append(raw)
    raw_pods = [
        make_pod(f"r{k}", uid=f"r{k}", node_name=f"n{n}", containers=[_container(shape)])
        for k, (n, shape) in enumerate(running)
    ]
    return cluster_of(raw_nodes, raw_pods)


def _scenario(
    nodes: list[tuple[str, str, int, int, bool]],
    running: list[Any],
    nominated: list[Any],
    incoming: tuple[int, int, int, int],
    prio: int,
) -> tuple[ClusterCache, Nominator, Pod]:
    """The cache, the nominations and the incoming pod that the strategies describe."""
    cache = _cache(nodes, running)
    nom = Nominator()
    for k, (n, pr, shape) in enumerate(nominated):
        nom.add(pod(name=f"m{k}", uid=f"m{k}", priority=pr, containers=[_container(shape)]), f"n{n}")
    return cache, nom, pod(name="in", uid="in", priority=prio, containers=[_container(incoming)])


def _upstream(fw: Framework, p: Pod, cache: ClusterCache, nom: Nominator) -> tuple[np.ndarray, list[Any]]:
    """Upstream's ``RunFilterPluginsWithNominatedPods``, node by node: with the node's nominated
    pods (priority >= the pod's, not the pod, not in the cache) assumed there, then, if that
    passed, without them. Returns the feasible rows and each row's first failure."""
    without = fw.run_filter_plugins_with_nominated_pods(p, cache)
    n = cache.nodes.n_rows
    feasible = without.feasible.copy()
    firsts = [without.first_failure(r) for r in range(n)]
    for name in list(cache.nodes.row_of):
        row = cache.nodes.row_of[name]
        pods = [
            q
            for q in nom.pods_for_node(name)
            if q.uid != p.uid and q.priority >= p.priority and q.uid not in cache
        ]
        if not pods:
            continue
        for q in pods:
            cache.assume(q, name)
        try:
            with_them = fw.run_filter_plugins_with_nominated_pods(p, cache)
        finally:
            for q in reversed(pods):
                cache.forget(q.uid)
        first = with_them.first_failure(row)
        if first is not None:
            firsts[row] = first
            feasible[row] = False
    return feasible, firsts


@settings(max_examples=200, deadline=None)
@example(  # n0 fails without its nominated pod (cpu) and with it for more (cpu and memory)
    nodes=[("1", "2Gi", 5, 0, False)] * N_NODES,
    running=[(0, (1000, 0, 0, 0))],
    nominated=[(0, 100, (0, 3072, 0, 0))],
    incoming=(100, 1024, 0, 0),
    prio=0,
)
@example(  # n1 fails on Fit without its nominated pod and on NodePorts (earlier) with it
    nodes=[("1", "2Gi", 5, 0, False)] * N_NODES,
    running=[(1, (1000, 0, 0, 0))],
    nominated=[(1, 10, (0, 0, 0, 80))],
    incoming=(500, 0, 0, 80),
    prio=5,
)
@given(
    nodes=nodes_st,
    running=running_st,
    nominated=nominated_st,
    incoming=shape_st,
    prio=st.sampled_from([0, 5, 10]),
)
def test_nominated_rows_pass_equals_upstream_node_by_node(
    nodes: list[tuple[str, str, int, int, bool]],
    running: list[Any],
    nominated: list[Any],
    incoming: tuple[int, int, int, int],
    prio: int,
) -> None:
    cache, nom, p = _scenario(nodes, running, nominated, incoming, prio)
    fast, slow = frameworks()
    before = snapshot(cache)
    got = fast.run_filter_plugins_with_nominated_pods(p, cache, nominated=nom)
    assert_same(before, snapshot(cache))
    feasible, firsts = _upstream(slow, p, cache, nom)
    assert_same(before, snapshot(cache))
    assert np.array_equal(got.feasible, feasible)
    n = cache.nodes.n_rows
    assert [got.first_failure(r) for r in range(n)] == firsts
    want: dict[str, int] = {}
    for r in range(n):
        if firsts[r] is not None and not feasible[r]:
            for reason in firsts[r][1]:
                want[reason] = want.get(reason, 0) + 1
    assert reason_histogram(got) == want
    event(f"feasible rows: {int(np.count_nonzero(got.feasible))}")


@settings(max_examples=150, deadline=None)
@example(  # six equal nodes tie; the pass with nominated pods drops n0, the first tie
    nodes=[("2", "4Gi", 5, 0, False)] * N_NODES,
    running=[],
    nominated=[(0, 100, (1500, 0, 0, 0))],
    incoming=(1000, 0, 0, 0),
    prio=0,
)
@example(  # ... and here n2, a tie in the middle
    nodes=[("2", "4Gi", 5, 0, False)] * N_NODES,
    running=[],
    nominated=[(2, 100, (1500, 0, 0, 0))],
    incoming=(1000, 0, 0, 0),
    prio=0,
)
@given(
    nodes=nodes_st,
    running=running_st,
    nominated=nominated_st,
    incoming=shape_st,
    prio=st.sampled_from([0, 5, 10]),
)
def test_choice_with_nominations_equals_summing_every_row(
    nodes: list[tuple[str, str, int, int, bool]],
    running: list[Any],
    nominated: list[Any],
    incoming: tuple[int, int, int, int],
    prio: int,
) -> None:
    """Rows the nominated-pods pass drops leave the fused sweep's best-row hint usable (when they
    were not its first or last tie); the node chosen must be the one a full sum and scan picks."""
    cache, nom, p = _scenario(nodes, running, nominated, incoming, prio)
    fast, slow = frameworks()  # same seed: the same tie-break draw
    got = fast.schedule_pod(p, cache, nominated=nom)
    want = slow.schedule_pod(p, cache, nominated=nom, explain=True)  # explain: always the full sum and scan
    assert got.status.code == want.status.code
    assert got.selected_node == want.selected_node
    event(f"hint kept: {got.total is None}")
