"""The queue's per-event shortcuts answer exactly as the long way round.

``move_all_to_active_or_backoff`` runs for every bound pod, so the queue skips work whose answer is
known: no parked pod, an event that moved none of the unchanged parked pods last time, plugins
matched by a memoized "deaf" set instead of registration by registration. These tests pin each
shortcut to the plain rule it replaces.
"""

from __future__ import annotations

import dataclasses
import random

import pytest
from prometheus_client import CollectorRegistry

from ksched.config import names
from ksched.framework.plugins.schedulinggates import SchedulingGates
from ksched.metrics import Children, Metrics
from ksched.model.pod import with_node_name
from ksched.scheduler import events_registry as ev
from ksched.scheduler.events_registry import ActionType, ClusterEvent, EventsRegistry
from ksched.scheduler.queue import SchedulingQueue, Strategy
from ksched.scheduler.queue.types import QueuedPodInfo
from tests.builders import pod

A = ActionType
FIT = names.NODE_RESOURCES_FIT
INTER_POD = names.INTER_POD_AFFINITY
UNKNOWN = "OutOfTree"
RESOURCES = (ev.NODE, ev.ASSIGNED_POD, ev.UNSCHEDULABLE_POD, ev.PERSISTENT_VOLUME_CLAIM, ev.WILDCARD)
ACTIONS = [ActionType(1 << i) for i in range(13)] + [A.UPDATE, A.ALL, A.ADD | A.UPDATE_NODE_LABEL]
EVENTS = [ClusterEvent(r, a) for r in RESOURCES for a in ACTIONS]
PLUGINS = [*ev.DEFAULT_PLUGIN_EVENTS, UNKNOWN]


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make_queue(**kw: object) -> SchedulingQueue:
    return SchedulingQueue(clock=FakeClock(), pre_enqueue=[SchedulingGates()], **kw)  # type: ignore[arg-type]


def park(q: SchedulingQueue, name: str, *plugins: str, pending: tuple[str, ...] = ()) -> QueuedPodInfo:
    """Add a pod, pop it and requeue it as rejected by ``plugins``; it must land in unschedulablePods."""
    q.add(pod(name=name, uid=name))
    p = q.pop()
    assert p is not None and p.uid == name
    p.unschedulable_plugins.update(plugins)
    p.pending_plugins.update(pending)
    assert q.add_unschedulable_if_not_present(p, q.scheduling_cycle) == "unschedulable"
    return p


def reference_worth_requeuing(reg: EventsRegistry, pinfo: QueuedPodInfo, event: ClusterEvent) -> Strategy:
    """The plugin-by-plugin rule (upstream ``isPodWorthRequeuing``, every hint answering Queue)."""
    rejectors = pinfo.rejector_plugins
    if not rejectors:
        return Strategy.AFTER_BACKOFF
    if event.is_wildcard:
        return Strategy.AFTER_BACKOFF
    strategy = Strategy.SKIP
    for plugin in rejectors:
        if ev.match_any(event, reg.events_for(plugin)):
            if plugin in pinfo.pending_plugins:
                return Strategy.IMMEDIATELY
            strategy = Strategy.AFTER_BACKOFF
    return strategy


@pytest.mark.parametrize("enabled", [None, [FIT, names.SCHEDULING_GATES], [UNKNOWN, INTER_POD]])
def test_memoized_interest_equals_matching_every_registration(enabled: list[str] | None) -> None:
    reg = EventsRegistry(enabled)
    for _ in range(2):  # the second round answers from the memo
        for event in EVENTS:
            want = event.is_wildcard or any(ev.match_any(event, reg.events_for(p)) for p in reg._by_plugin)
            assert reg.is_event_of_interest(event) is want, event
            for plugin in PLUGINS:
                assert reg.plugin_interested(plugin, event) is ev.match_any(event, reg.events_for(plugin))


def test_worth_requeuing_equals_the_plugin_by_plugin_rule() -> None:
    rng = random.Random(7)
    reg = EventsRegistry()
    q = make_queue(events=reg)
    for _ in range(3000):
        pinfo = QueuedPodInfo(pod=pod(name="p"), timestamp=0.0)
        pinfo.unschedulable_plugins = set(rng.sample(PLUGINS, rng.randrange(3)))
        pinfo.pending_plugins = set(rng.sample(PLUGINS, rng.choice([0, 0, 1])))
        event = rng.choice([*EVENTS, ev.EVENT_UNSCHEDULABLE_TIMEOUT])
        assert q._worth_requeuing(pinfo, event) is reference_worth_requeuing(reg, pinfo, event)


