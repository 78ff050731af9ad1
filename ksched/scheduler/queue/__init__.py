"""The scheduling queue: which pending pod to try next, and when a failed pod may try again.

Upstream: ``pkg/scheduler/backend/queue/scheduling_queue.go``, ``active_queue.go``,
``backoff_queue.go`` (v1.35 defaults: QueueingHints on, ``SchedulerPopFromBackoffQ`` on), reference
§3. Parts:

- **activeQ**: heap by the QueueSort key (higher priority first, then earlier ``timestamp``).
- **backoffQ**: two heaps by backoff expiry, one for rejected pods and one for pods that failed with
  an error. Backoff is ``initial * 2**(attempts-1)`` capped at ``max``, counted from ``timestamp``.
  With PopFromBackoffQ the expiry is truncated to a whole-second window (ties go to the activeQ
  order) and an empty activeQ pops the head of the rejected-pods heap before its backoff ends.
- **unschedulablePods**: a map of pods parked until a cluster event may help them or 5 minutes pass;
  it also holds *gated* pods, which a PreEnqueue plugin keeps out (counted as ``gated``).
- **in flight**: popped pods not yet ``done``; events seen meanwhile are recorded so a pod that fails
  is requeued at once if an event during its attempt may have helped (upstream's in-flight events).

Moves (event labels as in ``scheduler_queue_incoming_pods_total``)::

    add (UnschedulablePodAdd) ──┐       PreEnqueue rejects (gated)
    update of unknown pod ──────┼──▶ activeQ ──────────────────────────▶ unschedulablePods
                                │       │ pop: attempts += 1             (gated; only events of the
     BackoffComplete (flush) ───┘       ▼                                 gating plugin move it)
     ForceActivate (activate)       in flight ── done ──▶ (gone: bound or deleted)
              ▲                         │ add_unschedulable_if_not_present (ScheduleAttemptFailure)
              │          ┌──────────────┴───────────────────┐
              │          │ an in-flight event may help,      │ no event helped
              │          │ or an error (no rejecting plugin) │
              │          ▼                                   ▼
           backoffQ ◀── still backing off ── event ── unschedulablePods
              │            (<event>, UnschedulableTimeout)   │ event / 5 min timeout / activate,
              │ activeQ empty: PopFromBackoffQ               │ backoff over ──▶ activeQ
              └──────────────────────────────────────────────┴─ pending plugin said Queue ──▶ activeQ

Not guaranteed: fairness among pods of equal priority and equal ``timestamp`` beyond insertion
order; hint functions are approximated by event registrations (see
:mod:`ksched.scheduler.events_registry`).

Single-threaded by design: every method is called only from the scheduling thread; there are no
locks. Time comes from the injected ``clock`` (monotonic seconds).

Modules: :mod:`.scheduling_queue` (the moves above), :mod:`.types` (``QueuedPodInfo``, settings),
:mod:`.heap` (keyed heap with lazy deletion), :mod:`.backoff` (backoff expiry and its heap keys),
:mod:`.inflight` (in-flight pods and the events seen meanwhile), :mod:`.nominator` (nominated pods),
:mod:`.factory` (the queue a configuration describes).
"""

from ksched.scheduler.queue.factory import queue_for
from ksched.scheduler.queue.nominator import Nominator
from ksched.scheduler.queue.scheduling_queue import SchedulingQueue, Strategy
from ksched.scheduler.queue.types import PreEnqueuePlugin, QueuedPodInfo, QueueError, QueueSettings

__all__ = [
    "Nominator",
    "PreEnqueuePlugin",
    "QueueError",
    "QueueSettings",
    "QueuedPodInfo",
    "SchedulingQueue",
    "Strategy",
    "queue_for",
]
