"""The scheduling loop: the single writer of the cache and the queue.

One thread runs :meth:`Scheduler.run`. Between cycles it drains the inbox (informer events, bind
outcomes, leadership, stop and profile requests) and applies them; then it pops one pod, runs its
profile's cycle over every node, assumes the pod on the chosen node and hands the binding to the
outbox, or records the failure (event, condition, requeue). It sleeps on the inbox only when the
queue has nothing ready, waking for the next backoff expiry.

Upstream's order of a cycle is kept (reference §1): skip pods being deleted or already assumed,
run the profile, assume, bind asynchronously; on a failed bind forget the pod, tell the queue that
resources were freed, and requeue it with backoff. A cycle that found no node runs PostFilter
(preemption) through :mod:`ksched.scheduler.preemption`, which also carries out its evictions.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from ksched.cache.cluster import ClusterCache
from ksched.framework.extender import EXTENDER_NAME
from ksched.framework.interface import Code
from ksched.framework.runtime import CycleResult, Framework
from ksched.kube import events as kev
from ksched.metrics import Children, Metrics, attempts_label
from ksched.model.pod import Pod, with_node_name
from ksched.scheduler import events_registry as cev
from ksched.scheduler.binder import Outbox
from ksched.scheduler.binding_cycle import BindingCycle
from ksched.scheduler.handlers import ClusterEventHandlers
from ksched.scheduler.inbox import (
    BindDone,
    Inbox,
    LeadershipChanged,
    Message,
    PermitDecided,
    PreBindProgress,
    PreemptionDone,
    ProfileRequest,
    StopRequested,
)
from ksched.scheduler.preemption import Preemption
from ksched.scheduler.profiling import LoopProfiler
from ksched.scheduler.queue import SchedulingQueue
from ksched.scheduler.queue.types import QueuedPodInfo
from ksched.scheduler.reporting import (
    ACTION_BINDING,
    ACTION_SCHEDULING,
    EVENT_FAILED_SCHEDULING,
    EVENT_SCHEDULED,
    REASON_SCHEDULER_ERROR,
    REASON_UNSCHEDULABLE,
    Reporter,
    deleting_message,
    scheduled_message,
)

log = logging.getLogger(__name__)
HOUSEKEEPING_EVERY_S = 1.0
"""Upstream updates ``scheduler_cache_size`` every second."""
MAX_IDLE_WAIT_S = 1.0
LOST_LEADERSHIP = "lost leadership"
"""The stop reason after a ``LeadershipChanged(False)``: the process then exits 1, as kube-scheduler does."""
MAX_BINDINGS_IN_FLIGHT = 1000
"""Pods assumed whose binding has not answered yet, at most; at the cap the loop waits for answers
before it pops the next pod. Binding runs apart from the scheduling thread (the I/O thread, the bind
worker), so a slow or throttling API server would otherwise let the loop assume the whole queue:
every pending pod holding a reservation on a node for as long as its binding waits, and placed
against state that ages meanwhile. The cap stays large enough that the outbox still sends
bindings in batches when many pods bind at once; a much smaller one costs throughput."""
BIND_PLUGIN = "DefaultBinder"


@dataclasses.dataclass(slots=True)
class Binding:
    """A pod between assume and the bind outcome."""

    pinfo: QueuedPodInfo
    node: str
    started: float
    posted: float = 0.0
    """``perf_counter()`` when the binding went to the outbox: the Bind extension point's start."""


