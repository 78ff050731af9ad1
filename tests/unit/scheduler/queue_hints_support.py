"""Upstream's queue-test setup, in ksched terms, for ``test_queue_upstream_hints``.

Upstream's queue tests configure a ``QueueingHintMapPerProfile``: per profile, an event mapped to the
``(plugin, hint function)`` pairs registered for it. :func:`registry_of` turns that map (one profile,
ksched's default scheduler name, which every test pod carries) into the :class:`EventsRegistry` the
queue reads: each plugin registers exactly the events the map lists for it, with those hints. A
plugin a case names but the map does not (upstream: a rejector with no hint for the event) is
registered with no events, so it hears nothing; ksched would otherwise give an unknown plugin the
wildcard.

The views (:func:`placement`, :func:`assert_in_flight`) read the queue's sub-queues and its
:class:`~ksched.scheduler.queue.inflight.InFlight` record, as upstream's tests read ``q.activeQ``,
``q.backoffQ`` and ``listInFlightEvents``: the queue answers only counts and records publicly.

``Test_InFlightPods`` drives the queue with a list of actions per case (an event happens, a pod is
popped, created or enqueued back); :func:`run_actions` plays them, with a step for each of
upstream's callbacks.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from prometheus_client import CollectorRegistry

from ksched.framework.interface import QueueingHint, Status, unschedulable
from ksched.metrics import INFLIGHT_EVENTS, POD_POPPED_IN_FLIGHT_EVENT, Metrics
from ksched.model.pod import DEFAULT_SCHEDULER_NAME, Pod
from ksched.scheduler.events_registry import ClusterEvent, EventsRegistry, Registration
from ksched.scheduler.queue import PreEnqueuePlugin, SchedulingQueue
from ksched.scheduler.queue.types import QueuedPodInfo

HintFn = Callable[[Pod, object, object], QueueingHint]
HintMap = Mapping[ClusterEvent, Sequence[tuple[str, HintFn]]]
"""Upstream's ``QueueingHintMap`` of one profile: event -> ``(plugin, hint)`` in registration order."""

PROFILE = DEFAULT_SCHEDULER_NAME
START_S = 1000.0
"""The fake clock starts on a whole second, so backoff windows line up with upstream's arithmetic."""


class FakeClock:
    def __init__(self, now: float = START_S) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def step(self, seconds: float) -> None:
        self.now += seconds


class HintError(RuntimeError):
    """What the failing hint raises (upstream's hint returns ``(QueueSkip, error)``)."""


def hint_queue(pod: Pod, old: object, new: object) -> QueueingHint:
    return QueueingHint.QUEUE


def hint_skip(pod: Pod, old: object, new: object) -> QueueingHint:
    return QueueingHint.QUEUE_SKIP


class HintCalls:
    """Hint functions that count their calls, like the ``count`` of upstream's Test_isPodWorthRequeuing."""

    def __init__(self) -> None:
        self.count = 0

    def queue(self, pod: Pod, old: object, new: object) -> QueueingHint:
        self.count += 1
        return QueueingHint.QUEUE

    def skip(self, pod: Pod, old: object, new: object) -> QueueingHint:
        self.count += 1
        return QueueingHint.QUEUE_SKIP

    def error(self, pod: Pod, old: object, new: object) -> QueueingHint:
        self.count += 1
        raise HintError("unexpected error")


def registry_of(hint_map: HintMap, also: Iterable[str] = ()) -> EventsRegistry:
    """The registry for ``hint_map``; the plugins in ``also`` that the map does not name hear nothing."""
    events: dict[str, list[ClusterEvent]] = {plugin: [] for plugin in also}
    regs: dict[str, list[Registration]] = {}
    for event, fns in hint_map.items():
        for plugin, fn in fns:
            events.setdefault(plugin, []).append(event)
            regs.setdefault(plugin, []).append(Registration(event, fn))
    return EventsRegistry(events=events, hints={PROFILE: regs})


