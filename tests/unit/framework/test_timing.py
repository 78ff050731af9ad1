"""The framework's timer: every extension point of every cycle, plugin calls on one cycle in ten, and
plugin evaluations counted as upstream's instrumented plugins count them."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from ksched.cache.cluster import ClusterCache
from ksched.framework import api
from ksched.framework.interface import Code, FilterResult, Status
from ksched.framework.runtime import SAMPLE_EVERY, Framework
from ksched.model.node import node_from_dict
from ksched.model.pod import pod_from_dict
from tests.builders import make_node, make_pod, pod_status


class Recorder:
    """A :class:`~ksched.framework.runtime.FrameworkRecorder` that keeps what it is told."""

    def __init__(self) -> None:
        self.points: list[tuple[str, str, str]] = []
        self.plugins: list[tuple[str, str, str]] = []
        self.failures: list[tuple[str, str]] = []
        self.evaluations: dict[tuple[str, str], Counter[str]] = {}

    def extension_point(self, profile: str, point: str, status: str, seconds: float) -> None:
        assert seconds >= 0
        self.points.append((profile, point, status))

    def extension_points(
        self, profile: str, points: tuple[str, ...], statuses: tuple[str, ...], seconds: float
    ) -> None:
        for point, status in zip(points, statuses, strict=True):
            self.extension_point(profile, point, status, seconds)

    def plugin(self, plugin: str, point: str, status: str, seconds: float) -> None:
        assert seconds >= 0
        self.plugins.append((plugin, point, status))

    def plugin_evaluations(self, profile: str, point: str) -> Counter[str]:
        return self.evaluations.setdefault((profile, point), Counter())

    def plugin_failed(self, plugin: str, point: str) -> None:
        self.failures.append((plugin, point))


class Skipper:
    name = "Skipper"

    def pre_filter(self, state: Any, pod: Any, cluster: Any) -> Any:
        return None, api.SKIP

    def filter(self, state: Any, pod: Any, cluster: Any) -> Any:
        raise AssertionError("skipped at PreFilter, never called")


class Flat:
    name = "Flat"

    def score(self, state: Any, pod: Any, cluster: Any, feasible: Any) -> int:
        return 50


def _cluster(n: int = 3) -> ClusterCache:
    cache = ClusterCache()
    for i in range(n):
        cache.add_node(node_from_dict(make_node(f"n{i}")))
    return cache


def test_every_cycle_reports_its_points_and_one_in_ten_its_plugins() -> None:
    rec = Recorder()
    skipper = Skipper()
    fw = Framework("p", pre_filter=[skipper], filters=[skipper], scores=[(Flat(), 1)], recorder=rec)
    cache = _cluster()
    p = pod_from_dict(make_pod("web"))
    for _ in range(2 * SAMPLE_EVERY):
        assert fw.schedule_pod(p, cache).selected_node is not None
    per_cycle = [
        ("p", "PreFilter", "Success"),
        ("p", "Filter", "Success"),
        ("p", "PreScore", "Success"),
        ("p", "Score", "Success"),
    ]
    assert rec.points == per_cycle * (2 * SAMPLE_EVERY)
    assert rec.plugins == [("Skipper", "PreFilter", "Skip"), ("Flat", "Score", "Success")] * 2
    assert rec.failures == []
    # Skip at PreFilter is no evaluation, and a skipped Filter runs on no node; Flat scores 3 nodes a cycle.
    assert rec.evaluations[("p", "PreFilter")] == {}
    assert rec.evaluations[("p", "Filter")] == {}
    assert rec.evaluations[("p", "Score")] == {"Flat": 3 * 2 * SAMPLE_EVERY}


def test_without_a_recorder_nothing_is_timed() -> None:
    fw = Framework("p", scores=[(Flat(), 1)])
    assert not fw.timer.recording
    assert fw.schedule_pod(pod_from_dict(make_pod("web")), _cluster()).selected_node is not None


class FailRows:
    """Filter failing the named nodes."""

    def __init__(self, name: str, nodes: set[str]) -> None:
        self.name = name
        self.nodes = nodes

    def filter(self, state: Any, pod: Any, cluster: ClusterCache) -> Any:
        fails = np.zeros(cluster.nodes.n_rows, dtype=np.bool_)
        for n in self.nodes:
            fails[cluster.nodes.row_of[n]] = True
        return FilterResult.from_mask(fails, "no", Code.UNSCHEDULABLE)


class Says:
    """PreFilter / PreScore returning ``status``."""

    def __init__(self, name: str, status: Status) -> None:
        self.name = name
        self.status = status

    def pre_filter(self, state: Any, pod: Any, cluster: Any) -> Any:
        return None, self.status

    def pre_score(self, state: Any, pod: Any, cluster: Any, feasible: Any) -> Status:
        return self.status


def test_plugin_evaluations_count_what_upstreams_instrumented_plugins_count() -> None:
    """PreFilter and PreScore: one per call that is no Skip. Filter: one per node still feasible when
    the plugin runs (a node stops at its first failure). Score: one per node scored."""
    rec = Recorder()
    cache = _cluster(10)
    fw = Framework(
        "p",
        pre_filter=[Says("Skips", api.SKIP), Says("Runs", api.SUCCESS)],
        filters=[FailRows("First", {"n0", "n1", "n2"}), FailRows("Second", {"n2", "n3"})],
        pre_score=[Says("Skips", api.SKIP), Says("Runs", api.SUCCESS)],
        scores=[(Flat(), 1)],
        recorder=rec,
    )
    fw.schedule_pod(pod_from_dict(make_pod("web")), cache)
    assert rec.evaluations[("p", "PreFilter")] == {"Runs": 1}
    assert rec.evaluations[("p", "Filter")] == {"First": 10, "Second": 7}
    assert rec.evaluations[("p", "PreScore")] == {"Runs": 1}
    assert rec.evaluations[("p", "Score")] == {"Flat": 6}


def test_a_nominated_node_that_fits_is_the_one_node_evaluated() -> None:
    rec = Recorder()
    fw = Framework("p", filters=[FailRows("F", {"n0"})], scores=[(Flat(), 1)], recorder=rec)
    nominated = pod_from_dict(make_pod("web", status=pod_status(nominated_node_name="n2")))
    assert fw.schedule_pod(nominated, _cluster(5)).selected_node == "n2"
    assert rec.evaluations[("p", "Filter")] == {"F": 1}
    assert rec.evaluations[("p", "Score")] == {}


def test_filter_evaluations_stop_where_percentage_of_nodes_to_score_stops() -> None:
    """300 nodes at 10%: the walk keeps 100 feasible nodes and stops at the 101st, having seen the
    failed ones on its way (n0..n9 fail the first plugin, n10..n14 the second)."""
    rec = Recorder()
    fails = {f"n{i}" for i in range(10)}
    second = {f"n{i}" for i in range(10, 15)}
    fw = Framework(
        "p",
        filters=[FailRows("First", fails), FailRows("Second", second)],
        scores=[(Flat(), 1)],
        percentage_of_nodes_to_score=10,
        recorder=rec,
    )
    fw.schedule_pod(pod_from_dict(make_pod("web")), _cluster(300))
    assert rec.evaluations[("p", "Filter")] == {"First": 115, "Second": 105}
    assert rec.evaluations[("p", "Score")] == {"Flat": 100}
    assert fw.start_index.value == 115
