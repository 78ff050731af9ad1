"""The scheduling queue, with a fake clock.

Ported as data from upstream ``pkg/scheduler/backend/queue/scheduling_queue_test.go``:
TestPriorityQueue_Add, _Pop, _Update, _Delete, _AddUnschedulableIfNotPresent,
_AddUnschedulableIfNotPresent_Backoff, _MoveAllToActiveOrBackoffQueue, TestBackOffFlow,
TestPodTimestamp, TestHighPriorityFlushUnschedulablePodsLeftover, TestPriorityQueue_Activate,
TestPriorityQueue_AddWithPreEnqueue / scheduling gates, TestPopFromBackoffQ-style cases.
Hint functions are approximated by event registrations (see ``events_registry``), so cases that
depend on a specific hint's logic are reduced to their registration.
"""

from __future__ import annotations

import dataclasses
import math

import pytest
from prometheus_client import CollectorRegistry

from ksched.config import names
from ksched.framework.plugins.schedulinggates import SchedulingGates
from ksched.metrics import Metrics
from ksched.model.pod import Pod
from ksched.scheduler import events_registry as ev
from ksched.scheduler.queue import SchedulingQueue
from ksched.scheduler.queue.types import QueuedPodInfo, QueueError, QueueSettings
from tests.builders import pod

FIT = names.NODE_RESOURCES_FIT
AFFINITY = names.NODE_AFFINITY
GATES = names.SCHEDULING_GATES


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def step(self, d: float) -> None:
        self.now += d


def make_queue(clock: FakeClock | None = None, **kw) -> tuple[SchedulingQueue, FakeClock]:
    clock = clock or FakeClock()
    kw.setdefault("pre_enqueue", [SchedulingGates()])
    return SchedulingQueue(clock=clock, **kw), clock


def popped_names(q: SchedulingQueue) -> list[str]:
    out = []
    while (p := q.pop()) is not None:
        out.append(p.pod.name)
    return out


def fail(q: SchedulingQueue, *plugins: str, pending: tuple[str, ...] = ()) -> QueuedPodInfo:
    """Pop the head and report it rejected by ``plugins`` (error when none)."""
    p = q.pop()
    assert p is not None
    p.unschedulable_plugins.update(plugins)
    p.pending_plugins.update(pending)
    return p


HIGH = dict(name="high", priority=1000)
MED = dict(name="med", priority=100)
LOW = dict(name="low", priority=10)


def nominated(p: Pod, node: str) -> Pod:
    return dataclasses.replace(p, nominated_node_name=node)


# --- TestPriorityQueue_Add / _Pop / TestPodTimestamp -------------------------------------------------

def test_add_pops_by_priority_and_nominates() -> None:
    q, _ = make_queue()
    q.add(nominated(pod(**MED), "node1"))
    q.add(nominated(pod(**LOW), "node1"))
    q.add(pod(**HIGH))
    assert [p.name for p in q.nominator.pods_for_node("node1")] == ["med", "low"]
    assert popped_names(q) == ["high", "med", "low"]


def test_pop_counts_attempts_and_marks_in_flight() -> None:
    q, clock = make_queue()
    q.add(pod(name="a"))
    added_at = clock.now
    clock.step(3)
    p = q.pop()
    assert p is not None and p.attempts == 1 and p.initial_attempt_timestamp == added_at
    assert q.in_flight(p.uid) and p.uid not in q and len(q) == 0
    assert q.scheduling_cycle == 1
    assert q.pop() is None
    q.done(p.uid)
    assert not q.in_flight(p.uid)


@pytest.mark.parametrize(
    "order",
    [pytest.param((0, 1), id="earlier added first"), pytest.param((1, 0), id="later added first")],
)
def test_pod_timestamp_orders_equal_priority(order: tuple[int, int]) -> None:
    # TestPodTimestamp: same priority, the earlier timestamp pops first whatever the add order.
    q, clock = make_queue()
    pods = [pod(name="pod1"), pod(name="pod2")]
    infos = []
    for i in range(2):
        q.add(pods[i])
        infos.append(q.pop())
        clock.step(1)
    for i in order:
        infos[i].timestamp = 1000.0 + i  # explicit timestamps as upstream's makeQueuedPodInfos
        q._unsched[infos[i].uid] = infos[i]
        q.done(infos[i].uid)
    q.activate([p.uid for p in pods])
    assert popped_names(q) == ["pod1", "pod2"]


# --- TestPriorityQueue_Update -------------------------------------------------------------------------

