"""The scheduling queue itself: activeQ, backoffQ, unschedulablePods and the moves between them.

The moves are drawn in :mod:`ksched.scheduler.queue`; this module carries them out. Scheduling
thread only, time from the injected ``clock``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from enum import Enum

from ksched.framework.interface import Code, QueueingHint, Status
from ksched.framework.plugins.queuesort import PrioritySort
from ksched.metrics import (
    HINT_ERROR,
    HINT_QUEUE,
    HINT_QUEUE_SKIP,
    QUEUE_ACTIVE,
    QUEUE_BACKOFF,
    QUEUE_GATED,
    QUEUE_UNSCHEDULABLE,
    Children,
    CycleHistogramChild,
    Metrics,
)
from ksched.model.pod import Pod
from ksched.scheduler import events_registry as ev
from ksched.scheduler.events_registry import ClusterEvent, EventsRegistry
from ksched.scheduler.queue.backoff import BackoffPolicy
from ksched.scheduler.queue.heap import KeyedHeap
from ksched.scheduler.queue.inflight import InFlight
from ksched.scheduler.queue.nominator import Nominator
from ksched.scheduler.queue.types import (
    PreEnqueuePlugin,
    QueuedPodInfo,
    QueueError,
    QueueSettings,
)

log = logging.getLogger(__name__)
_POD_ADD = ev.UNSCHEDULED_POD_ADD.label
_POD_UPDATE = ev.UNSCHEDULED_POD_UPDATE.label


class Strategy(Enum):
    """Upstream ``queueingStrategy``."""

    SKIP = 0
    AFTER_BACKOFF = 1
    IMMEDIATELY = 2


class SchedulingQueue:
    """activeQ + backoffQ + unschedulablePods with upstream's moves. Scheduling thread only."""

    def __init__(
        self,
        *,
        clock: Callable[[], float],
        settings: QueueSettings | None = None,
        queue_sort: object | None = None,
        pre_enqueue: Sequence[PreEnqueuePlugin] | Mapping[str, Sequence[PreEnqueuePlugin]] = (),
        events: EventsRegistry | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        """``queue_sort`` has ``sort_key(priority, enqueued_at)`` (default PrioritySort);
        ``pre_enqueue`` is one plugin list for every pod or a map from scheduler name to list."""
        settings = settings or QueueSettings()
        self._clock = clock
        self._s = settings
        self._sort_key = (queue_sort or PrioritySort()).sort_key  # type: ignore[attr-defined]
        self._pre_enqueue = pre_enqueue
        self._events = events or EventsRegistry()
        self._metrics = metrics
        self._gauges = _QueueGauges(metrics) if metrics is not None else None
        self.nominator = Nominator()
        self._active: KeyedHeap[QueuedPodInfo] = KeyedHeap()
        self._backoff: KeyedHeap[QueuedPodInfo] = KeyedHeap()
        self._error_backoff: KeyedHeap[QueuedPodInfo] = KeyedHeap()
        self._unsched: dict[str, QueuedPodInfo] = {}
        self._gated: set[str] = set()
        self._unsched_version = 0
        """Bumped whenever a parked pod comes, goes or changes what it waits for."""
        self._quiet: dict[ClusterEvent, int] = {}
        """Event -> the ``_unsched_version`` at which it was found to move no parked pod."""
        self._in_flight = InFlight(metrics)
        self._hint_timer = _HintTimer(metrics) if metrics is not None else None
        self._hints_asked = 0
        """Hint functions called so far: an event that asked none moved nobody for reasons that
        do not depend on its objects (see :meth:`move_all_to_active_or_backoff`)."""
        self._bo = BackoffPolicy(settings, self._active_key)
        self._cycle = 0
        self._move_request_cycle = -1
        self._next_leftover_flush = clock() + settings.unschedulable_flush_interval_s
        self._sync_gauges()

    # ------------------------------------------------------------------ queries

    def __len__(self) -> int:
        return len(self._active) + len(self._backoff) + len(self._error_backoff) + len(self._unsched)

    def __contains__(self, uid: object) -> bool:
        return uid in self._active or uid in self._unsched or self._in_backoff(uid)

    @property
    def scheduling_cycle(self) -> int:
        """Number of pops so far; pass the value read after :meth:`pop` back with the failure."""
        return self._cycle

    def get(self, uid: str) -> QueuedPodInfo | None:
        """The queued (not in-flight) record of a pod; ``gating_plugin`` / ``gating_status`` say why
        it is gated."""
        return (
            self._active.get(uid)
            or self._backoff.get(uid)
            or self._error_backoff.get(uid)
            or (self._unsched.get(uid))
        )

    def in_flight(self, uid: str) -> bool:
        return uid in self._in_flight

    def pending(self) -> dict[str, int]:
        """Sizes for ``scheduler_pending_pods{queue}``."""
        gated = len(self._gated)
        return {
            QUEUE_ACTIVE: len(self._active),
            QUEUE_BACKOFF: len(self._backoff) + len(self._error_backoff),
            QUEUE_UNSCHEDULABLE: len(self._unsched) - gated,
            QUEUE_GATED: gated,
        }

    def next_wakeup(self) -> float | None:
        """Clock time at which :meth:`flush` next has work (a backoff ends, or the parked-pod sweep)."""
        times = []
        for heap in (self._backoff, self._error_backoff):
            top = heap.peek()
            at = None if top is None else self._bo.completes_at(top)
            if at is not None:
                times.append(at)
        if len(self._unsched) > len(self._gated):
            times.append(self._next_leftover_flush)
        return min(times) if times else None

    # ---------------------------------------------------------------- mutators

    def add(self, pod: Pod) -> QueuedPodInfo | None:
        """A new pending pod (event ``UnschedulablePodAdd``); returns its record (check ``gated``).

        Scheduling thread only. A pod already known is treated as an update.
        """
        if pod.uid in self or pod.uid in self._in_flight:
            self.update(None, pod)
            return self.get(pod.uid)
        pinfo = QueuedPodInfo(pod=pod, timestamp=self._clock())
        self._move_to_active(pinfo, _POD_ADD)
        self._sync_gauges()
        return pinfo

    def update(self, old: Pod | None, new: Pod, events: Sequence[ClusterEvent] | None = None) -> None:
        """A pending pod changed. Scheduling thread only.

        In flight: the derived events are recorded for this pod. In activeQ/backoffQ: updated in
        place. Parked: each derived ``UpdatePod*`` event is checked against the plugins that
        rejected it, and the first that matches moves it (gates removed → activeQ). Unknown: added.
        ``events`` are the ones ``old`` → ``new`` derives, when the caller has them already.
        """
        uid = new.uid
        pinfo = self._in_flight.get(uid)
        if pinfo is not None:
            before = old or pinfo.pod
            pinfo.pod = new
            for e in _derived(before, new, events if old is not None else None):
                self._in_flight.record(e, uid, before, new)
            return
        for heap, key in (
            (self._active, self._active_key),
            (self._backoff, self._bo.rejected_key),
            (self._error_backoff, self._bo.error_key),
        ):
            pinfo = heap.get(uid)
            if pinfo is not None:
                pinfo.pod = new
                heap.push(uid, key(pinfo), pinfo)
                self.nominator.update(old, new)
                return
        pinfo = self._unsched.get(uid)
        if pinfo is not None:
            before = old or pinfo.pod
            pinfo.pod = new
            self.nominator.update(old, new)
            for e in _derived(before, new, events if old is not None else None):
                strategy = self._worth_requeuing(pinfo, e, None, before, new)
                if self._requeue(pinfo, strategy, e.label) != QUEUE_UNSCHEDULABLE:
                    break
            self._sync_gauges()
            return
        self._move_to_active(QueuedPodInfo(pod=new, timestamp=self._clock()), _POD_UPDATE)
        self._sync_gauges()

    def delete(self, uid: str) -> None:
        """The pod was deleted (or bound by someone else). Scheduling thread only."""
        self.nominator.delete(uid)
        pinfo = (
            self._active.remove(uid)
            or self._backoff.remove(uid)
            or self._error_backoff.remove(uid)
            or self._unsched_delete(uid)
        )
        if pinfo is not None:
            self._reasons(pinfo, -1)
            self._sync_gauges()

    def pop(self) -> QueuedPodInfo | None:
        """The next pod to try, or None. Non-blocking. Scheduling thread only.

        Takes the head of activeQ; when it is empty (PopFromBackoffQ) the head of the rejected-pods
        backoff heap. Increments ``attempts`` and marks it in flight. The plugins that rejected
        its last attempt stay on the record until the attempt's outcome replaces them (upstream
        keeps them for the logs). A record of a pod already in flight is a bug elsewhere: it is
        dropped with an error rather than tried twice at once.
        """
        while True:
            pinfo = self._active.pop()
            if pinfo is None:
                if not (self._s.pop_from_backoff_q and len(self._backoff)):
                    return None
                pinfo = self._backoff.pop()
                assert pinfo is not None
                self._incoming(QUEUE_ACTIVE, ev.POP_FROM_BACKOFF_Q)
            if pinfo.uid not in self._in_flight:
                break
            log.error("pod %s is already being scheduled; its second queue entry is dropped", pinfo.pod.key)
        pinfo.attempts += 1
        pinfo.backoff_expiration = None
        if pinfo.initial_attempt_timestamp is None:
            pinfo.initial_attempt_timestamp = self._clock()
        self._cycle += 1
        self._in_flight.start(pinfo)
        self._reasons(pinfo, -1)
        self._sync_gauges()
        return pinfo

    def done(self, uid: str) -> None:
        """The pod's attempt (and binding) is over. Scheduling thread only."""
        self._in_flight.finish(uid)

    def add_unschedulable_if_not_present(self, pinfo: QueuedPodInfo, cycle: int | None = None) -> str:
        """Requeue a pod after a failed attempt; returns the queue it went to. Scheduling thread only.

        ``pinfo.unschedulable_plugins`` / ``pending_plugins`` must hold the rejecting plugins (empty
        for an error). It goes to backoffQ (or activeQ when a Pending plugin's event arrived) if an
        event recorded while it was in flight may help, or if it failed with an error; otherwise to
        unschedulablePods. A pod not tracked as in flight falls back to upstream's pre-hint rule:
        backoffQ if a move request came at or after ``cycle``. Calls :meth:`done`.
        """
        uid = pinfo.uid
        try:
            if uid in self:
                raise QueueError(
                    f"Pod {pinfo.pod.key} (uid {uid}) is already queued; only a popped pod can be requeued"
                )
            if pinfo.rejector_plugins:
                pinfo.unschedulable_count += 1
                pinfo.consecutive_errors_count = 0
            else:
                pinfo.consecutive_errors_count += 1
            pinfo.timestamp = self._clock()
            pinfo.backoff_expiration = None
            self._reasons(pinfo, +1)
            if uid in self._in_flight:
                strategy = self._hint_for_in_flight(pinfo)
            elif not pinfo.rejector_plugins or (cycle is not None and self._move_request_cycle >= cycle):
                strategy = Strategy.AFTER_BACKOFF
            else:
                strategy = Strategy.SKIP
            queue = self._requeue(pinfo, strategy, ev.SCHEDULE_ATTEMPT_FAILURE)
            log.debug("pod %s requeued to %s after a failed attempt", pinfo.pod.key, queue)
            return queue
        finally:
            self.done(uid)
            self._sync_gauges()

    def move_all_to_active_or_backoff(
        self,
        event: ClusterEvent,
        pre_check: Callable[[Pod], bool] | None = None,
        *,
        old: object = None,
        new: object = None,
    ) -> int:
        """A cluster event: move parked pods it may help; returns how many moved. Scheduling thread only.

        ``old`` / ``new`` are the event's objects (None for an Add's old, a Delete's new). A pod
        moves when a hint function of one of its rejecting plugins that registered the event says
        Queue (any pod for a wildcard event; a pod with no rejecting plugin on any event); a gated
        pod moves only on its gating plugin's events. ``pre_check`` narrows the candidates
        (upstream's lower-priority check for a nominated pod's delete).

        Every bound pod sends an event here, so the scan is skipped when its answer is known: no
        pod parked, or this event already moved none of the parked pods without asking a single
        hint and none of them changed since (that decision depends only on the pods' plugins and
        the event, not on its objects, and only the queue writes the plugins of a parked pod).
        """
        if not self._events.is_event_of_interest(event):
            return 0
        version = self._unsched_version
        if not self._unsched or (pre_check is None and self._quiet.get(event) == version):
            self._note_event(event, None, old, new)  # nothing parked, or nothing it can move
            return 0
        if pre_check is None:
            candidates = list(self._unsched.values())
        else:
            candidates = [p for p in self._unsched.values() if pre_check(p.pod)]
        asked = self._hints_asked
        moved = self._move_pods(candidates, event, None, old, new)
        if pre_check is None and self._unsched_version == version and self._hints_asked == asked:
            self._quiet[event] = version  # every parked pod is deaf to it: so will they be next time
        self._sync_gauges()
        return moved

    def activate(self, pods: Iterable[Pod | str]) -> None:
        """Force pods (or uids) to activeQ (``ForceActivate``). Scheduling thread only.

        An in-flight pod gets the event recorded so it comes straight back if its attempt fails.
        """
        for p in pods:
            uid = p if isinstance(p, str) else p.uid
            pinfo = self._unsched.get(uid)
            if pinfo is not None:
                self._move_to_active(pinfo, ev.FORCE_ACTIVATE)
                continue
            pinfo = self._backoff.remove(uid) or self._error_backoff.remove(uid)
            if pinfo is not None:
                self._move_to_active(pinfo, ev.FORCE_ACTIVATE, from_backoff=True)
                continue
            if uid in self._in_flight:
                self._in_flight.record(ev.EVENT_FORCE_ACTIVATE, uid, None, None)
            self._move_request_cycle = self._cycle
        self._sync_gauges()

    def flush(self, now: float | None = None) -> None:
        """Move pods whose backoff ended to activeQ (``BackoffComplete``) and, every
        ``unschedulable_flush_interval_s``, parked pods older than the timeout onwards
        (``UnschedulableTimeout``). Scheduling thread only.
        """
        now = self._clock() if now is None else now
        for heap in (self._backoff, self._error_backoff):
            while (top := heap.peek()) is not None and not self._bo.backing_off(top, now):
                heap.pop()
                self._move_to_active(top, ev.BACKOFF_COMPLETE, from_backoff=True)
        if now >= self._next_leftover_flush:
            self._next_leftover_flush = now + self._s.unschedulable_flush_interval_s
            limit = self._s.pod_max_in_unschedulable_pods_s
            stale = [p for p in self._unsched.values() if now - p.timestamp > limit]
            if stale:
                self._move_pods(stale, ev.EVENT_UNSCHEDULABLE_TIMEOUT)
        self._sync_gauges()

    # ---------------------------------------------------------------- internals

    def _move_pods(
        self,
        pinfos: list[QueuedPodInfo],
        event: ClusterEvent,
        target: str | None = None,
        old: object = None,
        new: object = None,
    ) -> int:
        moved = 0
        deaf = self._events.deaf_plugins(event)
        for pinfo in pinfos:
            if pinfo.gating_plugin and pinfo.gating_plugin in deaf:
                continue  # a gated pod moves only on its gating plugin's events
            strategy = self._worth_requeuing(pinfo, event, target, old, new)
            if strategy is Strategy.SKIP:
                continue
            self._unsched_delete(pinfo.uid)
            if self._requeue(pinfo, strategy, event.label) != QUEUE_UNSCHEDULABLE:
                moved += 1
        self._note_event(event, target, old, new)
        return moved

    def _note_event(
        self, event: ClusterEvent, target: str | None = None, old: object = None, new: object = None
    ) -> None:
        """What every move request leaves behind, whether or not a pod moved: the cycle of the
        request (pre-hint requeue rule) and the event for the pods in flight."""
        self._move_request_cycle = self._cycle
        self._in_flight.record(event, target, old, new)

    def _worth_requeuing(
        self,
        pinfo: QueuedPodInfo,
        event: ClusterEvent,
        target: str | None = None,
        old: object = None,
        new: object = None,
    ) -> Strategy:
        """Upstream ``isPodWorthRequeuing``: Queue at once when a Pending plugin's hint says the
        event may help, after backoff when a rejecting plugin's hint does, else skip.

        Called for every parked pod on every event of interest, hence the set test against the
        registry's memoized deaf plugins first: a pod whose rejecting plugins all ignore the event
        is skipped without calling a hint. Pending plugins are asked first, so the answer is known
        as soon as one says Queue (upstream asks every hint; only its metrics differ).
        """
        unschedulable, pending = pinfo.unschedulable_plugins, pinfo.pending_plugins
        if not unschedulable and not pending:
            return Strategy.AFTER_BACKOFF
        if target is not None and target != pinfo.uid:
            return Strategy.SKIP
        if event.is_wildcard:
            return Strategy.AFTER_BACKOFF
        deaf = self._events.deaf_plugins(event)
        if unschedulable <= deaf and pending <= deaf:
            return Strategy.SKIP
        for plugin in pending:
            if plugin not in deaf and self._hints_say_queue(pinfo.pod, plugin, event, old, new):
                return Strategy.IMMEDIATELY
        for plugin in unschedulable:
            if (
                plugin not in deaf
                and plugin not in pending
                and self._hints_say_queue(pinfo.pod, plugin, event, old, new)
            ):
                return Strategy.AFTER_BACKOFF
        return Strategy.SKIP

    def _hints_say_queue(self, pod: Pod, plugin: str, event: ClusterEvent, old: object, new: object) -> bool:
        """Does one of ``plugin``'s hint functions for ``event`` answer Queue for ``pod``? A hint
        that raises counts as Queue (upstream: an error from a hint), logged once per call."""
        for fn in self._events.hints_for(pod.scheduler_name, plugin, event):
            if fn is None:
                return True
            self._hints_asked += 1
            started = time.perf_counter()
            try:
                queue = fn(pod, old, new) != QueueingHint.QUEUE_SKIP
                label = HINT_QUEUE if queue else HINT_QUEUE_SKIP
            except Exception:  # a plugin bug must not strand the pod: upstream queues on an error
                log.exception("queueing hint of %s failed for pod %s on %s", plugin, pod.key, event.label)
                queue, label = True, HINT_ERROR
            if self._hint_timer is not None:
                self._hint_timer.observe(plugin, event.label, label, time.perf_counter() - started)
            if queue:
                return True
        return False

    def _hint_for_in_flight(self, pinfo: QueuedPodInfo) -> Strategy:
        """Upstream ``determineSchedulingHintForInFlightPod``: the events seen during the pod's
        attempt, asked in order with their objects."""
        if not pinfo.rejector_plugins:
            return Strategy.AFTER_BACKOFF
        strategy = Strategy.SKIP
        for item in self._in_flight.events_since_start(pinfo.uid):
            s = self._worth_requeuing(pinfo, item.event, item.target, item.old, item.new)
            if s is Strategy.IMMEDIATELY:
                return s
            if s is Strategy.AFTER_BACKOFF:
                strategy = s
                if not pinfo.pending_plugins:
                    return s
        return strategy

    def _requeue(self, pinfo: QueuedPodInfo, strategy: Strategy, event: str) -> str:
        """Upstream ``requeuePodWithQueueingStrategy``: the queue the pod ended up in."""
        if strategy is Strategy.SKIP:
            self._unsched_add_or_update(pinfo, event)
            return QUEUE_UNSCHEDULABLE
        if strategy is Strategy.AFTER_BACKOFF and self._bo.backing_off(pinfo, self._clock()):
            return QUEUE_BACKOFF if self._move_to_backoff(pinfo, event) else QUEUE_UNSCHEDULABLE
        return QUEUE_ACTIVE if self._move_to_active(pinfo, event) else QUEUE_UNSCHEDULABLE

    def _move_to_active(self, pinfo: QueuedPodInfo, event: str, from_backoff: bool = False) -> bool:
        uid = pinfo.uid
        if not (self._s.pop_from_backoff_q and from_backoff):
            self._run_pre_enqueue(pinfo)
        if pinfo.gated:
            if uid in self._active or self._in_backoff(uid):
                return False
            if uid not in self._unsched or pinfo is self._unsched[uid]:
                self._unsched_add_or_update(pinfo, event)
            return False
        if pinfo.initial_attempt_timestamp is None:
            pinfo.initial_attempt_timestamp = self._clock()
        self._unsched_delete(uid)
        self._backoff.remove(uid)
        self._error_backoff.remove(uid)
        self._active.push(uid, self._active_key(pinfo), pinfo)
        self._incoming(QUEUE_ACTIVE, event)
        if event in (_POD_ADD, _POD_UPDATE):
            self.nominator.add(pinfo.pod)
        return True

    def _move_to_backoff(self, pinfo: QueuedPodInfo, event: str) -> bool:
        uid = pinfo.uid
        if self._s.pop_from_backoff_q:
            self._run_pre_enqueue(pinfo)
            if pinfo.gated:
                self._unsched_add_or_update(pinfo, event)
                return False
        self._unsched_delete(uid)
        if pinfo.rejector_plugins:
            self._error_backoff.remove(uid)
            self._backoff.push(uid, self._bo.rejected_key(pinfo), pinfo)
        else:
            self._backoff.remove(uid)
            self._error_backoff.push(uid, self._bo.error_key(pinfo), pinfo)
        self._incoming(QUEUE_BACKOFF, event)
        return True

    def _run_pre_enqueue(self, pinfo: QueuedPodInfo) -> None:
        """Run PreEnqueue plugins, the one that gated the pod last time first."""
        if self._unsched.get(pinfo.uid) is pinfo:
            self._unsched_version += 1  # may change what a parked pod waits for
        plugins = self._pre_enqueue
        if isinstance(plugins, Mapping):
            plugins = plugins.get(pinfo.pod.scheduler_name, ())
        if pinfo.gating_plugin:
            plugins = sorted(plugins, key=lambda p: p.name != pinfo.gating_plugin)
        for pl in plugins:
            try:
                status = pl.pre_enqueue(pinfo.pod)
            except Exception as exc:  # a plugin bug must not stop the queue
                log.exception("PreEnqueue plugin %s failed on pod %s", pl.name, pinfo.pod.key)
                status = Status(Code.ERROR, (f"running PreEnqueue plugin {pl.name!r}: {exc}",))
            if status.ok:
                continue
            if pl.name not in pinfo.unschedulable_plugins:
                pinfo.unschedulable_plugins.add(pl.name)
                self._reason(pl.name, pinfo, +1)
            pinfo.gating_plugin = pl.name
            pinfo.gating_status = status if status.plugin else status.with_plugin(pl.name)
            return
        pinfo.gating_plugin = ""
        pinfo.gating_status = None

    def _active_key(self, pinfo: QueuedPodInfo) -> tuple[object, ...]:
        return self._sort_key(pinfo.pod.priority, pinfo.timestamp)

    def _in_backoff(self, uid: object) -> bool:
        return uid in self._backoff or uid in self._error_backoff

    def _unsched_add_or_update(self, pinfo: QueuedPodInfo, event: str) -> None:
        self._unsched_version += 1
        uid = pinfo.uid
        if uid not in self._unsched:
            self._incoming(QUEUE_UNSCHEDULABLE, event)
        self._unsched[uid] = pinfo
        if pinfo.gated:
            self._gated.add(uid)
        else:
            self._gated.discard(uid)

    def _unsched_delete(self, uid: str) -> QueuedPodInfo | None:
        pinfo = self._unsched.pop(uid, None)
        if pinfo is not None:
            self._gated.discard(uid)
            self._unsched_version += 1
        return pinfo

    def _incoming(self, queue: str, event: str) -> None:
        if self._gauges is not None:
            self._gauges.incoming(queue, event).inc()

    def _reason(self, plugin: str, pinfo: QueuedPodInfo, delta: int) -> None:
        if self._gauges is not None:
            self._gauges.unschedulable(plugin, pinfo.pod.scheduler_name).inc(delta)

    def _reasons(self, pinfo: QueuedPodInfo, delta: int) -> None:
        if pinfo.unschedulable_plugins or pinfo.pending_plugins:
            for plugin in pinfo.rejector_plugins:
                self._reason(plugin, pinfo, delta)

    def _sync_gauges(self) -> None:
        """Keep ``scheduler_pending_pods`` exact after every operation, so a scrape at any moment
        sees the queue as it is; the gauges are only written when a size changed."""
        if self._gauges is not None:
            gated = len(self._gated)
            backoff = len(self._backoff) + len(self._error_backoff)
            self._gauges.set_pending(len(self._active), backoff, len(self._unsched) - gated, gated)


def _derived(old: Pod, new: Pod, events: Sequence[ClusterEvent] | None) -> Sequence[ClusterEvent]:
    return events if events is not None else ev.pod_update_events(old, new)


class _HintTimer:
    """``scheduler_queueing_hint_execution_duration_seconds`` with its children memoized: a
    hint runs for every parked pod an event may concern."""

    __slots__ = ("_children", "_histogram")

    def __init__(self, metrics: Metrics) -> None:
        self._histogram = metrics.queueing_hint_execution_duration
        self._children: dict[tuple[str, str, str], CycleHistogramChild] = {}

    def observe(self, plugin: str, event: str, hint: str, seconds: float) -> None:
        key = (plugin, event, hint)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = self._histogram.labels(*key)
        child.observe(seconds)


class _QueueGauges:
    """The queue's metrics with their labelled children memoized (the queue records some on every
    operation)."""

    __slots__ = ("_last", "_pending", "incoming", "unschedulable")

    def __init__(self, metrics: Metrics) -> None:
        self.incoming = Children(metrics.queue_incoming_pods)
        """By (queue, event)."""
        self.unschedulable = Children(metrics.unschedulable_pods)
        """By (plugin, profile)."""
        gauge = metrics.pending_pods
        self._pending = tuple(
            gauge.labels(queue) for queue in (QUEUE_ACTIVE, QUEUE_BACKOFF, QUEUE_UNSCHEDULABLE, QUEUE_GATED)
        )
        self._last = [-1, -1, -1, -1]

    def set_pending(self, active: int, backoff: int, unschedulable: int, gated: int) -> None:
        """``scheduler_pending_pods``, each gauge written only when its size changed: most
        operations change one size (a pop) or none (an event no parked pod cares about)."""
        last = self._last
        for i, n in enumerate((active, backoff, unschedulable, gated)):
            if last[i] != n:
                last[i] = n
                self._pending[i].set(n)


__all__ = ["QueueError", "QueueSettings", "QueuedPodInfo", "SchedulingQueue", "Strategy"]
