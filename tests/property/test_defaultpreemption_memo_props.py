"""DefaultPreemption's per-row memo of potential victims (``defaultpreemption/memo.py``).

Through random sequences of cache changes (pods added and removed, a bound pod's record replaced
without a change to what the cache counts but with a new start time or priority, nodes removed
and added again, new nodes past the table's capacity, new resource columns, nominated pods assumed
and forgotten) and batched dry
runs in between (which bump the rows' versions themselves and settle the memo): every listing the
memo gives is the one a fresh read of the cache gives (the same entry and pod objects in the same
order, the same numbers), and a plugin that kept its memo across all of it finds the same
candidates as a fresh plugin. With ``affinity`` the preemptor's required anti-affinity selects
some pods, so their nodes run through the cache (``CacheProbe``, new entries) and must not be
settled.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ksched.cache.cluster import ClusterCache
from ksched.config.types import DefaultPreemptionArgs
from ksched.framework.plugins.defaultpreemption import DefaultPreemption
from ksched.framework.plugins.defaultpreemption.memo import Listing, ListingMemo, read_nodes
from ksched.framework.plugins.interpodaffinity import new as new_inter_pod_affinity
from ksched.framework.registry import Handle
from ksched.model.pod import pod_from_dict
from tests import builders
from tests.unit.framework.plugins.preemption_support import fit_framework, vpod

N_NODES = 5

op_st = st.one_of(
    st.tuples(
        st.just("add"),
        st.integers(0, N_NODES - 1),
        st.sampled_from([-1, 0, 0, 5]),
        st.sampled_from([None, 1, 1, 2]),
        st.sampled_from([100, 400]),
        st.booleans(),  # labelled app=a: with ``affinity``, the preemptor's anti-affinity selects it
    ),
    st.tuples(st.just("remove"), st.integers(0, 60)),
    st.tuples(st.just("restatus"), st.integers(0, 60), st.sampled_from([None, 0, 3])),
    st.tuples(st.just("reprioritize"), st.integers(0, 60), st.sampled_from([-1, 0, 5])),
    st.tuples(st.just("confirm"), st.integers(0, 60)),
    st.tuples(st.just("renode"), st.integers(0, N_NODES - 1)),
    st.tuples(st.just("gpu"), st.integers(0, 60)),
    st.tuples(st.just("nominate"), st.integers(0, N_NODES - 1)),
    st.tuples(st.just("dry"), st.integers(0, N_NODES - 1)),
    st.tuples(st.just("read"), st.integers(0, N_NODES - 1)),
    st.tuples(st.just("addnode"), st.integers(0, N_NODES - 1)),  # grows the node table's rows
    st.tuples(st.just("invalidate"), st.integers(0, N_NODES - 1)),
)


def _same(a: Listing, b: Listing) -> None:
    assert a.names == b.names
    assert np.array_equal(a.counts, b.counts)
    assert len(a.entries) == len(b.entries)
    assert all(x is y for x, y in zip(a.entries, b.entries, strict=True))
    assert all(x is y for x, y in zip(a.pods, b.pods, strict=True))
    assert all(e.pod is p for e, p in zip(a.entries, a.pods, strict=True))
    for f in ("priority", "start", "requests", "nonzero", "ported"):
        assert np.array_equal(getattr(a, f), getattr(b, f)), f


HOST = "kubernetes.io/hostname"
ANTI = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": HOST}
        ]
    }
}


def _node(i: int) -> Any:
    return builders.node(f"n{i}", cpu="2", memory="8Gi", pods=8, labels={HOST: f"n{i}"})


def _framework(affinity: bool) -> tuple[Any, DefaultPreemption]:
    extra = [new_inter_pod_affinity(None, Handle("default-scheduler"))] if affinity else []
    return fit_framework(extra, args=DefaultPreemptionArgs(min_candidate_nodes_absolute=1))


@settings(max_examples=150, deadline=None)
@given(ops=st.lists(op_st, min_size=1, max_size=25), seed=st.integers(0, 3), affinity=st.booleans())
def test_memo_listing_is_a_fresh_read(ops: list[tuple[Any, ...]], seed: int, affinity: bool) -> None:
    cache = ClusterCache(node_capacity=2)
    for i in range(N_NODES):
        cache.add_node(_node(i))
    added = N_NODES
    fw, plugin = _framework(affinity)
    plugin._listings = ListingMemo(min_pool=1)  # compacts whenever its pools are full
    memo = ListingMemo(min_pool=1)
    preemptor = pod_from_dict(
        vpod("preemptor", priority=10, req={"cpu": "1"}, affinity=ANTI if affinity else None)
    )
    made = 0

    def uids() -> list[str]:
        return sorted(cache.pods)

    def pick(k: int) -> str | None:
        have = uids()
        return have[k % len(have)] if have else None

    for op in ops:
        kind = op[0]
        if kind == "add":
            _, n, pr, t, cpu, a = op
            labels = {"app": "a"} if a else None
            raw = vpod(f"v{made}", f"n{n}", priority=pr, req={"cpu": f"{cpu}m"}, start=t, labels=labels)
            raw["metadata"]["uid"] = f"{(made * 7919 + seed) % 97:02d}-{made}"
            made += 1
            p = pod_from_dict(raw)
            if made % 3 == 0:
                cache.assume(p, p.node_name)
            else:
                cache.add_pod(p)
        elif kind in ("remove", "restatus", "reprioritize", "confirm", "gpu"):
            uid = pick(op[1])
            if uid is None:
                continue
            entry = cache.pods[uid]
            old = entry.pod
            if kind == "remove":
                cache.remove_pod(uid)
            elif kind == "restatus":  # counts the same: the entry keeps its version
                start = None if op[2] is None else float(op[2])
                cache.add_pod(dataclasses.replace(old, start_time=start, node_name=entry.node_name))
            elif kind == "reprioritize":
                cache.add_pod(dataclasses.replace(old, priority=op[2], node_name=entry.node_name))
            elif kind == "confirm":
                cache.add_pod(dataclasses.replace(old, node_name=entry.node_name))
            else:  # a new resource column widens the node table
                reqs = {**old.requests, "example.com/gpu": 1}
                cache.add_pod(dataclasses.replace(old, requests=reqs, node_name=entry.node_name))
        elif kind == "renode":
            name = f"n{op[1]}"
            cache.remove_node(name)
            cache.add_node(_node(op[1]))
        elif kind == "invalidate":
            memo.invalidate()
            plugin._listings.invalidate()
        elif kind == "addnode":
            cache.add_node(_node(added))
            added += 1
        elif kind == "nominate":  # what the nominated pods' pass does to a row, and undoes
            p = pod_from_dict(vpod(f"nom{made}", f"n{op[1]}", priority=20, req={"cpu": "100m"}))
            made += 1
            cache.assume(p, p.node_name)
            cache.forget(p.uid)
        rows = np.roll(np.array(sorted(cache.nodes.row_of.values()), dtype=np.intp), -op[1])
        if kind == "dry":
            fresh_fw, fresh = _framework(affinity)
            fresh.offset_for = plugin.offset_for = lambda n: 0
            got = plugin.find_candidates(preemptor, cache, fw.schedule_pod(preemptor, cache))
            want = fresh.find_candidates(preemptor, cache, fresh_fw.schedule_pod(preemptor, cache))
            assert [(c.node, c.victims, c.num_pdb_violations) for c in got[0]] == [
                (c.node, c.victims, c.num_pdb_violations) for c in want[0]
            ]
            assert got[1] == want[1] and got[2] == want[2]
            # The memo's own rows through a dry run, settled afterwards (but for CacheProbe's).
            fw.dry_run_filters(preemptor, cache, None)
            plugin._chunk_batched(preemptor, cache, None, rows, None)
        _same(memo.listing(cache, rows), read_nodes(cache, rows))
        _same(plugin._listings.listing(cache, rows), read_nodes(cache, rows))