def test_update_not_queued_adds_to_active() -> None:
    q, _ = make_queue()
    q.update(None, pod(**HIGH))
    assert q.pending()["active"] == 1


def test_update_in_active_updates_in_place_and_reorders() -> None:
    q, _ = make_queue()
    q.add(pod(name="a", priority=1))
    q.add(pod(name="b", priority=2))
    q.update(pod(name="a", priority=1), pod(name="a", priority=3, labels={"x": "y"}))
    first = q.pop()
    assert first is not None and first.pod.name == "a" and first.pod.labels == {"x": "y"}
    assert len(q) == 1


def test_update_in_backoff_updates_in_place() -> None:
    q, _ = make_queue()
    q.add(pod(name="a"))
    p = fail(q)  # error -> backoff
    assert q.add_unschedulable_if_not_present(p, q.scheduling_cycle) == "backoff"
    q.update(None, pod(name="a", labels={"k": "v"}))
    assert q.pending()["backoff"] == 1 and q.get(p.uid).pod.labels == {"k": "v"}


@pytest.mark.parametrize(
    ("plugins", "old", "new", "want"),
    [
        pytest.param((FIT,), {"requests": {"cpu": "2"}}, {"requests": {"cpu": "1"}}, "backoff",
                     id="scale down helps a pod NodeResourcesFit rejected"),
        pytest.param((FIT,), {}, {"labels": {"a": "b"}}, "unschedulable",
                     id="label change does not help NodeResourcesFit"),
        pytest.param((names.TAINT_TOLERATION,), {}, {"tolerations": [{"key": "k", "operator": "Exists"}]},
                     "backoff", id="new toleration helps TaintToleration"),
        pytest.param(("OutOfTree",), {}, {"labels": {"a": "b"}}, "backoff",
                     id="plugin without registrations takes every event"),
    ],
)
def test_update_unschedulable_pod(plugins, old, new, want) -> None:
    q, _ = make_queue()
    q.add(pod(name="p", **old))
    p = fail(q, *plugins)
    assert q.add_unschedulable_if_not_present(p, q.scheduling_cycle) == "unschedulable"
    q.update(pod(name="p", **old), pod(name="p", **new))
    counts = q.pending()
    assert counts[want] == 1, counts


def test_update_unschedulable_pod_after_backoff_goes_active() -> None:
    q, clock = make_queue()
    q.add(pod(name="p", requests={"cpu": "2"}))
    p = fail(q, FIT)
    q.add_unschedulable_if_not_present(p, q.scheduling_cycle)
    clock.step(5)
    q.update(None, pod(name="p", requests={"cpu": "1"}))
    assert q.pending()["active"] == 1


# --- TestPriorityQueue_Delete --------------------------------------------------------------------------

def test_delete_from_every_queue() -> None:
    q, _ = make_queue()
    q.add(pod(**HIGH))
    q.add(nominated(pod(**MED), "node1"))
    q.add(pod(name="gated", scheduling_gates=["g"]))
    q.delete(pod(**HIGH).uid)
    assert popped_names(q) == ["med"]
    q.delete(pod(**MED).uid)
    assert q.nominator.pods_for_node("node1") == []
    q.delete(pod(name="gated").uid)
    assert len(q) == 0 and q.pending()["gated"] == 0
    q.delete("unknown")  # no-op


# --- TestPriorityQueue_AddUnschedulableIfNotPresent ------------------------------------------------

def test_add_unschedulable_rejects_queued_pod() -> None:
    q, _ = make_queue()
    q.add(pod(name="a"))
    info = QueuedPodInfo(pod=pod(name="a"), timestamp=0.0)
    with pytest.raises(QueueError, match="already queued"):
        q.add_unschedulable_if_not_present(info, 0)


@pytest.mark.parametrize(
    ("plugins", "pending", "events", "want"),
    [
        pytest.param((FIT,), (), [], "unschedulable", id="rejected, nothing happened"),
        pytest.param((FIT,), (), [ev.NODE_ADD], "backoff", id="rejected, registered event in flight"),
        pytest.param((AFFINITY,), (), [ev.NODE_ALLOCATABLE_CHANGE], "unschedulable",
                     id="rejected, an event the plugin did not register"),
        pytest.param((), (), [], "backoff", id="error goes to the error backoff queue"),
        pytest.param((), (FIT,), [ev.NODE_ADD], "active", id="pending plugin's event queues immediately"),
        pytest.param((FIT,), (), [ev.EVENT_UNSCHEDULABLE_TIMEOUT], "backoff", id="wildcard event in flight"),
    ],
)
def test_add_unschedulable_with_in_flight_events(plugins, pending, events, want) -> None:
    q, _ = make_queue()
    q.add(pod(name="a"))
    p = fail(q, *plugins, pending=pending)
    for e in events:
        q.move_all_to_active_or_backoff(e)
    assert q.add_unschedulable_if_not_present(p, q.scheduling_cycle) == want
    assert q.pending()[want] == 1 and not q.in_flight(p.uid)


