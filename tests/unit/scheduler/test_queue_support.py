"""Events registry, backoff policy, keyed heap and nominator: the queue's helpers.

Cases ported from upstream ``pkg/scheduler/backend/queue/scheduling_queue_test.go``
(``TestPodMatchesEvent``, ``TestPriorityQueue_calculateBackoffDuration``),
``pkg/scheduler/framework/types_test.go`` (``TestMatchClusterEvents``-style cases) and
``pkg/scheduler/framework/events_test.go`` (pod update events), as data.
"""

from __future__ import annotations

import pytest

from ksched.config import names
from ksched.scheduler import events_registry as ev
from ksched.scheduler.events_registry import ActionType as A
from ksched.scheduler.events_registry import ClusterEvent, EventsRegistry
from ksched.scheduler.queue.backoff import BackoffPolicy
from ksched.scheduler.queue.heap import KeyedHeap
from ksched.scheduler.queue.nominator import Nominator
from ksched.scheduler.queue.types import QueuedPodInfo, QueueSettings
from tests.builders import pod


@pytest.mark.parametrize(
    ("event", "label"),
    [
        pytest.param(ev.NODE_ADD, "NodeAdd", id="node add"),
        pytest.param(ev.ASSIGNED_POD_DELETE, "AssignedPodDelete", id="assigned pod delete"),
        pytest.param(ev.UNSCHEDULED_POD_ADD, "UnschedulablePodAdd", id="unscheduled pod add"),
        pytest.param(ev.UNSCHEDULED_POD_UPDATE, "UnschedulablePodUpdate", id="unscheduled pod update"),
        pytest.param(ev.NODE_TAINT_CHANGE, "NodeUpdateNodeTaint", id="node taint change"),
        pytest.param(ev.NODE_UPDATE, "NodeUpdate", id="generic node update"),
        pytest.param(ev.EVENT_UNSCHEDULABLE_TIMEOUT, "UnschedulableTimeout", id="custom label wins"),
        pytest.param(ev.EVENT_FORCE_ACTIVATE, "ForceActivate", id="force activate"),
        pytest.param(ClusterEvent(ev.WILDCARD, A.ALL), "*All", id="wildcard"),
    ],
)
def test_event_labels(event: ClusterEvent, label: str) -> None:
    assert event.label == label


N_ALL = ClusterEvent(ev.NODE, A.ALL)
N_UPDATE = ClusterEvent(ev.NODE, A.UPDATE)
POD_ADD = ClusterEvent(ev.POD, A.ADD)
POD_DELETE = ClusterEvent(ev.POD, A.DELETE)
PV_ADD = ClusterEvent(ev.PERSISTENT_VOLUME, A.ADD)


@pytest.mark.parametrize(
    ("registered", "incoming", "want"),
    [
        pytest.param(N_ALL, ev.NODE_ADD, True, id="All matches Add"),
        pytest.param(N_UPDATE, ev.NODE_LABEL_CHANGE, True, id="Update matches specific"),
        pytest.param(ev.NODE_LABEL_CHANGE, ev.NODE_UPDATE, False, id="specific does not match generic"),
        pytest.param(ev.NODE_LABEL_CHANGE, ev.NODE_TAINT_CHANGE, False, id="different sub-update"),
        pytest.param(POD_DELETE, ev.ASSIGNED_POD_DELETE, True, id="Pod matches AssignedPod"),
        pytest.param(POD_ADD, ev.UNSCHEDULED_POD_ADD, True, id="Pod matches UnschedulablePod"),
        pytest.param(POD_ADD, ev.NODE_ADD, False, id="resource mismatch"),
        pytest.param(ev.WILDCARD_EVENT, PV_ADD, True, id="wildcard registered"),
        pytest.param(N_ALL, ev.EVENT_UNSCHEDULABLE_TIMEOUT, False, id="wildcard incoming vs specific"),
        pytest.param(ClusterEvent(ev.WILDCARD, A.ADD), ev.NODE_ADD, True, id="wildcard resource, an action"),
    ],
)
def test_match_cluster_events(registered: ClusterEvent, incoming: ClusterEvent, want: bool) -> None:
    assert ev.match_cluster_events(registered, incoming) is want


