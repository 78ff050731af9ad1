"""The kubelet stand-in: what real kubelets would do to pods once the scheduler is done with them.

* A pod that gets a ``spec.nodeName`` while Pending becomes Running (phase, Initialized/Ready/
  ContainersReady conditions, podIP, startTime, container statuses) after ``running_delay_s``.
* A pod that gets a ``deletionTimestamp`` is removed after its grace period times ``grace_scale``
  (0 removes at once), with a uid precondition so a recreated pod of the same name is never hit.

It listens to the store in-process (not over HTTP) and only schedules work on the loop from its
listener; the writes happen later in loop callbacks, so it never re-enters the store's lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

from ksched.sim import _status as st
from ksched.sim._clock import rfc3339
from ksched.sim.store import Obj, Store, WatchEvent


class Kubelet:
    """Every node's kubelet, for pod lifecycle only; :meth:`attach` starts it, :meth:`detach` stops it."""

    def __init__(self, store: Store, *, running_delay_s: float = 0.01, grace_scale: float = 1.0) -> None:
        self.store = store
        self.running_delay_s = running_delay_s
        self.grace_scale = grace_scale
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tid = 0
        self._starting: set[str] = set()
        self._terminating: set[str] = set()
        self._handles: set[asyncio.TimerHandle] = set()

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start reacting to pod changes; timers run on ``loop`` (called on the loop's thread)."""
        self._loop = loop
        self._tid = threading.get_ident()
        self.store.add_listener("pods", self._on_event)

    def detach(self) -> None:
        self.store.remove_listener("pods", self._on_event)
        for h in list(self._handles):
            h.cancel()
        self._handles.clear()
        self._loop = None

    def _on_event(self, ev: WatchEvent) -> None:
        if ev.type == "DELETED":
            uid = ev.entry.obj["metadata"].get("uid", "")
            self._starting.discard(uid)
            self._terminating.discard(uid)
            return
        pod = ev.entry.obj
        meta, spec = pod["metadata"], pod.get("spec") or {}
        uid = meta.get("uid", "")
        key = (meta.get("namespace", ""), meta["name"], uid)
        if meta.get("deletionTimestamp"):
            if uid not in self._terminating:
                self._terminating.add(uid)
                grace = float(meta.get("deletionGracePeriodSeconds") or 0) * self.grace_scale
                self._schedule(grace, self._remove, key)
        elif (
            spec.get("nodeName")
            and (pod.get("status") or {}).get("phase") == "Pending"
            and uid not in self._starting
        ):
            self._starting.add(uid)
            self._schedule(self.running_delay_s, self._run, key)

    def _schedule(self, delay: float, fn: Any, key: tuple[str, str, str]) -> None:
        loop = self._loop
        if loop is None:
            return

        def arm() -> None:
            handle = loop.call_later(max(delay, 0.0), fire)
            self._handles.add(handle)

            def done() -> None:
                self._handles.discard(handle)

            holder.append(done)

        holder: list[Any] = []

        def fire() -> None:
            for d in holder:
                d()
            fn(*key)

        if threading.get_ident() == self._tid:
            arm()
        else:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(arm)

    def _run(self, namespace: str, name: str, uid: str) -> None:
        self._starting.discard(uid)
        now = rfc3339(self.store.clock.now())

        def start(cur: Obj) -> Obj | None:
            meta, spec, status = cur["metadata"], cur.get("spec") or {}, cur.get("status") or {}
            if meta.get("uid") != uid or meta.get("deletionTimestamp") or status.get("phase") != "Pending":
                return None
            ready = [
                {"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": now}
                for t in ("Initialized", "Ready", "ContainersReady")
            ]
            conds = [
                c
                for c in status.get("conditions") or ()
                if c.get("type") not in ("Initialized", "Ready", "ContainersReady")
            ] + ready
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
            self.store.mutate("pods", name, namespace, start)

    def _remove(self, namespace: str, name: str, uid: str) -> None:
        try:
            self.store.delete("pods", name, namespace, grace_period_s=0, uid=uid)
        except st.StatusError:
            pass  # already gone, or a new pod with the same name
        finally:
            self._terminating.discard(uid)