def test_add_unschedulable_events_of_other_attempts_do_not_count() -> None:
    q, _ = make_queue()
    q.add(pod(name="a"))
    q.add(pod(name="b"))
    a = fail(q, FIT)
    q.move_all_to_active_or_backoff(ev.NODE_ADD)  # only a is in flight
    b = fail(q, FIT)
    assert q.add_unschedulable_if_not_present(b) == "unschedulable"
    assert q.add_unschedulable_if_not_present(a) == "backoff"


def test_add_unschedulable_not_in_flight_uses_move_request_cycle() -> None:
    # Upstream's pre-hint rule for a pod the queue does not track: a move request at or after the
    # pod's cycle sends it to backoffQ.
    q2, clock2 = make_queue()
    info = QueuedPodInfo(pod=pod(name="b"), timestamp=clock2(), attempts=1, unschedulable_plugins={FIT})
    assert q2.add_unschedulable_if_not_present(info, 5) == "unschedulable"
    q2.move_all_to_active_or_backoff(ev.NODE_ADD)  # moves b; sets moveRequestCycle = 0
    info2 = QueuedPodInfo(pod=pod(name="c"), timestamp=clock2(), attempts=1, unschedulable_plugins={FIT})
    assert q2.add_unschedulable_if_not_present(info2, 0) == "backoff"


# --- TestPriorityQueue_AddUnschedulableIfNotPresent_Backoff ----------------------------------------

def test_add_unschedulable_backoff_ordering() -> None:
    q, clock = make_queue()
    for i in range(10):
        q.add(pod(name=f"test-pod-{i}", priority=10 - i))
    infos = []
    for _ in range(10):
        infos.append(fail(q, FIT))
    q.move_all_to_active_or_backoff(ev.NODE_ADD)  # a move request while all are in flight
    for i, p in enumerate(infos):
        clock.step(0.5 if i % 2 else 0.0)
        assert q.add_unschedulable_if_not_present(p) == "backoff"
    # Expiry first (whole-second windows), activeQ order within a window.
    order = []
    while (p := q._backoff.pop()) is not None:
        order.append((p.backoff_expiration, -p.pod.priority))
    assert order == sorted(order)


# --- TestPriorityQueue_MoveAllToActiveOrBackoffQueue ------------------------------------------------

@pytest.mark.parametrize(
    ("plugins", "event", "wait", "want"),
    [
        pytest.param((FIT,), ev.NODE_ADD, 0, "backoff", id="registered event, still backing off"),
        pytest.param((FIT,), ev.NODE_ADD, 2, "active", id="registered event, backoff over"),
        pytest.param((FIT,), ev.NODE_LABEL_CHANGE, 2, "unschedulable", id="event nobody registered"),
        pytest.param((AFFINITY,), ev.NODE_ALLOCATABLE_CHANGE, 2, "unschedulable",
                     id="event the rejecting plugin did not register"),
        pytest.param((FIT, AFFINITY), ev.NODE_LABEL_CHANGE, 2, "active",
                     id="any one rejecting plugin's registration suffices"),
        pytest.param((FIT,), ev.ASSIGNED_POD_DELETE, 2, "active", id="assigned pod delete"),
        pytest.param((FIT,), ev.EVENT_FORCE_ACTIVATE, 0, "backoff", id="wildcard event moves every pod"),
    ],
)
def test_move_all(plugins, event, wait, want) -> None:
    q, clock = make_queue(events=ev.EventsRegistry([FIT, AFFINITY, GATES]))
    q.add(pod(name="a"))
    p = fail(q, *plugins)
    q.add_unschedulable_if_not_present(p)
    clock.step(wait)
    q.move_all_to_active_or_backoff(event)
    assert q.pending()[want] == 1, q.pending()


def test_move_all_pre_check_and_priority_order() -> None:
    q, clock = make_queue()
    for i in range(5):
        q.add(pod(name=f"p{i}", priority=i))
    infos = [fail(q, FIT) for _ in range(5)]
    for p in infos:
        q.add_unschedulable_if_not_present(p)
    clock.step(5)
    moved = q.move_all_to_active_or_backoff(ev.NODE_ADD, pre_check=lambda p: p.priority >= 2)
    assert moved == 3
    assert popped_names(q) == ["p4", "p3", "p2"]