# TestPodMatchesEvent: (plugin events, pod's failed plugins, event, want)
@pytest.mark.parametrize(
    ("registrations", "plugins", "event", "want"),
    [
        pytest.param({"foo": (N_ALL,), "bar": ()}, {"bar"}, ev.ASSIGNED_POD_ADD, False,
                     id="pod's failed plugin matches but event does not match"),
        pytest.param({"foo": (N_ALL,), "bar": (N_ALL,)}, {"bar"}, ev.NODE_TAINT_CHANGE, True,
                     id="pod's failed plugin and event both match"),
        pytest.param({"foo": (N_ALL,), "bar": (ev.NODE_TAINT_CHANGE,)}, {"bar"}, ev.NODE_TAINT_CHANGE, True,
                     id="pod's failed plugin registers fine-grained event"),
        pytest.param({"bar": (N_ALL,)}, {"foo", "bar"}, ev.NODE_ADD, True,
                     id="if pod failed by multiple plugins, a single match gets a final match"),
        pytest.param({"foo": (ev.WILDCARD_EVENT,)}, {"foo"}, ClusterEvent(ev.PERSISTENT_VOLUME, A.ADD), True,
                     id="plugin returns WildCardEvent and plugin name matches"),
        pytest.param({"bar": (ev.WILDCARD_EVENT,), "foo": ()}, {"foo"},
                     ClusterEvent(ev.PERSISTENT_VOLUME, A.ADD), False,
                     id="plugin returns WildCardEvent but plugin name not match"),
    ],
)
def test_plugin_interest(registrations, plugins, event, want) -> None:
    reg = EventsRegistry(events=registrations)
    assert any(reg.plugin_interested(p, event) for p in plugins) is want


def test_registry_interest_and_unknown_plugins() -> None:
    reg = EventsRegistry([names.NODE_RESOURCES_FIT, names.SCHEDULING_GATES])
    assert reg.is_event_of_interest(ev.NODE_ADD)
    assert reg.is_event_of_interest(ev.ASSIGNED_POD_DELETE)
    assert not reg.is_event_of_interest(ev.NODE_LABEL_CHANGE)
    assert reg.is_event_of_interest(ev.EVENT_UNSCHEDULABLE_TIMEOUT)
    assert reg.events_for("OutOfTree") == (ev.WILDCARD_EVENT,)
    assert EventsRegistry(["OutOfTree"]).is_event_of_interest(ev.NODE_LABEL_CHANGE)


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        pytest.param({}, {"labels": {"a": "b"}}, ["UnschedulablePodUpdatePodLabel"], id="label change"),
        pytest.param({"requests": {"cpu": "2"}}, {"requests": {"cpu": "1"}},
                     ["UnschedulablePodUpdatePodScaleDown"], id="scale down"),
        pytest.param({"requests": {"cpu": "1"}}, {"requests": {"cpu": "2"}}, ["UnschedulablePodUpdate"],
                     id="scale up is a generic update"),
        pytest.param({"scheduling_gates": ["g"]}, {}, ["UnschedulablePodUpdatePodSchedulingGatesEliminated"],
                     id="gates eliminated"),
        pytest.param({"scheduling_gates": ["g", "h"]}, {"scheduling_gates": ["g"]},
                     ["UnschedulablePodUpdate"], id="one gate of two removed"),
        pytest.param({}, {"tolerations": [{"key": "k", "operator": "Exists"}]},
                     ["UnschedulablePodUpdatePodToleration"], id="toleration added"),
        pytest.param({}, {"node_name": "n1"}, ["AssignedPodUpdate"], id="assigned pod"),
    ],
)
def test_pod_update_events(old, new, want) -> None:
    got = ev.pod_update_events(pod(name="p", **old), pod(name="p", **new))
    assert [e.label for e in got] == want


