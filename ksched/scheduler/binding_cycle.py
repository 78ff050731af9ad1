"""Reserve, Permit, PreBind and PostBind: the extension points between assume and the bind outcome.

Upstream's order (reference §1.2-1.5), on the scheduling thread:

1. the cycle picked a node and the pod was **assumed** there;
2. **Reserve** runs on every Reserve plugin in order; the first failure runs **Unreserve** on all of
   them in reverse order, forgets the pod and reports the failure;
3. **Permit**: each plugin allows, rejects, or asks to **wait** (up to 15 minutes). A rejection
   unreserves and forgets as above;
4. **PreBindPreFlight** (``NominatedNodeNameForExpectation``, on in v1.35): an error fails the
   binding cycle; when some PreBind plugin will act, or the pod waits on Permit, the pod's
   ``status.nominatedNodeName`` is set to the node first, telling other components where it goes.
   A waiting pod stays assumed and is parked in the profile's
   :class:`~ksched.framework.waiting.WaitingPods`; the scheduling thread goes on with other pods.
   ``allow`` / ``reject`` (from any thread) post a :class:`PermitDecided` to the inbox; timeouts
   are checked by :meth:`BindingCycle.expire` on every loop step;
5. the queue is told the attempt is :meth:`~ksched.scheduler.queue.SchedulingQueue.done` (nothing
   after Permit counts as unschedulable), and **PreBind** plugins run in order. One may answer
   with a :class:`~ksched.framework.api.PendingPreBind`: the pod stays assumed and parked, the loop
   schedules other pods, and :meth:`BindingCycle.poll` polls it after inbox drains that carried its
   wake-up or an informer event, and when its ``next_poll_at`` comes (the loop's sleep honours it);
   its outcome then stands for that plugin's Status and the next PreBind plugin runs. A failure
   unreserves, forgets, and, because an assumed pod's resources are freed, moves parked pods as a
   deleted assigned pod would. Then the binding is posted through the outbox exactly as for
   profiles without these points, unless this replica no longer leads;
6. when the bind outcome arrives, **PostBind** runs on success, **Unreserve** on failure (the loop
   then forgets and requeues the pod as before).

A rejection is reported like upstream's ``FitError{NumAllNodes: 1}``: reason ``Unschedulable``,
message ``0/1 nodes are available: <plugin's message>.``, and the rejecting plugin decides which
cluster events requeue the pod. An error (a plugin that raised, or returned a malformed result) is
a ``SchedulerError`` naming the plugin (``running PreBind plugin "P": ...``), requeued with backoff.

Pods none of whose binding-cycle plugins has work for them (each declares ``skips_pods_without``
an attribute the pod lacks) never reach this module: the loop asks
``Framework.needs_binding_cycle`` for every pod and hands the binding to the outbox directly.
"""

from __future__ import annotations

import heapq
import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ksched.cache.cluster import ClusterCache
from ksched.framework.interface import Code, CycleState, Status
from ksched.framework.runtime import CycleResult, Framework
from ksched.framework.runtime.binding import PreBindWait, poll_pre_bind
from ksched.framework.waiting import go_seconds
from ksched.metrics import Metrics
from ksched.model.pod import Pod, with_node_name
from ksched.scheduler import events_registry as cev
from ksched.scheduler.inbox import BindDone, Inbox, PermitDecided, PreBindProgress
from ksched.scheduler.queue import SchedulingQueue
from ksched.scheduler.queue.types import QueuedPodInfo
from ksched.scheduler.reporting import REASON_SCHEDULER_ERROR, REASON_UNSCHEDULABLE, Failure

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _InFlight:
    fw: Framework
    state: CycleState
    pinfo: QueuedPodInfo
    pod: Pod
    """The assumed pod (``spec.nodeName`` set), as the plugins see it."""
    node: str
    started: float
    waiting_since: float = 0.0
    pre_bind: PreBindWait | None = None
    """The PreBind plugin this pod waits on, and where PreBind goes on from."""
    woken: bool = False
    """Its waker fired since the last poll."""


PostBinding = Callable[[QueuedPodInfo, str, float], None]
"""Posts the binding of an assumed pod to a node, for an attempt started at the given time."""
OnFailure = Callable[[QueuedPodInfo, str, Failure, float], None]
"""Reports and requeues a pod that was not placed: (pod, profile, failure, attempt start)."""
ExpectOn = Callable[[Pod, str], None]
"""Records that the pod is about to be bound to the node (``status.nominatedNodeName``)."""


