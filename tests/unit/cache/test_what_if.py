"""The cache's what-if overlay (``ClusterCache.what_if``) and the read-only arrays around it.

The overlay is the only way anything but the cache's own mutators changes what the node table
counts: pods added or removed for the length of a ``with`` block, and handles that move per-item
amounts (``rows``) or cached pods (``pods``) by index. Every case ends with the cache exactly as
it was, row versions only grown; the debug check catches a change made behind its back.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ksched.cache.cluster import ClusterCache
from ksched.cache.node_table import ARRAYS
from ksched.errors import CacheError, OverlayError, OverlayNotRestored
from ksched.model.node import node_from_dict
from ksched.model.pod import Pod
from tests.builders import container, make_node, pod


def cache_of(n: int = 3, *, check: bool = True) -> ClusterCache:
    cache = ClusterCache(node_capacity=2, check_overlays=check)
    for i in range(n):
        cache.add_node(
            node_from_dict(make_node(f"n{i}", cpu="4", memory="8Gi", pods=10, labels={"zone": "a"}))
        )
    cache.add_pod(pod(name="a", uid="a", node_name="n0", requests={"cpu": "1", "memory": "1Gi"}))
    cache.add_pod(pod(name="b", uid="b", node_name="n0", requests={"cpu": "500m"}))
    cache.add_pod(pod(name="c", uid="c", node_name="n1", requests={"cpu": "2"}))
    cache.assume(pod(name="d", uid="d", requests={"cpu": "250m"}), "n2")
    return cache


def state(cache: ClusterCache) -> dict[str, Any]:
    """Everything an overlay must put back (row versions apart: they only grow)."""
    nodes = cache.nodes
    n = nodes.n_rows
    out: dict[str, Any] = {name: getattr(nodes, name)[:n].copy() for name in ARRAYS if name != "row_version"}
    out["ports"] = cache.ports.counts()
    out["pods"] = {uid: (e.pod, e.node_name, e.row, e.assumed) for uid, e in cache.pods.items()}
    return out


def assert_restored(before: dict[str, Any], cache: ClusterCache) -> None:
    after = state(cache)
    for key, was in before.items():
        if isinstance(was, np.ndarray):
            assert np.array_equal(after[key], was), key
        else:
            assert after[key] == was, key
    assert cache.overlay_depth == 0


def cpu(cache: ClusterCache, node: str) -> int:
    return int(cache.nodes.requested[cache.nodes.row_of[node], cache.resources.column("cpu")])


# ---------------------------------------------------------------------- read-only arrays
@pytest.mark.parametrize("name", ARRAYS)
def test_every_node_table_array_refuses_writes(name: str) -> None:
    cache = cache_of()
    with pytest.raises(ValueError, match="read-only"):
        getattr(cache.nodes, name)[0] = 1


def test_arrays_stay_read_only_after_growing_and_widening() -> None:
    cache = cache_of()
    for i in range(3, 9):  # past the capacity: every array is reallocated
        cache.add_node(node_from_dict(make_node(f"n{i}", cpu="4", memory="8Gi", pods=10)))
    cache.add_pod(pod(name="g", uid="g", node_name="n4", requests={"example.com/gpu": "1"}))  # new column
    nodes = cache.nodes
    for name in ARRAYS:
        assert not getattr(nodes, name).flags.writeable, name
    assert cpu(cache, "n0") == 1500
    col = cache.resources.column("example.com/gpu")
    assert int(nodes.requested[nodes.row_of["n4"], col]) == 1


def test_label_columns_and_parsed_labels_refuse_writes() -> None:
    cache = cache_of()
    with pytest.raises(ValueError, match="read-only"):
        cache.nodes.label_column("zone")[0] = -1
    values, ok = cache.nodes.label_int_column("zone")
    with pytest.raises(ValueError, match="read-only"):
        values[0] = 1
    with pytest.raises(ValueError, match="read-only"):
        ok[0] = True
    cache.add_node(node_from_dict(make_node("late", cpu="1", labels={"zone": "b"})))
    assert not cache.nodes.label_column("zone").flags.writeable


# ---------------------------------------------------------------------- add= / remove=
def test_add_counts_pods_everywhere_until_the_block_ends() -> None:
    cache = cache_of()
    before = state(cache)
    extra = pod(
        name="x", uid="x", containers=[container(requests={"cpu": "300m"}, host_ports=[("TCP", "", 80)])]
    )
    with cache.what_if(add=[(extra, "n1")]) as w:
        assert cpu(cache, "n1") == 2300
        assert cache.is_assumed("x")
        assert cache.ports.conflicting_rows(extra.host_ports[0]) == {cache.nodes.row_of["n1"]}
        assert cache.overlay_depth == 1
        assert w is not None
    assert_restored(before, cache)


def test_remove_takes_pods_out_and_puts_them_back_as_they_were() -> None:
    cache = cache_of()
    before = state(cache)
    versions = cache.nodes.row_version.copy()
    generation = cache.nodes.generation
    with cache.what_if(remove=["a", "d"]):
        assert cpu(cache, "n0") == 500
        assert "a" not in cache and "d" not in cache
    assert_restored(before, cache)
    assert cache.is_assumed("d") and not cache.is_assumed("a")
    assert (cache.nodes.row_version >= versions).all()
    assert cache.nodes.row_version[cache.nodes.row_of["n0"]] > versions[cache.nodes.row_of["n0"]]
    assert cache.nodes.generation == generation  # an overlay changes no node


def test_a_failing_block_still_puts_everything_back() -> None:
    cache = cache_of()
    before = state(cache)
    with pytest.raises(RuntimeError, match="filter broke"), cache.what_if(remove=["c"]) as w:
        w.rows(np.array([0, 2]), requests=[(0, np.array([7, 9]))], nonzero=[]).give(np.array([0, 1]))
        raise RuntimeError("filter broke")
    assert_restored(before, cache)


def test_a_bad_add_undoes_what_was_done_and_closes() -> None:
    cache = cache_of()
    before = state(cache)
    with (
        pytest.raises(CacheError, match="can't be assumed"),
        cache.what_if(remove=["b"], add=[(cache.pods["a"].pod, "n1")]),
    ):
        pass
    assert_restored(before, cache)


# ---------------------------------------------------------------------- handles
def rows_handle(w: Any, cache: ClusterCache, *, grouped: bool) -> Any:
    """Pods a, b (n0) and c (n1) as per-item amounts: the dry run's table, grouped by node."""
    entries = [cache.pods[u] for u in ("a", "b", "c")]
    col = cache.resources.column("cpu")
    return w.rows(
        np.array([e.row for e in entries], dtype=np.intp),
        requests=[(col, np.array([1000, 500, 2000], dtype=np.int64))],
        nonzero=[np.array([1000, 500, 2000], dtype=np.int64), np.array([2**30, 200 * 2**20, 200 * 2**20])],
        grouped=grouped,
    )