def make_queue(
    hint_map: HintMap,
    also: Iterable[str] = (),
    *,
    metrics: Metrics | None = None,
    pre_enqueue: Sequence[PreEnqueuePlugin] = (),
    clock: FakeClock | None = None,
) -> tuple[SchedulingQueue, FakeClock]:
    clock = clock or FakeClock()
    registry = registry_of(hint_map, also)
    q = SchedulingQueue(clock=clock, events=registry, metrics=metrics, pre_enqueue=pre_enqueue)
    return q, clock


class AllowLabel:
    """Upstream's test ``preEnqueuePlugin``: admits a pod carrying one of ``allow`` as a label key."""

    def __init__(self, name: str, *allow: str) -> None:
        self.name = name
        self._allow = allow

    def pre_enqueue(self, pod: Pod) -> Status:
        if any(key in pod.labels for key in self._allow):
            return Status()
        return unschedulable("pod name not in allowlists", resolvable=False)


def pop_expecting(q: SchedulingQueue, pod: Pod) -> QueuedPodInfo:
    """Upstream's ``popPod``: pop the head, which must be ``pod``."""
    got = q.pop()
    assert got is not None, f"nothing to pop, wanted {pod.name}"
    assert got.uid == pod.uid, f"popped {got.pod.name}, wanted {pod.name}"
    return got


def fail(
    q: SchedulingQueue, pinfo: QueuedPodInfo, rejected: Iterable[str] = (), pending: Iterable[str] = ()
) -> str:
    """Requeue a popped pod as upstream's tests do with a fresh ``QueuedPodInfo``: exactly these
    rejecting (Unschedulable) and Pending plugins, none for an error. Returns the queue it went to."""
    pinfo.unschedulable_plugins = set(rejected)
    pinfo.pending_plugins = set(pending)
    return q.add_unschedulable_if_not_present(pinfo, q.scheduling_cycle)


def queue_of(q: SchedulingQueue, uid: str) -> str | None:
    """``active`` / ``backoff`` / ``unschedulable`` (gated pods included) / ``in-flight`` / None."""
    if q.in_flight(uid):
        return "in-flight"
    if uid in q._active:
        return "active"
    if uid in q._backoff or uid in q._error_backoff:
        return "backoff"
    if uid in q._unsched:
        return "unschedulable"
    return None


def placement(q: SchedulingQueue, pods: Iterable[Pod]) -> dict[str, list[str]]:
    """Sub-queue -> sorted names of the ``pods`` it holds (upstream's ``wantActiveQPodNames`` etc.)."""
    out: dict[str, list[str]] = {}
    for p in pods:
        where = queue_of(q, p.uid)
        if where is not None:
            out.setdefault(where, []).append(p.name)
    return {k: sorted(v) for k, v in out.items()}


FlightEntry = Pod | ClusterEvent
"""An entry of upstream's ``inFlightEvents`` list: a popped pod, or an event recorded after it."""


def assert_in_flight(q: SchedulingQueue, known: Iterable[Pod], want: Sequence[FlightEntry]) -> None:
    """The queue's in-flight pods and events are upstream's ``inFlightEvents`` list ``want``.

    ksched keeps the pods apart from the events, each pod with the number of the last event before
    its pop, so the list is checked through what each pod sees: the pods in flight are the list's
    pods; the events kept are the list's events; and the events since each pod's pop are the
    events after it in the list, in order. Together these fix the list.
    """
    flight = q._in_flight
    want_pods = [w for w in want if isinstance(w, Pod)]
    assert_pods_in_flight(q, known, want_pods)
    assert flight.event_count == len(want) - len(want_pods), "in-flight events kept"
    for i, entry in enumerate(want):
        if isinstance(entry, Pod):
            after = [w.label for w in want[i + 1 :] if isinstance(w, ClusterEvent)]
            seen = [item.event.label for item in flight.events_since_start(entry.uid)]
            assert seen == after, f"events since {entry.name} was popped"


def assert_pods_in_flight(q: SchedulingQueue, known: Iterable[Pod], want: Iterable[Pod]) -> None:
    """Upstream's ``expectInFlightPods``: exactly ``want`` (of the ``known`` pods) are in flight."""
    want_uids = {p.uid for p in want}
    assert {p.uid for p in known if q.in_flight(p.uid)} == want_uids, "in-flight pods"
    assert len(q._in_flight) == len(want_uids), "in-flight pods"


