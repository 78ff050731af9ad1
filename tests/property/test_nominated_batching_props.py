"""Batching with inter-pod filters: the shared filter pass equals the one-row-at-a-time pass.

When InterPodAffinity or PodTopologySpread runs, nominated pods (and preemption victims) that those
plugins would not count (their ``relevance``) are moved in the per-row accounting only and many
rows share one filter pass; the others get a pass of their own through the cache. The reference is
the same profile with those plugins wrapped so that they cannot say which pods they read: then the
runtime takes the per-row path for every nominated row and preemption the node-by-node dry run, as
before batching was allowed. Both must give the same feasible rows, the same first failure (plugin,
reasons, code) per row and the same candidates, and leave the cache as they found it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from ksched.cache.cluster import ClusterCache
from ksched.config.types import DefaultPreemptionArgs
from ksched.framework.interface import CycleState, FilterResult, PreFilterResult, Status
from ksched.framework.messages import reason_histogram
from ksched.framework.plugins import interpodaffinity, podtopologyspread
from ksched.framework.plugins.defaultpreemption import DefaultPreemption
from ksched.framework.plugins.nodeports import new as new_node_ports
from ksched.framework.plugins.noderesources import new_fit
from ksched.framework.registry import Handle
from ksched.framework.runtime import Framework
from ksched.model.pod import Pod, pod_from_dict
from ksched.scheduler.queue.nominator import Nominator
from tests.builders import make_node
from tests.unit.framework.plugins.preemption_support import cluster, vpod
from tests.unit.framework.test_nominated_filter import assert_same, snapshot

N_NODES = 6
KEYS = ("kubernetes.io/hostname", "zone")


class Opaque:
    """A plugin without ``relevance``: every pod counts for it, so nothing is batched past it."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        skips = getattr(inner, "skips_pods_without", None)
        if skips is not None:
            self.skips_pods_without = skips

    def pre_filter(
        self, state: CycleState, pod: Pod, cluster: ClusterCache
    ) -> tuple[PreFilterResult | None, Status]:
        return self.inner.pre_filter(state, pod, cluster)  # type: ignore[no-any-return]

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterCache) -> FilterResult:
        return self.inner.filter(state, pod, cluster)  # type: ignore[no-any-return]


def frameworks(
    args: DefaultPreemptionArgs | None = None, offset: int = 0
) -> tuple[tuple[Framework, DefaultPreemption], tuple[Framework, DefaultPreemption]]:
    """(batching profile, reference profile): Fit, NodePorts, InterPodAffinity, PodTopologySpread."""
    out = []
    for opaque in (False, True):
        h = Handle("default-scheduler", rng=np.random.default_rng(0))
        fit, ports = new_fit(None, h), new_node_ports(None, h)
        ipa: Any = interpodaffinity.new(None, h)
        pts: Any = podtopologyspread.new(None, h)
        if opaque:
            ipa, pts = Opaque(ipa), Opaque(pts)
        plugin = DefaultPreemption(args, h)
        plugin.offset_for = lambda n: offset  # type: ignore[method-assign]
        fw = Framework(
            "default-scheduler",
            pre_filter=[fit, ports, ipa, pts],
            filters=[fit, ports, ipa, pts],
            post_filter=[plugin],
            handle=h,
        )
        out.append((fw, plugin))
    return out[0], out[1]


def _term(app: str, key: int, ns: int) -> dict[str, Any]:
    term: dict[str, Any] = {
        "labelSelector": {"matchLabels": {"app": app}},
        "topologyKey": KEYS[key],
    }
    if ns == 1:
        term["namespaces"] = ["other"]
    elif ns == 2:
        term["namespaceSelector"] = {}
    return term


# One pod's shape: app label, namespace, affinity kind, its app / key / namespaces, spread kind.
shape_st = st.tuples(
    st.sampled_from(["a", "b", "c"]),
    st.sampled_from(["default", "default", "other"]),
    st.sampled_from(["none", "none", "anti", "affinity", "preferred"]),
    st.sampled_from(["a", "b", "c"]),
    st.integers(0, 1),
    st.integers(0, 2),
    st.sampled_from(["none", "none", "hard", "soft"]),
)


def _spec(shape: tuple[str, str, str, str, int, int, str]) -> dict[str, Any]:
    app, namespace, kind, target, key, ns, spread = shape
    extra: dict[str, Any] = {"labels": {"app": app}, "namespace": namespace}
    if kind in ("anti", "affinity"):
        part = "podAntiAffinity" if kind == "anti" else "podAffinity"
        extra["affinity"] = {
            part: {"requiredDuringSchedulingIgnoredDuringExecution": [_term(target, key, ns)]}
        }
    elif kind == "preferred":
        extra["affinity"] = {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 5, "podAffinityTerm": _term(target, key, ns)}
                ]
            }
        }
    if spread != "none":
        extra["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": KEYS[key],
                "whenUnsatisfiable": "DoNotSchedule" if spread == "hard" else "ScheduleAnyway",
                "labelSelector": {"matchLabels": {"app": target}},
            }
        ]
    return extra


def _nodes() -> list[dict[str, Any]]:
    return [
        make_node(
            f"n{i}",
            cpu="2",
            memory="8Gi",
            pods=8,
            labels={"kubernetes.io/hostname": f"n{i}", "zone": f"z{i % 3}"},
        )
        for i in range(N_NODES)
    ]