@pytest.mark.parametrize("grouped", [True, False])
def test_row_handle_takes_and_gives_by_index(grouped: bool) -> None:
    cache = cache_of()
    before = state(cache)
    with cache.what_if() as w:
        moves = rows_handle(w, cache, grouped=grouped)
        moves.take(np.array([0, 1, 2]))
        assert cpu(cache, "n0") == 0 and cpu(cache, "n1") == 0
        assert int(cache.nodes.pod_count[cache.nodes.row_of["n0"]]) == 0
        moves.give(np.array([1]))
        assert cpu(cache, "n0") == 500
        assert int(cache.nodes.pod_count[cache.nodes.row_of["n0"]]) == 1
        # c and a are still out: the end of the block puts them back
    assert_restored(before, cache)


def test_a_handle_without_with_opens_at_its_first_move_and_closes_when_all_is_back() -> None:
    cache = cache_of()
    before = state(cache)
    moves = rows_handle(cache.what_if(), cache, grouped=True)
    assert cache.overlay_depth == 0
    moves.take(np.array([0, 2]))
    assert cache.overlay_depth == 1
    moves.give(np.array([2]))
    assert cache.overlay_depth == 1
    moves.give(np.array([0]))
    assert cache.overlay_depth == 0
    assert_restored(before, cache)


def test_pod_moves_go_through_the_cache_bookkeeping() -> None:
    cache = cache_of()
    before = state(cache)
    entries = [cache.pods[u] for u in ("a", "d")]
    with cache.what_if() as w:
        moves = w.pods(entries)
        moves.take(np.array([0, 1]))
        assert "a" not in cache and "d" not in cache
        moves.give(np.array([1]))
        assert cache.is_assumed("d")
    assert_restored(before, cache)


def test_overlays_nest_and_only_the_innermost_moves() -> None:
    cache = cache_of()
    before = state(cache)
    outer = rows_handle(cache.what_if(), cache, grouped=True)
    outer.take(np.array([0]))
    with cache.what_if(add=[(pod(name="y", uid="y", requests={"cpu": "1"}), "n0")]):
        assert cache.overlay_depth == 2
        assert cpu(cache, "n0") == 1500
        with pytest.raises(OverlayError, match="still open"):
            outer.give(np.array([0]))
    outer.give(np.array([0]))
    assert_restored(before, cache)


# ---------------------------------------------------------------------- the debug check
def sneak(cache: ClusterCache, p: Pod) -> None:
    """A change the overlay does not know of: what a writer that bypasses it would leave."""
    cache.assume(p, "n1")


def test_the_check_names_the_array_and_row_a_sneaked_change_left() -> None:
    cache = cache_of(check=True)
    with pytest.raises(OverlayNotRestored, match=r"NodeTable\.requested at row 1") as info, cache.what_if():
        sneak(cache, pod(name="z", uid="z", requests={"cpu": "100m"}))
    assert info.value.array == "NodeTable.requested"
    assert info.value.row == 1


def test_the_check_catches_np_add_at_which_ignores_the_read_only_flag() -> None:
    cache = cache_of(check=True)
    with pytest.raises(OverlayNotRestored, match=r"NodeTable\.pod_count at row 2"), cache.what_if():
        np.add.at(cache.nodes.pod_count, [2], 1)  # numpy's ufunc.at writes read-only arrays


def test_the_check_sees_a_pod_put_back_on_another_node() -> None:
    cache = cache_of(check=True)
    with pytest.raises(OverlayNotRestored), cache.what_if(remove=["c"]):
        cache.forget("d")
        cache.assume(pod(name="d", uid="d", requests={"cpu": "250m"}), "n2")  # same counts, new record


def test_without_the_check_a_sneaked_change_goes_unnoticed() -> None:
    cache = cache_of(check=False)
    with cache.what_if():
        sneak(cache, pod(name="z", uid="z", requests={"cpu": "100m"}))
    assert cpu(cache, "n1") == 2100


def test_the_check_is_on_in_the_test_suite() -> None:
    assert ClusterCache().check_overlays
