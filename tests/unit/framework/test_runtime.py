"""The cycle's mechanics, independent of any real plugin: PreFilter outcomes, node-name results,
errors, score range checks, tie-breaking, sampling and upstream's FitError text.

Cases follow ``pkg/scheduler/schedule_one_test.go`` (TestSchedulerSchedulePod, TestNumFeasibleNodesToFind,
TestSelectHost) and ``framework/types_test.go`` (TestFitError_Error), written as data.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest

from ksched.cache.cluster import ClusterCache
from ksched.framework.interface import (
    SKIP,
    SUCCESS,
    Code,
    CycleState,
    FilterResult,
    PreFilterResult,
    Status,
)
from ksched.framework.result import num_feasible_nodes_to_find
from ksched.framework.runtime import Framework
from ksched.model.pod import Pod
from tests.builders import cluster_of, make_node, pod


def cluster(n: int) -> ClusterCache:
    return cluster_of([make_node(f"n{i}", cpu=4, memory="8Gi", pods=10) for i in range(n)])


class FailNames:
    """Filter failing the named nodes with one or two reasons."""

    def __init__(self, name: str, fails: dict[str, tuple[str, ...]], code: Code = Code.UNSCHEDULABLE) -> None:
        self.name = name
        self.fails = fails
        self.code = code

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterCache) -> FilterResult:
        reasons = sorted({r for rs in self.fails.values() for r in rs})
        bits = np.zeros(cluster.nodes.n_rows, dtype=np.uint64)
        for node, rs in self.fails.items():
            for r in rs:
                bits[cluster.nodes.row_of[node]] |= np.uint64(1 << reasons.index(r))
        return FilterResult(bits, tuple(reasons), tuple(self.code for _ in reasons))


class PreFilterWith:
    def __init__(self, name: str, result: PreFilterResult | None, status: Status) -> None:
        self.name = name
        self.result = result
        self.status = status

    def pre_filter(
        self, state: CycleState, pod: Pod, cluster: ClusterCache
    ) -> tuple[PreFilterResult | None, Status]:
        return self.result, self.status


class ScoreBy:
    def __init__(self, name: str, scores: dict[str, int] | int, normalize: Any = None) -> None:
        self.name = name
        self.scores = scores

    def score(self, state: CycleState, pod: Pod, cluster: ClusterCache, feasible: np.ndarray) -> Any:
        if isinstance(self.scores, int):
            return self.scores
        out = np.zeros(cluster.nodes.n_rows, dtype=np.int64)
        for node, s in self.scores.items():
            out[cluster.nodes.row_of[node]] = s
        return out


class Boom:
    name = "Boom"

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterCache) -> FilterResult:
        raise RuntimeError("kaboom")


@pytest.mark.parametrize(
    ("nodes", "percentage", "want"),
    [
        pytest.param(10, 0, 10, id="not enough nodes: all"),
        pytest.param(99, 0, 99, id="99 nodes: all"),
        pytest.param(500, 0, 230, id="500 nodes adaptive 46%"),
        pytest.param(1000, 0, 420, id="1000 nodes adaptive 42%"),
        pytest.param(1000, 40, 400, id="1000 nodes at 40%"),
        pytest.param(5000, 0, 500, id="5000 nodes adaptive 10%"),
        pytest.param(6000, 0, 300, id="6000 nodes floor 5%"),
        pytest.param(15000, 0, 750, id="15000 nodes 5%"),
        pytest.param(1000, 1, 100, id="never fewer than 100"),
    ],
)
def test_num_feasible_nodes_to_find(nodes: int, percentage: int, want: int) -> None:
    assert num_feasible_nodes_to_find(nodes, percentage) == want


def test_fit_error_histogram_counts_first_failing_plugin_and_sorts_as_strings() -> None:
    c = cluster(13)
    first = FailNames("A", {f"n{i}": ("Insufficient cpu",) for i in range(10)} | {"n10": ("x", "y")})
    second = FailNames("B", {f"n{i}": ("node(s) had untolerated taint(s)",) for i in range(13)})
    result = Framework("p", filters=[first, second]).schedule_pod(pod(), c)
    assert result.selected_node is None
    assert result.message() == (
        "0/13 nodes are available: 1 x, 1 y, 10 Insufficient cpu, 2 node(s) had untolerated taint(s)."
    )
    assert result.first_failure(c.nodes.row_of["n12"]) == (
        "B",
        ["node(s) had untolerated taint(s)"],
        Code.UNSCHEDULABLE,
    )


def test_prefilter_rejection_replaces_the_histogram() -> None:
    pf = PreFilterWith(
        "P", None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("pod affinity terms conflict",))
    )
    result = Framework("p", pre_filter=[pf], filters=[FailNames("A", {})]).schedule_pod(pod(), cluster(3))
    assert result.message() == "0/3 nodes are available: pod affinity terms conflict."
    assert result.first_failure(0) == (
        "P",
        ["pod affinity terms conflict"],
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    )


def test_prefilter_skip_skips_the_filter() -> None:
    pf = PreFilterWith("A", None, SKIP)
    result = Framework(
        "p", pre_filter=[pf], filters=[FailNames("A", {"n0": ("no",), "n1": ("no",)})]
    ).schedule_pod(pod(), cluster(2))
    assert result.feasible_count == 2


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        pytest.param(
            [{"n1"}, {"n2"}], "node(s) didn't satisfy plugin(s) [A B] simultaneously", id="disjoint sets"
        ),
        pytest.param([set()], "node(s) didn't satisfy plugin A", id="one empty set"),
    ],
)
def test_prefilter_node_sets_that_do_not_intersect(sets: list[set[str]], message: str) -> None:
    pfs = [PreFilterWith(n, PreFilterResult(frozenset(s)), SUCCESS) for n, s in zip("AB", sets, strict=False)]
    result = Framework("p", pre_filter=pfs).schedule_pod(pod(), cluster(3))
    assert result.message() == f"0/3 nodes are available: {message}."


def test_prefilter_node_set_limits_filtering_and_names_the_rest() -> None:
    pf = PreFilterWith("A", PreFilterResult(frozenset({"n1", "n2", "gone"})), SUCCESS)
    result = Framework(
        "p", pre_filter=[pf], filters=[FailNames("B", {"n1": ("busy",), "n2": ("busy",)})]
    ).schedule_pod(pod(), cluster(4))
    assert result.message() == "0/4 nodes are available: 2 busy, 2 node(s) didn't satisfy plugin(s) [A]."


def test_a_raising_plugin_is_an_error_not_a_crash() -> None:
    result = Framework("p", filters=[Boom()]).schedule_pod(pod(), cluster(2))
    assert result.status.code == Code.ERROR
    assert result.message() == 'running "Boom" filter plugin: kaboom'


def test_score_out_of_range_is_an_error() -> None:
    result = Framework("p", scores=[(ScoreBy("S", {"n0": 101}), 1)]).schedule_pod(pod(), cluster(2))
    assert result.status.code == Code.ERROR
    assert (
        result.message()
        == 'plugin "S" returns an invalid score 101, it should in the range of [0, 100] after normalizing'
    )


def test_weighted_sum_picks_the_best() -> None:
    fw = Framework(
        "p", scores=[(ScoreBy("A", {"n0": 10, "n1": 50}), 2), (ScoreBy("B", {"n0": 100, "n1": 0}), 1)]
    )
    result = fw.schedule_pod(pod(), cluster(3), explain=True)
    assert result.selected_node == "n0"  # 2*10 + 100 beats 2*50 + 0
    assert [(s.plugin, s.weight) for s in result.scores] == [("A", 2), ("B", 1)]


def test_ties_are_broken_uniformly_and_reproducibly() -> None:
    c = cluster(4)
    fw = Framework(
        "p", scores=[(ScoreBy("A", {"n0": 7, "n1": 7, "n2": 7, "n3": 1}), 1)], rng=np.random.default_rng(5)
    )
    picks = Counter(fw.schedule_pod(pod(), c).selected_node for _ in range(3000))
    assert set(picks) == {"n0", "n1", "n2"}
    assert min(picks.values()) > 850
    again = Framework("p", scores=[(ScoreBy("A", 7), 1)], rng=np.random.default_rng(5))
    first = [again.schedule_pod(pod(), c).selected_node for _ in range(20)]
    again.rng = np.random.default_rng(5)
    assert [again.schedule_pod(pod(), c).selected_node for _ in range(20)] == first


def test_no_nodes() -> None:
    result = Framework("p").schedule_pod(pod(), ClusterCache())
    assert result.message() == "no nodes available to schedule pods"


def test_nominated_node_wins_when_it_fits() -> None:
    c = cluster(3)
    p = pod()
    p = Pod(**{**{f: getattr(p, f) for f in p.__dataclass_fields__}, "nominated_node_name": "n2"})
    fw = Framework("p", scores=[(ScoreBy("A", {"n0": 100}), 1)])
    assert fw.schedule_pod(p, c).selected_node == "n2"


def test_percentage_of_nodes_to_score_samples_feasible_nodes() -> None:
    c = cluster(300)
    fw = Framework("p", scores=[(ScoreBy("A", 1), 1)], percentage_of_nodes_to_score=10)
    result = fw.schedule_pod(pod(), c)
    assert result.feasible_count == 100  # at least minFeasibleNodesToFind
