"""The outbox: bindings, status patches and events, carried out on the I/O thread.

The scheduling thread never waits for the API. It hands work over with
:meth:`IOThread.call_soon_batched` (one loop wakeup per burst of pods, not one per pod); the I/O loop
runs it with many requests in flight and puts bind outcomes back in the inbox.

- **Bindings** go out at once, up to ``max_binds_in_flight`` concurrently and no more than the
  connection pool serves without queuing (a semaphore, see :meth:`ApiOutbox.bind_limit`; beyond
  that the API server's own fairness applies). The kube writer retries transient
  faults and turns a 409 whose pod is bound to the node we asked for into success (our earlier
  try got through), so a binding is never applied twice and never reported lost. With a
  :class:`~ksched.kube.bind_worker.BindWorker` the same writer runs in that child process, off
  this process's interpreter lock; only the pipe traffic stays here.
- **Status patches** (the ``PodScheduled`` condition) are sent with bounded concurrency and are
  retried by the client; losing one is not fatal (the next failure writes it again).
- **Preemptions** (:mod:`ksched.scheduler.preemption`): each victim's ``DisruptionTarget`` patch,
  DELETE and ``Preempted`` event, then a :class:`PreemptionDone` in the inbox.
- **Events** go through client-go's events broadcaster logic (:mod:`ksched.kube.event_series`):
  an Event isomorphic to one recorded in the last few minutes joins its series instead of being
  created again (the second occurrence PATCHes ``series`` into the Event, later ones only count
  until the series ends or is refreshed). What that leaves to send waits in a bounded buffer that
  drops the newest when full, except that a Warning displaces a queued Normal write; it is sent
  at most ``event_qps`` per second. Events are best effort and never slow scheduling; drops and
  repeats are counted in ``ksched_events_dropped_total`` and ``ksched_event_series_updates_total``.
- **Fencing** (:mod:`ksched.kube.fence`): each public method asks the fence's write gate first
  and, while it is shut (a standby, a deposed leader), sends nothing: a binding comes back at once
  as a failed :class:`BindDone` (the pod stays pending in the API for the next leader), a
  preemption as a failed :class:`PreemptionDone`, a patch or an event is dropped (counted in
  :attr:`ApiOutbox.fenced_writes`). Bindings ask again when their turn comes on the I/O loop, and
  the client asks once more right before each request leaves.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from ksched.kube.bind_worker import BindWorker
from ksched.kube.client import ApiClient
from ksched.kube.event_series import FINISH_TIME_S, REFRESH_TIME_S, EventSeriesCache, EventWrite, event_key
from ksched.kube.fence import Fenced, WriteGate
from ksched.kube.io_thread import IOThread
from ksched.kube.ratelimit import TokenBucket
from ksched.kube.writers import bind, delete_pod, patch_pod_status, write_event
from ksched.metrics import Children, Metrics
from ksched.model.pod import Pod
from ksched.scheduler.inbox import BindDone, Inbox, PreemptionDone
from ksched.scheduler.preemption import PreemptionJob, carry_out

log = logging.getLogger(__name__)

DROP_BUFFER_FULL: Final = "buffer_full"
"""``ksched_events_dropped_total`` reason: a new Event (or a series' first PATCH) found the buffer full."""
DROP_DISPLACED: Final = "displaced"
"""A queued Normal write made room for a Warning."""
DROP_WRITE_FAILED: Final = "write_failed"
"""The API refused the write, or it failed after the client's retries."""


class Outbox(Protocol):
    """What the scheduling loop asks of the outside world; every call returns at once."""

    def bind(self, pod: Pod, node: str) -> None:
        """Post the binding; a :class:`BindDone` arrives in the inbox later."""

    def patch_status(self, pod: Pod, patch: dict[str, Any]) -> None: ...

    def event(self, body: dict[str, Any]) -> None: ...

    def preempt(self, job: PreemptionJob) -> None:
        """Evict a preemption's victims; a :class:`PreemptionDone` arrives in the inbox later."""


@dataclass(frozen=True, slots=True, kw_only=True)
class OutboxSettings:
    max_binds_in_flight: int = 512
    """Concurrent binding requests; the API server, not this, should be the bottleneck. Capped
    further by the client's connection pool (see :meth:`ApiOutbox.bind_limit`)."""
    max_writes_in_flight: int = 16
    """Concurrent status patches and events."""
    reserved_connections: int = 16
    """Pooled connections left to everything but bindings and writes: one per informer's watch
    (eight in ``ksched run``) and their relists, with room to spare."""
    event_buffer: int = 1000
    """Event writes waiting to be sent; beyond this new events are dropped (upstream's broadcaster
    queues at most 1000 per watcher too, ``maxQueuedEvents``)."""
    event_qps: float = 50.0
    """Event writes per second: kube-scheduler's events client has its own rate limiter with
    ``clientConnection``'s qps and burst (50 and 100 by default)."""
    event_burst: int = 100
    event_series_finish_s: float = FINISH_TIME_S
    """Upstream ``finishTime`` (6 min): a series not observed for this long ends and its final count
    is written; also how often that is looked for."""
    event_series_refresh_s: float = REFRESH_TIME_S
    """Upstream ``refreshTime`` (30 min): how often the count of every open series is written."""


class ApiOutbox:
    """An :class:`Outbox` over the API client, running on the I/O thread's loop."""

    def __init__(
        self,
        io: IOThread,
        client: ApiClient,
        inbox: Inbox,
        settings: OutboxSettings | None = None,
        *,
        bind_worker: BindWorker | None = None,
        metrics: Metrics | None = None,
        wall_clock: Callable[[], float] = time.time,
        fence: WriteGate | None = None,
    ) -> None:
        self.io = io
        self.client = client
        self.fence = fence
        """The write gate asked before anything is handed over (None: writes are not fenced)."""
        self.fenced_writes = 0
        """Patches, events, bindings and preemptions not sent because the fence was shut (counted
        from both threads without a lock: a figure for logs, not an exact count)."""
        self.bind_worker = bind_worker
        """Posts the bindings from a child process when set (:mod:`ksched.kube.bind_worker`)."""
        self.inbox = inbox
        self.settings = settings or OutboxSettings()
        self._bind_slots: asyncio.Semaphore | None = None
        self._write_slots: asyncio.Semaphore | None = None
        self._events: collections.deque[EventWrite] = collections.deque()
        """Event writes waiting for the rate limit (I/O loop; its length is read from the scheduling
        thread by :meth:`would_drop`)."""
        self._event_wakeup: asyncio.Event | None = None
        self._event_task: asyncio.Task[None] | None = None
        self._series_task: asyncio.Task[None] | None = None
        self._series = EventSeriesCache(clock=wall_clock, finish_s=self.settings.event_series_finish_s)
        self._bucket = TokenBucket(self.settings.event_qps, self.settings.event_burst)
        self._drops = Children(metrics.events_dropped) if metrics is not None else None
        self._series_updates = metrics.event_series_updates if metrics is not None else None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._patch_tails: dict[str, asyncio.Task[None]] = {}
        """Each pod's latest status patch still running (see :meth:`_start_patch`)."""
        self.dropped_events = 0
        self.skipped_events = 0
        """Events :meth:`would_drop` turned away before they were built (scheduling thread)."""

    # ---------------------------------------------------------------- called from the scheduling thread
    # Every hand-over goes through IOThread.call_soon_batched, in one order: a deque append, and one
    # wakeup of the I/O loop per burst instead of one per pod. The coroutines are created on the I/O
    # thread (_start), which keeps that work off the scheduling thread and leaves no never-awaited
    # coroutine behind when the loop is already gone.
    def bind(self, pod: Pod, node: str) -> None:
        if self._fenced():
            self.inbox.put(BindDone(pod, node, self._refusal("POST", f"pods/{pod.name}/binding")))
            return
        self.io.call_soon_batched(self._start_bind, pod, node)

    def patch_status(self, pod: Pod, patch: dict[str, Any]) -> None:
        if self._fenced():
            return
        self.io.call_soon_batched(self._start_patch, pod, patch)

    def event(self, body: dict[str, Any]) -> None:
        if self._fenced():
            return
        self.io.call_soon_batched(self._queue_event, body)

    def _fenced(self) -> bool:
        """Whether the fence is shut now (any thread); a refusal is counted."""
        if self.fence is None or self.fence.allows():
            return False
        self.fenced_writes += 1
        if self.fenced_writes in (1, 100) or self.fenced_writes % 10_000 == 0:
            log.info("not leading: %d writes not sent so far", self.fenced_writes)
        return True

    def _refusal(self, method: str, path: str) -> Fenced:
        """The error a refused binding or preemption reports back to the loop."""
        try:
            if self.fence is not None:
                self.fence.check(method, path)
        except Fenced as exc:
            return exc
        return Fenced(f"{method} {path} not sent: this replica does not lead")

    def would_drop(self, event_type: str) -> bool:
        """Whether :meth:`event` would drop a new event of ``event_type`` now: a Normal one while
        the buffer is full (a Warning may displace one). Read without a lock from the scheduling
        thread: the answer can be a moment stale either way, which best-effort events allow. A
        turned-away event counts in :attr:`skipped_events`."""
        if event_type == "Warning" or len(self._events) < self.settings.event_buffer:
            return False
        self.skipped_events += 1
        if self._drops is not None:
            self._drops(DROP_BUFFER_FULL).inc()
        if self.skipped_events in (1, 10, 100) or self.skipped_events % 1000 == 0:
            log.warning("event buffer full: %d events not recorded so far", self.skipped_events)
        return True

    def preempt(self, job: PreemptionJob) -> None:
        if self._fenced():
            error = self._refusal("DELETE", f"the victims of pod {job.preemptor.key}")
            self.inbox.put(PreemptionDone(job.preemptor, job.node, error))
            return
        self.io.call_soon_batched(self._start_preempt, job)

    # ---------------------------------------------------------------- on the I/O loop
    def _start_bind(self, pod: Pod, node: str) -> None:
        self._spawn(self._bind(pod, node))

    def _start_patch(self, pod: Pod, patch: dict[str, Any]) -> None:
        """Patches of one pod go out one after the other, in the order the loop made them: the
        nomination written after a failed cycle must not land after the patch clearing it once
        the pod is bound (both carry ``nominatedNodeName``; the last one to arrive wins)."""
        uid = pod.uid
        previous = self._patch_tails.get(uid)
        task = asyncio.get_running_loop().create_task(self._patch_after(previous, pod, patch))
        self._patch_tails[uid] = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(lambda t: self._forget_tail(uid, t))

    def _forget_tail(self, uid: str, task: asyncio.Task[None]) -> None:
        if self._patch_tails.get(uid) is task:
            del self._patch_tails[uid]

    async def _patch_after(
        self, previous: asyncio.Task[None] | None, pod: Pod, patch: dict[str, Any]
    ) -> None:
        if previous is not None and not previous.done():
            await asyncio.wait([previous])  # its outcome is its own: logged there, never raised here
        await self._patch(pod, patch)

    def _start_preempt(self, job: PreemptionJob) -> None:
        self._spawn(carry_out(job, self, self.inbox.put))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def bind_limit(self) -> int:
        """Bindings in flight at once: ``max_binds_in_flight``, but no more than the connection pool
        has free beside writes and watches.

        HTTP/1.1 carries one request per connection, so binds beyond the pool size wait inside
        aiohttp anyway, after it has built the whole request, armed its timeout and queued a
        waiter; waiting here instead, on a semaphore, costs far less when binds pile up. A pool
        without limit (``max_connections <= 0``) caps nothing, and neither does this client's pool
        when a bind worker posts the bindings with its own.
        """
        pool = self.client.settings.max_connections
        limit = self.settings.max_binds_in_flight
        if pool > 0 and self.bind_worker is None:
            spare = pool - self.settings.max_writes_in_flight - self.settings.reserved_connections
            limit = min(limit, max(1, spare))
        return limit

    async def _bind(self, pod: Pod, node: str) -> None:
        if self._bind_slots is None:
            self._bind_slots = asyncio.Semaphore(self.bind_limit())
        async with self._bind_slots:
            if self._fenced():  # lost leadership while this binding waited for its turn
                self.inbox.put(BindDone(pod, node, self._refusal("POST", f"pods/{pod.name}/binding")))
                return
            try:
                if self.bind_worker is not None:
                    await self.bind_worker.bind(pod.namespace, pod.name, pod.uid, node)
                else:
                    await bind(self.client, pod.namespace, pod.name, pod.uid, node)
            except Exception as exc:  # every failure goes back to the loop, which requeues the pod
                self.inbox.put(BindDone(pod, node, exc))
            else:
                self.inbox.put(BindDone(pod, node))

    async def _patch(self, pod: Pod, patch: dict[str, Any]) -> None:
        if self._write_slots is None:
            self._write_slots = asyncio.Semaphore(self.settings.max_writes_in_flight)
        async with self._write_slots:
            if self._fenced():
                return
            try:
                await patch_pod_status(self.client, pod.namespace, pod.name, patch, pod.uid)
            except Exception as exc:
                log.warning("could not update the status of pod %s: %s", pod.key, exc)

    # ---------------------------------------------------------------- preemption (EvictionApi, I/O loop)
    async def patch_pod_status(self, pod: Pod, patch: Mapping[str, Any]) -> None:
        """A status patch that raises (the victim's ``DisruptionTarget``), with bounded concurrency."""
        if self._write_slots is None:
            self._write_slots = asyncio.Semaphore(self.settings.max_writes_in_flight)
        async with self._write_slots:
            await patch_pod_status(self.client, pod.namespace, pod.name, dict(patch), pod.uid)

    async def delete_pod(self, pod: Pod) -> bool:
        """DELETE a victim (uid precondition, retried); False when it was already gone (404)."""
        if self._write_slots is None:
            self._write_slots = asyncio.Semaphore(self.settings.max_writes_in_flight)
        async with self._write_slots:
            return await delete_pod(self.client, pod.namespace, pod.name, pod.uid)

    def record_event(self, body: dict[str, Any]) -> None:
        self._queue_event(body)

    def _queue_event(self, body: dict[str, Any]) -> None:
        """Fold the Event into its series (upstream ``recordToSink``), then queue what that needs.

        A new Event that finds the buffer full is dropped before it is cached, so that the cache
        holds only Events handed to the sender; a repeat is counted into its series even then (its
        count reaches the API with the series' next PATCH, which POSTs the Event if it never got
        there)."""
        key = event_key(body)
        if key not in self._series and not self._has_room(body.get("type") == "Warning"):
            self._count_drop(DROP_BUFFER_FULL)
            return
        write = self._series.observe(body, key)
        if (write is None or write.patch is not None) and self._series_updates is not None:
            self._series_updates.inc()
        if write is not None:
            self._push(write, bounded=True)

    def _has_room(self, warning: bool) -> bool:
        """A Warning (FailedScheduling: the only place a user reads why a pod is pending) may
        displace a queued Normal write (Scheduled: spec.nodeName says as much), so a flood of
        binds cannot silence the failures."""
        if len(self._events) < self.settings.event_buffer:
            return True
        return warning and any(not queued.warning for queued in self._events)

    def _push(self, write: EventWrite, *, bounded: bool) -> None:
        """Queue ``write`` for the sender; ``bounded=False`` (a series' final or refreshed count,
        one per series) lets the buffer overflow rather than lose a count no later write carries."""
        if bounded and len(self._events) >= self.settings.event_buffer:
            if not self._has_room(write.warning):
                self._count_drop(DROP_BUFFER_FULL)
                return
            for i, queued in enumerate(self._events):
                if not queued.warning:
                    del self._events[i]
                    self._count_drop(DROP_DISPLACED)
                    break
        self._events.append(write)
        if self._event_task is None:
            self._event_wakeup = asyncio.Event()
            loop = asyncio.get_running_loop()
            self._event_task = loop.create_task(self._send_events())
            self._series_task = loop.create_task(self._tick_series())
        assert self._event_wakeup is not None
        self._event_wakeup.set()

    def _count_drop(self, reason: str) -> None:
        self.dropped_events += 1
        if self._drops is not None:
            self._drops(reason).inc()
        if self.dropped_events in (1, 10, 100) or self.dropped_events % 1000 == 0:
            log.warning("events not recorded so far: %d (last: %s)", self.dropped_events, reason)

    async def _send_events(self) -> None:
        assert self._event_wakeup is not None
        while True:
            while self._events:
                await self._bucket.acquire()
                write = self._events.popleft()
                self._spawn(self._send_event(write))
            self._event_wakeup.clear()
            await self._event_wakeup.wait()

    async def _send_event(self, write: EventWrite) -> None:
        if self._write_slots is None:
            self._write_slots = asyncio.Semaphore(self.settings.max_writes_in_flight)
        async with self._write_slots:
            try:
                await write_event(self.client, write.body, write.patch)
            except Exception as exc:
                self._count_drop(DROP_WRITE_FAILED)
                log.debug("event %s not recorded: %s", write.reason, exc)

    async def _tick_series(self) -> None:
        """Upstream's two tickers: ``finishSeries`` every ``event_series_finish_s`` and
        ``refreshExistingEventSeries`` every ``event_series_refresh_s``."""
        loop = asyncio.get_running_loop()
        finish_s, refresh_s = self.settings.event_series_finish_s, self.settings.event_series_refresh_s
        next_finish, next_refresh = loop.time() + finish_s, loop.time() + refresh_s
        while True:
            await asyncio.sleep(max(0.0, min(next_finish, next_refresh) - loop.time()))
            now = loop.time()
            writes: list[EventWrite] = []
            if now >= next_finish:
                writes += self._series.finish()
                next_finish = now + finish_s
            if now >= next_refresh:
                writes += self._series.refresh()
                next_refresh = now + refresh_s
            for write in writes:
                self._push(write, bounded=False)

    async def drain(self, timeout_s: float) -> None:
        """Wait (on the I/O loop) for in-flight binds and writes, at most ``timeout_s``."""
        pending = [t for t in self._tasks if not t.done()]
        if pending:
            await asyncio.wait(pending, timeout=timeout_s)

    async def close(self) -> None:
        tasks = [t for t in (self._event_task, self._series_task) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._event_task = self._series_task = None
