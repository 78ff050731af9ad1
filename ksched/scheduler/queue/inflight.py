"""Pods in flight and the cluster events seen while they were (upstream ``active_queue.go``).

A pod is in flight from ``pop`` until ``done``. Events recorded meanwhile are kept, numbered, with
their old and new objects (the queueing hints need them), until no in-flight pod popped before
them remains, so a pod that fails can be checked against exactly the events of its own attempt. An
event may carry a target uid: it then concerns that pod only (an update of the pod itself, or
``ForceActivate``).

``scheduler_inflight_events{event}`` counts what is kept: each event under its label, and each pod
in flight under ``PodPopped``, as upstream does.

Single-threaded, like the queue that owns it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import NamedTuple

from ksched.metrics import POD_POPPED_IN_FLIGHT_EVENT, Children, Metrics
from ksched.scheduler.events_registry import ClusterEvent
from ksched.scheduler.queue.types import QueuedPodInfo


class InFlightEvent(NamedTuple):
    """An event recorded while pods were in flight."""

    seq: int
    event: ClusterEvent
    target: str | None
    old: object
    new: object


class InFlight:
    __slots__ = ("_events", "_gauge", "_pods", "_seq")

    def __init__(self, metrics: Metrics | None = None) -> None:
        self._pods: dict[str, tuple[QueuedPodInfo, int]] = {}
        self._events: deque[InFlightEvent] = deque()
        self._seq = 0
        self._gauge = Children(metrics.inflight_events) if metrics is not None else None

    def __contains__(self, uid: object) -> bool:
        return uid in self._pods

    def __len__(self) -> int:
        return len(self._pods)

    @property
    def event_count(self) -> int:
        """Events kept for the pods in flight."""
        return len(self._events)

    def get(self, uid: str) -> QueuedPodInfo | None:
        entry = self._pods.get(uid)
        return entry[0] if entry is not None else None

    def start(self, pinfo: QueuedPodInfo) -> None:
        self._pods[pinfo.uid] = (pinfo, self._seq)
        self._count(POD_POPPED_IN_FLIGHT_EVENT, 1)

    def record(
        self, event: ClusterEvent, target: str | None = None, old: object = None, new: object = None
    ) -> None:
        """Remember ``event`` (with its objects) if any pod is in flight."""
        if self._pods:
            self._seq += 1
            self._events.append(InFlightEvent(self._seq, event, target, old, new))
            self._count(event.label, 1)

    def events_since_start(self, uid: str) -> Iterator[InFlightEvent]:
        """Events recorded after ``uid`` was popped (none if it is not in flight)."""
        entry = self._pods.get(uid)
        if entry is None:
            return
        start = entry[1]
        for item in self._events:
            if item.seq > start:
                yield item

    def finish(self, uid: str) -> None:
        if self._pods.pop(uid, None) is None:
            return
        self._count(POD_POPPED_IN_FLIGHT_EVENT, -1)
        if not self._pods:
            while self._events:
                self._count(self._events.popleft().event.label, -1)
            return
        oldest = next(iter(self._pods.values()))[1]  # insertion order = pop order, so starts ascend
        while self._events and self._events[0].seq <= oldest:
            self._count(self._events.popleft().event.label, -1)

    def _count(self, label: str, delta: int) -> None:
        if self._gauge is not None:
            self._gauge(label).inc(delta)
