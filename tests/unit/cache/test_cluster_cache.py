"""ClusterCache invariants: assume/forget/confirm bookkeeping and row reuse.

The property test drives random sequences of node and pod events and checks, after each step,
that every row equals what a from-scratch recount of the surviving nodes and pods gives.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ksched.cache.cluster import ClusterCache
from ksched.errors import CacheError
from ksched.model.pod import HostPort
from tests import builders
from tests.builders import container


def node(name: str, cpu: str = "4", gpus: int = 0, taint: bool = False):
    """This module's node: 8Gi, 10 pods, zoned by its last character; ``taint`` taints it with its name."""
    alloc = {"nvidia.com/gpu": str(gpus)} if gpus else {}
    taints = [builders.taint("t", name)] if taint else []
    return builders.node(
        name, cpu=cpu, memory="8Gi", pods=10, allocatable=alloc, taints=taints, labels={"zone": name[-1]}
    )


def pod(name: str, node_name: str = "", cpu: str = "1", gpu: int = 0, port: int = 0):
    reqs = {"cpu": cpu, **({"nvidia.com/gpu": str(gpu)} if gpu else {})}
    c = container(requests=reqs, host_ports=[("TCP", "", port)] if port else ())
    return builders.pod(name, node_name=node_name, containers=[c])


def snapshot(cache: ClusterCache) -> dict[str, tuple]:
    nodes = cache.nodes
    out = {}
    for name, row in nodes.row_of.items():
        out[name] = (
            tuple(nodes.requested[row, : len(cache.resources)]),
            tuple(nodes.nonzero_requested[row]),
            int(nodes.pod_count[row]),
        )
    return out


def recount(cache: ClusterCache) -> dict[str, tuple]:
    fresh = ClusterCache()
    for col in cache.resources.names:
        fresh.resources.column(col)
    for row in range(cache.nodes.n_rows):
        n = cache.nodes.nodes[row]
        if n is not None:
            fresh.add_node(n)
    for entry in cache.pods.values():
        fresh._attach(entry.pod, entry.node_name, entry.assumed)
    fresh.nodes.ensure_columns()
    return snapshot(fresh)


def test_forget_exactly_reverses_assume() -> None:
    cache = ClusterCache()
    cache.add_node(node("n1"))
    before = snapshot(cache)
    p = pod("p", cpu="1500m", port=8080)
    cache.assume(p, "n1")
    row = cache.nodes.row_of["n1"]
    assert cache.nodes.requested[row, 0] == 1500
    assert cache.ports.conflicting_rows(HostPort("TCP", "0.0.0.0", 8080)) == {row}
    cache.forget(p.uid)
    assert snapshot(cache) == before
    assert not cache.ports


def test_assume_twice_is_an_error_and_forget_needs_assumed() -> None:
    cache = ClusterCache()
    cache.add_node(node("n1"))
    p = pod("p")
    cache.assume(p, "n1")
    with pytest.raises(CacheError, match="can't be assumed"):
        cache.assume(p, "n1")
    cache.add_pod(pod("p", node_name="n1"))  # informer confirms
    assert not cache.is_assumed(p.uid)
    with pytest.raises(CacheError):
        cache.forget(p.uid)


def test_confirm_on_another_node_moves_the_request() -> None:
    cache = ClusterCache()
    cache.add_node(node("n1"))
    cache.add_node(node("n2"))
    cache.assume(pod("p", cpu="2"), "n1")
    cache.add_pod(pod("p", node_name="n2", cpu="2"))
    r1, r2 = cache.nodes.row_of["n1"], cache.nodes.row_of["n2"]
    assert cache.nodes.requested[r1, 0] == 0 and cache.nodes.pod_count[r1] == 0
    assert cache.nodes.requested[r2, 0] == 2000 and cache.nodes.pod_count[r2] == 1


def test_removed_node_row_is_reused_cleanly() -> None:
    cache = ClusterCache()
    cache.add_node(node("n1", gpus=2, taint=True))
    cache.add_pod(pod("p", node_name="n1", gpu=1))
    cache.nodes.label_column("zone")
    row = cache.nodes.row_of["n1"]
    cache.remove_node("n1")
    cache.add_node(node("n9"))
    assert cache.nodes.row_of["n9"] == row
    assert cache.nodes.requested[row].sum() == 0
    assert cache.nodes.pod_count[row] == 0
    assert not cache.nodes.taint_bits[row].any()
    gpu = cache.resources.get("nvidia.com/gpu")
    assert cache.nodes.allocatable[row, gpu] == 0
    assert cache.nodes.label_values.values[cache.nodes.label_column("zone")[row]] == "9"