def inflight_gauge(registry: CollectorRegistry) -> dict[str, float]:
    """The non-zero ``scheduler_inflight_events{event}`` samples."""
    out: dict[str, float] = {}
    for family in registry.collect():
        if family.name == INFLIGHT_EVENTS:
            out.update((s.labels["event"], s.value) for s in family.samples if s.value)
    return out


def gauge_of(want: Sequence[FlightEntry]) -> dict[str, float]:
    """What ``scheduler_inflight_events`` holds for the in-flight list ``want``."""
    labels = Counter(POD_POPPED_IN_FLIGHT_EVENT if isinstance(w, Pod) else w.label for w in want)
    return {label: float(n) for label, n in labels.items()}


def hint_count(registry: CollectorRegistry, plugin: str, event: str, hint: str) -> float:
    """Observations of ``scheduler_queueing_hint_execution_duration_seconds{plugin,event,hint}``."""
    labels = {"plugin": plugin, "event": event, "hint": hint}
    value = registry.get_sample_value("scheduler_queueing_hint_execution_duration_seconds_count", labels)
    return value or 0.0


# --- Test_InFlightPods: its actions as data, and the runner ---------------------------------------


@dataclass(frozen=True)
class Event:
    """An event happens: MoveAllToActiveOrBackoffQueue with no objects."""

    event: ClusterEvent


@dataclass(frozen=True)
class Pop:
    """The head of the queue is popped; it must be this pod."""

    pod: Pod


@dataclass(frozen=True)
class Create:
    """A new pod is added."""

    pod: Pod


@dataclass(frozen=True)
class Enqueue:
    """AddUnschedulableIfNotPresent of the popped pod, rejected by exactly these plugins."""

    pod: Pod
    rejected: tuple[str, ...] = ()
    pending: tuple[str, ...] = ()


@dataclass(frozen=True)
class Requeue:
    """AddUnschedulableIfNotPresent of the popped record as Pop returned it."""

    pod: Pod


@dataclass(frozen=True)
class ExpectPoppedPlugins:
    """The record the last Pop of this pod returned still names these plugins."""

    pod: Pod
    rejected: tuple[str, ...]
    pending: tuple[str, ...]


@dataclass(frozen=True)
class DuplicateInActiveQ:
    """The bug upstream simulates (issue 118226): a pod in flight is put into activeQ again."""

    pod: Pod


@dataclass(frozen=True)
class ExpectActiveQEmpty:
    """activeQ holds no pod."""


Action = (
    Event | Pop | Create | Enqueue | Requeue | ExpectPoppedPlugins | DuplicateInActiveQ | ExpectActiveQEmpty
)


@dataclass(frozen=True)
class InFlightCase:
    hint_map: HintMap
    initial: tuple[Pod, ...]
    actions: tuple[Action, ...]
    want_in_flight: tuple[FlightEntry, ...] = ()
    """Upstream's ``wantInFlightEvents`` (pods and events in one list); its pods are ``wantInFlightPods``."""
    want_active: tuple[str, ...] | None = None
    want_backoff: tuple[str, ...] | None = None
    want_unschedulable: tuple[str, ...] = ()


def run_actions(q: SchedulingQueue, actions: Sequence[Action]) -> None:
    popped: dict[str, QueuedPodInfo] = {}
    for action in actions:
        match action:
            case Event(event):
                q.move_all_to_active_or_backoff(event)
            case Pop(p):
                popped[p.uid] = pop_expecting(q, p)
            case Create(p):
                q.add(p)
            case Enqueue(p, rejected, pending):
                fail(q, popped[p.uid], rejected, pending)
            case Requeue(p):
                q.add_unschedulable_if_not_present(popped[p.uid], q.scheduling_cycle)
            case ExpectPoppedPlugins(p, rejected, pending):
                got = popped[p.uid]
                assert (got.unschedulable_plugins, got.pending_plugins) == (set(rejected), set(pending))
            case DuplicateInActiveQ(p):
                dup = QueuedPodInfo(pod=p, timestamp=0.0)  # upstream's lookup record: zero timestamp
                q._active.push(p.uid, q._active_key(dup), dup)  # no public way to break the queue
            case ExpectActiveQEmpty():
                assert q.pending()["active"] == 0
