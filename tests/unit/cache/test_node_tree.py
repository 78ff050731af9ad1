"""The node order upstream's Filter walks: the nodeTree's zone round robin, as the snapshot keeps it.

Cases from upstream's ``TestSchedulerCache_updateNodeInfoSnapshotList``
(``pkg/scheduler/backend/cache/cache_test.go``): node-0 and node-1 in zone 0, node-2..node-7 in
zone 1; ``snapshot`` reads the order in between, as a scheduling cycle does.
"""

from __future__ import annotations

import pytest

from ksched.cache.cluster import ClusterCache
from ksched.cache.node_tree import NodeTree, zone_key
from ksched.model.node import Node
from tests.builders import node

ZONE_OF = {f"node-{i}": (0 if i < 2 else 1) for i in range(8)}


def _node(i: int, zone: int | None = None) -> Node:
    z = ZONE_OF[f"node-{i}"] if zone is None else zone
    labels = {"topology.kubernetes.io/region": f"region-{z}", "topology.kubernetes.io/zone": f"zone-{z}"}
    return node(f"node-{i}", cpu=1, labels=labels)


def _names(cache: ClusterCache) -> list[str]:
    by_row = {row: name for name, row in cache.nodes.row_of.items()}
    return [by_row[int(r)] for r in cache.node_order()]


def _run(ops: str) -> list[str]:
    """``ops``: node numbers to add, ``s`` to take the order (a snapshot) in between."""
    cache = ClusterCache()
    for op in ops.split():
        if op == "s":
            cache.node_order()
        else:
            cache.add_node(_node(int(op)))
    return _names(cache)


@pytest.mark.parametrize(
    ("ops", "expected"),
    [
        pytest.param("", [], id="Empty cache"),
        pytest.param("0", ["node-0"], id="Single node"),
        pytest.param("0 s 1", ["node-0", "node-1"], id="Two nodes"),
        pytest.param(
            "2 3 s 4 0",
            ["node-2", "node-0", "node-3", "node-4"],
            id="bug 91601, two nodes, update the snapshot and add two nodes in different zones",
        ),
        pytest.param(
            "2 3 4 5 s 6 0",
            ["node-2", "node-0", "node-3", "node-4", "node-5", "node-6"],
            id="bug 91601, 6 nodes, one in a different zone",
        ),
        pytest.param(
            "2 s 3 4 s 5 6 0 1",
            ["node-2", "node-0", "node-3", "node-1", "node-4", "node-5", "node-6"],
            id="bug 91601, 7 nodes, two in a different zone",
        ),
        pytest.param(
            "2 1 s 3 4 s 5 6 0",
            ["node-2", "node-1", "node-3", "node-0", "node-4", "node-5", "node-6"],
            id="bug 91601, 7 nodes, two in a different zone, different zone order",
        ),
    ],
)
def test_snapshot_node_list_order(ops: str, expected: list[str]) -> None:
    assert _run(ops) == expected


def test_a_zone_change_alone_keeps_the_list_until_the_set_of_nodes_changes() -> None:
    cache = ClusterCache()
    for i in (0, 2, 3):
        cache.add_node(_node(i))
    assert _names(cache) == ["node-0", "node-2", "node-3"]
    cache.update_node(_node(0, zone=1))  # node-0 moves to the end of zone 1
    assert _names(cache) == ["node-0", "node-2", "node-3"]  # upstream rebuilds on add/remove only
    cache.add_node(_node(1))
    assert _names(cache) == ["node-2", "node-1", "node-3", "node-0"]


def test_a_node_deleted_and_added_again_between_cycles_keeps_its_place() -> None:
    cache = ClusterCache()
    for i in (0, 2, 3):
        cache.add_node(_node(i))
    assert _names(cache) == ["node-0", "node-2", "node-3"]
    cache.remove_node("node-0")
    cache.add_node(_node(1))  # takes node-0's free row
    cache.add_node(_node(0))  # a new row
    cache.remove_node("node-1")
    assert _names(cache) == ["node-0", "node-2", "node-3"]
    cache.remove_node("node-2")
    assert _names(cache) == ["node-3", "node-0"]


def test_an_emptied_zone_goes_to_the_end_when_it_comes_back() -> None:
    tree = NodeTree()
    tree.add("a", "z0")
    tree.add("b", "z1")
    tree.remove("a")
    tree.add("c", "z0")
    assert tree.names() == ["b", "c"]


@pytest.mark.parametrize(
    ("labels", "key"),
    [
        pytest.param({}, "", id="no zone labels"),
        pytest.param({"topology.kubernetes.io/zone": "z"}, ":\x00:z", id="zone only"),
        pytest.param(
            {"topology.kubernetes.io/zone": "z", "topology.kubernetes.io/region": "r"},
            "r:\x00:z",
            id="GA labels",
        ),
        pytest.param(
            {"topology.kubernetes.io/zone": "ga", "failure-domain.beta.kubernetes.io/zone": "beta"},
            ":\x00:beta",
            id="the deprecated beta label wins, as GetZoneKey reads it first",
        ),
    ],
)
def test_zone_key(labels: dict[str, str], key: str) -> None:
    assert zone_key(labels) == key
