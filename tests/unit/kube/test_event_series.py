"""The isomorphic-event cache, against upstream's tests of client-go's events broadcaster.

Upstream: ``staging/src/k8s.io/client-go/tools/events/eventseries_test.go`` (``TestEventSeriesf``,
``TestFinishSeries``, ``TestRefreshExistingEventSeries``) and ``getKey`` in
``event_broadcaster.go``.
"""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

import pytest

from ksched.kube.event_series import FINISH_TIME_S, REFRESH_TIME_S, EventSeriesCache, event_key
from ksched.kube.writers import event_body, pod_reference

T0 = 1_750_000_000.0


class Clock:
    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _event(**overrides: Any) -> dict[str, Any]:
    """Upstream's test event: regarding a pod's ``.spec.containers[1]``, related to its
    ``.spec.containers[0]``, Normal ``test``/``started`` from ``eventTest``."""
    regarding = {**pod_reference("baz", "foo", "bar"), "fieldPath": ".spec.containers[1]"}
    body = event_body(
        regarding=regarding,
        related={**pod_reference("baz", "foo", "bar"), "fieldPath": ".spec.containers[0]"},
        reason="test",
        note="some verbose message: 1",
        action="started",
        now=dt.datetime.fromtimestamp(T0, tz=dt.UTC),
        reporting_controller="eventTest",
        reporting_instance="eventTest-host",
    )
    for path, value in overrides.items():
        target = body
        *parents, leaf = path.split(".")
        for p in parents:
            target = target[p]
        if value is None:
            target.pop(leaf, None)
        else:
            target[leaf] = value
    return body


@pytest.mark.parametrize(
    ("overrides", "isomorphic"),
    [
        pytest.param({}, True, id="the same event again"),
        pytest.param({"note": "some verbose message: 2"}, True, id="another note: not in the key"),
        pytest.param({"metadata.name": "foo.other"}, True, id="another name: not in the key"),
        pytest.param({"eventTime": "2030-01-01T00:00:00.000000Z"}, True, id="another time: not in the key"),
        pytest.param({"action": "stopped"}, False, id="another action (upstream's non-isomorphic case)"),
        pytest.param({"reason": "other"}, False, id="another reason"),
        pytest.param({"type": "Warning"}, False, id="another type"),
        pytest.param({"reportingController": "other"}, False, id="another reporting controller"),
        pytest.param({"reportingInstance": "eventTest-other"}, False, id="another reporting instance"),
        pytest.param({"regarding.resourceVersion": "7"}, False, id="regarding at another resourceVersion"),
        pytest.param({"regarding.uid": "other"}, False, id="regarding another uid"),
        pytest.param({"regarding.fieldPath": None}, False, id="regarding the whole pod"),
        pytest.param({"related.fieldPath": ".spec.containers[2]"}, False, id="related to another part"),
        pytest.param({"related": None}, False, id="no related object"),
    ],
)
def test_key_is_upstreams_get_key(overrides: dict[str, Any], isomorphic: bool) -> None:
    assert (event_key(_event(**overrides)) == event_key(_event())) is isomorphic


def test_no_related_and_an_empty_related_are_the_same_zero_reference() -> None:
    assert event_key(_event(related=None)) == event_key(_event(related={}))


def test_event_seriesf_first_posts_then_patches_series_count_two_then_only_counts() -> None:
    clock = Clock()
    cache = EventSeriesCache(clock=clock)
    first = _event()
    write = cache.observe(first)
    assert write is not None and write.patch is None and write.body is first  # POST the event

    clock.now += 1.5
    write = cache.observe(_event(note="some verbose message: 2"))
    assert write is not None
    series = {"count": 2, "lastObservedTime": "2025-06-15T15:06:41.500000Z"}
    assert write.patch == {"series": series}
    assert write.body == {**first, "series": series}  # the first event: its name and note
    assert "series" not in first  # the cached event itself is not changed

    for n in range(3, 21):
        clock.now += 1
        assert cache.observe(_event()) is None
        assert cache.count(event_key(first)) == n

    write = cache.observe(_event(action="stopped"))
    assert write is not None and write.patch is None  # non-isomorphic: a new event
    assert len(cache) == 2


def test_finish_series_writes_the_final_count_and_forgets_it() -> None:
    clock = Clock()
    cache = EventSeriesCache(clock=clock)
    for _ in range(10):
        cache.observe(_event())
    last_observed = clock.now
    clock.now += 9 * 60  # upstream: LastObservedTime 9 minutes ago
    cache.observe(_event(reportingController="nonFinished-controller"))  # a fresh singleton

    writes = cache.finish()
    assert len(writes) == 1  # exactly one event emitted
    (w,) = writes
    assert w.patch is not None and w.patch["series"]["count"] == 10
    assert w.patch["series"]["lastObservedTime"] == dt.datetime.fromtimestamp(
        last_observed, tz=dt.UTC
    ).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    assert len(cache) == 1  # the non-finished singleton stays
    assert event_key(_event()) not in cache

    write = cache.observe(_event())  # the same event once the series ended: a new event
    assert write is not None and write.patch is None


@pytest.mark.parametrize(
    ("age_s", "kept"),
    [
        pytest.param(FINISH_TIME_S - 1, True, id="a series observed within the window stays open"),
        pytest.param(FINISH_TIME_S + 1, False, id="a series unobserved for longer ends"),
    ],
)
def test_finish_series_window(age_s: float, kept: bool) -> None:
    clock = Clock()
    cache = EventSeriesCache(clock=clock)
    cache.observe(_event())
    cache.observe(_event())
    clock.now += age_s
    assert (cache.finish() == []) is kept
    assert (event_key(_event()) in cache) is kept


@pytest.mark.parametrize(
    ("age_s", "kept"),
    [
        pytest.param(FINISH_TIME_S - 1, True, id="a young singleton stays"),
        pytest.param(FINISH_TIME_S + 1, False, id="an old singleton is forgotten, with nothing sent"),
    ],
)
def test_finish_series_forgets_old_singletons_silently(age_s: float, kept: bool) -> None:
    clock = Clock()
    cache = EventSeriesCache(clock=clock)
    cache.observe(_event())
    clock.now += age_s
    assert cache.finish() == []
    assert (len(cache) == 1) is kept


def test_refresh_existing_event_series_writes_every_open_series_and_keeps_them() -> None:
    clock = Clock()
    cache = EventSeriesCache(clock=clock)
    for _ in range(10):
        cache.observe(_event())
    cache.observe(_event(reason="single"))
    clock.now += REFRESH_TIME_S
    writes = cache.refresh()
    assert [w.patch["series"]["count"] for w in writes if w.patch] == [10]
    assert len(cache) == 2


def test_writes_say_whether_they_are_warnings() -> None:
    cache = EventSeriesCache(clock=Clock())
    normal = cache.observe(_event())
    warning = cache.observe(_event(type="Warning", reason="FailedScheduling"))
    assert normal is not None and not normal.warning and normal.reason == "test"
    assert warning is not None and warning.warning and warning.reason == "FailedScheduling"


def test_the_cached_body_is_the_callers_and_the_write_a_copy() -> None:
    cache = EventSeriesCache(clock=Clock())
    body = _event()
    before = copy.deepcopy(body)
    cache.observe(body)
    write = cache.observe(_event())
    assert write is not None and write.body is not body
    assert body == before
