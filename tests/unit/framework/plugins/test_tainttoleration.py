"""TaintToleration, ported from upstream
``pkg/scheduler/framework/plugins/tainttoleration/taint_toleration_test.go``:
TestTaintTolerationFilter (9 cases) and TestTaintTolerationScore (5 cases).

Upstream's filter cases expect ``node(s) had untolerated taint {key: value}``; v1.35 (PR #134740)
reports ``node(s) had untolerated taint(s)`` and ksched shows the named taint through
``explain_row``, so each rejecting case checks both.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ksched.framework.interface import Code, CycleState
from ksched.framework.plugins.tainttoleration import ERR_REASON_NOT_MATCH, TaintToleration, new
from ksched.framework.runtime import Framework
from tests.builders import cluster_of, make_node, pod


def tol(key: str = "", value: str = "", effect: str = "", operator: str = "") -> dict[str, str]:
    return {"key": key, "operator": operator, "value": value, "effect": effect}


def taint(key: str, value: str, effect: str) -> dict[str, str]:
    return {"key": key, "value": value, "effect": effect}


FILTER_CASES = [
    pytest.param(
        [], [taint("dedicated", "user1", "NoSchedule")], "{dedicated: user1}",
        id="A pod having no tolerations can't be scheduled onto a node with nonempty taints",
    ),
    pytest.param(
        [tol("dedicated", "user1", "NoSchedule")], [taint("dedicated", "user1", "NoSchedule")], None,
        id="A pod which can be scheduled on a dedicated node assigned to user1 with effect NoSchedule",
    ),
    pytest.param(
        [tol("dedicated", "user2", "NoSchedule", "Equal")], [taint("dedicated", "user1", "NoSchedule")],
        "{dedicated: user1}",
        id="A pod which can't be scheduled on a dedicated node assigned to user2 with effect NoSchedule",
    ),
    pytest.param(
        [tol("foo", "", "NoSchedule", "Exists")], [taint("foo", "bar", "NoSchedule")], None,
        id="A pod can be scheduled onto the node, with a toleration uses operator Exists "
        "that tolerates the taints on the node",
    ),
    pytest.param(
        [tol("dedicated", "user2", "NoSchedule", "Equal"), tol("foo", "", "NoSchedule", "Exists")],
        [taint("dedicated", "user2", "NoSchedule"), taint("foo", "bar", "NoSchedule")],
        None,
        id="A pod has multiple tolerations, node has multiple taints, all the taints are tolerated, "
        "pod can be scheduled onto the node",
    ),
    pytest.param(
        [tol("foo", "bar", "PreferNoSchedule", "Equal")], [taint("foo", "bar", "NoSchedule")], "{foo: bar}",
        id="A pod has a toleration that keys and values match the taint on the node, but (non-empty) effect "
        "doesn't match, can't be scheduled onto the node",
    ),
    pytest.param(
        [tol("foo", "bar", "", "Equal")], [taint("foo", "bar", "NoSchedule")], None,
        id="The pod has a toleration that keys and values match the taint on the node, the effect of "
        "toleration is empty, and the effect of taint is NoSchedule. Pod can be scheduled onto the node",
    ),
    pytest.param(
        [tol("dedicated", "user2", "NoSchedule", "Equal")],
        [taint("dedicated", "user1", "PreferNoSchedule")],
        None,
        id="The pod has a toleration that key and value don't match the taint on the node, but the effect of "
        "taint on node is PreferNoSchedule. Pod can be scheduled onto the node",
    ),
    pytest.param(
        [], [taint("dedicated", "user1", "PreferNoSchedule")], None,
        id="The pod has no toleration, but the effect of taint on node is PreferNoSchedule. "
        "Pod can be scheduled onto the node",
    ),
]


@pytest.mark.parametrize(("tolerations", "taints", "untolerated"), FILTER_CASES)
def test_filter(
    tolerations: list[dict[str, str]], taints: list[dict[str, str]], untolerated: str | None
) -> None:
    cluster = cluster_of([make_node("nodeA", taints=taints)])
    p = pod(tolerations=tolerations)
    plugin = TaintToleration()
    result = plugin.filter(CycleState(), p, cluster)
    row = cluster.nodes.row_of["nodeA"]
    reasons, code = result.reasons_at(row)
    if untolerated is None:
        assert reasons == []
        assert plugin.explain_row(p, cluster, row) is None
    else:
        assert reasons == [ERR_REASON_NOT_MATCH]
        assert reasons == ["node(s) had untolerated taint(s)"]
        assert code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert plugin.explain_row(p, cluster, row) == f"untolerated taint {untolerated}"


def test_explain_names_first_untolerated_taint_in_spec_order() -> None:
    cluster = cluster_of(
        [make_node("n", taints=[taint("a", "1", "PreferNoSchedule"), taint("b", "2", "NoExecute"),
                                taint("c", "3", "NoSchedule")])]
    )
    plugin = TaintToleration()
    assert plugin.explain_row(pod(), cluster, 0) == "untolerated taint {b: 2}"
    tolerant = pod(tolerations=[tol("b", operator="Exists")])
    assert plugin.explain_row(tolerant, cluster, 0) == "untolerated taint {c: 3}"


def test_filter_all_pass_without_hard_taints_is_free() -> None:
    cluster = cluster_of([make_node("a"), make_node("b", taints=[taint("x", "y", "PreferNoSchedule")])])
    assert TaintToleration().filter(CycleState(), pod(), cluster).failed is None


def test_filter_many_taints_span_several_words() -> None:
    """More than 64 distinct taints: the bitset has several words and the mask must line up."""
    nodes = [make_node(f"n{i}", taints=[taint(f"k{i}", "v", "NoSchedule")]) for i in range(130)]
    cluster = cluster_of(nodes)
    p = pod(tolerations=[tol(f"k{i}", "v", "NoSchedule") for i in range(0, 130, 2)])
    result = TaintToleration().filter(CycleState(), p, cluster)
    assert result.failed is not None
    for i in range(130):
        row = cluster.nodes.row_of[f"n{i}"]
        assert bool(result.failed[row]) == (i % 2 == 1)


PN = "PreferNoSchedule"
SCORE_CASES = [
    pytest.param(
        [tol("foo", "bar", PN, "Equal")],
        {"nodeA": [taint("foo", "bar", PN)], "nodeB": [taint("foo", "blah", PN)]},
        {"nodeA": 100, "nodeB": 0},
        id="node with taints tolerated by the pod, gets a higher score than those node with intolerable "
        "taints",
    ),
    pytest.param(
        [tol("cpu-type", "arm64", PN, "Equal"), tol("disk-type", "ssd", PN, "Equal")],
        {
            "nodeA": [],
            "nodeB": [taint("cpu-type", "arm64", PN)],
            "nodeC": [taint("cpu-type", "arm64", PN), taint("disk-type", "ssd", PN)],
        },
        {"nodeA": 100, "nodeB": 100, "nodeC": 100},
        id="the nodes that all of their taints are tolerated by the pod, get the same score, "
        "no matter how many tolerable taints a node has",
    ),
    pytest.param(
        [tol("foo", "bar", PN, "Equal")],
        {
            "nodeA": [],
            "nodeB": [taint("cpu-type", "arm64", PN)],
            "nodeC": [taint("cpu-type", "arm64", PN), taint("disk-type", "ssd", PN)],
        },
        {"nodeA": 100, "nodeB": 50, "nodeC": 0},
        id="the more intolerable taints a node has, the lower score it gets.",
    ),
    pytest.param(
        [tol("cpu-type", "arm64", "NoSchedule", "Equal"), tol("disk-type", "ssd", "NoSchedule", "Equal")],
        {
            "nodeA": [],
            "nodeB": [taint("cpu-type", "arm64", "NoSchedule")],
            "nodeC": [taint("cpu-type", "arm64", PN), taint("disk-type", "ssd", PN)],
        },
        {"nodeA": 100, "nodeB": 100, "nodeC": 0},
        id="only taints and tolerations that have effect PreferNoSchedule are checked by "
        "taints-tolerations priority function",
    ),
    pytest.param(
        [],
        {"nodeA": [], "nodeB": [taint("cpu-type", "arm64", PN)]},
        {"nodeA": 100, "nodeB": 0},
        id="Default behaviour No taints and tolerations, lands on node with no taints",
    ),
]


def _scores(plugin: Any, p: Any, cluster: Any, feasible: np.ndarray) -> dict[str, int]:
    state = CycleState()
    assert plugin.pre_score(state, p, cluster, feasible).ok
    raw = plugin.score(state, p, cluster, feasible)
    out = plugin.normalize_score(state, p, raw, feasible)
    return {
        cluster.nodes.nodes[row].name: int(out[row]) if isinstance(out, np.ndarray) else int(out)
        for row in np.flatnonzero(feasible)
    }


@pytest.mark.parametrize(("tolerations", "node_taints", "expected"), SCORE_CASES)
def test_score(
    tolerations: list[dict[str, str]], node_taints: dict[str, list[dict[str, str]]], expected: dict[str, int]
) -> None:
    cluster = cluster_of([make_node(name, taints=t) for name, t in node_taints.items()])
    feasible = cluster.nodes.valid[: cluster.nodes.n_rows].copy()
    assert _scores(TaintToleration(), pod(tolerations=tolerations), cluster, feasible) == expected


def test_score_normalizes_over_feasible_rows_only() -> None:
    cluster = cluster_of(
        [
            make_node("a"),
            make_node("b", taints=[taint("x", "1", PN)]),
            make_node("c", taints=[taint("x", "1", PN), taint("y", "1", PN), taint("z", "1", PN)]),
        ]
    )
    feasible = np.array([True, True, False])
    assert _scores(TaintToleration(), pod(), cluster, feasible) == {"a": 100, "b": 0}


def test_framework_run() -> None:
    plugin = new(None, None)  # type: ignore[arg-type]
    fw = Framework("default-scheduler", filters=[plugin], pre_score=[plugin], scores=[(plugin, 3)])
    cluster = cluster_of(
        [
            make_node("hard", taints=[taint("dedicated", "gpu", "NoSchedule")]),
            make_node("soft", taints=[taint("spot", "true", PN)]),
            make_node("clean"),
        ]
    )
    result = fw.schedule_pod(pod(), cluster, explain=True)
    assert result.selected_node == "clean"
    tolerant = pod(tolerations=[tol("dedicated", "gpu", "NoSchedule")])
    assert fw.schedule_pod(tolerant, cluster).selected_node in {"hard", "clean"}

    only_hard = cluster_of([make_node("hard", taints=[taint("dedicated", "gpu", "NoExecute")])])
    failed = fw.schedule_pod(pod(), only_hard)
    assert failed.selected_node is None
    assert failed.message() == "0/1 nodes are available: 1 node(s) had untolerated taint(s)."