class BindingCycle:
    """The binding-cycle points of the loop's profiles. Scheduling thread only (except
    :meth:`_notify`, which only writes to the inbox).

    The loop hands over its two ends of a pod's attempt: ``post_binding`` (the bind path of profiles
    without these points, so every binding is counted in flight the same way) and ``on_failure``
    (its failure path: event, condition, requeue).
    """

    def __init__(
        self,
        *,
        profiles: Mapping[str, Framework],
        cache: ClusterCache,
        queue: SchedulingQueue,
        inbox: Inbox,
        clock: Callable[[], float],
        post_binding: PostBinding,
        on_failure: OnFailure,
        expect_on: ExpectOn | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        """``expect_on`` records the expected node before a wait (None: nothing is written)."""
        self._profiles = profiles
        self._expect_on = expect_on
        self._cache = cache
        self._queue = queue
        self._inbox = inbox
        self._clock = clock
        self._post_binding = post_binding
        self._on_failure = on_failure
        self._metrics = metrics
        self._pods: dict[str, _InFlight] = {}
        self._deadlines: list[tuple[float, str, str]] = []
        self.waiting_uids: set[str] = set()
        """Pods held at Permit (the loop checks this set, cheaply, after informer events)."""
        self.pre_binding: dict[str, _InFlight] = {}
        """Pods whose PreBind is pending, by uid."""
        self._changed = False
        """An informer event arrived since the last :meth:`poll`."""

    def _notify(self, uid: str) -> None:
        self._inbox.put(PermitDecided(uid))

    @property
    def waiting(self) -> int:
        """Pods held at Permit right now."""
        return sum(len(fw.waiting_pods) for fw in self._profiles.values())

    # ------------------------------------------------------------------ after assume
    def start(
        self, fw: Framework, result: CycleResult, pinfo: QueuedPodInfo, node: str, started: float
    ) -> None:
        """Reserve and Permit for a pod just assumed on ``node``; then bind, wait, or fail."""
        pod = with_node_name(pinfo.pod, node)
        state = result.state if result.state is not None else CycleState()
        entry = _InFlight(fw, state, pinfo, pod, node, started)
        self._pods[pod.uid] = entry
        status = fw.run_reserve(state, pod, node)
        if not status.ok:
            self._abort(entry, status, binding_stage=False)
            return
        status, waits = fw.run_permit(state, pod, node)
        if not status.ok:
            self._abort(entry, status, binding_stage=False)
            return
        pre_flight = fw.run_pre_bind_pre_flights(state, pod, node)
        if pre_flight.code == Code.ERROR or pre_flight.code.is_rejection:
            self._abort(entry, pre_flight, binding_stage=True)
            return
        if (pre_flight.ok or waits) and self._expect_on is not None:
            self._expect_on(pinfo.pod, node)
        if not waits:
            self._bind(entry)
            return
        entry.waiting_since = self._clock()
        fw.waiting_pods.add(pod, node, waits, self._notify)
        self.waiting_uids.add(pod.uid)
        for name, timeout in waits.items():
            heapq.heappush(self._deadlines, (entry.waiting_since + timeout, pod.uid, name))
        log.debug("pod %s waits on permit at %s (plugins %s)", pod.key, node, sorted(waits))

    # ------------------------------------------------------------------ waiting pods
    def resolve(self, uid: str) -> None:
        """Finish a waiting pod whose fate was decided (a :class:`PermitDecided` arrived)."""
        entry = self._pods.get(uid)
        if entry is None:
            return
        wp = entry.fw.waiting_pods.get(uid)
        if wp is None or (decision := wp.decision) is None:
            return
        entry.fw.waiting_pods.remove(uid)
        self.waiting_uids.discard(uid)
        metrics = self._metrics
        if metrics is not None:
            label = "Success" if decision.ok else "Unschedulable"
            metrics.permit_wait_duration.labels(result=label).observe(self._clock() - entry.waiting_since)
        if decision.ok:
            self._bind(entry)
        else:
            log.debug("pod %s rejected while waiting on permit: %s", entry.pod.key, decision.message)
            self._abort(entry, decision, binding_stage=True)

    def expire(self, now: float) -> None:
        """Reject waiting pods whose Permit timeout passed (called on every loop step)."""
        heap = self._deadlines
        while heap and heap[0][0] <= now:
            _, uid, plugin = heapq.heappop(heap)
            entry = self._pods.get(uid)
            if entry is None:
                continue
            wp = entry.fw.waiting_pods.get(uid)
            if wp is None or plugin not in wp.pending_plugins:
                continue
            wp.reject(
                plugin,
                f"rejected due to timeout after waiting {go_seconds(wp.timeouts[plugin])} at plugin {plugin}",
            )
            self.resolve(uid)

    def drop_deleted(self) -> None:
        """Reject waiting pods the informer saw deleted (the cache no longer holds them), as
        upstream's ``RejectWaitingPod`` on a pod delete: no one waits for a pod that is gone."""
        for uid in [u for u in self.waiting_uids if u not in self._cache.pods]:
            entry = self._pods.get(uid)
            wp = entry.fw.waiting_pods.get(uid) if entry is not None else None
            if wp is None:
                self.waiting_uids.discard(uid)
                continue
            wp.reject("", "removed")
            self.resolve(uid)

    def next_deadline(self) -> float | None:
        """The earliest clock time something here must be looked at: a Permit timeout, or the
        ``next_poll_at`` of a pending PreBind."""
        soonest = self._deadlines[0][0] if self._deadlines else math.inf
        for entry in self.pre_binding.values():
            assert entry.pre_bind is not None
            soonest = min(soonest, entry.pre_bind.pending.next_poll_at())
        return None if soonest == math.inf else soonest

    # ------------------------------------------------------------------ binding
    def _bind(self, entry: _InFlight) -> None:
        """Permit allowed the pod: PreBind, then the binding."""
        self._queue.done(entry.pod.uid)  # upstream: nothing after Permit makes a pod unschedulable
        self._after_pre_bind(entry, entry.fw.run_pre_bind(entry.state, entry.pod, entry.node))

    def _after_pre_bind(self, entry: _InFlight, outcome: Status | PreBindWait) -> None:
        uid = entry.pod.uid
        if isinstance(outcome, PreBindWait):
            entry.pre_bind = outcome
            entry.woken = True  # poll once at the next step: the plugin may be done already
            self.pre_binding[uid] = entry
            outcome.pending.set_waker(lambda: self._inbox.put(PreBindProgress(uid)))
            log.debug(
                "pod %s waits on PreBind plugin %s at %s", entry.pod.key, outcome.plugin.name, entry.node
            )
            return
        if not outcome.ok:
            self._abort(entry, outcome, binding_stage=True)
            return
        self._post_binding(entry.pinfo, entry.node, entry.started)

    # ------------------------------------------------------------------ pending PreBinds
    def progress(self, uid: str) -> None:
        """The pending PreBind of ``uid`` woke (a :class:`PreBindProgress` arrived)."""
        entry = self.pre_binding.get(uid)
        if entry is not None:
            entry.woken = True

    def informer_event(self) -> None:
        """An informer event was applied: what pending PreBinds wait for may have changed."""
        if self.pre_binding:
            self._changed = True

    def poll(self, now: float) -> None:
        """Poll the pending PreBinds that woke, that an informer event may concern, or whose
        ``next_poll_at`` came; go on with those that are done. Called on every loop step while
        this replica leads (a replica that stops leading posts nothing afterwards)."""
        if not self.pre_binding:
            return
        changed, self._changed = self._changed, False
        for uid, entry in list(self.pre_binding.items()):
            wait = entry.pre_bind
            assert wait is not None
            if not (changed or entry.woken or now >= wait.pending.next_poll_at()):
                continue
            entry.woken = False
            outcome = poll_pre_bind(wait, now)
            if outcome is None:
                continue
            del self.pre_binding[uid]
            entry.pre_bind = None
            self._after_pre_bind(
                entry, entry.fw.resume_pre_bind(entry.state, entry.pod, entry.node, wait, outcome)
            )

    def bind_done(self, done: BindDone) -> bool:
        """PostBind after a successful bind, Unreserve after a failed one (the loop does the rest);
        False when the pod did not go through this binding cycle (nothing ran)."""
        entry = self._pods.pop(done.pod.uid, None)
        if entry is None:
            return False
        if done.error is None:
            entry.fw.run_post_bind(entry.state, entry.pod, entry.node)
        else:
            entry.fw.run_unreserve(entry.state, entry.pod, entry.node)
        return True

    # ------------------------------------------------------------------ failures
    def _abort(self, entry: _InFlight, status: Status, *, binding_stage: bool) -> None:
        """Unreserve, forget, and report ``status`` through the loop's failure path."""
        uid = entry.pod.uid
        self._pods.pop(uid, None)
        self.pre_binding.pop(uid, None)
        entry.fw.waiting_pods.remove(uid)
        self.waiting_uids.discard(uid)
        entry.fw.run_unreserve(entry.state, entry.pod, entry.node)
        assumed = self._cache.pods.get(uid) if self._cache.is_assumed(uid) else None
        if assumed is not None:
            self._cache.forget(uid)
        if binding_stage:  # what the pod held on its node is free (the pod itself stays parked)
            freed = assumed.pod if assumed is not None else with_node_name(entry.pod, entry.node)
            self._queue.move_all_to_active_or_backoff(
                cev.ASSIGNED_POD_DELETE, lambda p: p.uid != uid, old=freed
            )
        failure: Failure
        if status.code.is_rejection:
            failure = (REASON_UNSCHEDULABLE, f"0/1 nodes are available: {status.message}.", {status.plugin})
        else:
            failure = (REASON_SCHEDULER_ERROR, status.message, set())
        self._on_failure(entry.pinfo, entry.fw.profile, failure, entry.started)
