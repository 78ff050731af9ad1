"""Extenders in the scheduling cycle, with an in-process fake extender.

Ported as data from upstream ``pkg/scheduler/schedule_one_test.go``: ``TestSchedulerWithExtenders``
(filter order, failures into the FitError, errors, ignorable extenders, prioritizer weights against
plugin weights), ``TestFindNodesThatPassExtenders`` (failed vs failedAndUnresolvable statuses, reasons
of several extenders appended) and the extender part of ``TestPrioritizeNodes``; and from
``pkg/scheduler/extender_test.go`` ``TestIsInterested`` (managed resources).

Not ported: upstream's cases that check ``EvaluatedNodes`` (ksched's result counts feasible nodes
only) and the ``TestFindNodesThatPassExtenders`` case where an extender reports a failure for a node
that does not exist (upstream records a status for it; ksched has no row to put it on).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ksched.cache.cluster import ClusterCache
from ksched.framework.extender import EXTENDER_NAME, find_nodes_passing_extenders, interested_in
from ksched.framework.handle import Handle, HandleServices
from ksched.framework.interface import MAX_NODE_SCORE, SUCCESS, Code, CycleState, FilterResult
from ksched.framework.result import CycleResult
from ksched.framework.runtime import Framework
from ksched.model.pod import Pod
from tests.builders import cluster_of, make_node, pod
from tests.unit.extenders.extender_support import (
    FakeExtender,
    error_predicate,
    error_prioritizer,
    false_predicate,
    only,
    prefer,
    true_predicate,
)


class TrueFilter:
    name = "TrueFilter"

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterCache) -> FilterResult:
        return FilterResult.all_pass()


class Node2Prioritizer:
    """Upstream ``Node2PrioritizerPlugin``: MaxNodeScore for node2, MinNodeScore elsewhere."""

    name = "Node2Prioritizer"

    def score(self, state: CycleState, pod: Pod, cluster: ClusterCache, feasible: np.ndarray) -> Any:
        out = np.zeros(cluster.nodes.n_rows, dtype=np.int64)
        row = cluster.nodes.row_of.get("node2")
        if row is not None:
            out[row] = MAX_NODE_SCORE
        return out


def cluster(*names: str) -> ClusterCache:
    return cluster_of([make_node(n, cpu=4, memory="8Gi", pods=10) for n in names])


def framework(extenders: list[FakeExtender], scores: list[tuple[Any, int]] = ()) -> Framework:  # type: ignore[assignment]
    handle = Handle(
        "default-scheduler", rng=np.random.default_rng(1), services=HandleServices(extenders=tuple(extenders))
    )
    return Framework("default-scheduler", filters=[TrueFilter()], scores=list(scores), handle=handle)


BOTH_FAILED = (
    'fit: 0/2 nodes are available: 1 FakeExtender: node "node1" failed, 1 FakeExtender: node "node2" failed.'
)
CASES = [
    # (id, extenders, score plugins, nodes, want node | "error: <text>" | "fit: <message>")
    (
        "test 1: error extender",
        [FakeExtender([true_predicate]), FakeExtender([error_predicate])],
        [],
        ["node1", "node2"],
        "error: some error",
    ),
    (
        "test 2: false extender",
        [FakeExtender([true_predicate]), FakeExtender([false_predicate])],
        [],
        ["node1", "node2"],
        BOTH_FAILED,
    ),
    (
        "test 3: one extender keeps node1",
        [FakeExtender([true_predicate]), FakeExtender([only("node1")])],
        [],
        ["node1", "node2"],
        "node1",
    ),
    (
        "test 4: extenders keep nothing in turn",
        [FakeExtender([only("node2")]), FakeExtender([only("node1")])],
        [],
        ["node1", "node2"],
        BOTH_FAILED,
    ),
    (
        "test 5: prioritize error ignored",
        [FakeExtender([true_predicate], [(error_prioritizer, 10)], weight=1)],
        [],
        ["node1"],
        "node1",
    ),
    (
        "test 6: heavier extender wins",
        [
            FakeExtender([true_predicate], [(prefer("node1"), 10)], weight=1),
            FakeExtender([true_predicate], [(prefer("node2"), 10)], weight=5),
        ],
        [],
        ["node1", "node2"],
        "node2",
    ),
    (
        "test 7: plugin weight beats the extender",
        [FakeExtender([true_predicate], [(prefer("node1"), 10)], weight=1)],
        [(Node2Prioritizer(), 20)],
        ["node1", "node2"],
        "node2",
    ),
    (
        "test 8: ignorable error extender skipped",
        [FakeExtender([error_predicate], ignorable=True), FakeExtender([only("node1")])],
        [],
        ["node1", "node2"],
        "node1",
    ),
    (
        "test 9: not interested extender skipped",
        [
            FakeExtender([error_predicate], managed=frozenset({"example.com/foo"})),
            FakeExtender([only("node1")]),
        ],
        [],
        ["node1", "node2"],
        "node1",
    ),
]


@pytest.mark.parametrize(
    ("extenders", "scores", "nodes", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_scheduler_with_extenders(
    extenders: list[FakeExtender], scores: list, nodes: list[str], want: str
) -> None:
    fw = framework(extenders, scores)
    result = fw.schedule_pod(pod("ignore", uid="ignore"), cluster(*nodes))
    if want.startswith("error: "):
        assert result.status.code == Code.ERROR
        assert result.message() == want.removeprefix("error: ")
    elif want.startswith("fit: "):
        assert result.status.code == Code.UNSCHEDULABLE
        assert result.message() == want.removeprefix("fit: ")
    else:
        assert result.status is SUCCESS, result.message()
        assert result.selected_node == want


def test_extenders_get_the_feasible_nodes_in_one_request_each_in_order() -> None:
    first, second = FakeExtender([only("node2")]), FakeExtender([true_predicate])
    fw = framework([first, second])
    result = fw.schedule_pod(pod("p"), cluster("node1", "node2", "node3"))
    assert result.selected_node == "node2"
    assert first.calls == [("filter", ("node1", "node2", "node3"))]
    assert second.calls == [("filter", ("node2",))]


def test_no_feasible_node_skips_the_extenders() -> None:
    ext = FakeExtender([true_predicate])

    class Nope(TrueFilter):
        name = "Nope"

        def filter(self, state: CycleState, pod: Pod, cluster: ClusterCache) -> FilterResult:
            return FilterResult.from_mask(
                cluster.nodes.valid[: cluster.nodes.n_rows], "nope", Code.UNSCHEDULABLE
            )

    handle = Handle("p", rng=np.random.default_rng(1), services=HandleServices(extenders=(ext,)))
    fw = Framework("p", filters=[Nope()], handle=handle)
    result = fw.schedule_pod(pod("p"), cluster("node1"))
    assert result.message() == "0/1 nodes are available: 1 nope."
    assert ext.calls == []


def test_single_feasible_node_is_not_prioritized() -> None:
    ext = FakeExtender([true_predicate], [(prefer("node1"), 1)], weight=1)
    result = framework([ext]).schedule_pod(pod("p"), cluster("node1"))
    assert result.selected_node == "node1"
    assert [c[0] for c in ext.calls] == ["filter"]


# TestFindNodesThatPassExtenders, as data: (extenders, nodes, want feasible, want {node: (code, reasons)})
FIND_CASES = [
    ("error", [FakeExtender([error_predicate])], ["a"], "error", {}),
    ("success", [FakeExtender([true_predicate])], ["a", "b"], ["a", "b"], {}),
    (
        "unschedulable",
        [FakeExtender([only("a")])],
        ["a", "b"],
        ["a"],
        {"b": (Code.UNSCHEDULABLE, ['FakeExtender: node "b" failed'])},
    ),
    (
        "unschedulable and unresolvable",
        [FakeExtender([only("a")], unresolvable=True)],
        ["a", "b", "c"],
        ["a"],
        {
            "b": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ['FakeExtender: node "b" failed']),
            "c": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ['FakeExtender: node "c" failed']),
        },
    ),
    (
        "two extenders, statuses of each",
        [FakeExtender([only("a"), only("a")]), FakeExtender([true_predicate])],
        ["a", "b"],
        ["a"],
        {"b": (Code.UNSCHEDULABLE, ['FakeExtender: node "b" failed'])},
    ),
]


@pytest.mark.parametrize(
    ("extenders", "nodes", "want", "statuses"), [c[1:] for c in FIND_CASES], ids=[c[0] for c in FIND_CASES]
)
def test_find_nodes_that_pass_extenders(
    extenders: list[FakeExtender], nodes: list[str], want: Any, statuses: dict[str, tuple[Code, list[str]]]
) -> None:
    cache = cluster(*nodes)
    feasible = cache.nodes.valid[: cache.nodes.n_rows].copy()
    result = CycleResult(pod("p"), "p", len(nodes), SUCCESS)
    result.valid = feasible.copy()
    out, error = find_nodes_passing_extenders(extenders, pod("p"), cache, feasible, result)
    if want == "error":
        assert error is not None and str(error) == "some error"
        return
    assert error is None
    assert sorted(cache.nodes.node(int(r)).name for r in np.flatnonzero(out)) == want
    result.feasible = out
    got = {}
    for name in nodes:
        failure = result.first_failure(cache.nodes.row_of[name])
        if failure is not None:
            plugin, reasons, code = failure
            assert plugin == EXTENDER_NAME
            got[name] = (code, reasons)
    assert got == statuses


def test_reasons_of_several_extenders_are_appended() -> None:
    """A node two extenders both report failed carries both reasons (upstream's AppendReason)."""

    class Liar(FakeExtender):
        def filter(self, pod: Pod, nodes: Any) -> Any:
            from ksched.framework.extender import FilterVerdict

            return FilterVerdict(("a",), {"b": "second says no"}, {})

    cache = cluster("a", "b")
    feasible = cache.nodes.valid[: cache.nodes.n_rows].copy()
    result = CycleResult(pod("p"), "p", 2, SUCCESS)
    result.valid = feasible.copy()
    exts = [FakeExtender([only("a")]), Liar([true_predicate])]
    out, _ = find_nodes_passing_extenders(exts, pod("p"), cache, feasible, result)
    result.feasible = out
    failure = result.first_failure(cache.nodes.row_of["b"])
    assert failure == (EXTENDER_NAME, ['FakeExtender: node "b" failed', "second says no"], Code.UNSCHEDULABLE)


@pytest.mark.parametrize(
    ("managed", "requests", "want"),
    [
        pytest.param(frozenset(), {"cpu": "1"}, True, id="no managed resources: interested in every pod"),
        pytest.param(
            frozenset({"example.com/foo"}), {"cpu": "1"}, False, id="pod asks for no managed resource"
        ),
        pytest.param(frozenset({"example.com/foo"}), {"example.com/foo": "1"}, True, id="pod asks for one"),
    ],
)
def test_is_interested(managed: frozenset[str], requests: dict[str, str], want: bool) -> None:
    assert interested_in(managed, pod("p", requests=requests)) is want


def test_is_interested_in_init_containers() -> None:
    from tests.builders import container

    p = pod("p", init_containers=[container(requests={"example.com/foo": "1"})])
    assert interested_in(frozenset({"example.com/foo"}), p)


def test_extender_scores_scale_by_weight_and_max_priority() -> None:
    """prioritizeNodes: score * weight * (MaxNodeScore / MaxExtenderPriority), in the explanation."""
    ext = FakeExtender([true_predicate], [(prefer("node1"), 1)], weight=3)
    result = framework([ext]).schedule_pod(pod("p"), cluster("node1", "node2"), explain=True)
    assert result.selected_node == "node1"
    total = result.total
    assert isinstance(total, np.ndarray)
    cache_rows = {"node1": 0, "node2": 1}
    assert int(total[cache_rows["node1"]]) == 10 * 3 * 10
    assert int(total[cache_rows["node2"]]) == 1 * 3 * 10


def test_nodes_dropped_without_a_reason_still_name_the_extender() -> None:
    """Upstream adds ExtenderName to the rejector plugins whenever the extenders narrowed the nodes."""

    class Silent(FakeExtender):
        def filter(self, pod: Pod, nodes: Any) -> Any:
            from ksched.framework.extender import FilterVerdict

            return FilterVerdict(())

    result = framework([Silent([true_predicate])]).schedule_pod(pod("p"), cluster("node1", "node2"))
    assert result.status.code == Code.UNSCHEDULABLE
    assert [name for name, _ in result.filters] == [EXTENDER_NAME]
    assert result.message() == "0/2 nodes are available:"  # upstream adds no empty histogram


def test_nominated_node_is_asked_alone_first() -> None:
    """evaluateNominatedNode: the extenders see the nominated node alone; when they keep it, it is
    the only node looked at, else every node is searched."""
    keeps = FakeExtender([true_predicate])
    nominated = pod("p", status={"nominatedNodeName": "node2"})
    result = framework([keeps]).schedule_pod(nominated, cluster("node1", "node2", "node3"))
    assert result.selected_node == "node2"
    assert keeps.calls == [("filter", ("node2",))]

    refuses = FakeExtender([only("node1")])
    result = framework([refuses]).schedule_pod(nominated, cluster("node1", "node2", "node3"))
    assert result.selected_node == "node1"
    assert refuses.calls == [("filter", ("node2",)), ("filter", ("node1", "node2", "node3"))]
