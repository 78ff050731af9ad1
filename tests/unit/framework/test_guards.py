"""Guarded execution of out-of-tree plugins: every broken result becomes an Error status naming the
plugin and the problem, through the real runtime, and the scheduler loop keeps going."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from ksched.cache.cluster import ClusterCache
from ksched.config import config_from_dict
from ksched.framework import api
from ksched.framework.guards import (
    GuardedPlugin,
    InvalidResult,
    check_filter_result,
    check_permit,
    check_scores,
)
from ksched.framework.interface import Code
from ksched.framework.loader import PluginRegistry
from ksched.framework.profile import build_profiles
from ksched.framework.runtime import Framework
from ksched.metrics import FrameworkMetrics, Metrics
from tests import builders


def cluster(n: int = 3) -> ClusterCache:
    cache = ClusterCache()
    for i in range(n):
        cache.add_node(builders.node(f"n{i}", cpu="4", memory="8Gi", pods=10))
    return cache


def framework(
    plugin_cls: type, point: str = "multiPoint", weight: int = 1, metrics: Metrics | None = None
) -> Framework:
    registry = PluginRegistry({plugin_cls.name: plugin_cls})  # type: ignore[attr-defined]
    doc = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "plugins": {point: {"enabled": [{"name": plugin_cls.name, "weight": weight}]}},  # type: ignore[attr-defined]
            }
        ],
    }
    config = config_from_dict(doc, known_plugins=registry.names(), implements=registry.implements)
    recorder = FrameworkMetrics(metrics) if metrics is not None else None
    return build_profiles(config, registry=registry, seed=1, recorder=recorder)["default-scheduler"]


def pod() -> Any:
    return builders.pod("p", requests={"cpu": "100m"})


def score_plugin(fn: Callable[[api.ClusterView], Any], normalize: Callable[[Any], Any] | None = None) -> type:
    class Scorer:
        name = "Scorer"

        def __init__(self, args: dict[str, Any], handle: api.Handle) -> None:
            pass

        def score(self, state: Any, pod: Any, cluster: api.ClusterView, feasible: np.ndarray) -> Any:
            return fn(cluster)

    if normalize is not None:

        def normalize_score(self: Any, state: Any, pod: Any, scores: Any, feasible: np.ndarray) -> Any:
            return normalize(scores)

        Scorer.normalize_score = normalize_score  # type: ignore[attr-defined]
    return Scorer


def filter_plugin(fn: Callable[[api.ClusterView], Any]) -> type:
    class Filterer:
        name = "Filterer"

        def __init__(self, args: dict[str, Any], handle: api.Handle) -> None:
            pass

        def filter(self, state: Any, pod: Any, cluster: api.ClusterView) -> Any:
            return fn(cluster)

    return Filterer


def _raise(_: object) -> Any:
    raise RuntimeError("boom")


SCORE_CASES = [
    pytest.param(_raise, "boom", id="score raises"),
    pytest.param(
        lambda c: np.zeros(c.n_rows + 1, dtype=np.int64), "shape (4,), expected (3,)", id="wrong length"
    ),
    pytest.param(lambda c: np.zeros((c.n_rows, 2)), "shape (3, 2)", id="2-d array"),
    pytest.param(lambda c: np.array(["a"] * c.n_rows), "dtype <U1", id="strings"),
    pytest.param(lambda c: np.full(c.n_rows, np.nan), "nan for row 0", id="NaN"),
    pytest.param(lambda c: np.full(c.n_rows, np.inf), "inf for row 0", id="infinite"),
    pytest.param(lambda c: [1, 2, 3], "expected an int or a numpy array", id="a list"),
    pytest.param(lambda c: True, "returned a bool", id="a bool"),
    pytest.param(lambda c: np.full(c.n_rows, 101), "invalid score 101", id="above 100"),
    pytest.param(lambda c: -1, "invalid score -1", id="negative uniform"),
]


@pytest.mark.parametrize(("fn", "expected"), SCORE_CASES)
def test_broken_score_is_an_error_naming_plugin_and_problem(fn: Any, expected: str) -> None:
    fw = framework(score_plugin(fn))
    result = fw.schedule_pod(pod(), cluster())
    assert result.status.code == Code.ERROR
    assert result.status.plugin == "Scorer"
    assert "Scorer" in result.status.message
    assert expected in result.status.message
    assert result.selected_node is None


def test_out_of_range_after_normalize_has_upstreams_message() -> None:
    fw = framework(score_plugin(lambda c: np.zeros(c.n_rows, dtype=np.int64), normalize=lambda s: s + 200))
    result = fw.schedule_pod(pod(), cluster())
    assert result.status.message == (
        'plugin "Scorer" returns an invalid score 200, it should in the range of [0, 100] after normalizing'
    )


def test_nan_from_normalize_is_caught() -> None:
    fw = framework(score_plugin(lambda c: np.zeros(c.n_rows), normalize=lambda s: s * np.nan))
    result = fw.schedule_pod(pod(), cluster())
    assert result.status.code == Code.ERROR
    assert "normalize_score returned nan" in result.status.message


def test_float_scores_are_rounded_and_nan_on_empty_rows_is_ignored() -> None:
    cache = cluster(3)
    cache.remove_node("n1")  # row 1 now holds no node

    def fn(c: api.ClusterView) -> np.ndarray:
        out = np.array([10.4, np.nan, 90.6])
        return out

    fw = framework(score_plugin(fn))
    result = fw.schedule_pod(pod(), cache, explain=True)
    assert result.status.ok, result.status
    scores = result.scores[-1].scores
    assert isinstance(scores, np.ndarray) and scores.dtype == np.int64
    assert scores[[0, 2]].tolist() == [10, 91]
    assert result.selected_node == "n2"


FILTER_CASES = [
    pytest.param(_raise, "boom", id="filter raises"),
    pytest.param(lambda c: None, "expected a FilterResult", id="returns None"),
    pytest.param(
        lambda c: api.FilterResult(np.zeros(c.n_rows + 2, dtype=np.uint64), ("x",)),
        "has 5 rows, expected 3",
        id="wrong-length bitset",
    ),
    pytest.param(
        lambda c: api.FilterResult(np.full(c.n_rows, 0b100, dtype=np.uint64), ("a", "b")),
        "uses bit 2 but only 2 reason(s)",
        id="too few reasons",
    ),
    pytest.param(lambda c: api.FilterResult(np.ones(c.n_rows), ("a",)), "dtype float64", id="float bitset"),
    pytest.param(
        lambda c: api.FilterResult(np.full(c.n_rows, -1, dtype=np.int64), ("a",)),
        "negative entries",
        id="negative bits",
    ),
    pytest.param(
        lambda c: api.FilterResult(np.ones(c.n_rows, dtype=np.uint64), ("a", "b"), (Code.UNSCHEDULABLE,)),
        "2 reasons but 1 codes",
        id="codes and reasons differ",
    ),
    pytest.param(
        lambda c: api.FilterResult(np.ones(c.n_rows, dtype=np.uint64), ("a",), (Code.SUCCESS,)),
        "is not a rejection",
        id="success code",
    ),
]


@pytest.mark.parametrize(("fn", "expected"), FILTER_CASES)
def test_broken_filter_is_an_error_naming_plugin_and_problem(fn: Any, expected: str) -> None:
    fw = framework(filter_plugin(fn))
    result = fw.schedule_pod(pod(), cluster())
    assert result.status.code == Code.ERROR
    assert result.status.plugin == "Filterer"
    assert result.status.message.startswith('running "Filterer" filter plugin: ')
    assert expected in result.status.message


def test_bool_mask_without_codes_is_accepted_as_unschedulable() -> None:
    fw = framework(
        filter_plugin(lambda c: api.FilterResult(c.label_equals("x", "y") | (np.arange(3) == 1), ("no",)))
    )
    result = fw.schedule_pod(pod(), cluster())
    assert result.status.ok
    assert result.selected_node in ("n0", "n2")
    assert result.first_failure(1) == ("Filterer", ["no"], Code.UNSCHEDULABLE)


def test_plugin_cannot_write_into_the_cache() -> None:
    def fn(c: api.ClusterView) -> api.FilterResult:
        c.allocatable("cpu")[:] = 0
        return api.FilterResult.all_pass()

    cache = cluster()
    fw = framework(filter_plugin(fn))
    result = fw.schedule_pod(pod(), cache)
    assert result.status.code == Code.ERROR
    assert "read-only" in result.status.message
    assert int(cache.nodes.allocatable[0, cache.resources.column("cpu")]) == 4000


def test_metrics_count_errors_and_sample_durations() -> None:
    calls = {"n": 0}

    def fn(c: api.ClusterView) -> Any:
        calls["n"] += 1
        if calls["n"] % 2:
            raise RuntimeError("odd call")
        return np.zeros(c.n_rows, dtype=np.int64)

    metrics = Metrics()
    fw = framework(score_plugin(fn), metrics=metrics)
    cache = cluster()
    for _ in range(40):
        fw.schedule_pod(pod(), cache)
    reg = metrics.registry
    assert reg is not None
    errors = reg.get_sample_value(
        "ksched_plugin_errors_total", {"plugin": "Scorer", "extension_point": "Score"}
    )
    assert errors == 20
    labels = {"plugin": "Scorer", "extension_point": "Score"}
    failed = reg.get_sample_value(
        "scheduler_plugin_execution_duration_seconds_count", {**labels, "status": "Error"}
    )
    ok = reg.get_sample_value(
        "scheduler_plugin_execution_duration_seconds_count", {**labels, "status": "Success"}
    )
    assert failed is None  # one cycle in ten is timed: cycles 10, 20, 30 and 40, which succeeded
    assert ok == 4


def test_check_helpers_directly() -> None:
    feasible = np.ones(3, dtype=np.bool_)
    assert check_scores(np.int32(7), 3, feasible, "score") == 7
    assert check_scores(np.array([1, 2, 3], dtype=np.uint8), 3, feasible, "score").dtype == np.int64
    with pytest.raises(InvalidResult, match="expected a tuple"):
        check_permit("yes")
    with pytest.raises(InvalidResult, match="positive number of seconds"):
        check_permit((api.wait(), 0))
    assert check_permit((api.wait(), 10_000)) == (api.wait(), api.MAX_PERMIT_TIMEOUT_S)
    fr = check_filter_result(
        api.FilterResult(np.array([1, 0, 1], dtype=np.uint64), ("x",)), 3, np.array([True, True, False])
    )
    assert fr.failed is not None and fr.failed.tolist() == [1, 0, 1]
    # Bits on rows without a node are never read, so they are not judged either.
    odd = api.FilterResult(np.array([1, 0, 8], dtype=np.uint64), ("x",))
    assert check_filter_result(odd, 3, np.array([True, True, False])).failed is not None
    assert check_filter_result(api.FilterResult(np.zeros(3, dtype=np.uint64)), 3, feasible).failed is None


def test_guard_exposes_only_the_methods_the_plugin_has() -> None:
    guarded = GuardedPlugin(score_plugin(lambda c: 0)({}, api.Handle("p")), "Scorer")
    assert isinstance(guarded, api.ScorePlugin)
    assert not isinstance(guarded, api.FilterPlugin)
    assert not isinstance(guarded, api.NormalizeScorePlugin)
    assert not hasattr(guarded, "permit")


def test_invalid_result_names_the_plugin() -> None:
    guarded = GuardedPlugin(score_plugin(lambda c: "x")({}, api.Handle("p")), "Scorer")
    with pytest.raises(InvalidResult) as info:
        guarded.score(None, None, cluster(), np.ones(3, dtype=np.bool_))  # type: ignore[attr-defined]
    assert info.value.plugin == "Scorer"
    assert str(info.value) == "invalid result: score returned str 'x', expected an int or a numpy array"