# TestPriorityQueue_calculateBackoffDuration plus the default doubling sequence.
@pytest.mark.parametrize(
    ("initial", "cap", "attempts", "want"),
    [
        pytest.param(1e-9, 32e-9, 16, 32e-9, id="normal"),
        pytest.param(1e-9, 2147483647e-9, 32, 2147483647e-9, id="overflow_32bit"),
        pytest.param(1e-9, 9223372036854775807e-9, 64, 9223372036854775807e-9, id="overflow_64bit"),
        pytest.param(1.0, 10.0, 0, 0.0, id="never tried owes nothing"),
        pytest.param(1.0, 10.0, 1, 1.0, id="first"),
        pytest.param(1.0, 10.0, 4, 8.0, id="fourth"),
        pytest.param(1.0, 10.0, 5, 10.0, id="capped"),
        pytest.param(1.0, 10.0, 10_000, 10.0, id="huge attempts"),
    ],
)
def test_backoff_duration(initial: float, cap: float, attempts: int, want: float) -> None:
    settings = QueueSettings(pod_initial_backoff_s=initial, pod_max_backoff_s=cap)
    assert BackoffPolicy(settings, lambda p: ()).duration(attempts) == pytest.approx(want)


def test_backoff_window_alignment() -> None:
    bo = BackoffPolicy(QueueSettings(), lambda p: ())
    pinfo = QueuedPodInfo(pod=pod(name="p"), timestamp=100.4, attempts=1)
    assert bo.expiry(pinfo) == 101.0
    assert bo.backing_off(pinfo, 101.9)  # same window as the expiry
    assert not bo.backing_off(pinfo, 102.0)
    assert bo.completes_at(pinfo) == 102.0
    plain = BackoffPolicy(QueueSettings(pop_from_backoff_q=False), lambda p: ())
    pinfo2 = QueuedPodInfo(pod=pod(name="p"), timestamp=100.4, attempts=1)
    assert plain.expiry(pinfo2) == pytest.approx(101.4)
    assert plain.backing_off(pinfo2, 101.4)
    assert not plain.backing_off(pinfo2, 101.41)


def test_keyed_heap_lazy_deletion() -> None:
    h: KeyedHeap[str] = KeyedHeap()
    for i in range(200):
        h.push(f"u{i}", (i,), f"v{i}")
    for i in range(0, 200, 2):
        assert h.remove(f"u{i}") == f"v{i}"
    h.push("u1", (1000,), "moved")  # re-key
    assert len(h) == 100 and "u1" in h and "u0" not in h
    out = [h.pop() for _ in range(len(h))]
    assert out[0] == "v3" and out[-1] == "moved"
    assert h.pop() is None and h.peek() is None


def test_nominator_orders_by_priority_and_keeps_memory_nomination() -> None:
    nom = Nominator()
    low = pod(name="low", priority=1)
    high = pod(name="high", priority=10)
    mid = pod(name="mid", priority=5, nominatedNodeName="ignored")
    nom.add(low, "n1")
    nom.add(high, "n1")
    nom.add(mid, "n1")
    assert [p.name for p in nom.pods_for_node("n1")] == ["high", "mid", "low"]
    # An update without nominatedNodeName keeps the in-memory nomination.
    nom.update(low, pod(name="low", priority=1, labels={"x": "y"}))
    assert nom.node_of(low.uid) == "n1"
    nom.delete(high.uid)
    assert [p.name for p in nom.pods_for_node("n1")] == ["mid", "low"]
    nom.add(mid, "")  # cleared
    assert mid.uid not in nom and nom.pods_for_node("n2") == []
    nom.add(pod(name="bound", node_name="n1"), "n1")
    assert len(nom) == 1
