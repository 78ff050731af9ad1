"""DefaultPreemption on random clusters: the batched (row-local, array) dry run finds exactly what the
one-node-at-a-time (cache bookkeeping) dry run finds, and neither leaves a trace in the cache.

The node-by-node run is the reference: it is upstream's SelectVictimsOnNode loop, node after node,
through the cache's own add/remove; the batched one shares each reprieve step's filter pass among
all nodes of a chunk and moves only the per-row accounting.
"""

from __future__ import annotations

from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st

from ksched.cache.cluster import ClusterCache
from ksched.config.types import DefaultPreemptionArgs
from ksched.framework.interface import CycleState, FilterResult
from ksched.framework.plugins.nodeports import new as new_node_ports
from ksched.framework.registry import Handle
from ksched.model.pod import Pod, pod_from_dict
from tests.builders import container, make_node
from tests.unit.framework.plugins.preemption_support import cluster, fit_framework, pdb, vpod
from tests.unit.framework.test_nominated_filter import assert_same, snapshot


class NotLocal:
    """Passes everywhere, not declared row-local: forces the node-by-node dry run."""

    name = "NotLocal"

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterCache) -> FilterResult:
        return FilterResult.all_pass()


pods_st = st.lists(
    st.tuples(
        st.integers(0, 5),  # node
        st.sampled_from([-10, 0, 5, 10]),  # priority
        st.sampled_from([100, 250, 500, 1000]),  # cpu (m)
        st.integers(0, 9),  # start time
        st.sampled_from(["a", "b", "c"]),  # app label
        st.booleans(),  # holds host port 80
    ),
    max_size=24,
)


@settings(max_examples=40, deadline=None)
@given(
    pods=pods_st,
    prio=st.sampled_from([0, 5, 10, 100]),
    cpu=st.sampled_from([500, 1000, 2000]),
    port=st.booleans(),
    allowed=st.integers(0, 2),
    offset=st.integers(0, 5),
    pct=st.sampled_from([10, 50, 100]),
)
def test_batched_equals_node_by_node(
    pods: list[tuple[int, int, int, int, str, bool]],
    prio: int,
    cpu: int,
    port: bool,
    allowed: int,
    offset: int,
    pct: int,
) -> None:
    nodes = [make_node(f"n{i}", cpu="2", memory="8Gi", pods=8) for i in range(6)]
    raws: list[dict[str, Any]] = []
    for k, (n, pr, c, t, app, hp) in enumerate(pods):
        req = {"cpu": f"{c}m"}
        extra: dict[str, Any] = {}
        if hp:
            extra["containers"] = [container(requests=req, host_ports=[("TCP", "", 80)])]
        raws.append(
            vpod(
                f"v{k}", f"n{n}", priority=pr, req=None if hp else req, start=t, labels={"app": app}, **extra
            )
        )
    cache = cluster(nodes, raws, [pdb("a", {"app": "a"}, allowed)])
    req = {"cpu": f"{cpu}m"}
    if port:
        p = pod_from_dict(
            vpod("p", priority=prio, containers=[container(requests=req, host_ports=[("TCP", "", 80)])])
        )
    else:
        p = pod_from_dict(vpod("p", priority=prio, req=req))
    args = DefaultPreemptionArgs(min_candidate_nodes_percentage=pct, min_candidate_nodes_absolute=1)
    ports = new_node_ports(None, Handle("p"))
    fast, fast_plugin = fit_framework([ports], args=args, offsets=[offset])
    slow, slow_plugin = fit_framework([ports, NotLocal()], args=args, offsets=[offset])
    r_fast, r_slow = fast.schedule_pod(p, cache), slow.schedule_pod(p, cache)
    before = snapshot(cache)
    got_fast = fast_plugin.find_candidates(p, cache, r_fast)
    got_slow = slow_plugin.find_candidates(p, cache, r_slow)
    assert_same(before, snapshot(cache))

    def key(res: Any) -> Any:
        cands, statuses, errors = res
        return [(c.node, [v.uid for v in c.victims], c.num_pdb_violations) for c in cands], statuses, errors

    assert key(got_fast) == key(got_slow)
    event(f"candidates: {min(len(got_fast[0]), 3)}")
