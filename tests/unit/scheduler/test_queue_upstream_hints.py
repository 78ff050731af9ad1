"""The scheduling queue asked through queueing hints: upstream's hint-related queue tests, as data.

Ported from ``pkg/scheduler/backend/queue/scheduling_queue_test.go`` (kubernetes/kubernetes, read at
commit 00cd67b7; QueueingHints and SchedulerPopFromBackoffQ on, as in v1.35), with upstream's case
names as ids:

- ``Test_InFlightPods``: 13 cases (the QueueingHints-enabled ones);
- ``TestPriorityQueue_MoveAllToActiveOrBackoffQueueWithQueueingHint``: 6;
- ``Test_isPodWorthRequeuing``: 11, plus each event without a target run through the queue
  (upstream's ``requeuePodWithQueueingStrategy``), plus isPodWorthRequeuing's "no rejector" branch;
- ``TestPriorityQueue_MoveAllToActiveOrBackoffQueue`` (the hint-enabled scenario),
  ``TestPriorityQueue_AddUnschedulableIfNotPresent_Backoff``, ``TestPop`` ("with-hints"),
  ``TestPriorityQueue_UpdateWhenInflight``: one scenario each;
- ``TestPriorityQueue_Activate``: the 2 ``[QHint]`` in-flight cases;
- ``TestPriorityQueue_Update``: the 4 cases that run with queueing hints on and use them;
- ``TestMoveAllToActiveOrBackoffQueue_PreEnqueueChecks``: 5 (the pre-check and the interest gate);
- metrics: ``scheduler_queueing_hint_execution_duration_seconds{plugin,event,hint}`` and
  ``scheduler_inflight_events{event}`` (upstream's ``queueingHintToLabel`` and
  ``ObserveInFlightEventsAsync``; upstream has no test of their values, so these are ksched's).

Not ported: cases of the QueueingHints-disabled mode (``Test_InFlightPods``' two "SchedulingQueueHint
is disabled" cases, ``TestPop`` "without-hints", ``TestPriorityQueue_Activate``'s four cases without
``[QHint]``, ``TestPriorityQueue_MoveAllToActiveOrBackoffQueueWithoutQueueingHint``, the
``queuehint(false)`` runs of ``TestPriorityQueue_Update``); gang scheduling
(``TestPriorityQueue_MovePodsToActiveOrBackoffQueueForGangScheduling``: ksched has no workloads or
pod groups); ``TestPriorityQueue_AssignedPodAdded_`` / ``_AssignedPodUpdated`` (ksched's queue has
no AssignedPodAdded: the cross-topology pre-filter lives in the event handlers, which pass it as
``pre_check``).

Where ksched deviates on purpose, the expectation is adapted and says so where it is: the hint calls
of ``Test_isPodWorthRequeuing`` (ksched asks Pending plugins first and stops at the first Queue);
ForceActivate targets the pod by uid rather than carrying it as the event's new object; an in-flight
pod's own update concerns that pod only (pinned by a ksched case); ``add`` of a pod the queue
already tracks is an update.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from prometheus_client import CollectorRegistry

from ksched.framework.names import SCHEDULING_GATES
from ksched.framework.plugins.schedulinggates import SchedulingGates
from ksched.metrics import HINT_ERROR, HINT_QUEUE, HINT_QUEUE_SKIP, Metrics
from ksched.model.pod import Pod
from ksched.scheduler import events_registry as ev
from ksched.scheduler.events_registry import ActionType as A
from ksched.scheduler.events_registry import ClusterEvent
from ksched.scheduler.queue import SchedulingQueue, Strategy
from ksched.scheduler.queue.types import QueuedPodInfo
from tests.builders import pod, pod_status
from tests.unit.scheduler.queue_hints_support import (
    AllowLabel,
    Create,
    DuplicateInActiveQ,
    Enqueue,
    Event,
    ExpectActiveQEmpty,
    ExpectPoppedPlugins,
    FlightEntry,
    HintCalls,
    HintFn,
    HintMap,
    InFlightCase,
    Pop,
    Requeue,
    assert_in_flight,
    assert_pods_in_flight,
    fail,
    gauge_of,
    hint_count,
    hint_queue,
    hint_skip,
    inflight_gauge,
    make_queue,
    placement,
    pop_expecting,
    queue_of,
    run_actions,
)

NODE_ADD = ev.NODE_ADD
PV_ADD = ClusterEvent(ev.PERSISTENT_VOLUME, A.ADD)
PV_UPDATE = ClusterEvent(ev.PERSISTENT_VOLUME, A.UPDATE)
PVC_ADD = ClusterEvent(ev.PERSISTENT_VOLUME_CLAIM, A.ADD)
CSI_NODE_UPDATE = ClusterEvent(ev.CSI_NODE, A.UPDATE)
ASSIGNED_POD_ADD = ev.ASSIGNED_POD_ADD
TIMEOUT = ev.EVENT_UNSCHEDULABLE_TIMEOUT
FOO1, FOO2, FOO3, FOO4 = "fooPlugin1", "fooPlugin2", "fooPlugin3", "fooPlugin4"
FOO_PLUGINS = (FOO1, FOO2, FOO3, FOO4)

POD1 = pod("targetpod", uid="pod1")
POD2 = pod("targetpod2", uid="pod2")
POD3 = pod("targetpod3", uid="pod3")
TARGET_PODS = (POD1, POD2, POD3)


# --- Test_InFlightPods ----------------------------------------------------------------------------


def _queue_all(*events: ClusterEvent) -> HintMap:
    return {e: [(FOO1, hint_queue)] for e in events}


APA_PENDING_MAP: HintMap = {ASSIGNED_POD_ADD: [(FOO3, hint_skip), (FOO2, hint_queue), (FOO1, hint_queue)]}
IN_FLIGHT_CASES = [
    pytest.param(
        InFlightCase(
            _queue_all(PV_ADD),
            (POD1,),
            (Event(PVC_ADD), Pop(POD1), Event(PV_ADD), Event(PV_UPDATE)),
            want_in_flight=(POD1, PV_ADD),
        ),
        id="Pod and interested events are registered in inFlightPods/inFlightEvents",
    ),
    pytest.param(
        InFlightCase(
            _queue_all(PV_ADD, NODE_ADD, PVC_ADD),
            (POD1, POD2),
            (Event(PVC_ADD), Pop(POD1), Event(PV_ADD), Pop(POD2), Event(NODE_ADD), Enqueue(POD1)),
            want_in_flight=(POD2, NODE_ADD),
            want_backoff=("targetpod",),
        ),
        id="Pod, registered in inFlightPods, is enqueued back to backoffQ",
    ),
    pytest.param(
        InFlightCase(
            _queue_all(PV_ADD, NODE_ADD, PVC_ADD, CSI_NODE_UPDATE),
            (POD1, POD2),
            (
                Event(PVC_ADD),
                Pop(POD1),
                Event(PV_ADD),
                Pop(POD2),
                Event(NODE_ADD),
                Enqueue(POD1),
                Event(CSI_NODE_UPDATE),
                Enqueue(POD2),
            ),
            want_backoff=("targetpod", "targetpod2"),
        ),
        id="All Pods registered in inFlightPods are enqueued back to activeQ",
    ),
    pytest.param(
        InFlightCase(
            _queue_all(PV_ADD, NODE_ADD, ASSIGNED_POD_ADD),
            (POD1, POD2, POD3),
            (
                Event(PVC_ADD),
                Pop(POD1),
                Event(PV_ADD),
                Pop(POD2),
                Event(NODE_ADD),
                Pop(POD3),
                Event(ASSIGNED_POD_ADD),
                Enqueue(POD2),
            ),
            want_in_flight=(POD1, PV_ADD, NODE_ADD, POD3, ASSIGNED_POD_ADD),
            want_backoff=("targetpod2",),
        ),
        id="One intermediate Pod registered in inFlightPods is enqueued back to activeQ",
    ),
    pytest.param(
        InFlightCase(
            {ASSIGNED_POD_ADD: [(FOO1, hint_skip)]},
            (POD1,),
            (Event(TIMEOUT), Pop(POD1), Event(ASSIGNED_POD_ADD), Enqueue(POD1, (FOO1,))),
            want_unschedulable=("targetpod",),
        ),
        id="events before popping Pod are ignored when Pod is enqueued back to queue",
    ),
    pytest.param(
        InFlightCase(
            _queue_all(ASSIGNED_POD_ADD),
            (POD1,),
            (Pop(POD1), Event(ASSIGNED_POD_ADD), Enqueue(POD1)),
            want_backoff=("targetpod",),
        ),
        id="pod is enqueued to backoff if no failed plugin",
    ),
    pytest.param(
        InFlightCase(
            _queue_all(ASSIGNED_POD_ADD),
            (POD1,),
            (Pop(POD1), Event(NODE_ADD), Enqueue(POD1, (FOO1,))),
            want_unschedulable=("targetpod",),
        ),
        id="pod is enqueued to unschedulable pod pool if no events that can make the pod schedulable",
    ),
    pytest.param(
        InFlightCase(
            {ASSIGNED_POD_ADD: [(FOO1, hint_skip)]},
            (POD1,),
            (Pop(POD1), Event(ASSIGNED_POD_ADD), Enqueue(POD1, (FOO1,))),
            want_unschedulable=("targetpod",),
        ),
        id="pod is enqueued to unschedulable pod pool because the failed plugin has a hint fn but it returns "
        "Skip",
    ),
    pytest.param(
        InFlightCase(
            APA_PENDING_MAP,
            (POD1,),
            (Pop(POD1), Event(ASSIGNED_POD_ADD), Enqueue(POD1, (FOO2, FOO3), (FOO1,))),
            want_active=("targetpod",),
        ),
        id="pod is enqueued to activeQ because the Pending plugins has a hint fn and it returns Queue",
    ),
    pytest.param(
        InFlightCase(
            {ASSIGNED_POD_ADD: [(FOO2, hint_skip), (FOO1, hint_queue)]},
            (POD1,),
            (Pop(POD1), Event(ASSIGNED_POD_ADD), Enqueue(POD1, (FOO1, FOO2))),
            want_backoff=("targetpod",),
        ),
        id="pod is enqueued to backoffQ because the failed plugin has a hint fn and it returns Queue",
    ),
    pytest.param(
        InFlightCase(
            APA_PENDING_MAP,
            (POD1, POD2),
            (
                Pop(POD1),
                Event(NODE_ADD),
                Pop(POD2),
                Event(ASSIGNED_POD_ADD),
                Enqueue(POD1),
                Enqueue(POD2, (FOO2, FOO3), (FOO1,)),
            ),
            want_active=("targetpod2",),
            want_backoff=("targetpod",),
        ),
        id="pod is enqueued to activeQ because the pending plugin has a hint fn and it returns Queue for a "
        "concurrent event that was received while some other pod was in flight",
    ),
    pytest.param(
        InFlightCase(
            _queue_all(PV_ADD),
            (POD1,),
            (
                Pop(POD1),
                Enqueue(POD1, (FOO2,), (FOO1,)),
                Event(PV_ADD),
                Pop(POD1),
                ExpectPoppedPlugins(POD1, (FOO2,), (FOO1,)),
                Requeue(POD1),
            ),
        ),
        id="popped pod preserves UnschedulablePlugins and PendingPlugins",
    ),
    pytest.param(
        InFlightCase(
            _queue_all(PV_ADD, NODE_ADD, PVC_ADD, CSI_NODE_UPDATE),
            (POD1, POD2),
            (
                Event(PVC_ADD),
                Pop(POD1),
                Event(PV_ADD),
                Pop(POD2),
                DuplicateInActiveQ(POD1),
                Create(POD3),
                Pop(POD3),
                ExpectActiveQEmpty(),
                Event(NODE_ADD),
                Enqueue(POD1),
                Event(CSI_NODE_UPDATE),
                Enqueue(POD2),
                Enqueue(POD3),
            ),
            want_backoff=("targetpod", "targetpod2", "targetpod3"),
        ),
        id="Pop is made twice for the same Pod, but the cleanup still happen correctly",
    ),
]


@pytest.mark.parametrize("case", IN_FLIGHT_CASES)
def test_in_flight_pods(case: InFlightCase) -> None:
    registry = CollectorRegistry()
    q, clock = make_queue(case.hint_map, FOO_PLUGINS, metrics=Metrics(registry))
    for p in case.initial:
        q.add(p)
        clock.step(1.0)  # distinct timestamps, so equal-priority pods pop in the order added
    run_actions(q, case.actions)
    assert_in_flight(q, TARGET_PODS, case.want_in_flight)
    assert inflight_gauge(registry) == gauge_of(case.want_in_flight)
    got = placement(q, TARGET_PODS)
    if case.want_active is not None:
        assert got.get("active", []) == sorted(case.want_active)
    if case.want_backoff is not None:
        assert got.get("backoff", []) == sorted(case.want_backoff)
    for name in case.want_unschedulable:
        assert name in got.get("unschedulable", []), got


# --- Test_isPodWorthRequeuing ----------------------------------------------------------------------

WORTH_POD = pod("pod1", namespace="ns1", uid="1")


@dataclass(frozen=True)
class WorthCase:
    rejected: tuple[str, ...]
    event: ClusterEvent
    hint_map: Callable[[HintCalls], HintMap]
    want: Strategy
    calls: tuple[int, int]
    """Hint calls ksched makes, at least and at most (upstream's ``expectedExecutionCount`` is exact)."""
    pending: tuple[str, ...] = ()
    target: str | None = None
    """The pod a wildcard event is for (upstream: the event's new object is that pod)."""


def _no_hints(h: HintCalls) -> HintMap:
    return {}


WORTH_CASES = [
    pytest.param(
        WorthCase((FOO1,), NODE_ADD, lambda h: {ASSIGNED_POD_ADD: [(FOO1, h.queue)]}, Strategy.SKIP, (0, 0)),
        id="return Queue when no queueing hint function is registered for the event",
    ),
    pytest.param(
        WorthCase((FOO1,), NODE_ADD, lambda h: {NODE_ADD: [(FOO1, h.error)]}, Strategy.AFTER_BACKOFF, (1, 1)),
        id="Treat the event as Queue when QueueHintFn returns error",
    ),
    pytest.param(
        WorthCase((FOO1,), TIMEOUT, _no_hints, Strategy.AFTER_BACKOFF, (0, 0)),
        id="return Queue when the event is wildcard",
    ),
    pytest.param(
        WorthCase((FOO1,), ev.EVENT_FORCE_ACTIVATE, _no_hints, Strategy.AFTER_BACKOFF, (0, 0), target="1"),
        id="return Queue when the event is wildcard and the wildcard targets the pod to be requeued "
        "right now",
    ),
    pytest.param(
        WorthCase((FOO1,), ev.EVENT_FORCE_ACTIVATE, _no_hints, Strategy.SKIP, (0, 0), target="2"),
        id="return Skip when the event is wildcard, but the wildcard targets a different pod",
    ),
    # Upstream runs fooPlugin1 (Queue: after backoff, but a Pending plugin may still say more), then
    # fooPlugin2: 2 calls. ksched asks the Pending plugins first, so fooPlugin2 answers alone.
    pytest.param(
        WorthCase(
            (FOO1, FOO3),
            NODE_ADD,
            lambda h: {NODE_ADD: [(FOO1, h.queue), (FOO2, h.queue), (FOO3, h.queue), (FOO4, h.error)]},
            Strategy.IMMEDIATELY,
            (1, 1),
            pending=(FOO2,),
        ),
        id="interprets Queue from the Pending plugin as queueImmediately",
    ),
    # Upstream: fooPlugin1 skips, fooPlugin2 queues: 2 calls. ksched walks the rejecting plugins as a
    # set and stops at the first Queue: 1 call when it meets fooPlugin2 first.
    pytest.param(
        WorthCase(
            (FOO1, FOO2),
            NODE_ADD,
            lambda h: {NODE_ADD: [(FOO1, h.skip), (FOO2, h.queue)]},
            Strategy.AFTER_BACKOFF,
            (1, 2),
        ),
        id="interprets Queue from the Unschedulable plugin as queueAfterBackoff",
    ),
    pytest.param(
        WorthCase(
            (FOO1, FOO2),
            NODE_ADD,
            lambda h: {NODE_ADD: [(FOO1, h.skip), (FOO2, h.skip), (FOO3, h.queue)]},
            Strategy.SKIP,
            (2, 2),
        ),
        id="Queueing hint function that isn't from the plugin in "
        "UnschedulablePlugins/PendingPlugins is ignored",
    ),
    pytest.param(
        WorthCase(
            (FOO1, FOO2),
            ev.NODE_LABEL_CHANGE,
            lambda h: {
                ev.NODE_LABEL_CHANGE: [(FOO1, h.queue), (FOO2, h.queue)],
                ev.NODE_UPDATE: [(FOO1, h.queue)],
                NODE_ADD: [(FOO1, h.queue)],
            },
            Strategy.AFTER_BACKOFF,
            (1, 1),
        ),
        id="If event is specific Node update event, queueing hint function for "
        "NodeUpdate/UpdateNodeLabel is also executed",
    ),
    pytest.param(
        WorthCase(
            (FOO1,),
            NODE_ADD,
            lambda h: {ClusterEvent(ev.WILDCARD, A.ADD): [(FOO1, h.queue)]},
            Strategy.AFTER_BACKOFF,
            (1, 1),
        ),
        id="If event with '*' Resource, queueing hint function for specified Resource is also executed",
    ),
    pytest.param(
        WorthCase(
            (FOO1,),
            ClusterEvent(ev.NODE, A.UPDATE_NODE_LABEL | A.UPDATE_NODE_TAINT),
            lambda h: {ev.WILDCARD_EVENT: [(FOO1, h.queue)]},
            Strategy.AFTER_BACKOFF,
            (1, 1),
        ),
        id="If event is a wildcard one, queueing hint function for all kinds of events is executed",
    ),
    # Not an upstream case: isPodWorthRequeuing's first branch (a pod that failed with an error).
    pytest.param(
        WorthCase((), NODE_ADD, lambda h: {NODE_ADD: [(FOO1, h.skip)]}, Strategy.AFTER_BACKOFF, (0, 0)),
        id="ksched: a pod with no rejector plugins is worth requeuing after backoff",
    ),
]


@pytest.mark.parametrize("case", WORTH_CASES)
def test_is_pod_worth_requeuing(case: WorthCase) -> None:
    calls = HintCalls()
    q, _ = make_queue(case.hint_map(calls), FOO_PLUGINS)
    pinfo = QueuedPodInfo(pod=WORTH_POD, timestamp=0.0)
    pinfo.unschedulable_plugins = set(case.rejected)
    pinfo.pending_plugins = set(case.pending)
    assert q._worth_requeuing(pinfo, case.event, case.target) is case.want
    low, high = case.calls
    assert low <= calls.count <= high


QUEUE_OF_STRATEGY = {
    Strategy.SKIP: "unschedulable",
    Strategy.AFTER_BACKOFF: "backoff",
    Strategy.IMMEDIATELY: "active",
}


def _through_the_queue(case: object) -> bool:
    """A case a parked pod can meet: it was rejected, and the event is for every pod."""
    return isinstance(case, WorthCase) and bool(case.rejected) and case.target is None


@pytest.mark.parametrize("case", [c for c in WORTH_CASES if _through_the_queue(c.values[0])])
def test_requeue_pod_with_queueing_strategy(case: WorthCase) -> None:
    """The same cases through the queue: a parked pod meets the event right after its failed attempt,
    so "after backoff" lands in backoffQ (upstream ``requeuePodWithQueueingStrategy``)."""
    q, _ = make_queue(case.hint_map(HintCalls()), FOO_PLUGINS)
    q.add(WORTH_POD)
    assert fail(q, pop_expecting(q, WORTH_POD), case.rejected, case.pending) == "unschedulable"
    q.move_all_to_active_or_backoff(case.event)
    assert queue_of(q, WORTH_POD.uid) == QUEUE_OF_STRATEGY[case.want]


# --- TestPriorityQueue_MoveAllToActiveOrBackoffQueueWithQueueingHint -------------------------------

HINTED_POD = pod("pod1", namespace="ns1", uid="1", labels={"foo": "bar"})


@dataclass(frozen=True)
class HintedMoveCase:
    hint: Callable[[HintCalls], HintFn]
    want: str
    rejected: tuple[str, ...] = ()
    pending: tuple[str, ...] = ()
    gating: str = ""
    """The plugin the pod is gated by (upstream's ``setQueuedPodInfoGated``); it also rejected it."""
    wait_s: float = 0.0
    hint_runs: bool = True


MOVE_WITH_HINT_CASES = [
    pytest.param(
        HintedMoveCase(lambda h: h.queue, "active", pending=("foo",)), id="Queue queues pod to activeQ"
    ),
    pytest.param(
        HintedMoveCase(lambda h: h.queue, "backoff", rejected=("foo",)),
        id="Queue queues pod to backoffQ if Pod is backing off",
    ),
    pytest.param(
        HintedMoveCase(lambda h: h.queue, "active", rejected=("foo",), wait_s=2.0),
        id="Queue queues pod to activeQ if Pod is not backing off",
    ),
    pytest.param(
        HintedMoveCase(lambda h: h.skip, "unschedulable", rejected=("foo",)),
        id="Skip queues pod to unschedulablePods",
    ),
    pytest.param(
        HintedMoveCase(lambda h: h.error, "unschedulable", gating=SCHEDULING_GATES, hint_runs=False),
        id="QueueHintFunction is not called when Pod is gated by the plugin that isn't interested "
        "in the event",
    ),
    pytest.param(
        HintedMoveCase(lambda h: h.queue, "backoff", gating="foo"),
        id="QueueHintFunction is called when Pod is gated by the plugin that is interested in the event",
    ),
]


@pytest.mark.parametrize("case", MOVE_WITH_HINT_CASES)
def test_move_all_with_queueing_hint(case: HintedMoveCase) -> None:
    calls = HintCalls()
    hint_map: HintMap = {
        NODE_ADD: [("foo", case.hint(calls))],
        ev.UNSCHEDULED_POD_UPDATE: [(SCHEDULING_GATES, hint_queue)],
    }
    q, clock = make_queue(hint_map, pre_enqueue=[SchedulingGates(), AllowLabel("foo", "foo")])
    q.add(HINTED_POD)
    pinfo = pop_expecting(q, HINTED_POD)
    pinfo.gating_plugin = case.gating
    rejected = (case.gating,) if case.gating else case.rejected
    assert fail(q, pinfo, rejected, case.pending) == "unschedulable"
    clock.step(case.wait_s)
    q.move_all_to_active_or_backoff(NODE_ADD)
    assert queue_of(q, HINTED_POD.uid) == case.want
    assert (calls.count > 0) is case.hint_runs


# --- TestPriorityQueue_MoveAllToActiveOrBackoffQueue ------------------------------------------------

UP = pod("up", namespace="ns1", uid="upns1", priority=0)
HPP = pod("hpp", namespace="ns1", uid="hppns1", priority=1000)
MPP = pod("mpp", namespace="ns2", uid="mppns2", priority=500)
HPP1 = pod("hpp1", namespace="ns1", uid="hpp1ns1", priority=1000)
HPP2 = pod("hpp2", namespace="ns1", uid="hpp2ns1", priority=1000)
SCENARIO_PODS = (UP, HPP, MPP, HPP1, HPP2)


def _in_flight(q: SchedulingQueue, *pods: Pod) -> None:
    """Upstream's ``expectInFlightPods``: exactly ``pods`` are in flight."""
    assert_pods_in_flight(q, SCENARIO_PODS, pods)


def _fail_fresh(q: SchedulingQueue, p: Pod, *rejected: str) -> str:
    """Add, pop and fail ``p``; returns where it went."""
    q.add(p)
    pinfo = pop_expecting(q, p)
    _in_flight(q, p)
    return fail(q, pinfo, rejected)


def test_move_all_to_active_or_backoff_queue() -> None:
    q, clock = make_queue({NODE_ADD: [("fooPlugin", hint_queue)]}, ("barPlugin",))
    q.add(UP)
    up = pop_expecting(q, UP)
    q.add(HPP)
    hpp = pop_expecting(q, HPP)
    _in_flight(q, UP, HPP)
    assert fail(q, up, ["fooPlugin"]) == fail(q, hpp, ["fooPlugin"]) == "unschedulable"
    _in_flight(q)
    assert _fail_fresh(q, HPP1) == "backoff"  # no rejecting plugin: an error
    assert _fail_fresh(q, HPP2, "barPlugin") == "unschedulable"
    q.move_all_to_active_or_backoff(NODE_ADD)  # fooPlugin's hint moves up and hpp; still backing off
    q.add(MPP)
    assert q.pending()["active"] == 1
    pop_expecting(q, MPP)
    _in_flight(q, MPP)
    assert q.pending()["backoff"] == 3, "hpp2 stays"
    clock.step(10.0)
    for p in (UP, HPP, HPP1):  # upstream pops them out of backoffQ (popAllBackoffCompleted) and drops them
        q.delete(p.uid)
    _in_flight(q, MPP)
    records: dict[str, QueuedPodInfo] = {}
    for p in (UP, HPP, HPP1):
        q.add(p)
        records[p.uid] = pop_expecting(q, p)
    _in_flight(q, MPP, UP, HPP, HPP1)
    assert fail(q, records[UP.uid], ["fooPlugin"]) == "unschedulable"
    _in_flight(q, MPP, HPP, HPP1)
    assert fail(q, records[HPP.uid], ["fooPlugin"]) == "unschedulable"
    assert fail(q, records[HPP1.uid]) == "backoff"
    _in_flight(q, MPP)
    # Upstream adds mpp again while it is in flight and finds a second copy in activeQ (1, then 4 at
    # the end). ksched's add of a pod it tracks is an update (SchedulingQueue.add): mpp stays in flight
    # only, so activeQ holds one pod fewer.
    q.add(MPP)
    assert placement(q, SCENARIO_PODS) == {
        "unschedulable": ["hpp", "hpp2", "up"],
        "backoff": ["hpp1"],
        "in-flight": ["mpp"],
    }
    clock.step(10.0)
    q.flush()  # hpp1's backoff is over
    q.move_all_to_active_or_backoff(NODE_ADD)
    assert placement(q, SCENARIO_PODS) == {
        "active": ["hpp", "hpp1", "up"],
        "unschedulable": ["hpp2"],
        "in-flight": ["mpp"],
    }
    _in_flight(q, MPP)


# --- TestPriorityQueue_AddUnschedulableIfNotPresent_Backoff ----------------------------------------


def test_add_unschedulable_if_not_present_backoff() -> None:
    q, _ = make_queue({}, ("plugin",))
    pods = [pod(f"pod{i}", namespace=f"ns{i}", uid=f"upns{i}", priority=i) for i in range(10)]
    for p in pods:
        q.add(p)
    popped = [pop_expecting(q, pods[i]) for i in range(9, 0, -1)]  # all but the first
    q.move_all_to_active_or_backoff(TIMEOUT)  # while they are in flight
    pop_expecting(q, pods[0])
    for pinfo in popped:  # the wildcard event during their attempt sends each to backoffQ
        assert fail(q, pinfo, ["plugin"]) == "backoff"


# --- TestPriorityQueue_Activate ([QHint] cases) -----------------------------------------------------

NOMINATED = pod_status(nominated_node_name="node1")
HIGH_NOMINATED = pod("hpp", namespace="ns1", uid="hppns1", priority=1000, status=NOMINATED)
MED_NOMINATED = pod("mpp", namespace="ns2", uid="mppns2", priority=500, status=NOMINATED)


@pytest.mark.parametrize(
    ("in_flight", "want"),
    [
        pytest.param(
            HIGH_NOMINATED,
            (HIGH_NOMINATED, ev.EVENT_FORCE_ACTIVATE),
            id="[QHint] pod not in unschedulablePods/backoffQ but in-flight",
        ),
        pytest.param(
            MED_NOMINATED,
            (MED_NOMINATED,),
            id="[QHint] pod not in unschedulablePods/backoffQ and not in-flight",
        ),
    ],
)
def test_activate_in_flight(in_flight: Pod, want: tuple[FlightEntry, ...]) -> None:
    q, _ = make_queue({})
    q.add(in_flight)
    pop_expecting(q, in_flight)
    q.activate([HIGH_NOMINATED])
    assert q.pending()["active"] == 0
    assert_in_flight(q, (HIGH_NOMINATED, MED_NOMINATED), want)
    # Upstream records the activated pod as the event's new object; ksched names it as the target.
    targets = [item.target for item in q._in_flight.events_since_start(in_flight.uid)]
    assert targets == [HIGH_NOMINATED.uid] * (len(want) - 1)


# --- TestPop ("with-hints"), TestPriorityQueue_Update, TestPriorityQueue_UpdateWhenInflight --------


def test_pop_with_hints() -> None:
    q, _ = make_queue(_queue_all(PV_ADD))
    q.add(POD1)
    assert fail(q, pop_expecting(q, POD1), pending=[FOO1]) == "unschedulable"
    q.move_all_to_active_or_backoff(PV_ADD)
    assert pop_expecting(q, POD1).pending_plugins == {FOO1}


UPDATE_HINTS: HintMap = {ev.UNSCHEDULED_POD_UPDATE: [("queuePlugin", hint_queue), ("skipPlugin", hint_skip)]}


@pytest.mark.parametrize(
    ("rejected", "wait_s", "want"),
    [
        pytest.param(
            "queuePlugin",
            0.0,
            "backoff",
            id="when updating a pod in unschedulablePods, if its backoff timer has not yet "
            "expired, it moves to backoffQ, with queuehint(true)",
        ),
        pytest.param(
            "queuePlugin",
            10.0,
            "active",
            id="when updating a pod in unschedulablePods, if its backoff timer has expired, it "
            "moves to activeQ, with queuehint(true)",
        ),
        pytest.param(
            "skipPlugin",
            0.0,
            "unschedulable",
            id="when updating a pod in unschedulablePods, if the scheduling hint returns QueueSkip, "
            "it remains in unschedulablePods, with queuehint(true)",
        ),
        pytest.param(
            "",
            0.0,
            "in-flight",
            id="when updating a pod which is in flightPods, the pod will not be added to any queue, "
            "with queuehint(true)",
        ),
    ],
)
def test_update_with_hints(rejected: str, wait_s: float, want: str) -> None:
    q, clock = make_queue(UPDATE_HINTS)
    q.add(MPP)
    pinfo = pop_expecting(q, MPP)
    if rejected:
        assert fail(q, pinfo, [rejected]) == "unschedulable"
    clock.step(wait_s)
    # Upstream changes an annotation; the record has none, so a new resourceVersion stands in: a
    # change of no scheduling property, i.e. the generic UnschedulablePodUpdate event.
    updated = dataclasses.replace(MPP, resource_version="2")
    q.update(MPP, updated)
    assert queue_of(q, MPP.uid) == want
    record = q.get(MPP.uid) or pinfo
    assert record.pod is updated


def test_update_when_in_flight() -> None:
    q, _ = make_queue({ev.UNSCHEDULED_POD_UPDATE: [("fakePlugin", hint_queue)]})
    test_pod = pod("test-pod", namespace="test-ns", uid="test-uid")
    q.add(test_pod)
    pinfo = pop_expecting(q, test_pod)
    toleration = {"key": "foo", "effect": "NoSchedule"}
    updated = pod("test-pod", namespace="test-ns", uid="test-uid", tolerations=[toleration])
    q.update(test_pod, updated)  # the update while in flight may help, so the rejected pod is requeued
    assert fail(q, pinfo, ["fakePlugin"]) == "backoff"
    record = q.get(test_pod.uid)
    assert record is not None and record.pod is updated


def test_own_update_in_flight_concerns_that_pod_only() -> None:
    """Not an upstream case: it pins a deliberate deviation. Upstream records an in-flight pod's own
    update in the shared in-flight list, so another pod in flight, rejected by a plugin whose hint
    queues on any unscheduled pod's update (as ``fakePlugin`` here), comes back to backoffQ too.
    ksched targets the update at the updated pod: the other pod is parked."""
    q, clock = make_queue({ev.UNSCHEDULED_POD_UPDATE: [("fakePlugin", hint_queue)]})
    for p in (POD1, POD2):
        q.add(p)
        clock.step(1.0)
    first, second = pop_expecting(q, POD1), pop_expecting(q, POD2)
    q.update(POD2, dataclasses.replace(POD2, labels={"a": "b"}))
    assert fail(q, first, ["fakePlugin"]) == "unschedulable"  # upstream: backoff
    assert fail(q, second, ["fakePlugin"]) == "backoff"


# --- TestMoveAllToActiveOrBackoffQueue_PreEnqueueChecks --------------------------------------------

CHECK_PODS = [pod(f"p{i}", priority=i) for i in range(5)]


def _never_called(p: Pod) -> bool:
    raise AssertionError("preCheck shouldn't be called")


@pytest.mark.parametrize(
    ("pre_check", "event", "want"),
    [
        pytest.param(None, TIMEOUT, ["p0", "p1", "p2", "p3", "p4"], id="nil PreEnqueueCheck"),
        pytest.param(
            lambda p: p.priority >= 2,
            TIMEOUT,
            ["p2", "p3", "p4"],
            id="move Pods with priority greater than 2",
        ),
        pytest.param(
            lambda p: p.priority % 2 == 0 and p.priority >= 2,
            TIMEOUT,
            ["p2", "p4"],
            id="move Pods with even priority and greater than 2",
        ),
        pytest.param(
            lambda p: p.priority % 2 == 0 and p.priority < 0,
            TIMEOUT,
            [],
            id="move Pods with even and negative priority",
        ),
        pytest.param(
            _never_called,
            PV_ADD,
            [],
            id="preCheck isn't called if the event is not interested by any plugins",
        ),
    ],
)
def test_move_all_pre_enqueue_checks(
    pre_check: Callable[[Pod], bool] | None, event: ClusterEvent, want: list[str]
) -> None:
    q, _ = make_queue({}, ("plugin",))
    for p in CHECK_PODS:
        q.add(p)
        assert fail(q, pop_expecting(q, p), ["plugin"]) == "unschedulable"
    q.move_all_to_active_or_backoff(event, pre_check)
    assert placement(q, CHECK_PODS).get("backoff", []) == want


# --- metrics -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("registered", "incoming", "hint", "label"),
    [
        pytest.param(NODE_ADD, NODE_ADD, "queue", HINT_QUEUE, id="Queue"),
        pytest.param(NODE_ADD, NODE_ADD, "skip", HINT_QUEUE_SKIP, id="QueueSkip"),
        pytest.param(NODE_ADD, NODE_ADD, "error", HINT_ERROR, id="an error is labelled Error"),
        pytest.param(
            ev.NODE_UPDATE,
            ev.NODE_LABEL_CHANGE,
            "queue",
            HINT_QUEUE,
            id="the event label is the incoming event's",
        ),
    ],
)
def test_queueing_hint_metric(
    registered: ClusterEvent, incoming: ClusterEvent, hint: str, label: str
) -> None:
    registry = CollectorRegistry()
    calls = HintCalls()
    q, _ = make_queue({registered: [(FOO1, getattr(calls, hint))]}, metrics=Metrics(registry))
    q.add(POD1)
    assert fail(q, pop_expecting(q, POD1), [FOO1]) == "unschedulable"
    q.move_all_to_active_or_backoff(incoming)
    assert calls.count == 1
    for other in (HINT_QUEUE, HINT_QUEUE_SKIP, HINT_ERROR):
        want = 1.0 if other == label else 0.0
        assert hint_count(registry, FOO1, incoming.label, other) == want


