"""Per-pod backoff of the scheduling queue (upstream ``backoff_queue.go``, v1.35).

The backoff after ``attempts`` pops is ``initial * 2**(attempts-1)`` capped at ``max`` (a pod never
popped owes none), counted from the pod's ``timestamp``. With ``SchedulerPopFromBackoffQ`` the
expiry is truncated to a whole-second ordering window and "now" is truncated the same way, so a pod
is still backing off while ``expiry >= window(now)``: it leaves in the window after its expiry, and
pods of one window leave together in activeQ order.

Single-threaded, like the queue that owns it.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ksched.scheduler.queue.types import BACKOFF_ORDERING_WINDOW_S, QueuedPodInfo, QueueSettings


class BackoffPolicy:
    """Backoff expiry, the backing-off test and the heap keys of the two backoff heaps."""

    __slots__ = ("_active_key", "_cap", "_initial", "_windowed")

    def __init__(self, settings: QueueSettings, active_key: Callable[[QueuedPodInfo], tuple[object, ...]]):
        self._initial = settings.pod_initial_backoff_s
        self._cap = settings.pod_max_backoff_s
        self._windowed = settings.pop_from_backoff_q
        self._active_key = active_key

    def duration(self, attempts: int) -> float:
        """``initial * 2**(attempts-1)`` capped at ``max``; 0 for a pod never tried."""
        if attempts <= 0:
            return 0.0
        d = self._initial
        for _ in range(attempts - 1):
            if d >= self._cap:
                break
            d *= 2
        return min(d, self._cap)

    def align(self, t: float) -> float:
        if not self._windowed:
            return t
        return math.floor(t / BACKOFF_ORDERING_WINDOW_S) * BACKOFF_ORDERING_WINDOW_S

    def expiry(self, pinfo: QueuedPodInfo) -> float | None:
        """Backoff expiry, cached on the record; None when the pod was never tried."""
        if pinfo.attempts == 0:
            return None
        if pinfo.backoff_expiration is None:
            pinfo.backoff_expiration = self.align(pinfo.timestamp + self.duration(pinfo.attempts))
        return pinfo.backoff_expiration

    def backing_off(self, pinfo: QueuedPodInfo, now: float) -> bool:
        bo = self.expiry(pinfo)
        return bo is not None and bo >= self.align(now)

    def completes_at(self, pinfo: QueuedPodInfo) -> float | None:
        """The earliest clock time at which :meth:`backing_off` turns false."""
        bo = self.expiry(pinfo)
        if bo is None:
            return None
        return bo + BACKOFF_ORDERING_WINDOW_S if self._windowed else math.nextafter(bo, math.inf)

    def rejected_key(self, pinfo: QueuedPodInfo) -> tuple[object, ...]:
        """Key of the rejected-pods heap: expiry, then (with windows) the activeQ order."""
        bo = self.expiry(pinfo)
        expiry = -math.inf if bo is None else bo
        return (expiry, self._active_key(pinfo)) if self._windowed else (expiry,)

    def error_key(self, pinfo: QueuedPodInfo) -> tuple[object, ...]:
        """Key of the error heap: expiry only."""
        bo = self.expiry(pinfo)
        return (-math.inf if bo is None else bo,)
