"""The control loop's pieces: the scheduling queue, cluster events and nominated pods.

Everything here is driven by the scheduling thread only (see :mod:`ksched.scheduler.queue`).
"""

from ksched.scheduler.events_registry import ActionType, ClusterEvent, EventsRegistry
from ksched.scheduler.queue import Nominator, QueuedPodInfo, QueueError, QueueSettings, SchedulingQueue

__all__ = [
    "ActionType",
    "ClusterEvent",
    "EventsRegistry",
    "Nominator",
    "QueueError",
    "QueueSettings",
    "QueuedPodInfo",
    "SchedulingQueue",
]
