"""Pods that cannot be scheduled (yet): FailedScheduling events and conditions, scheduling gates, bad input.

Acceptance points 2, 3 and 8 of the scheduler-process issue, against the embedded cluster over HTTP with
the scheduler in-process. Events are read from the store as events.k8s.io/v1 objects.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import pytest
from sched_harness import (
    InProcessScheduler,
    assert_bound_exactly_once,
    assert_cache_consistent,
    bound_count,
    condition,
    events_about,
    node_of,
    pod,
    wait_until,
)

from ksched.sim import SimCluster
from ksched.sim.workloads import make_nodes, node_template, pod_template
from tests.sim_admission import admission_off

StartScheduler = Callable[..., InProcessScheduler]
FIT_BOUND_S = 2.0
"""The issue's bound: an unschedulable pod is bound within 2 s of a node being added that fits it."""


def _create_pod(sim: SimCluster, name: str, body: dict) -> None:
    body = {**body, "metadata": {**body.get("metadata", {}), "name": name}}
    sim.store.create("pods", body, namespace="default")


def test_sched_unschedulable_pod_event_condition_then_bound_when_a_node_fits(
    sim: SimCluster, start_scheduler: StartScheduler
) -> None:
    sim.add_nodes(3, node_template(cpu="4", memory="16Gi"))
    sched = start_scheduler()
    _create_pod(sim, "big", pod_template(cpu="8", memory="1Gi"))
    _create_pod(sim, "small", pod_template(cpu="1", memory="1Gi"))

    message = (  # with DefaultPreemption's part: no node is big enough for eviction to help
        "0/3 nodes are available: 3 Insufficient cpu. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )
    events = wait_until(lambda: events_about(sim, "big", "FailedScheduling"), what="a FailedScheduling event")
    ev = events[0]
    assert ev["apiVersion"] == "events.k8s.io/v1"
    assert ev["type"] == "Warning"
    assert ev["action"] == "Scheduling"
    assert ev["note"] == message
    assert ev["reportingController"] == "default-scheduler"
    assert ev["regarding"]["kind"] == "Pod" and ev["regarding"]["uid"] == pod(sim, "big")["metadata"]["uid"]
    cond = wait_until(lambda: condition(pod(sim, "big")), what="a PodScheduled condition")
    assert (cond["status"], cond["reason"], cond["message"]) == ("False", "Unschedulable", message)
    assert node_of(sim, "big") == ""
    wait_until(lambda: node_of(sim, "small"), what="the small pod to be bound")

    # The pod sits in the unschedulable set (its backoff long over); a node that fits moves it.
    time.sleep(1.2)
    before = len(events_about(sim, "big", "FailedScheduling"))
    assert before == 1  # parked: not retried without a cluster event that could help
    (big_node,) = make_nodes(1, node_template(cpu="16", memory="16Gi"), name_prefix="big-node-")
    t0 = time.monotonic()
    sim.store.create("nodes", big_node)
    wait_until(lambda: node_of(sim, "big"), timeout=10, interval=0.01, what="the big pod to be bound")
    elapsed = time.monotonic() - t0
    print(f"time to bind after node add: {elapsed * 1000:.0f} ms")
    assert node_of(sim, "big") == "big-node-0"
    assert elapsed <= FIT_BOUND_S, f"bound {elapsed:.2f}s after the node was added"
    wait_until(lambda: events_about(sim, "big", "Scheduled"), what="a Scheduled event")
    assert (
        events_about(sim, "big", "Scheduled")[0]["note"] == "Successfully assigned default/big to big-node-0"
    )
    assert_bound_exactly_once(sim, 2)
    assert_cache_consistent(sched, sim)


def test_sched_gated_pod_waits_until_the_gate_is_removed(
    sim: SimCluster, start_scheduler: StartScheduler
) -> None:
    sim.add_nodes(2)
    sched = start_scheduler()
    gated = pod_template(cpu="100m", memory="100Mi")
    gated["spec"]["schedulingGates"] = [{"name": "example.com/quota"}, {"name": "example.com/review"}]
    _create_pod(sim, "gated", gated)
    _create_pod(sim, "free", pod_template(cpu="100m", memory="100Mi"))

    cond = wait_until(lambda: condition(pod(sim, "gated")), what="a PodScheduled condition on the gated pod")
    assert (cond["status"], cond["reason"]) == ("False", "SchedulingGated")
    assert cond["message"] == "Scheduling is blocked due to non-empty scheduling gates"
    wait_until(lambda: node_of(sim, "free"), what="the ungated pod to be bound")

    def drop_gate(name: str) -> None:
        def fn(cur: dict) -> dict:
            gates = [g for g in cur["spec"]["schedulingGates"] if g["name"] != name]
            return {**cur, "spec": {**cur["spec"], "schedulingGates": gates}}

        sim.store.mutate("pods", "gated", "default", fn)

    drop_gate("example.com/quota")  # one gate left: still waiting
    time.sleep(1.0)
    assert node_of(sim, "gated") == ""
    assert not [r for r in sim.audit.records() if r.name == "gated"]
    assert sched.probe(lambda s: s.queue.pending()).get("gated", 0) == 1
    assert not events_about(sim, "gated", "FailedScheduling")

    drop_gate("example.com/review")
    wait_until(lambda: node_of(sim, "gated"), what="the pod to be bound once its last gate is gone")
    assert_bound_exactly_once(sim, 2)
    assert_cache_consistent(sched, sim)


def test_sched_invalid_quantity_reported_and_others_still_scheduled(
    sim: SimCluster, start_scheduler: StartScheduler, monkeypatch: pytest.MonkeyPatch
) -> None:
    sim.add_nodes(2)
    bad = pod_template(cpu="abc", memory="100Mi")
    with admission_off():
        _create_pod(sim, "bad-cpu", bad)
    sim.add_pods(5, pod_template(cpu="100m", memory="100Mi"))
    sched = start_scheduler()
    sim.add_pods(5, pod_template(cpu="100m", memory="100Mi"), start=5)

    field = "spec.containers[0].resources.requests.cpu"
    events = wait_until(
        lambda: events_about(sim, "bad-cpu", "FailedScheduling"), what="a FailedScheduling event"
    )
    assert field in events[0]["note"] and "abc" in events[0]["note"], events[0]["note"]
    assert events[0]["type"] == "Warning"
    cond = wait_until(lambda: condition(pod(sim, "bad-cpu")), what="a PodScheduled condition")
    assert cond["status"] == "False" and field in cond["message"]
    wait_until(lambda: bound_count(sim) == 10, what="the 10 valid pods to be bound")
    assert node_of(sim, "bad-cpu") == ""

    # Fixing the pod makes it schedulable; the loop never stopped.
    def fix(cur: dict) -> dict:
        c = dict(cur["spec"]["containers"][0])
        c["resources"] = {"requests": {"cpu": "100m", "memory": "100Mi"}}
        return {**cur, "spec": {**cur["spec"], "containers": [c]}}

    with admission_off():  # a resources change is refused on a live pod, and so is this one's
        sim.store.mutate("pods", "bad-cpu", "default", fix)
    wait_until(lambda: node_of(sim, "bad-cpu"), what="the fixed pod to be bound")
    assert len(events_about(sim, "bad-cpu", "FailedScheduling")) == 1  # reported once
    assert_bound_exactly_once(sim, 11)
    assert_cache_consistent(sched, sim)


def test_sched_node_with_malformed_taint_is_skipped(
    sim: SimCluster, start_scheduler: StartScheduler, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="ksched")
    sim.add_nodes(2, node_template(cpu="4", memory="16Gi"))
    # A much bigger node the scoring would prefer, if it could read it.
    (bad,) = make_nodes(1, node_template(cpu="64", memory="256Gi"), name_prefix="bad-node-")
    bad["spec"] = {"taints": [{"key": "example.com/flaky", "value": "x", "effect": "Sometimes"}]}
    with admission_off():
        sim.store.create("nodes", bad)
    sched = start_scheduler()
    sim.add_pods(20, pod_template(cpu="100m", memory="100Mi"))

    wait_until(lambda: bound_count(sim) == 20, what="20 pods to be bound")
    used = {p["spec"]["nodeName"] for p in sim.store.list("pods")}
    assert used <= {"node-0", "node-1"}, used
    logged = [r for r in caplog.records if r.levelno >= logging.ERROR and "bad-node-0" in r.getMessage()]
    assert logged, [r.getMessage() for r in caplog.records]
    assert "spec.taints[0].effect" in logged[0].getMessage()
    assert sched.probe(lambda s: "bad-node-0" not in s.cache.nodes.row_of)
    assert_bound_exactly_once(sim, 20)