def test_pods_on_a_removed_node_come_back_with_it() -> None:
    cache = ClusterCache()
    cache.add_node(node("n1"))
    cache.add_pod(pod("p", node_name="n1", cpu="3"))
    cache.remove_node("n1")
    assert cache.pods["uid-default-p"].row == -1
    row = cache.add_node(node("n1"))
    assert cache.nodes.requested[row, 0] == 3000
    cache.remove_pod("uid-default-p")
    assert cache.nodes.requested[row, 0] == 0


def test_rows_and_columns_grow() -> None:
    cache = ClusterCache(node_capacity=2)
    for i in range(50):
        cache.add_node(node(f"n{i}", gpus=i % 3))
    for i in range(20):
        cache.resources.column(f"example.com/r{i}")
    cache.nodes.ensure_columns()
    assert cache.nodes.capacity >= 50
    assert cache.nodes.allocatable.shape[1] >= len(cache.resources)
    assert int(np.count_nonzero(cache.nodes.valid)) == 50


def test_a_confirm_that_changes_no_count_swaps_the_record_only() -> None:
    cache = ClusterCache()
    cache.add_node(node("n1"))
    p = pod("p", cpu="2", port=80)
    cache.assume(p, "n1")
    before = snapshot(cache)
    confirmed = pod("p", node_name="n1", cpu="2", port=80)
    cache.add_pod(confirmed)
    entry = cache.pods[p.uid]
    assert entry.pod is confirmed and not entry.assumed
    assert snapshot(cache) == before == recount(cache)
    resized = pod("p", node_name="n1", cpu="3", port=80)  # a change that counts: detach, attach
    cache.add_pod(resized)
    assert cache.pods[p.uid].pod is resized
    assert snapshot(cache)["n1"][0][0] == 3000 and snapshot(cache) == recount(cache)


NODE_NAMES = [f"n{i}" for i in range(4)]
POD_NAMES = [f"p{i}" for i in range(6)]
ops = st.one_of(
    st.tuples(st.just("add_node"), st.sampled_from(NODE_NAMES), st.integers(0, 2), st.booleans()),
    st.tuples(st.just("remove_node"), st.sampled_from(NODE_NAMES)),
    st.tuples(st.just("add_pod"), st.sampled_from(POD_NAMES), st.sampled_from(NODE_NAMES), st.integers(0, 2)),
    st.tuples(st.just("assume"), st.sampled_from(POD_NAMES), st.sampled_from(NODE_NAMES), st.integers(0, 2)),
    st.tuples(st.just("forget"), st.sampled_from(POD_NAMES)),
    st.tuples(st.just("remove_pod"), st.sampled_from(POD_NAMES)),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(ops, max_size=40))
def test_random_event_sequences_keep_rows_consistent(events: list[tuple]) -> None:
    cache = ClusterCache(node_capacity=1)
    for ev in events:
        kind = ev[0]
        versions, position = cache.nodes.row_version.copy(), cache.nodes.journal.end
        if kind == "add_node":
            cache.add_node(node(ev[1], gpus=ev[2], taint=ev[3]))
        elif kind == "remove_node":
            cache.remove_node(ev[1])
        elif kind == "add_pod":
            cache.add_pod(pod(ev[1], node_name=ev[2], gpu=ev[3], port=80 if ev[3] == 2 else 0))
        elif kind == "assume":
            p = pod(ev[1], gpu=ev[3])
            if p.uid not in cache:
                cache.assume(p, ev[2])
        elif kind == "forget":
            if cache.is_assumed(f"uid-default-{ev[1]}"):
                cache.forget(f"uid-default-{ev[1]}")
        else:
            cache.remove_pod(f"uid-default-{ev[1]}")
        assert snapshot(cache) == recount(cache)
        assert (cache.nodes.requested[: cache.nodes.n_rows] >= 0).all()
        assert_journal_tells(cache, versions, position)


def assert_journal_tells(cache: ClusterCache, versions: np.ndarray, position: int) -> None:
    """The journal names exactly the rows whose version moved since ``position``."""
    now = cache.nodes.row_version
    moved = np.flatnonzero(now[: versions.size] != versions[: now.size]).tolist()
    moved += [r for r in range(versions.size, now.size) if now[r] != 0]
    told = cache.nodes.journal.since(position, limit=10**6)
    assert told is not None and told.tolist() == sorted(moved)