def test_queueing_hint_metric_for_an_in_flight_event() -> None:
    """A hint asked when a pod comes back from its attempt is labelled with the in-flight event,
    not with ScheduleAttemptFailure."""
    registry = CollectorRegistry()
    q, _ = make_queue({ASSIGNED_POD_ADD: [(FOO1, hint_skip)]}, metrics=Metrics(registry))
    q.add(POD1)
    pinfo = pop_expecting(q, POD1)
    q.move_all_to_active_or_backoff(ASSIGNED_POD_ADD)
    assert fail(q, pinfo, [FOO1]) == "unschedulable"
    assert hint_count(registry, FOO1, ASSIGNED_POD_ADD.label, HINT_QUEUE_SKIP) == 1.0


def test_inflight_events_gauge() -> None:
    """``scheduler_inflight_events``: each popped pod under PodPopped, each kept event under its
    label, a pod's own update events included; all back to zero once no pod is in flight."""
    registry = CollectorRegistry()
    q, clock = make_queue(_queue_all(NODE_ADD), metrics=Metrics(registry))
    for p in (POD1, POD2):
        q.add(p)
        clock.step(1.0)
    p1 = pop_expecting(q, POD1)
    q.move_all_to_active_or_backoff(NODE_ADD)
    p2 = pop_expecting(q, POD2)
    q.update(POD2, dataclasses.replace(POD2, labels={"a": "b"}))
    assert inflight_gauge(registry) == {
        "PodPopped": 2.0,
        "NodeAdd": 1.0,
        "UnschedulablePodUpdatePodLabel": 1.0,
    }
    q.done(p1.uid)  # NodeAdd came before pod2's pop: nobody needs it any more
    assert inflight_gauge(registry) == {"PodPopped": 1.0, "UnschedulablePodUpdatePodLabel": 1.0}
    q.done(p2.uid)
    assert inflight_gauge(registry) == {}
