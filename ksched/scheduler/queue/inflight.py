"""Pods in flight and the cluster events seen while they were (upstream ``active_queue.go``).

A pod is in flight from ``pop`` until ``done``. Events recorded meanwhile are kept, numbered, until
no in-flight pod popped before them remains, so a pod that fails can be checked against exactly the
events of its own attempt. An event may carry a target uid: it then concerns that pod only (an
update of the pod itself, or ``ForceActivate``).

Single-threaded, like the queue that owns it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

from ksched.scheduler.events_registry import ClusterEvent
from ksched.scheduler.queue.types import QueuedPodInfo


class InFlight:
    __slots__ = ("_events", "_pods", "_seq")

    def __init__(self) -> None:
        self._pods: dict[str, tuple[QueuedPodInfo, int]] = {}
        self._events: deque[tuple[int, ClusterEvent, str | None]] = deque()
        self._seq = 0

    def __contains__(self, uid: object) -> bool:
        return uid in self._pods

    def __len__(self) -> int:
        return len(self._pods)

    def get(self, uid: str) -> QueuedPodInfo | None:
        entry = self._pods.get(uid)
        return entry[0] if entry is not None else None

    def start(self, pinfo: QueuedPodInfo) -> None:
        self._pods[pinfo.uid] = (pinfo, self._seq)

    def record(self, event: ClusterEvent, target: str | None = None) -> None:
        """Remember ``event`` if any pod is in flight."""
        if self._pods:
            self._seq += 1
            self._events.append((self._seq, event, target))

    def events_since_start(self, uid: str) -> Iterator[tuple[ClusterEvent, str | None]]:
        """Events recorded after ``uid`` was popped (none if it is not in flight)."""
        entry = self._pods.get(uid)
        if entry is None:
            return
        start = entry[1]
        for seq, event, target in self._events:
            if seq > start:
                yield event, target

    def finish(self, uid: str) -> None:
        if self._pods.pop(uid, None) is None:
            return
        if not self._pods:
            self._events.clear()
            return
        oldest = next(iter(self._pods.values()))[1]  # insertion order = pop order, so starts ascend
        while self._events and self._events[0][0] <= oldest:
            self._events.popleft()
