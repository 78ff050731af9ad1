"""Event series against the sim: the outbox's event path, as client-go's events broadcaster writes.

The scheduling thread hands Events to :class:`ApiOutbox` through :class:`Reporter`; the I/O loop
folds repeats into series (:mod:`ksched.kube.event_series`) and sends POSTs and series PATCHes
(:func:`ksched.kube.writers.write_event`). Upstream:
``staging/src/k8s.io/client-go/tools/events/event_broadcaster.go``.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from typing import Any

from ksched.kube import ApiClient, IOThread
from ksched.kube import writers as w
from ksched.metrics import Metrics
from ksched.model.pod import Pod, pod_from_dict
from ksched.scheduler.binder import ApiOutbox, OutboxSettings
from ksched.scheduler.inbox import Inbox
from ksched.scheduler.reporting import Reporter
from ksched.sim import SimCluster

EVENTS_V1 = "events.events.k8s.io"
WINDOW_S = 0.4
"""A short series window (upstream's is 6 minutes) so that series end within the test."""


def _pod(sim: SimCluster, name: str = "pod-0") -> Pod:
    raw = sim.store.get("pods", name, "default")
    assert raw is not None
    return pod_from_dict(raw)


def _events(sim: SimCluster) -> list[dict[str, Any]]:
    return sim.store.list(EVENTS_V1, "default")


def _wait(predicate: Callable[[], Any], timeout: float = 10.0, what: str = "a condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = predicate()
        if got:
            return got
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def _sample(metrics: Metrics, name: str, **labels: str) -> float:
    assert metrics.registry is not None
    return metrics.registry.get_sample_value(name, labels) or 0.0


class Outbox:
    """An outbox on the test's I/O thread and the Reporter the scheduling loop would use."""

    def __init__(self, io: IOThread, client: ApiClient, settings: OutboxSettings) -> None:
        self.io = io
        self.metrics = Metrics()
        self.box = ApiOutbox(io, client, Inbox(), settings, metrics=self.metrics)
        self.reporter = Reporter(self.box, wall_clock=time.time, instance="host-1")

    def failed(self, pod: Pod, note: str = "0/3 nodes are available: 3 Insufficient cpu.") -> None:
        self.reporter.event(pod, "default-scheduler", "Warning", "FailedScheduling", "Scheduling", note)

    def close(self) -> None:
        self.io.run(self.box.drain(5.0), timeout=6)
        self.io.run(self.box.close(), timeout=5)


def test_write_event_creates_patches_and_falls_back_to_create(
    sim: SimCluster, io: IOThread, client: ApiClient
) -> None:
    sim.add_pods(1)
    pod = _pod(sim)
    body = w.event_body(
        regarding=w.pod_reference(pod.namespace, pod.name, pod.uid, pod.resource_version),
        reason="FailedScheduling",
        note="0/3 nodes are available",
        action="Scheduling",
        event_type="Warning",
        now=dt.datetime.now(dt.UTC),
        reporting_instance="default-scheduler-host-1",
    )
    io.run(w.write_event(client, body, None))
    io.run(w.write_event(client, body, None))  # a repeated POST (lost answer): AlreadyExists is fine
    series = {"count": 2, "lastObservedTime": "2025-01-02T03:04:05.000001Z"}
    io.run(w.write_event(client, {**body, "series": series}, {"series": series}))
    (ev,) = _events(sim)
    assert ev["series"] == series and ev["note"] == "0/3 nodes are available"
    sim.store.delete(EVENTS_V1, ev["metadata"]["name"], "default")
    series = {**series, "count": 7}
    io.run(w.write_event(client, {**body, "series": series}, {"series": series}))  # 404: POST instead
    (ev,) = _events(sim)
    assert ev["series"] == series and ev["metadata"]["name"] == body["metadata"]["name"]


def test_twenty_isomorphic_events_make_one_event_whose_series_count_is_twenty(
    sim: SimCluster, io: IOThread, client: ApiClient
) -> None:
    sim.add_pods(1)
    pod = _pod(sim)
    out = Outbox(io, client, OutboxSettings(event_series_finish_s=WINDOW_S))
    try:
        out.failed(pod, "the first note")
        out.failed(pod, "a second note: not in the key")
        ev = _wait(lambda: [e for e in _events(sim) if e.get("series")], what="the series")[0]
        assert ev["series"]["count"] == 2 and ev["note"] == "the first note"
        assert ev["regarding"]["resourceVersion"] == pod.resource_version
        for _ in range(18):
            out.failed(pod)
        # Repeats only count until the series ends (no write for 3..20), then the final count.
        ended = _wait(lambda: [e for e in _events(sim) if e["series"]["count"] == 20], what="count 20")
        assert len(_events(sim)) == 1 and ended[0]["metadata"]["name"] == ev["metadata"]["name"]
        assert ended[0]["series"]["lastObservedTime"] > ev["series"]["lastObservedTime"]
        assert _sample(out.metrics, "ksched_event_series_updates_total") == 19
        assert _sample(out.metrics, "ksched_events_dropped_total", reason="buffer_full") == 0
        # once ended, the next failure is a new Event
        time.sleep(WINDOW_S * 2.5)
        out.failed(pod)
        _wait(lambda: len(_events(sim)) == 2, what="a second Event")
    finally:
        out.close()


def test_a_new_resource_version_is_a_new_event(sim: SimCluster, io: IOThread, client: ApiClient) -> None:
    """Upstream's key holds the whole regarding reference, resourceVersion included: a pod changed
    between two failures (by the scheduler's own status patch, say) gets a second Event."""
    sim.add_pods(1)
    out = Outbox(io, client, OutboxSettings())
    try:
        out.failed(_pod(sim))
        before = _pod(sim).resource_version
        sim.store.mutate("pods", "pod-0", "default", _labelled)
        assert _pod(sim).resource_version != before
        out.failed(_pod(sim))
        out.failed(_pod(sim))
        _wait(lambda: len(_events(sim)) == 2 and any(e.get("series") for e in _events(sim)))
        assert sorted((e.get("series") or {}).get("count", 1) for e in _events(sim)) == [1, 2]
    finally:
        out.close()


def _labelled(pod: dict[str, Any]) -> dict[str, Any]:
    return {**pod, "metadata": {**pod["metadata"], "labels": {"changed": "yes"}}}


def test_a_full_buffer_drops_new_events_and_a_warning_displaces_a_normal_one(
    sim: SimCluster, io: IOThread, make_client: Callable[..., ApiClient]
) -> None:
    sim.add_pods(5)
    pods = [_pod(sim, f"pod-{i}") for i in range(5)]
    settings = OutboxSettings(event_buffer=2, event_qps=0.001, event_burst=1)
    out = Outbox(io, make_client(), settings)
    seen: dict[str, bool] = {}
    try:

        async def burst() -> None:  # on the I/O loop, before the sender runs
            for p in pods[:4]:
                out.box.record_event(_body(p, "Normal", "Scheduled"))  # two fit, two are dropped
            # what the scheduling thread asks before building an event
            seen["normal"], seen["warning"] = out.box.would_drop("Normal"), out.box.would_drop("Warning")
            out.box.record_event(_body(pods[4], "Warning", "FailedScheduling"))  # displaces a Normal
            out.box.record_event(_body(pods[4], "Warning", "FailedScheduling"))  # its series: the other

        io.run(burst())
        assert seen == {"normal": True, "warning": False}
        assert _sample(out.metrics, "ksched_events_dropped_total", reason="buffer_full") == 3
        assert _sample(out.metrics, "ksched_events_dropped_total", reason="displaced") == 2
        assert _sample(out.metrics, "ksched_event_series_updates_total") == 1
    finally:
        out.close()


def _body(pod: Pod, event_type: str, reason: str) -> dict[str, Any]:
    """The body the Reporter builds for ``pod``."""
    got: list[dict[str, Any]] = []

    class Sink:
        def event(self, body: dict[str, Any]) -> None:
            got.append(body)

        def patch_status(self, pod: Any, patch: dict[str, Any]) -> None:
            raise AssertionError("no status patch expected")

    Reporter(Sink(), wall_clock=time.time, instance="host-1").event(
        pod, "default-scheduler", event_type, reason, "Binding", "note"
    )
    return got[0]
