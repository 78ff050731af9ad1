"""The framework's timer: every extension point of every cycle, plugin calls on one cycle in ten."""

from __future__ import annotations

from typing import Any

from ksched.cache.cluster import ClusterCache
from ksched.framework import api
from ksched.framework.runtime import SAMPLE_EVERY, Framework
from ksched.model.node import node_from_dict
from ksched.model.pod import pod_from_dict
from tests.builders import make_node, make_pod


class Recorder:
    """A :class:`~ksched.framework.runtime.FrameworkRecorder` that keeps what it is told."""

    def __init__(self) -> None:
        self.points: list[tuple[str, str, str]] = []
        self.plugins: list[tuple[str, str, str]] = []
        self.failures: list[tuple[str, str]] = []

    def extension_point(self, profile: str, point: str, status: str, seconds: float) -> None:
        assert seconds >= 0
        self.points.append((profile, point, status))

    def plugin(self, plugin: str, point: str, status: str, seconds: float) -> None:
        assert seconds >= 0
        self.plugins.append((plugin, point, status))

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
    per_cycle = [("p", "PreFilter", "Success"), ("p", "PreScore", "Success"), ("p", "Score", "Success")]
    assert rec.points == per_cycle * (2 * SAMPLE_EVERY)
    assert rec.plugins == [("Skipper", "PreFilter", "Skip"), ("Flat", "Score", "Success")] * 2
    assert rec.failures == []


def test_without_a_recorder_nothing_is_timed() -> None:
    fw = Framework("p", scores=[(Flat(), 1)])
    assert not fw.timer.recording
    assert fw.schedule_pod(pod_from_dict(make_pod("web")), _cluster()).selected_node is not None