def test_an_event_that_moved_nobody_is_re_examined_once_the_parked_pods_change() -> None:
    q = make_queue()
    park(q, "fit", FIT)  # NodeResourcesFit does not care about a pod being added
    assert q.move_all_to_active_or_backoff(ev.ASSIGNED_POD_ADD) == 0
    assert q.move_all_to_active_or_backoff(ev.ASSIGNED_POD_ADD) == 0  # answered from the memo
    park(q, "affinity", INTER_POD)  # InterPodAffinity does
    assert q.move_all_to_active_or_backoff(ev.ASSIGNED_POD_ADD) == 1
    assert q.get("affinity") is not None and q.get("fit") is not None
    assert q.pending()["unschedulable"] == 1
    assert q.move_all_to_active_or_backoff(ev.ASSIGNED_POD_DELETE) == 1  # frees resources: Fit moves


def test_a_gated_pod_moves_on_its_gate_lifted_after_quiet_events() -> None:
    q = make_queue()
    gated = pod(name="g", uid="g", scheduling_gates=["wait"])
    assert q.add(gated) is not None and q.get("g").gated  # type: ignore[union-attr]
    for _ in range(2):
        assert q.move_all_to_active_or_backoff(ev.NODE_ADD) == 0
    q.update(gated, dataclasses.replace(gated, scheduling_gates=()))
    assert q.pending() == {"active": 1, "backoff": 0, "unschedulable": 0, "gated": 0}


def test_an_event_with_nothing_parked_still_reaches_the_pods_in_flight() -> None:
    q = make_queue()
    q.add(pod(name="a", uid="a"))
    p = q.pop()
    assert p is not None
    assert q.move_all_to_active_or_backoff(ev.NODE_ADD) == 0  # nothing parked
    p.unschedulable_plugins.add(FIT)
    assert q.add_unschedulable_if_not_present(p, q.scheduling_cycle) == "backoff"  # NodeAdd may help


def test_a_pre_check_is_never_answered_from_the_memo() -> None:
    q = make_queue()
    park(q, "a", INTER_POD)
    assert q.move_all_to_active_or_backoff(ev.ASSIGNED_POD_ADD, lambda p: False) == 0
    assert q.move_all_to_active_or_backoff(ev.ASSIGNED_POD_ADD, lambda p: True) == 1


def test_pending_gauges_follow_every_operation() -> None:
    registry = CollectorRegistry()
    q = make_queue(metrics=Metrics(registry))
    rng = random.Random(3)
    names_ = [f"p{i}" for i in range(12)]
    for step in range(400):
        op = rng.choice(["add", "pop-fail", "move", "delete", "flush"])
        name = rng.choice(names_)
        if op == "add":
            q.add(pod(name=name, uid=name, scheduling_gates=["g"] if step % 7 == 0 else []))
        elif op == "pop-fail" and (p := q.pop()) is not None:
            p.unschedulable_plugins.update(rng.sample([FIT, INTER_POD, UNKNOWN], rng.randrange(2)))
            q.add_unschedulable_if_not_present(p, q.scheduling_cycle)
        elif op == "move":
            q.move_all_to_active_or_backoff(rng.choice(EVENTS))
        elif op == "delete":
            q.delete(name)
        else:
            q._clock.now += rng.choice([0.5, 5.0, 400.0])  # type: ignore[attr-defined]
            q.flush()
        for queue, n in q.pending().items():
            assert registry.get_sample_value("scheduler_pending_pods", {"queue": queue}) == n


def test_children_are_the_labelled_metrics() -> None:
    metrics = Metrics()
    attempts = Children(metrics.schedule_attempts)
    attempts("scheduled", "default-scheduler").inc()
    attempts("scheduled", "default-scheduler").inc()
    assert attempts("scheduled", "default-scheduler") is metrics.schedule_attempts.labels(
        result="scheduled", profile="default-scheduler"
    )
    assert metrics.registry is not None
    value = metrics.registry.get_sample_value(
        "scheduler_schedule_attempts_total", {"result": "scheduled", "profile": "default-scheduler"}
    )
    assert value == 2


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"labels": {"a": "b"}, "priority": 7, "node_selector": {"z": "1"}, "node_name": "old"},
        {"tolerations": [{"key": "k", "operator": "Exists"}], "scheduling_gates": ["g"]},
    ],
)
def test_with_node_name_is_replace(kw: dict[str, object]) -> None:
    p = pod(name="p", requests={"cpu": "1"}, **kw)
    for node in ("n1", ""):
        got = with_node_name(p, node)
        assert got == dataclasses.replace(p, node_name=node)
        assert type(got) is type(p) and got.node_name == node
