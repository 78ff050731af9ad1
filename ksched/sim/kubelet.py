"""The kubelet stand-in: what real kubelets would do to pods once the scheduler is done with them.

* A pod that gets a ``spec.nodeName`` while Pending becomes Running (phase, Initialized/Ready/
  ContainersReady conditions, podIP, startTime, container statuses) after ``running_delay_s``,
  unless ``start_pods`` is off: upstream's scheduler_perf has no kubelets, so there bound pods stay
  Pending, and starting them costs a status write plus a watch event per pod on both sides.
* A pod that gets a ``deletionTimestamp`` is removed after its grace period times ``grace_scale``
  (0 removes at once), with a uid precondition so a recreated pod of the same name is never hit.
  This always runs: preemption victims are deleted gracefully and must go away.

It listens to the store in-process (not over HTTP) and only schedules work on the loop from its
listener; the writes happen later in loop callbacks, so it never re-enters the store's lock.

Starts all wait the same delay, so they sit in one FIFO queue drained by a single timer (a closure
and a TimerHandle per pod cost more than the start itself, and the closures formed reference cycles
that only the cyclic collector could free); removals, with per-pod grace periods, are rare and get
one timer each.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import threading

from ksched.sim import _status as st
from ksched.sim._clock import rfc3339
from ksched.sim.store import Obj, Store, WatchEvent

_READY_TYPES = ("Initialized", "Ready", "ContainersReady")


class Kubelet:
    """Every node's kubelet, for pod lifecycle only; :meth:`attach` starts it, :meth:`detach` stops it."""

    def __init__(
        self,
        store: Store,
        *,
        running_delay_s: float = 0.01,
        grace_scale: float = 1.0,
        start_pods: bool = True,
    ) -> None:
        self.store = store
        self.running_delay_s = running_delay_s
        self.grace_scale = grace_scale
        self.start_pods = start_pods
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tid = 0
        self._starting: set[str] = set()
        self._terminating: set[str] = set()
        self._start_queue: collections.deque[tuple[float, str, str, str]] = collections.deque()
        """(due on the loop's clock, namespace, name, uid), in due order (one delay for all)."""
        self._sweep: asyncio.TimerHandle | None = None
        self._sweep_armed = False
        """A sweep is scheduled or about to be; read and written under the store's lock."""
        self._removals: dict[str, asyncio.TimerHandle] = {}

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start reacting to pod changes; timers run on ``loop`` (called on the loop's thread)."""
        self._loop = loop
        self._tid = threading.get_ident()
        self.store.add_listener("pods", self._on_event)

    def detach(self) -> None:
        self.store.remove_listener("pods", self._on_event)
        with self.store.lock:
            if self._sweep is not None:
                self._sweep.cancel()
                self._sweep = None
            self._sweep_armed = False
            self._start_queue.clear()
            self._starting.clear()
            for h in self._removals.values():
                h.cancel()
            self._removals.clear()
            self._terminating.clear()
            self._loop = None

    def _on_event(self, ev: WatchEvent) -> None:
        """Store listener (called under the store's lock, on any thread): queue starts and removals."""
        meta = ev.entry.obj["metadata"]
        if ev.type == "DELETED":
            uid = meta.get("uid", "")
            self._starting.discard(uid)
            self._terminating.discard(uid)
            return
        if meta.get("deletionTimestamp"):
            uid = meta.get("uid", "")
            if uid not in self._terminating:
                self._terminating.add(uid)
                grace = float(meta.get("deletionGracePeriodSeconds") or 0) * self.grace_scale
                self._schedule_removal(grace, meta.get("namespace", ""), meta["name"], uid)
            return
        if not self.start_pods:
            return
        pod = ev.entry.obj
        if not (pod.get("spec") or {}).get("nodeName") or (pod.get("status") or {}).get("phase") != "Pending":
            return
        uid = meta.get("uid", "")
        if uid in self._starting:
            return
        loop = self._loop
        if loop is None:
            return
        self._starting.add(uid)
        self._start_queue.append(
            (loop.time() + self.running_delay_s, meta.get("namespace", ""), meta["name"], uid)
        )
        if not self._sweep_armed:
            self._sweep_armed = True
            if threading.get_ident() == self._tid:
                self._arm_sweep()
            else:
                with contextlib.suppress(RuntimeError):  # the loop is closing
                    loop.call_soon_threadsafe(self._arm_sweep)

    # -- starts ---------------------------------------------------------------------------------------
    def _arm_sweep(self) -> None:
        """Schedule the sweep for the queue's head (on the loop's thread)."""
        loop = self._loop
        if loop is None:
            return
        with self.store.lock:
            if not self._start_queue:
                self._sweep_armed = False
                return
            self._sweep = loop.call_at(self._start_queue[0][0], self._run_due)

    def _run_due(self) -> None:
        """Start every queued pod whose delay is over, then re-arm for the next one (if any)."""
        loop = self._loop
        if loop is None:
            return
        queue = self._start_queue
        now = loop.time()
        while True:
            with self.store.lock:
                if not queue or queue[0][0] > now:
                    if queue:
                        self._sweep = loop.call_at(queue[0][0], self._run_due)
                    else:
                        self._sweep = None
                        self._sweep_armed = False
                    return
                _, namespace, name, uid = queue.popleft()
            self._run(namespace, name, uid)

    def _run(self, namespace: str, name: str, uid: str) -> None:
        self._starting.discard(uid)
        now = rfc3339(self.store.clock.now())

        def start(cur: Obj) -> Obj | None:
            meta, spec, status = cur["metadata"], cur.get("spec") or {}, cur.get("status") or {}
            if meta.get("uid") != uid or meta.get("deletionTimestamp") or status.get("phase") != "Pending":
                return None
            conds = [c for c in status.get("conditions") or () if c.get("type") not in _READY_TYPES]
            conds += [
                {"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": now}
                for t in _READY_TYPES
            ]
            n = int(uid[:4] or "0", 16) % 65000 + 1
            containers = [
                {
                    "name": c.get("name", ""),
                    "image": c.get("image", ""),
                    "imageID": f"sim://{c.get('image', '')}",
                    "containerID": f"sim://{uid}/{c.get('name', '')}",
                    "ready": True,
                    "restartCount": 0,
                    "started": True,
                    "state": {"running": {"startedAt": now}},
                }
                for c in spec.get("containers") or ()
            ]
            return {
                **cur,
                "status": {
                    **status,
                    "phase": "Running",
                    "conditions": conds,
                    "startTime": now,
                    "hostIP": "10.0.0.1",
                    "podIP": f"10.244.{n >> 8}.{n & 255}",
                    "containerStatuses": containers,
                },
            }

        with contextlib.suppress(st.StatusError):  # deleted in the meantime
            self.store.mutate("pods", name, namespace, start, subresource="status")

    # -- removals -------------------------------------------------------------------------------------
    def _schedule_removal(self, delay: float, namespace: str, name: str, uid: str) -> None:
        loop = self._loop
        if loop is None:
            return
        if threading.get_ident() == self._tid:
            self._arm_removal(delay, namespace, name, uid)
        else:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._arm_removal, delay, namespace, name, uid)

    def _arm_removal(self, delay: float, namespace: str, name: str, uid: str) -> None:
        loop = self._loop
        if loop is None:
            return
        self._removals[uid] = loop.call_later(max(delay, 0.0), self._remove, namespace, name, uid)

    def _remove(self, namespace: str, name: str, uid: str) -> None:
        self._removals.pop(uid, None)
        try:
            self.store.delete("pods", name, namespace, grace_period_s=0, uid=uid)
        except st.StatusError:
            pass  # already gone, or a new pod with the same name
        finally:
            self._terminating.discard(uid)
