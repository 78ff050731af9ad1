"""Pods held at Permit: upstream's WaitingPod, without a goroutine per pod.

A Permit plugin that answers ``Wait`` leaves the pod assumed on its node and waiting here; the
scheduling thread goes on with other pods. The pod is released when every plugin that asked it to
wait has called :meth:`WaitingPod.allow`, or turned away when any calls :meth:`WaitingPod.reject`
or its timeout passes (``rejected due to timeout after waiting <t> at plugin <p>``, upstream's text).

``allow`` and ``reject`` may be called from any thread (a plugin's Permit on the scheduling thread,
or a controller thread of the plugin's own). They only record the decision, under a lock, and call
the ``notify`` callback the scheduler gives with each waiting pod, which puts a wake-up in its
inbox; the scheduling thread then finishes the binding or the failure. So nothing here touches the cache.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping

from ksched.framework.interface import Code, Status
from ksched.model.pod import Pod

MAX_PERMIT_TIMEOUT_S = 15 * 60.0
"""Upstream caps a Permit plugin's wait at 15 minutes."""


def go_seconds(seconds: float) -> str:
    """A duration roughly as Go prints it (``10s``, ``1.5s``, ``250ms``, ``2m0s``)."""
    if seconds < 1 and seconds > 0:
        return f"{seconds * 1000:g}ms"
    if seconds >= 60:
        minutes, rest = divmod(seconds, 60)
        return f"{int(minutes)}m{rest:g}s"
    return f"{seconds:g}s"


class WaitingPod:
    """One pod held at Permit. Thread-safe."""

    def __init__(
        self, pod: Pod, node: str, timeouts: Mapping[str, float], notify: Callable[[str], None]
    ) -> None:
        self.pod = pod
        self.node = node
        self.timeouts = dict(timeouts)
        """Plugin -> the wait (seconds) it asked for, capped at 15 minutes."""
        self._pending = set(timeouts)
        self._decision: Status | None = None
        self._lock = threading.Lock()
        self._notify = notify

    @property
    def pending_plugins(self) -> list[str]:
        """Plugins that asked the pod to wait and have not allowed it yet."""
        with self._lock:
            return sorted(self._pending)

    @property
    def decision(self) -> Status | None:
        """None while waiting; SUCCESS once every plugin allowed; the rejection otherwise."""
        with self._lock:
            return self._decision

    def allow(self, plugin: str) -> None:
        """``plugin`` lets the pod go; once no plugin is left waiting, the pod is bound."""
        with self._lock:
            if self._decision is not None:
                return
            self._pending.discard(plugin)
            if self._pending:
                return
            self._decision = Status()
        self._notify(self.pod.uid)

    def reject(self, plugin: str, message: str) -> None:
        """``plugin`` turns the pod away: it is unreserved, forgotten and requeued as unschedulable."""
        with self._lock:
            if self._decision is not None:
                return
            self._decision = Status(Code.UNSCHEDULABLE, (message,), plugin)
        self._notify(self.pod.uid)

    def __repr__(self) -> str:
        return f"WaitingPod({self.pod.key} on {self.node}, pending={self.pending_plugins})"


class WaitingPods:
    """The pods one profile holds at Permit, by uid. Thread-safe."""

    def __init__(self) -> None:
        self._pods: dict[str, WaitingPod] = {}
        self._lock = threading.Lock()

    def add(
        self,
        pod: Pod,
        node: str,
        timeouts: Mapping[str, float],
        notify: Callable[[str], None] | None = None,
    ) -> WaitingPod:
        """Hold ``pod`` on ``node`` until every plugin of ``timeouts`` allows it; ``notify`` is
        called with its uid once it is decided (the scheduler's wake-up; from any thread)."""
        wp = WaitingPod(pod, node, timeouts, notify if notify is not None else _no_notify)
        with self._lock:
            self._pods[pod.uid] = wp
        return wp

    def get(self, uid: str) -> WaitingPod | None:
        with self._lock:
            return self._pods.get(uid)

    def remove(self, uid: str) -> WaitingPod | None:
        with self._lock:
            return self._pods.pop(uid, None)

    def __iter__(self) -> Iterator[WaitingPod]:
        """A snapshot of the waiting pods (safe to allow / reject while iterating)."""
        with self._lock:
            return iter(list(self._pods.values()))

    def __len__(self) -> int:
        with self._lock:
            return len(self._pods)

    def reject(self, uid: str, plugin: str, message: str) -> bool:
        """Reject the waiting pod ``uid``; False when no such pod waits."""
        wp = self.get(uid)
        if wp is None:
            return False
        wp.reject(plugin, message)
        return True


def _no_notify(uid: str) -> None:
    """Without a scheduler to wake, decisions are only recorded (explain, unit tests)."""
