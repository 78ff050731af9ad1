"""The queue asks queueing hints: per profile, with the event's objects, errors counting as Queue.

Hint functions of in-tree plugins are tested with each plugin; these cases pin how the queue uses
any hint (an out-of-tree plugin's ``queueing_hints()`` goes the same way), including the quiet-event
memo, which must not remember an event whose objects decided the answer.
"""

from __future__ import annotations

from prometheus_client import generate_latest

from ksched.framework import api
from ksched.framework.guards import GuardedPlugin
from ksched.framework.interface import QueueingHint
from ksched.metrics import Metrics
from ksched.model.pod import Pod
from ksched.scheduler import events_registry as ev
from ksched.scheduler.events_registry import EventsRegistry, Registration, registry_for_profiles
from ksched.scheduler.queue import SchedulingQueue
from tests.builders import pod
from tests.unit.scheduler.test_queue_fast_paths import FakeClock, park

PLUGIN = "Picky"
QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def only_node_named(name: str) -> object:
    """A hint that says Queue only for a node added with this name."""

    def hint(p: Pod, old: object, new: object) -> QueueingHint:
        return QUEUE if getattr(new, "name", None) == name else SKIP

    return hint


class _Node:
    def __init__(self, name: str) -> None:
        self.name = name


def make_queue(
    hints: dict[str, dict[str, list[Registration]]], metrics: Metrics | None = None
) -> SchedulingQueue:
    events = {PLUGIN: (ev.NODE_ADD, ev.ASSIGNED_POD_DELETE)}
    return SchedulingQueue(
        clock=FakeClock(), events=EventsRegistry(events=events, hints=hints), metrics=metrics
    )


def test_a_pod_moves_only_when_the_hint_says_queue() -> None:
    q = make_queue({"default-scheduler": {PLUGIN: [Registration(ev.NODE_ADD, only_node_named("big"))]}})
    park(q, "a", PLUGIN)
    assert q.move_all_to_active_or_backoff(ev.NODE_ADD, new=_Node("small")) == 0
    assert q.move_all_to_active_or_backoff(ev.NODE_ADD, new=_Node("small")) == 0
    # The same event with other objects is asked again: the memo keeps only answers no hint gave.
    assert q.move_all_to_active_or_backoff(ev.NODE_ADD, new=_Node("big")) == 1


def test_a_registration_without_hint_and_an_unregistered_event() -> None:
    q = make_queue({"default-scheduler": {PLUGIN: [Registration(ev.ASSIGNED_POD_DELETE)]}})
    park(q, "a", PLUGIN)
    assert q.move_all_to_active_or_backoff(ev.NODE_ADD, new=_Node("big")) == 0  # no hint registered for it
    assert q.move_all_to_active_or_backoff(ev.ASSIGNED_POD_DELETE, old=pod(name="gone")) == 1


def test_hints_are_per_profile() -> None:
    hints = {
        "default-scheduler": {PLUGIN: [Registration(ev.NODE_ADD, only_node_named("big"))]},
        "other": {PLUGIN: [Registration(ev.NODE_ADD, only_node_named("small"))]},
    }
    q = make_queue(hints)
    park(q, "a", PLUGIN)
    q.add(pod(name="b", uid="b", scheduler_name="other"))
    b = q.pop()
    assert b is not None
    b.unschedulable_plugins.add(PLUGIN)
    q.add_unschedulable_if_not_present(b, q.scheduling_cycle)
    assert q.move_all_to_active_or_backoff(ev.NODE_ADD, new=_Node("small")) == 1
    assert q.get("b") is not None and q.get("a") is not None
    assert q.pending()["unschedulable"] == 1  # a stays parked


def test_a_hint_that_raises_counts_as_queue_and_is_measured() -> None:
    def broken(p: Pod, old: object, new: object) -> QueueingHint:
        raise KeyError("oops")

    metrics = Metrics()
    q = make_queue({"default-scheduler": {PLUGIN: [Registration(ev.NODE_ADD, broken)]}}, metrics)
    park(q, "a", PLUGIN)
    assert q.move_all_to_active_or_backoff(ev.NODE_ADD, new=_Node("x")) == 1
    text = generate_latest(metrics.registry).decode()
    labels = '{event="NodeAdd",hint="Error",plugin="Picky"}'
    assert f"scheduler_queueing_hint_execution_duration_seconds_count{labels} 1.0" in text


def test_a_pending_plugins_queue_goes_straight_to_active() -> None:
    q = make_queue({"default-scheduler": {PLUGIN: [Registration(ev.NODE_ADD, only_node_named("big"))]}})
    park(q, "a", "Other", pending=(PLUGIN,))
    q.move_all_to_active_or_backoff(ev.NODE_ADD, new=_Node("big"))
    assert q.pending()["active"] == 1


def test_an_event_during_the_attempt_is_asked_with_its_objects() -> None:
    metrics = Metrics()
    q = make_queue(
        {"default-scheduler": {PLUGIN: [Registration(ev.NODE_ADD, only_node_named("big"))]}}, metrics
    )
    q.add(pod(name="a", uid="a"))
    a = q.pop()
    assert a is not None
    q.move_all_to_active_or_backoff(ev.NODE_ADD, new=_Node("small"))
    q.move_all_to_active_or_backoff(ev.NODE_ADD, new=_Node("big"))
    text = generate_latest(metrics.registry).decode()
    assert 'scheduler_inflight_events{event="NodeAdd"} 2.0' in text
    assert 'scheduler_inflight_events{event="PodPopped"} 1.0' in text
    a.unschedulable_plugins.add(PLUGIN)
    assert q.add_unschedulable_if_not_present(a, q.scheduling_cycle) == "backoff"  # the big node may help
    text = generate_latest(metrics.registry).decode()
    assert 'scheduler_inflight_events{event="NodeAdd"} 0.0' in text


class _Custom:
    name = "Custom"

    def events_to_register(self) -> list[api.ClusterEventSpec]:
        return [api.cluster_event("Node", "Add"), api.cluster_event("Pod", "Delete")]

    def queueing_hints(self) -> dict[api.ClusterEventSpec, object]:
        return {api.cluster_event("Node", "Add"): only_node_named("big")}


def test_out_of_tree_hints_come_from_the_plugin() -> None:
    class Fw:
        def __init__(self) -> None:
            self.plugins = {"Custom": GuardedPlugin(_Custom(), "Custom")}

    registry = registry_for_profiles({"default-scheduler": Fw()})
    assert registry.events_for("Custom") == (ev.NODE_ADD, ev.ClusterEvent(ev.POD, ev.ActionType.DELETE))
    (hint,) = registry.hints_for("default-scheduler", "Custom", ev.NODE_ADD)
    assert hint is not None and hint(pod(), None, _Node("big")) == QUEUE
    assert registry.hints_for("default-scheduler", "Custom", ev.ASSIGNED_POD_DELETE) == (None,)
    assert registry.hints_for("default-scheduler", "Custom", ev.NODE_LABEL_CHANGE) == ()