running_st = st.lists(
    st.tuples(
        st.integers(0, N_NODES - 1),
        st.sampled_from([-10, 0, 5, 10]),
        st.sampled_from([100, 250, 500, 1000]),
        st.integers(0, 9),
        shape_st,
    ),
    max_size=18,
)
nominated_st = st.lists(
    st.tuples(
        st.integers(0, N_NODES - 1),
        st.sampled_from([0, 5, 10, 100]),
        st.sampled_from([100, 500, 1000, 1500]),
        shape_st,
    ),
    max_size=8,
)


def _cache(running: list[tuple[int, int, int, int, Any]]) -> ClusterCache:
    raws = [
        vpod(f"r{k}", f"n{n}", priority=pr, req={"cpu": f"{c}m"}, start=t, **_spec(shape))
        for k, (n, pr, c, t, shape) in enumerate(running)
    ]
    return cluster(_nodes(), raws)


def _nominator(nominated: list[tuple[int, int, int, Any]]) -> Nominator:
    nom = Nominator()
    for k, (n, pr, c, shape) in enumerate(nominated):
        nom.add(pod_from_dict(vpod(f"m{k}", priority=pr, req={"cpu": f"{c}m"}, **_spec(shape))), f"n{n}")
    return nom


def _first_failures(result: Any, n: int) -> list[Any]:
    return [result.first_failure(r) for r in range(n)]


@settings(max_examples=120, deadline=None)
@example(  # InterPodAffinity skips at PreFilter, but n1's own pass un-skips it: n1 must run alone
    running=[],
    nominated=[
        (0, 0, 100, ("a", "default", "none", "a", 0, 0, "none")),
        (1, 0, 100, ("a", "default", "anti", "a", 0, 0, "none")),
    ],
    incoming=("a", "default", "none", "b", 0, 0, "hard"),
    prio=0,
    cpu=100,
)
@given(
    running=running_st,
    nominated=nominated_st,
    incoming=shape_st,
    prio=st.sampled_from([0, 5, 10]),
    cpu=st.sampled_from([100, 500, 1000]),
)
def test_nominated_pass_batched_equals_per_row(
    running: list[tuple[int, int, int, int, Any]],
    nominated: list[tuple[int, int, int, Any]],
    incoming: tuple[str, str, str, str, int, int, str],
    prio: int,
    cpu: int,
) -> None:
    cache = _cache(running)
    nom = _nominator(nominated)
    p = pod_from_dict(vpod("in", priority=prio, req={"cpu": f"{cpu}m"}, **_spec(incoming)))
    (fast, _), (slow, _) = frameworks()
    before = snapshot(cache)
    got = fast.run_filter_plugins_with_nominated_pods(p, cache, nominated=nom)
    assert_same(before, snapshot(cache))
    want = slow.run_filter_plugins_with_nominated_pods(p, cache, nominated=nom)
    assert_same(before, snapshot(cache))
    assert got.status.code == want.status.code
    assert (got.feasible is None) == (want.feasible is None)
    if want.feasible is not None:
        assert np.array_equal(got.feasible, want.feasible)
    n = cache.nodes.n_rows
    assert _first_failures(got, n) == _first_failures(want, n)
    assert reason_histogram(got) == reason_histogram(want)
    event(f"rows narrowed: {int(np.count_nonzero(got.feasible)) if got.feasible is not None else -1}")


@settings(max_examples=80, deadline=None)
@given(
    running=running_st,
    nominated=nominated_st,
    incoming=shape_st,
    prio=st.sampled_from([5, 10, 100]),
    cpu=st.sampled_from([500, 1000, 2000]),
    offset=st.integers(0, N_NODES - 1),
    pct=st.sampled_from([10, 50, 100]),
)
def test_preemption_batched_equals_node_by_node(
    running: list[tuple[int, int, int, int, Any]],
    nominated: list[tuple[int, int, int, Any]],
    incoming: tuple[str, str, str, str, int, int, str],
    prio: int,
    cpu: int,
    offset: int,
    pct: int,
) -> None:
    cache = _cache(running)
    nom = _nominator(nominated)
    p = pod_from_dict(vpod("in", priority=prio, req={"cpu": f"{cpu}m"}, **_spec(incoming)))
    args = DefaultPreemptionArgs(min_candidate_nodes_percentage=pct, min_candidate_nodes_absolute=1)
    (fast, fast_plugin), (slow, slow_plugin) = frameworks(args, offset)
    r_fast = fast.schedule_pod(p, cache, nominated=nom)
    r_slow = slow.schedule_pod(p, cache, nominated=nom)
    before = snapshot(cache)
    got = fast_plugin.find_candidates(p, cache, r_fast, nom)
    assert_same(before, snapshot(cache))
    want = slow_plugin.find_candidates(p, cache, r_slow, nom)
    assert_same(before, snapshot(cache))

    def key(res: Any) -> Any:
        cands, statuses, errors = res
        return [(c.node, [v.uid for v in c.victims], c.num_pdb_violations) for c in cands], statuses, errors

    assert key(got) == key(want)
    event(f"candidates: {min(len(got[0]), 3)}")