# --- TestBackOffFlow ---------------------------------------------------------------------------------

def test_backoff_flow() -> None:
    q, clock = make_queue(FakeClock(5000.0))  # aligned to the ordering window
    q.add(pod(name="test-pod"))
    for i, want in enumerate([1, 2, 4, 8, 10, 10, 10]):
        clock.now = float(math.ceil(clock.now))  # start each attempt on a window boundary
        start = clock()
        p = q.pop()
        assert p is not None and p.attempts == i + 1
        p.unschedulable_plugins.add(FIT)
        q.move_all_to_active_or_backoff(ev.NODE_ADD)  # an event happens while in flight
        assert q.add_unschedulable_if_not_present(p, i) == "backoff"
        assert p.backoff_expiration - start == want
        clock.step(0.001)
        q.flush()
        assert q.pending()["backoff"] == 1, "still backing off after an early flush"
        clock.step(want)
        q.flush()
        assert q.pending()["backoff"] == 1, "the expiry's own window still counts as backing off"
        assert q.next_wakeup() == start + want + 1
        clock.step(1)
        q.flush()
        assert q.pending() == {"active": 1, "backoff": 0, "unschedulable": 0, "gated": 0}


def test_backoff_flow_without_windows() -> None:
    q, clock = make_queue(FakeClock(5000.3), settings=QueueSettings(pop_from_backoff_q=False))
    q.add(pod(name="p"))
    p = fail(q)
    q.add_unschedulable_if_not_present(p)
    assert p.backoff_expiration == pytest.approx(5001.3)
    assert q.pop() is None  # no popping from backoffQ without the gate
    clock.step(1.0)
    q.flush()
    assert q.pending()["backoff"] == 1
    clock.step(0.01)
    q.flush()
    assert q.pending()["active"] == 1


# --- PopFromBackoffQ --------------------------------------------------------------------------------

def test_pop_from_backoff_when_active_empty() -> None:
    registry = CollectorRegistry()
    metrics = Metrics(registry)
    q, _ = make_queue(metrics=metrics)
    q.add(pod(name="rejected"))
    q.add(pod(name="errored"))
    r = fail(q, FIT)
    e = fail(q)
    q.move_all_to_active_or_backoff(ev.NODE_ADD)
    q.add_unschedulable_if_not_present(r)
    q.add_unschedulable_if_not_present(e)
    assert q.pending()["backoff"] == 2
    p = q.pop()
    assert p is not None and p.pod.name == "rejected" and p.attempts == 2
    assert q.pop() is None, "never pops from the error backoff queue"
    sample = registry.get_sample_value(
        "scheduler_queue_incoming_pods_total", {"queue": "active", "event": "PopFromBackoffQ"}
    )
    assert sample == 1


# --- unschedulable timeout (TestHighPriorityFlushUnschedulablePodsLeftover) ---------------------

def test_flush_unschedulable_leftover() -> None:
    q, clock = make_queue()
    q.add(pod(name="low", priority=1))
    q.add(pod(name="high", priority=100))
    infos = [fail(q, FIT), fail(q, FIT)]
    for p in infos:
        q.add_unschedulable_if_not_present(p)
    clock.step(299)
    q.flush()  # the sweep runs, but nobody is parked for more than 5 minutes yet
    assert q.pending()["unschedulable"] == 2
    clock.step(30)  # the next sweep
    q.flush()
    assert popped_names(q) == ["high", "low"]


def test_leftover_sweep_runs_every_interval() -> None:
    q, clock = make_queue()
    q.add(pod(name="a"))
    q.add_unschedulable_if_not_present(fail(q, FIT))
    clock.step(29)
    q.flush()  # sweep not yet due (first at +30 s)
    clock.step(1)
    q.flush()  # sweep at +30 s: pod parked only 30 s
    assert q.next_wakeup() == pytest.approx(clock() + 30)
    clock.step(265)  # sweep at +295 s: not yet
    q.flush()
    clock.step(10)  # +305 s: parked long enough, but the next sweep is at +325 s
    q.flush()
    assert q.pending()["unschedulable"] == 1
    clock.step(20)
    q.flush()
    assert q.pending()["active"] == 1


# --- TestPriorityQueue_Activate ----------------------------------------------------------------------

