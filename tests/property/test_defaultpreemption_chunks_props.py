"""The batched dry run's chunk sizes never change DefaultPreemption's candidates.

``DefaultPreemption._dry_run`` tries the potential nodes in chunks and sizes each chunk after the
first by the candidates still missing (``_next_chunk``). Upstream walks the nodes in order and
stops once it has enough; whatever the chunks, the candidates (names, victims in order, violation
counts), the statuses and the errors must be those of trying the nodes one at a time, and the
cache must be left as it was. Clusters here have nodes that cannot be candidates (a host port
taken by a pod of the preemptor's priority, or no room even without victims), so that the first
chunk falls short and later chunks are sized by the shortfall.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from ksched.config.types import DefaultPreemptionArgs
from ksched.framework.plugins.defaultpreemption import plugin as plugin_module
from ksched.framework.plugins.nodeports import new as new_node_ports
from ksched.framework.registry import Handle
from ksched.model.pod import pod_from_dict
from tests.builders import container, make_node
from tests.unit.framework.plugins.preemption_support import cluster, fit_framework, vpod
from tests.unit.framework.test_nominated_filter import assert_same, snapshot

N_NODES = 90

# Per node: a victim of priority 0 (cpu m), and whether a pod of the preemptor's priority holds
# host port 80 there (then no eviction makes room for the preemptor, which wants that port).
node_st = st.tuples(st.sampled_from([700, 1500]), st.booleans())  # the preemptor fits nowhere as is


def _outcome(got: tuple[list[Any], list[Any], list[str]]) -> Any:
    cands, statuses, errors = got
    return (
        [(c.node, [v.uid for v in c.victims], c.num_pdb_violations) for c in cands],
        [(s.code, s.reasons, s.plugin) for s in statuses],
        errors,
    )


@settings(max_examples=40, deadline=None)
@given(
    nodes=st.lists(node_st, min_size=N_NODES, max_size=N_NODES),
    want=st.sampled_from([5, 40, 70]),
    roll=st.integers(0, N_NODES - 1),
)
def test_chunk_sizes_never_change_the_candidates(nodes: list[tuple[int, bool]], want: int, roll: int) -> None:
    raws: list[dict[str, Any]] = []
    for i, (cpu, blocked) in enumerate(nodes):
        raws.append(vpod(f"v{i}", f"n{i}", priority=0, req={"cpu": f"{cpu}m"}))
        if blocked:
            ported = container(requests={"cpu": "100m"}, host_ports=[("TCP", "", 80)])
            raws.append(vpod(f"h{i}", f"n{i}", priority=10, containers=[ported]))
    cache = cluster([make_node(f"n{i}", cpu="2", memory="8Gi", pods=8) for i in range(N_NODES)], raws)
    req = {"cpu": "1500m"}
    wants_port = container(requests=req, host_ports=[("TCP", "", 80)])
    p = pod_from_dict(vpod("p", priority=10, containers=[wants_port]))
    _fw, plugin = fit_framework(
        [new_node_ports(None, Handle("p"))], args=DefaultPreemptionArgs(min_candidate_nodes_absolute=1)
    )
    order = np.roll(np.array(sorted(cache.nodes.row_of.values()), dtype=np.intp), -roll)
    before = snapshot(cache)
    adaptive = _outcome(plugin._dry_run(p, cache, None, order, want, []))
    assert_same(before, snapshot(cache))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(plugin_module, "_next_chunk", lambda *a: 1)  # node by node after the first
        mp.setattr(plugin_module, "_MIN_CHUNK", 1)
        one_by_one = _outcome(plugin._dry_run(p, cache, None, order, 1, []))
        tiny = _outcome(plugin._dry_run(p, cache, None, order, want, []))
    assert_same(before, snapshot(cache))
    assert adaptive == tiny
    event(f"blocked nodes: {min(sum(b for _, b in nodes) // 20, 3)}")
    assert bool(one_by_one[0]) == any(not b for _, b in nodes)  # some node can be a candidate
