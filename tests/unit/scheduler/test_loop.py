"""The scheduling loop fed through its inbox, with a recording outbox: no threads, no HTTP.

DESIGN.md §1: one writer, a replayable order of events. These tests replay informer events and
bind outcomes in a chosen order and check what the loop asks the outbox to do.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from ksched.cache.cluster import ClusterCache
from ksched.config import default_config
from ksched.errors import Conflict, ObjectError
from ksched.framework.profile import build_profiles
from ksched.kube import events as kev
from ksched.model.node import node_from_dict
from ksched.model.pod import Pod, pod_from_dict
from ksched.scheduler.inbox import BindDone, StopRequested
from ksched.scheduler.loop import Scheduler
from ksched.scheduler.queue.factory import queue_for
from tests.builders import make_node, make_pod
from tests.unit.scheduler.loop_support import FakeClock, synced_scheduler
from tests.unit.scheduler.loop_support import RecordingOutbox as BaseOutbox


class RecordingOutbox(BaseOutbox):
    def reasons(self) -> list[tuple[str, str]]:
        return [(e["reason"], e["note"]) for e in self.events]


@pytest.fixture
def harness() -> tuple[Scheduler, RecordingOutbox, FakeClock]:
    clock = FakeClock()
    outbox = RecordingOutbox()
    config = default_config()
    profiles = build_profiles(config, seed=3)
    queue = queue_for(config, profiles, clock=clock)
    sched = Scheduler(
        profiles=profiles, cache=ClusterCache(), queue=queue, outbox=outbox, clock=clock, wall_clock=clock
    )
    for kind in ("nodes", "pods"):
        sched.inbox.put(kev.Synced(kind))
    return sched, outbox, clock


def node(name: str, cpu: str = "4") -> kev.Upserted:
    return kev.Upserted("nodes", node_from_dict(make_node(name, cpu=cpu, memory="8Gi", pods=10)))


def pending(name: str, cpu: str = "1", **kw: Any) -> Pod:
    return pod_from_dict(make_pod(name, requests={"cpu": cpu}, **kw))


def drain(sched: Scheduler) -> None:
    """Run the loop until nothing is ready to schedule."""
    sched.run(until=lambda s: len(s.inbox) == 0 and s.queue.pending()["active"] == 0)


def test_pending_pod_is_assumed_and_bound_then_confirmed(harness: Any) -> None:
    sched, outbox, _ = harness
    sched.inbox.put(node("n1"))
    p = pending("web")
    sched.inbox.put(kev.Upserted("pods", p))
    drain(sched)
    sched.run(until=lambda s: bool(outbox.binds))
    assert [(b.name, n) for b, n in outbox.binds] == [("web", "n1")]
    assert sched.cache.is_assumed(p.uid)
    sched.inbox.put(BindDone(p, "n1"))
    sched.inbox.put(kev.Upserted("pods", dataclasses.replace(p, node_name="n1"), "MODIFIED"))
    drain(sched)
    assert not sched.cache.is_assumed(p.uid) and p.uid in sched.cache
    assert ("Scheduled", "Successfully assigned default/web to n1") in outbox.reasons()


def test_unschedulable_pod_gets_event_and_condition_then_fits_a_new_node(harness: Any) -> None:
    sched, outbox, clock = harness
    sched.inbox.put(node("n1", cpu="1"))
    big = pending("big", cpu="2")
    sched.inbox.put(kev.Upserted("pods", big))
    drain(sched)
    # DefaultPreemption (PostFilter) adds its part: the node is too small for eviction to help.
    message = (
        "0/1 nodes are available: 1 Insufficient cpu. "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )
    assert ("FailedScheduling", message) in outbox.reasons()
    condition = outbox.patches[-1][1]["status"]["conditions"][0]
    assert (condition["type"], condition["status"], condition["reason"], condition["message"]) == (
        "PodScheduled",
        "False",
        "Unschedulable",
        message,
    )
    assert sched.queue.pending()["unschedulable"] == 1
    sched.inbox.put(node("n2", cpu="4"))
    clock.t += 30  # past any backoff
    sched.run(until=lambda s: bool(outbox.binds))
    assert [(b.name, n) for b, n in outbox.binds] == [("big", "n2")]


def test_failed_bind_is_forgotten_and_requeued_with_backoff(harness: Any) -> None:
    sched, outbox, clock = harness
    sched.inbox.put(node("n1"))
    p = pending("web")
    sched.inbox.put(kev.Upserted("pods", p))
    sched.run(until=lambda s: bool(outbox.binds))
    sched.inbox.put(BindDone(p, "n1", Conflict(409, "Conflict", "pod web is already assigned")))
    drain(sched)
    assert p.uid not in sched.cache  # forgotten: the node's resources are free again
    assert sched.cache.nodes.requested[0, 0] == 0
    assert sched.queue.pending()["backoff"] == 1
    assert any(
        r == "FailedScheduling" and 'running Bind plugin "DefaultBinder"' in n for r, n in outbox.reasons()
    )
    clock.t += 30
    sched.run(until=lambda s: len(outbox.binds) == 2)
    assert [n for _, n in outbox.binds] == ["n1", "n1"]


def test_pod_bound_elsewhere_while_binding_is_not_requeued(harness: Any) -> None:
    sched, outbox, _ = harness
    sched.inbox.put(node("n1"))
    sched.inbox.put(node("n2"))
    p = pending("web")
    sched.inbox.put(kev.Upserted("pods", p))
    sched.run(until=lambda s: bool(outbox.binds))
    chosen = outbox.binds[0][1]
    other = "n2" if chosen == "n1" else "n1"
    # Someone else bound it to the other node; our binding then fails with 409.
    sched.inbox.put(kev.Upserted("pods", dataclasses.replace(p, node_name=other), "MODIFIED"))
    sched.inbox.put(BindDone(p, chosen, Conflict(409, "Conflict", "already assigned")))
    drain(sched)
    assert sched.cache.pods[p.uid].node_name == other and not sched.cache.is_assumed(p.uid)
    assert p.uid not in sched.queue
    assert len(outbox.binds) == 1


def test_gated_pod_waits_until_the_gate_is_removed(harness: Any) -> None:
    sched, outbox, _ = harness
    sched.inbox.put(node("n1"))
    gated = pending("gated", scheduling_gates=["example.com/wait"])
    sched.inbox.put(kev.Upserted("pods", gated))
    drain(sched)
    assert outbox.binds == []
    assert outbox.patches[-1][1]["status"]["conditions"][0]["reason"] == "SchedulingGated"
    sched.inbox.put(kev.Upserted("pods", dataclasses.replace(gated, scheduling_gates=()), "MODIFIED"))
    sched.run(until=lambda s: bool(outbox.binds))
    assert outbox.binds[0][0].name == "gated"


def test_pods_of_other_schedulers_are_ignored(harness: Any) -> None:
    sched, outbox, _ = harness
    sched.inbox.put(node("n1"))
    sched.inbox.put(kev.Upserted("pods", pending("theirs", scheduler_name="someone-else")))
    drain(sched)
    assert outbox.binds == [] and len(sched.queue) == 0


def test_invalid_pending_pod_gets_an_event_naming_the_field_once(harness: Any) -> None:
    sched, outbox, _ = harness
    err = ObjectError(
        "Pod default/bad", "spec.containers[0].resources.requests.cpu", "invalid quantity 'abc'"
    )
    bad = kev.Invalid("pods", "default", "bad", "uid-bad", err, event_type="ADDED")
    sched.inbox.put(node("n1"))
    sched.inbox.put(bad)
    sched.inbox.put(kev.Invalid("pods", "default", "bad", "uid-bad", err, event_type="MODIFIED"))
    sched.inbox.put(kev.Upserted("pods", pending("good")))
    sched.run(until=lambda s: bool(outbox.binds))
    notes = [n for r, n in outbox.reasons() if r == "FailedScheduling"]
    assert notes == [str(err)]
    assert "spec.containers[0].resources.requests.cpu" in notes[0]
    assert outbox.binds[0][0].name == "good"


def test_relist_removes_what_disappeared(harness: Any) -> None:
    sched, _, _ = harness
    sched.inbox.put(node("n1"))
    sched.inbox.put(node("n2"))
    bound = pod_from_dict(make_pod("old", node_name="n1", requests={"cpu": "1"}))
    sched.inbox.put(kev.Upserted("pods", bound))
    drain(sched)
    assert bound.uid in sched.cache
    n2 = node_from_dict(make_node("n2", cpu="4", memory="8Gi", pods=10))
    sched.inbox.put(kev.Relisted("nodes", (n2,)))
    sched.inbox.put(kev.Relisted("pods", ()))
    drain(sched)
    assert set(sched.cache.nodes.row_of) == {"n2"}
    assert bound.uid not in sched.cache


def test_stop_request_ends_the_loop(harness: Any) -> None:
    sched, _, _ = harness
    sched.inbox.put(StopRequested("test"))
    sched.run()
    assert sched.stopping and sched.stop_reason == "test"


def _metered(gates: dict[str, bool] | None = None) -> tuple[Scheduler, BaseOutbox, Any]:
    """A synced scheduler with a metrics registry; returns it, its outbox and the metrics."""
    from ksched.metrics import Metrics

    metrics = Metrics()
    sched, outbox = synced_scheduler(metrics=metrics, gates=gates)
    return sched, outbox, metrics


def _twenty_pods_on_two_nodes(gates: dict[str, bool]) -> str:
    """The /metrics text after 20 identical pods were bound on two nodes (two sampled cycles)."""
    from prometheus_client import generate_latest

    sched, outbox, metrics = _metered(gates)
    for name in ("n1", "n2"):  # two nodes: with one feasible node upstream skips PreScore and Score
        sched.inbox.put(
            kev.Upserted("nodes", node_from_dict(make_node(name, cpu="64", memory="64Gi", pods=110)))
        )
    for i in range(20):
        sched.inbox.put(kev.Upserted("pods", pending(f"p{i}", cpu="100m")))
    sched.run(until=lambda s: len(outbox.binds) == 20)
    return generate_latest(metrics.registry).decode()


def _plugin_observations(text: str, plugin: str, point: str, status: str) -> float:
    prefix = (
        f'scheduler_plugin_execution_duration_seconds_count{{extension_point="{point}",plugin="{plugin}",'
        f'status="{status}"}} '
    )
    for line in text.splitlines():
        if line.startswith(prefix):
            return float(line[len(prefix) :])
    return 0.0


def test_extension_point_and_cache_metrics_are_recorded() -> None:
    text = _twenty_pods_on_two_nodes({"OpportunisticBatching": False})
    # Every cycle reports its extension points, Filter once over all nodes (findNodesThatPassFilters),
    # and the binding cycle's points before Bind also when no plugin has work for the pod.
    for point, status in (
        ("PreFilter", "Success"),
        ("Filter", "Success"),
        ("PreScore", "Success"),
        ("Score", "Success"),
        ("Reserve", "Success"),
        ("Permit", "Success"),
        ("PreBindPreFlight", "Skip"),
        ("PreBind", "Success"),
    ):
        assert (
            f'scheduler_framework_extension_point_duration_seconds_count{{extension_point="{point}",'
            f'profile="default-scheduler",status="{status}"}} 20.0'
        ) in text
    assert 'scheduler_cache_size{type="nodes"} 2.0' in text
    # The built-in plugins, on the same two sampled cycles (upstream's plugin_execution_duration)
    assert 'plugin="PrioritySort"' not in text  # a queue-sort plugin has no timed extension point
    for plugin, point, status in (
        ("NodeResourcesFit", "PreFilter", "Success"),
        ("NodeResourcesFit", "Filter", "Success"),
        ("TaintToleration", "Filter", "Success"),
        ("PodTopologySpread", "PreScore", "Skip"),
        ("NodeResourcesFit", "Score", "Success"),
        ("TaintToleration", "ScoreExtensionNormalize", "Success"),
    ):
        assert _plugin_observations(text, plugin, point, status) == 2.0, (plugin, point)


def test_a_sampled_batched_cycle_times_the_plugin_calls_it_makes() -> None:
    # Both sampled cycles (the 10th and the 20th) reuse the previous pod's results: PreFilter and
    # PreScore run; the row-accounting plugins answer on the row the previous pod went to, as
    # Filter and as Score; TaintToleration's stored verdicts and scores stand, so it is not called
    # (upstream's batched cycle observes no Score plugin either).
    text = _twenty_pods_on_two_nodes({"OpportunisticBatching": True})
    assert 'scheduler_batch_attempts_total{profile="default-scheduler",result="hint_used"} 19.0' in text
    for plugin, point, status, seen in (
        ("NodeResourcesFit", "PreFilter", "Success", 2.0),
        ("PodTopologySpread", "PreScore", "Skip", 2.0),
        ("NodeResourcesFit", "Filter", "Success", 2.0),
        ("NodeResourcesFit", "Score", "Success", 2.0),
        ("NodeResourcesBalancedAllocation", "Score", "Success", 2.0),
        ("TaintToleration", "Filter", "Success", 0.0),
        ("TaintToleration", "ScoreExtensionNormalize", "Success", 0.0),
    ):
        assert _plugin_observations(text, plugin, point, status) == seen, (plugin, point)


def test_the_loop_stops_assuming_pods_at_the_cap_of_bindings_in_flight(
    harness: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At MAX_BINDINGS_IN_FLIGHT unanswered bindings the loop waits for an answer before the next pod."""
    monkeypatch.setattr("ksched.scheduler.loop.MAX_BINDINGS_IN_FLIGHT", 3)
    sched, outbox, _ = harness
    sched.inbox.put(node("n1", cpu="8"))
    pods = [pending(f"p{i}", cpu="100m") for i in range(5)]
    for p in pods:
        sched.inbox.put(kev.Upserted("pods", p))
    sched.run(until=lambda s: len(s.inbox) == 0 and len(outbox.binds) >= 3)
    sched.run(until=lambda s: len(s.inbox) == 0)  # a turn at the cap: still three
    assert len(outbox.binds) == 3 and len(sched.binding) == 3
    assert sched.queue.pending()["active"] == 2
    first, first_node = outbox.binds[0]
    sched.inbox.put(BindDone(first, first_node))
    sched.run(until=lambda s: len(outbox.binds) >= 4)
    assert len(outbox.binds) == 4 and len(sched.binding) == 3


def test_a_sampled_failing_cycle_times_the_postfilter_plugin() -> None:
    from prometheus_client import generate_latest

    sched, _, metrics = _metered()
    sched.inbox.put(node("n1", cpu="1"))
    for i in range(9):  # nine cycles first: the tenth is sampled
        sched.inbox.put(kev.Upserted("pods", pending(f"small-{i}", cpu="10m")))
    drain(sched)
    sched.inbox.put(kev.Upserted("pods", pending("big", cpu="4")))
    drain(sched)
    text = generate_latest(metrics.registry).decode()
    assert (
        'scheduler_plugin_execution_duration_seconds_count{extension_point="PostFilter",'
        'plugin="DefaultPreemption",status="Unschedulable"} 1.0'
    ) in text
    assert 'extension_point="Score"' not in text  # the cycle stopped at Filter