def test_activate() -> None:
    q, _ = make_queue()
    for name in ("u", "b", "f"):
        q.add(pod(name=name))
    u, b, f = fail(q, AFFINITY), fail(q, FIT), fail(q, FIT)
    q.move_all_to_active_or_backoff(ev.ASSIGNED_POD_DELETE)  # helps FIT, not NodeAffinity
    q.add_unschedulable_if_not_present(u)
    q.add_unschedulable_if_not_present(b)
    assert q.pending()["backoff"] == 1 and q.pending()["unschedulable"] == 1
    q.activate([u.pod, b.uid, f.pod, pod(name="unknown")])
    assert q.pending()["active"] == 2
    # f was in flight: the recorded ForceActivate sends it back at once.
    assert q.add_unschedulable_if_not_present(f) == "backoff"


# --- scheduling gates (TestPriorityQueue_AddWithPreEnqueue, SchedulingGates) ------------------

def test_gated_pod_lifecycle() -> None:
    registry = CollectorRegistry()
    q, clock = make_queue(metrics=Metrics(registry))
    gated = pod(name="gated", scheduling_gates=["example.com/gate"])
    info = q.add(gated)
    assert info is not None and info.gated and info.gating_plugin == GATES
    assert info.gating_message == "waiting for scheduling gates: [example.com/gate]"
    assert q.pending() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 1}
    assert q.pop() is None
    # Unrelated events and the timeout never move it.
    q.move_all_to_active_or_backoff(ev.NODE_ADD)
    q.move_all_to_active_or_backoff(ev.ASSIGNED_POD_DELETE)
    clock.step(400)
    q.flush()
    assert q.pending()["gated"] == 1
    # Removing one of two gates is not enough; removing the last one is.
    q.update(gated, pod(name="gated", scheduling_gates=["example.com/gate"], labels={"a": "b"}))
    assert q.pending()["gated"] == 1
    q.update(gated, pod(name="gated"))
    assert q.pending() == {"active": 1, "backoff": 0, "unschedulable": 0, "gated": 0}
    p = q.pop()
    assert p is not None and not p.gated and p.attempts == 1
    gauge = registry.get_sample_value
    assert gauge("scheduler_pending_pods", {"queue": "gated"}) == 0
    assert gauge("scheduler_queue_incoming_pods_total",
                 {"queue": "unschedulable", "event": "UnschedulablePodAdd"}) == 1
    assert gauge("scheduler_queue_incoming_pods_total",
                 {"queue": "active", "event": "UnschedulablePodUpdatePodSchedulingGatesEliminated"}) == 1


def test_pre_enqueue_per_profile_and_plugin_errors() -> None:
    class Boom:
        name = "Boom"

        def pre_enqueue(self, pod: Pod):
            raise RuntimeError("boom")

    q, _ = make_queue(pre_enqueue={"default-scheduler": [SchedulingGates()], "other": [Boom()]})
    q.add(pod(name="a", scheduling_gates=["g"], scheduler_name="unknown-profile"))  # no plugins
    info = q.add(pod(name="b", scheduler_name="other"))
    assert info is not None and info.gating_plugin == "Boom" and "boom" in info.gating_message
    assert q.pending()["active"] == 1 and q.pending()["gated"] == 1
    q.add(pod(name="c", scheduling_gates=["g"]))
    assert q.pending()["gated"] == 2


# --- next_wakeup, pending, metrics --------------------------------------------------------------------

def test_next_wakeup_and_gauges() -> None:
    registry = CollectorRegistry()
    q, _ = make_queue(FakeClock(100.0), metrics=Metrics(registry))
    assert q.next_wakeup() is None
    q.add(pod(name="a"))
    q.add(pod(name="b"))
    a, b = fail(q, FIT), fail(q, FIT)
    q.move_all_to_active_or_backoff(ev.NODE_ADD)
    q.add_unschedulable_if_not_present(a)  # backoff, expiry 101 -> leaves at 102
    q.add_unschedulable_if_not_present(b)  # the event came after both pops
    assert q.next_wakeup() == 102.0
    assert registry.get_sample_value("scheduler_pending_pods", {"queue": "backoff"}) == 2
    assert registry.get_sample_value(
        "scheduler_unschedulable_pods", {"plugin": FIT, "profile": "default-scheduler"}
    ) == 2
    q.delete(a.uid)
    assert registry.get_sample_value(
        "scheduler_unschedulable_pods", {"plugin": FIT, "profile": "default-scheduler"}
    ) == 1
    assert registry.get_sample_value(
        "scheduler_queue_incoming_pods_total", {"queue": "backoff", "event": "ScheduleAttemptFailure"}
    ) == 2