class Scheduler:
    """Owns the cache and the queue; see the module docstring. Not thread-safe by design."""

    def __init__(
        self,
        *,
        profiles: Mapping[str, Framework],
        cache: ClusterCache,
        queue: SchedulingQueue,
        outbox: Outbox,
        inbox: Inbox | None = None,
        metrics: Metrics | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        instance: str = "ksched",
        reporter: Reporter | None = None,
        leading: bool = True,
        required_kinds: frozenset[str] = frozenset({"nodes", "pods"}),
        on_synced: Callable[[], None] | None = None,
        profiler: LoopProfiler | None = None,
    ) -> None:
        """``on_synced`` is called once, on the scheduling thread, when every required kind has
        synced (before the first cycle)."""
        self.cache = cache
        self.queue = queue
        self.profiles = profiles
        self.outbox = outbox
        self.reporter = (
            reporter if reporter is not None else Reporter(outbox, wall_clock=wall_clock, instance=instance)
        )
        """Events and PodScheduled patches; the runner shares it with the profiles' Handles."""
        self.inbox = inbox if inbox is not None else Inbox()
        self.metrics = metrics
        self._attempts = _AttemptMetrics(metrics) if metrics is not None else None
        pending: dict[str, Pod] = {}  # written by the handlers only; preemption reads it
        self.preemption = Preemption(
            queue=queue,
            outbox=outbox,
            pending=pending,
            metrics=metrics,
            wall_clock=wall_clock,
            instance=instance,
        )
        self.handlers = ClusterEventHandlers(
            cache=cache,
            queue=queue,
            profiles=profiles,
            reporter=self.reporter,
            pending=pending,
            on_pod_deleted=self.preemption.forget,
            metrics=metrics,
        )
        self.clock = clock
        self.wall_clock = wall_clock
        self.instance = instance
        self.leading = leading
        self.required_kinds = required_kinds
        self.synced_kinds: set[str] = set()
        self.binding: dict[str, Binding] = {}
        self.stopping = False
        self.stop_reason = ""
        self._on_synced = on_synced
        self.scheduled_count = 0
        self._next_housekeeping = 0.0
        self.failed_count = 0
        self.profiler = profiler if profiler is not None else LoopProfiler(clock)
        """Serves ProfileRequests; the runner finishes a running profile on shutdown."""
        self.binding_cycle = BindingCycle(  # Reserve / Permit / PreBind / PostBind
            profiles=profiles,
            cache=cache,
            queue=queue,
            inbox=self.inbox,
            clock=clock,
            metrics=metrics,
            post_binding=self._post_binding,
            on_failure=self._fail,
            expect_on=self.reporter.expected_on,
        )
        self._dispatch = self.dispatch_table()

    # ------------------------------------------------------------------ the loop
    @property
    def synced(self) -> bool:
        return self.required_kinds <= self.synced_kinds

    def run(self, *, until: Callable[[Scheduler], bool] | None = None) -> None:
        """Schedule until a stop request (or ``until(self)`` is true after a step)."""
        while not self.stopping:
            self._apply(self.inbox.drain())
            self.profiler.tick()  # also when idle or standby: the loop then wakes at least once a second
            if until is not None and until(self):
                return
            if self.stopping:
                break
            if not (self.leading and self.synced):
                self._apply_one(self.inbox.wait(MAX_IDLE_WAIT_S))
                continue
            now = self.clock()
            if now >= self._next_housekeeping:
                self._housekeeping(now)
            self.queue.flush(now)
            self.binding_cycle.expire(now)
            self.binding_cycle.poll(now)
            if len(self.binding) >= MAX_BINDINGS_IN_FLIGHT:  # wait for an answer (a BindDone)
                self._apply_one(self.inbox.wait(self._idle_timeout(now, None)))
                continue
            pinfo = self.queue.pop()
            if pinfo is None:
                self._apply_one(self.inbox.wait(self._idle_timeout(now, self.queue.next_wakeup())))
                continue
            self.schedule_one(pinfo)
            self.profiler.tick()

    def _idle_timeout(self, now: float, wake: float | None) -> float:
        """How long to sleep on the inbox: until ``wake``, a Permit timeout or a pending PreBind's
        next poll, whichever comes first, and at most :data:`MAX_IDLE_WAIT_S`."""
        deadline = self.binding_cycle.next_deadline()
        if deadline is not None:
            wake = deadline if wake is None else min(wake, deadline)
        return MAX_IDLE_WAIT_S if wake is None else min(MAX_IDLE_WAIT_S, max(0.0, wake - now))

    def _apply(self, items: list[Message]) -> None:
        for item in items:
            self._apply_one(item)

    def _apply_one(self, item: Message | None) -> None:
        if item is None:
            return
        handler = self._dispatch.get(type(item))
        if handler is None:
            log.error("unknown inbox item %r", item)
            return
        handler(item)

    def dispatch_table(self) -> dict[type, Callable[[Any], None]]:
        """What applies each inbox message, by its exact type (see :mod:`ksched.scheduler.inbox`)."""
        return {
            kev.Upserted: self._informer_event,
            kev.Deleted: self._informer_event,
            kev.Relisted: self._informer_event,
            kev.Invalid: self._informer_event,
            kev.Synced: self._synced,
            BindDone: self._bind_done,
            PreemptionDone: self._preemption_done,
            PermitDecided: self._permit_decided,
            PreBindProgress: self._pre_bind_progress,
            LeadershipChanged: self._leadership_changed,
            StopRequested: self._stop_requested,
            ProfileRequest: self.profiler.start,
        }

    def _synced(self, item: kev.Synced) -> None:
        was_synced = self.synced
        self.synced_kinds.add(item.kind)
        if self.synced and not was_synced and self._on_synced is not None:
            self._on_synced()

    def _leadership_changed(self, item: LeadershipChanged) -> None:
        self.leading = item.leading
        if not item.leading:
            self.stopping = True
            self.stop_reason = LOST_LEADERSHIP

    def _stop_requested(self, item: StopRequested) -> None:
        self.stopping = True
        self.stop_reason = item.reason

    def _permit_decided(self, item: PermitDecided) -> None:
        self.binding_cycle.resolve(item.uid)

    def _pre_bind_progress(self, item: PreBindProgress) -> None:
        self.binding_cycle.progress(item.uid)

    def _preemption_done(self, item: PreemptionDone) -> None:
        self.preemption.done(item, self.profiles)

    def _informer_event(self, item: kev.InformerEvent) -> None:
        self.handlers.handle_informer_event(item)
        self.binding_cycle.informer_event()
        if self.binding_cycle.waiting_uids:
            self.binding_cycle.drop_deleted()  # upstream rejects a waiting pod that is deleted

    # ------------------------------------------------------------------ one pod
    def schedule_one(self, pinfo: QueuedPodInfo) -> None:
        pod = pinfo.pod
        fw = self.profiles.get(pod.scheduler_name)
        if fw is None:
            self.queue.done(pod.uid)
            return
        if pod.deleting:
            note = deleting_message(pod)
            self.reporter.event(pod, fw.profile, "Warning", EVENT_FAILED_SCHEDULING, ACTION_SCHEDULING, note)
            self.queue.done(pod.uid)
            return
        if pod.uid in self.cache:  # already assumed or bound: an update re-queued it
            self.queue.done(pod.uid)
            return
        start = self.clock()
        result = fw.schedule_pod(pod, self.cache, nominated=self.queue.nominator)
        if self.metrics is not None:
            self.metrics.scheduling_algorithm_duration.observe(self.clock() - start)
        if result.selected_node is None:
            failure, nominating = self.preemption.after_failure(fw, result, self.cache, self._failure(result))
            self._fail(pinfo, fw.profile, failure, start, nominating)
            return
        node = result.selected_node
        assumed = with_node_name(pod, node)
        self.cache.assume(assumed, node)
        self.queue.nominator.delete(pod.uid)  # upstream: an assumed pod is no longer nominated
        checked = fw.timer.now()
        if fw.needs_binding_cycle(pod, result.state):
            self.binding_cycle.start(fw, result, pinfo, node, start)
            return
        fw.observe_unneeded_binding_cycle(checked)
        self._post_binding(pinfo, node, start)

    def _post_binding(self, pinfo: QueuedPodInfo, node: str, started: float) -> None:
        """Hand the binding of an assumed pod to the outbox; it is in flight until its BindDone.
        Nothing is posted once this replica stops leading (or stops): a binding cycle that ends
        after that (a pending PreBind, a Permit allowed late) leaves the pod to the next leader."""
        if self.stopping or not self.leading:
            log.info(
                "not binding %s to %s: this scheduler is stopping (%s)", pinfo.pod.key, node, self.stop_reason
            )
            return
        self.binding[pinfo.pod.uid] = Binding(pinfo, node, started, time.perf_counter())
        self.outbox.bind(pinfo.pod, node)

    def _housekeeping(self, now: float) -> None:
        """Gauges that are cheaper to sample than to keep exact: cache sizes, binds in flight."""
        self._next_housekeeping = now + HOUSEKEEPING_EVERY_S
        if self.metrics is None:
            return
        cache_size = self.metrics.cache_size
        cache_size.labels(type="nodes").set(len(self.cache.nodes))
        cache_size.labels(type="pods").set(len(self.cache.pods))
        cache_size.labels(type="assumed_pods").set(self.cache.assumed_count)
        self.metrics.goroutines.labels(operation="binding").set(len(self.binding))

    @staticmethod
    def _failure(result: CycleResult) -> tuple[str, str, set[str]]:
        """(condition reason, message, rejecting plugins) of a cycle that placed nothing."""
        message = result.message()
        if result.status.code == Code.ERROR:
            return REASON_SCHEDULER_ERROR, message, set()
        plugins: set[str] = set()
        if result.prefilter_rejection is not None:
            plugins.add(result.prefilter_rejection.plugin)
        for plugin, fr in result.filters:
            if plugin == EXTENDER_NAME:  # extenders narrowed the nodes, with reasons or without
                plugins.add(plugin)
            elif fr.failed is not None and result.valid is not None:
                n = result.valid.shape[0]
                if (fr.failed[:n][result.valid] != 0).any():
                    plugins.add(plugin)
        return REASON_UNSCHEDULABLE, message, plugins

    def _fail(
        self,
        pinfo: QueuedPodInfo,
        profile: str,
        failure: tuple[str, str, set[str]],
        start: float,
        nominating: str | None = "",
    ) -> None:
        """Report and requeue a failed pod; ``nominating`` is its nomination from now on (``""``
        clears it, ``None`` leaves it: upstream's NominatingInfo)."""
        reason, message, plugins = failure
        pod = pinfo.pod
        result_label = "unschedulable" if reason == REASON_UNSCHEDULABLE else "error"
        self.failed_count += 1
        if self.metrics is not None:
            self._count_attempt(result_label, profile, self.clock() - start)
        log.debug("pod %s not scheduled: %s", pod.key, message)
        current = self.handlers.pending.get(pod.uid)
        if current is None:  # deleted or bound by someone else meanwhile: nothing to requeue
            self.queue.done(pod.uid)
        else:
            pinfo.pod = current
            pinfo.unschedulable_plugins = set(plugins)
            pinfo.pending_plugins = set()
            self.queue.add_unschedulable_if_not_present(pinfo, self.queue.scheduling_cycle)
        self.preemption.nominate(current, nominating)
        self.reporter.event(pod, profile, "Warning", EVENT_FAILED_SCHEDULING, ACTION_SCHEDULING, message)
        self.reporter.not_scheduled(current or pod, reason, message, nominated=nominating)

    def _bind_done(self, done: BindDone) -> None:
        uid = done.pod.uid
        binding = self.binding.pop(uid, None)
        if binding is None:
            return
        profile = done.pod.scheduler_name
        fw = self.profiles.get(profile)
        if fw is not None:
            fw.observe_bind("Success" if done.error is None else "Error", binding.posted)
            checked = fw.timer.now()
            if not self.binding_cycle.bind_done(done):  # PostBind or Unreserve, for pods with plugins
                fw.observe_unneeded_after_bind(done.error is None, checked)
        if done.error is None:
            self.scheduled_count += 1
            self.queue.done(uid)
            now = self.clock()
            if self.metrics is not None:
                self._count_scheduled(binding, profile, now)
            note = scheduled_message(done.pod, done.node)
            self.reporter.event(done.pod, profile, "Normal", EVENT_SCHEDULED, ACTION_BINDING, note)
            self.preemption.bound(done.pod)
            return
        log.info("binding %s to %s failed: %s", done.pod.key, done.node, done.error)
        assumed = self.cache.pods.get(uid) if self.cache.is_assumed(uid) else None
        if assumed is not None:
            self.cache.forget(uid)
        freed = assumed.pod if assumed is not None else with_node_name(done.pod, done.node)
        self.queue.move_all_to_active_or_backoff(cev.ASSIGNED_POD_DELETE, old=freed)
        message = f'running Bind plugin "{BIND_PLUGIN}": {done.error}'
        self._fail(binding.pinfo, profile, (REASON_SCHEDULER_ERROR, message, set()), binding.started)

    def _count_attempt(self, result: str, profile: str, seconds: float) -> None:
        """``schedule_attempts_total`` and ``scheduling_attempt_duration_seconds`` of one attempt."""
        assert self._attempts is not None
        self._attempts.attempts(result, profile).inc()
        self._attempts.durations(result, profile).observe(seconds)

    def _count_scheduled(self, binding: Binding, profile: str, now: float) -> None:
        """The metrics of a pod bound: its attempt, how many it took, and the SLI duration."""
        assert self.metrics is not None and self._attempts is not None
        pinfo = binding.pinfo
        self._count_attempt("scheduled", profile, now - binding.started)
        self.metrics.pod_scheduling_attempts.observe(pinfo.attempts)
        if pinfo.initial_attempt_timestamp is not None:
            sli = self._attempts.sli(attempts_label(pinfo.attempts))
            sli.observe(now - pinfo.initial_attempt_timestamp)


class _AttemptMetrics:
    """The loop's labelled metrics, children memoized: recorded for every attempt."""

    __slots__ = ("attempts", "durations", "extension_points", "sli")

    def __init__(self, metrics: Metrics) -> None:
        self.attempts = Children(metrics.schedule_attempts)
        """By (result, profile)."""
        self.durations = Children(metrics.scheduling_attempt_duration)
        """By (result, profile)."""
        self.sli = Children(metrics.pod_scheduling_sli_duration)
        """By attempts label."""
        self.extension_points = Children(metrics.framework_extension_point_duration)
        """By (extension_point, status, profile)."""
