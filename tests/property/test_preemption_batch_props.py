"""DefaultPreemption's array dry run (:mod:`ksched.framework.plugins.defaultpreemption.batch`) against
the per-node lists it replaced (``DefaultPreemption._works`` with ``select_victims``).

On random clusters with many exact ties (equal priorities and start times, so the uid decides),
pods in two namespaces, overlapping PodDisruptionBudgets with already-disrupted pods, and host
ports: the same potential victims per node in the same importance order, the same reprieve order
and PDB flags, the same candidates with the same victims in the same order and violation counts,
and the cache exactly as before. The array probe's per-row sums (``Residents.grouped``) move the
row accounting exactly as ``np.add.at`` does.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
from hypothesis import event, given, settings
from hypothesis import strategies as st

from ksched.config.types import DefaultPreemptionArgs
from ksched.framework.interface import Code
from ksched.framework.plugins.defaultpreemption import batch
from ksched.framework.plugins.defaultpreemption.dryrun import ArrayProbe, Residents
from ksched.framework.plugins.defaultpreemption.pdb import BudgetIndex
from ksched.framework.plugins.defaultpreemption.pick import Candidate, pick_one, pick_one_reference
from ksched.framework.plugins.defaultpreemption.plugin import ChunkOutcome
from ksched.framework.plugins.nodeports import new as new_node_ports
from ksched.framework.registry import Handle
from ksched.model.pdb import pdb_from_dict
from ksched.model.pod import pod_from_dict
from tests.builders import container, make_node
from tests.unit.framework.plugins.preemption_support import cluster, fit_framework, vpod
from tests.unit.framework.test_nominated_filter import assert_same, snapshot

N_NODES = 7

pods_st = st.lists(
    st.tuples(
        st.integers(0, N_NODES - 1),  # node
        st.sampled_from([-5, 0, 0, 3, 10]),  # priority (10: the preemptor's, not a victim)
        st.sampled_from([100, 300, 700]),  # cpu (m)
        st.sampled_from([None, 1, 1, 2]),  # start time: many ties
        st.sampled_from(["a", "b", "c", None]),  # app label
        st.sampled_from(["default", "default", "other"]),  # namespace
        st.booleans(),  # holds host port 80
        st.text("xyz", min_size=1, max_size=3),  # uid prefix: uid order unlike name order
    ),
    min_size=6,
    max_size=30,
)

budgets_st = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "c"]),  # selector app
        st.sampled_from(["default", "other"]),
        st.integers(0, 1),  # disruptionsAllowed
        st.sets(st.integers(0, 29), max_size=3),  # disrupted pods (by index)
    ),
    max_size=4,
)


def _budget(k: int, app: str, ns: str, allowed: int, disrupted: set[int]) -> Any:
    return pdb_from_dict(
        {
            "metadata": {"name": f"pdb{k}", "namespace": ns},
            "spec": {"selector": {"matchLabels": {"app": app}}},
            "status": {
                "disruptionsAllowed": allowed,
                "disruptedPods": {f"v{i}": "2024-01-01T00:00:00Z" for i in disrupted},
            },
        }
    )


def _key(out: ChunkOutcome) -> Any:
    return list(
        zip(out.names, out.status, [[v.uid for v in vs] for vs in out.victims], out.violations, strict=True)
    )


@settings(max_examples=200, deadline=None)
@given(
    pods=pods_st,
    budgets=budgets_st,
    cpu=st.sampled_from([300, 1000, 1500]),
    port=st.booleans(),
    roll=st.integers(0, N_NODES - 1),
)
def test_batched_dry_run_equals_per_node_lists(
    pods: list[tuple[int, int, int, int | None, str | None, str, bool, str]],
    budgets: list[tuple[str, str, int, set[int]]],
    cpu: int,
    port: bool,
    roll: int,
) -> None:
    nodes = [make_node(f"n{i}", cpu="2", memory="8Gi", pods=8) for i in range(N_NODES)]
    raws: list[dict[str, Any]] = []
    for k, (n, pr, c, t, app, ns, hp, prefix) in enumerate(pods):
        req = {"cpu": f"{c}m", "memory": "64Mi"} if k % 3 == 0 else {"cpu": f"{c}m"}  # some lack memory
        extra: dict[str, Any] = {}
        if hp:
            extra["containers"] = [container(requests=req, host_ports=[("TCP", "", 80)])]
        raw = vpod(
            f"v{k}",
            f"n{n}",
            priority=pr,
            req=None if hp else req,
            start=t,
            labels={"app": app} if app else None,
            **extra,
        )
        raw["metadata"]["uid"] = f"{prefix}{k}"
        raw["metadata"]["namespace"] = ns
        raws.append(raw)
    pdbs = [_budget(k, *b) for k, b in enumerate(budgets)]
    cache = cluster(nodes, raws, pdbs)
    req = {"cpu": f"{cpu}m"}
    if port:
        p = pod_from_dict(
            vpod("p", priority=10, containers=[container(requests=req, host_ports=[("TCP", "", 80)])])
        )
    else:
        p = pod_from_dict(vpod("p", priority=10, req=req))
    fw, plugin = fit_framework(
        [new_node_ports(None, Handle("p"))], args=DefaultPreemptionArgs(min_candidate_nodes_absolute=1)
    )
    _res, local = fw.dry_run_filters(p, cache, None)
    assert local
    rows = np.roll(np.array(sorted(cache.nodes.row_of.values()), dtype=np.intp), -roll)
    parsed = plugin._budgets.budgets(cache.pdbs.values())

    def index() -> BudgetIndex | None:
        return BudgetIndex(parsed) if parsed else None

    before = snapshot(cache)

    # The table: same potential victims, importance order, reprieve order and PDB flags.
    chunk = batch.gather(p, cache, rows, index())
    works, table = plugin._works(p, cache, rows, index())
    assert chunk.names == [w.node for w in works]
    assert np.array_equal(chunk.residents().rows, np.array([e.row for e in chunk.entries], dtype=np.intp))
    for j, w in enumerate(works):
        a, b = int(chunk.first[j]), int(chunk.first[j] + chunk.count[j])
        uids = [table.entries[k].pod.uid for k in w.potential]
        assert [chunk.pods[k].uid for k in chunk.importance[a:b].tolist()] == uids
        assert [chunk.pods[k].uid for k in chunk.order[a:b].tolist()] == [
            table.entries[k].pod.uid for k in w.order
        ]
        flagged = {chunk.pods[k].uid for k in range(a, b) if chunk.violating[k]}
        assert flagged == {table.entries[k].pod.uid for k in w.violating}
        assert (w.status is not None) == (b == a)
    ix = index()
    if ix is not None and chunk.entries:  # the dense count == the node-by-node fallback
        seq = [chunk.entries[k] for k in chunk.importance.tolist()]
        dense = batch.violations(ix, seq, chunk.node, chunk.first)
        assert np.array_equal(dense, batch._violations_by_node(ix, seq, chunk.node, chunk.first))

    # The outcome: batched arrays == per-node lists with the array probe == node by node.
    got = plugin._chunk_batched(p, cache, None, rows, index())
    assert_same(before, snapshot(cache))
    ref = plugin._chunk_by_node(p, cache, None, rows, index(), local=True)
    assert_same(before, snapshot(cache))
    slow = plugin._chunk_by_node(p, cache, None, rows, index(), local=False)
    assert_same(before, snapshot(cache))
    assert _key(got) == _key(ref) == _key(slow)
    event(f"candidates: {min(sum(s is None for s in got.status), 3)}")
    event(f"violations: {min(sum(got.violations), 2)}")
    event(f"errors: {min(sum(s is not None and s.code == Code.ERROR for s in got.status), 1)}")

    # The probe's per-row sums move the rows exactly as np.add.at does, and back.
    if chunk.entries:
        grouped = chunk.residents()
        plain = Residents(chunk.entries)
        idx = np.flatnonzero(np.arange(len(chunk.entries)) % 3 != 1)
        for res in (grouped, plain):
            probe = ArrayProbe(fw.handle, p, cache, None, res)
            probe.remove(idx)
            if res is grouped:
                moved = snapshot(cache)
            else:
                assert_same(moved, snapshot(cache))
            probe.restore(idx)
            assert_same(before, snapshot(cache))


victim_st = st.tuples(
    st.sampled_from([-(2**31), -3, 0, 0, 7, 2**31 - 1]), st.sampled_from([None, 1.0, 1.0, 2.5])
)


@settings(max_examples=200, deadline=None)
@given(
    cands=st.lists(
        st.tuples(st.lists(victim_st, min_size=1, max_size=4), st.sampled_from([0, 0, 0, 1])),
        max_size=40,
    ),
    first_top=st.booleans(),
)
def test_pick_one_equals_reference(
    cands: list[tuple[list[tuple[int, float | None]], int]], first_top: bool
) -> None:
    """The array path of ``pick_one`` (many candidates tied on the first two criteria) picks the
    very candidate the criterion-by-criterion reference picks."""
    base = pod_from_dict(vpod("tpl", "n0", priority=0))
    made: list[Candidate] = []
    for k, (victims, violations) in enumerate(cands):
        if first_top:  # many ties on criterion 2, so the array path runs
            victims = [(0, victims[0][1])] + [(min(pr, 0), t) for pr, t in victims[1:]]
        pods = tuple(
            replace(base, uid=f"c{k}v{i}", name=f"c{k}v{i}", priority=pr, start_time=t)
            for i, (pr, t) in enumerate(victims)
        )
        made.append(Candidate(f"n{k}", pods, violations))
    assert pick_one(made) is pick_one_reference(made)
