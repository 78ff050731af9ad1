"""Preemption over real HTTP against the embedded cluster (issue 6, "done when").

The scheduler runs in-process with the default profile (DefaultPreemption included). Victims are
created already bound (``spec.nodeName``), so where they run is fixed; priorities are set in
``spec.priority`` directly (the sim does not resolve PriorityClasses). The cluster's kubelet
stand-in honours grace periods here (``grace_scale=1``), so a victim with a grace period stays
``Terminating`` long enough to be looked at; the others use a grace period of 0 and go at once.

Upstream's integration counterpart: ``test/integration/scheduler/preemption/preemption_test.go``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
from prometheus_client import generate_latest
from sched_harness import (
    SIM,
    InProcessScheduler,
    condition,
    events_about,
    metric_value,
    node_of,
    pod,
    wait_until,
)

from ksched.sim import FaultConfig, LatencyRule, SimCluster
from ksched.sim.workloads import node_template, pod_template

StartScheduler = Callable[..., InProcessScheduler]

GRACEFUL = dataclasses.replace(SIM, grace_scale=1.0)


@pytest.fixture
def sim(make_sim: Callable[..., SimCluster]) -> SimCluster:
    """Two nodes of 1 cpu (``node-0``, ``node-1``) and a kubelet that honours grace periods."""
    cluster = make_sim(GRACEFUL)
    cluster.add_nodes(2, node_template(cpu="1", memory="8Gi"))
    return cluster


def create(
    sim: SimCluster,
    name: str,
    *,
    cpu: str = "1",
    priority: int = 0,
    node: str = "",
    grace: int = 0,
    labels: dict[str, str] | None = None,
    never: bool = False,
) -> dict[str, Any]:
    """A pod; with ``node`` it is created bound there (a running victim)."""
    obj = pod_template(cpu=cpu, memory=None, priority=priority, labels=labels)
    obj["metadata"]["name"] = name
    obj["spec"]["terminationGracePeriodSeconds"] = grace
    if node:
        obj["spec"]["nodeName"] = node
    if never:
        obj["spec"]["preemptionPolicy"] = "Never"
    if sim.store.get("namespaces", "default") is None:
        sim.store.create("namespaces", {"metadata": {"name": "default"}})
    return sim.store.create("pods", obj)


def exists(sim: SimCluster, name: str) -> bool:
    return sim.store.get("pods", name, "default") is not None


def bound_to(sim: SimCluster, name: str, node: str, timeout: float = 20.0) -> None:
    wait_until(
        lambda: exists(sim, name) and node_of(sim, name) == node,
        timeout=timeout,
        what=f"pod {name} to be bound to {node}",
    )


def metrics_text(sched: InProcessScheduler) -> str:
    return generate_latest(sched.metrics.registry).decode()


def bindings_of(sim: SimCluster, name: str) -> list[Any]:
    return [r for r in sim.audit.records() if r.name == name and r.result == "bound"]


def synced(sched: InProcessScheduler, pods: int) -> None:
    """Wait until the scheduler's cache holds ``pods`` bound pods (the victims are known)."""
    wait_until(lambda: sched.probe(lambda s: len(s.cache.pods)) == pods, what=f"{pods} pods in the cache")


def test_high_priority_pod_preempts_the_right_victims_and_is_bound(
    sim: SimCluster, start_scheduler: StartScheduler
) -> None:
    # node-0: two low pods (priorities 1 and 2, 500m each); node-1: two priority-5 pods. A
    # priority-10 pod of 500m fits where one 500m pod leaves: node-0 (its highest victim has the
    # lowest priority), evicting the least important pod there only (the other is reprieved).
    create(sim, "low-1", cpu="500m", priority=1, node="node-0", grace=2)
    create(sim, "low-2", cpu="500m", priority=2, node="node-0")
    create(sim, "mid-a", cpu="500m", priority=5, node="node-1")
    create(sim, "mid-b", cpu="500m", priority=5, node="node-1")
    sched = start_scheduler()
    synced(sched, 4)
    high = create(sim, "high", cpu="500m", priority=10)
    uid = high["metadata"]["uid"]

    # The victim gets DisruptionTarget, then its deletion starts (grace 2 s): it is Terminating.
    def terminating() -> dict[str, Any] | None:
        obj = sim.store.get("pods", "low-1", "default")
        return obj if obj is not None and obj["metadata"].get("deletionTimestamp") else None

    victim = wait_until(terminating, what="low-1 to be terminating")
    cond = condition(victim, "DisruptionTarget")
    assert cond is not None
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "True",
        "PreemptionByScheduler",
        "default-scheduler: preempting to accommodate a higher priority pod",
    )
    wait_until(
        lambda: pod(sim, "high").get("status", {}).get("nominatedNodeName") == "node-0",
        what="high to be nominated to node-0",
    )
    [event] = wait_until(lambda: events_about(sim, "low-1", "Preempted"), what="the Preempted event")
    assert (event["type"], event["action"], event["note"]) == (
        "Normal",
        "Preempting",
        f"Preempted by pod {uid} on node node-0",
    )
    assert event["related"]["uid"] == uid

    bound_to(sim, "high", "node-0")
    assert not exists(sim, "low-1")
    assert all(exists(sim, n) for n in ("low-2", "mid-a", "mid-b"))
    assert len(bindings_of(sim, "high")) == 1 and sim.audit.double_bindings() == []
    # The nomination is cleared once the pod is bound.
    wait_until(
        lambda: not pod(sim, "high").get("status", {}).get("nominatedNodeName"),
        what="the nomination to be cleared after binding",
    )
    text = metrics_text(sched)
    assert metric_value(text, "scheduler_preemption_attempts_total") == 1
    assert metric_value(text, "scheduler_preemption_victims_count") == 1
    assert metric_value(text, "scheduler_preemption_victims_sum") == 1


def test_pdb_with_no_disruptions_allowed_steers_eviction_to_another_node(
    sim: SimCluster, start_scheduler: StartScheduler
) -> None:
    create(sim, "guarded", priority=0, node="node-0", labels={"app": "guarded"})
    create(sim, "free", priority=0, node="node-1", labels={"app": "free"})
    sim.store.create(
        "poddisruptionbudgets",
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "guard", "namespace": "default"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "guarded"}}},
            "status": {"disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 1},
        },
    )
    sched = start_scheduler()
    synced(sched, 2)
    wait_until(lambda: sched.probe(lambda s: len(s.cache.pdbs)) == 1, what="the PDB in the cache")
    create(sim, "high", priority=100)
    bound_to(sim, "high", "node-1")
    assert exists(sim, "guarded") and not exists(sim, "free")
    assert events_about(sim, "guarded", "Preempted") == []


def test_pdb_is_violated_when_no_other_node_helps(sim: SimCluster, start_scheduler: StartScheduler) -> None:
    # Upstream's PDB is best effort: with every candidate violating one, preemption still happens.
    create(sim, "guarded", priority=0, node="node-0", labels={"app": "guarded"})
    create(sim, "important", priority=1000, node="node-1")
    sim.store.create(
        "poddisruptionbudgets",
        {
            "metadata": {"name": "guard", "namespace": "default"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "guarded"}}},
            "status": {"disruptionsAllowed": 0},
        },
    )
    sched = start_scheduler()
    synced(sched, 2)
    wait_until(lambda: sched.probe(lambda s: len(s.cache.pdbs)) == 1, what="the PDB in the cache")
    create(sim, "high", priority=100)
    bound_to(sim, "high", "node-0")
    assert exists(sim, "important")


def test_preemption_policy_never_never_evicts(sim: SimCluster, start_scheduler: StartScheduler) -> None:
    create(sim, "low-0", priority=0, node="node-0")
    create(sim, "low-1", priority=0, node="node-1")
    sched = start_scheduler()
    synced(sched, 2)
    create(sim, "polite", priority=1000, never=True)
    expected = (
        "0/2 nodes are available: 2 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never."
    )
    wait_until(
        lambda: (condition(pod(sim, "polite")) or {}).get("message") == expected,
        what="the FailedScheduling condition",
    )
    [ev] = events_about(sim, "polite", "FailedScheduling")
    assert ev["note"] == expected
    assert exists(sim, "low-0") and exists(sim, "low-1")
    assert not pod(sim, "polite").get("status", {}).get("nominatedNodeName")
    assert metric_value(metrics_text(sched), "scheduler_preemption_victims_count") == 0


def test_nominated_node_is_not_taken_by_a_lower_priority_pod(
    sim: SimCluster, start_scheduler: StartScheduler
) -> None:
    # The scheduler's DELETEs are slowed down (2 s) and the test removes the victim itself first, so
    # node-0 is free while the preemptor is still held back by its preemption in progress. A
    # priority-5 pod tried then would fit node-0, but the priority-10 preemptor is nominated there
    # and counts as running on it (upstream's two-pass rule): it must not take the spot.
    create(sim, "victim", priority=0, node="node-0")
    create(sim, "keeper", priority=20, node="node-1")
    sim.faults.configure(FaultConfig(latency=(LatencyRule(verb="delete", resource="pods", ms=2000),)))
    sched = start_scheduler()
    synced(sched, 2)
    high_uid = create(sim, "high", priority=10)["metadata"]["uid"]
    wait_until(
        lambda: pod(sim, "high").get("status", {}).get("nominatedNodeName") == "node-0",
        what="high to be nominated to node-0",
    )
    wait_until(
        lambda: condition(pod(sim, "victim"), "DisruptionTarget") is not None, what="the victim to be marked"
    )
    sim.store.delete("pods", "victim", "default", grace_period_s=0)
    synced(sched, 1)  # node-0 is empty in the scheduler's cache now
    create(sim, "sneaky", priority=5)
    wait_until(lambda: events_about(sim, "sneaky", "FailedScheduling"), what="sneaky to be tried")
    assert sched.probe(lambda s: high_uid in s.preemption.in_progress), "the window must still be open"
    assert not node_of(sim, "sneaky")
    bound_to(sim, "high", "node-0")
    assert not node_of(sim, "sneaky") and bindings_of(sim, "sneaky") == []
    assert exists(sim, "keeper")
    # sneaky cannot preempt either: the preemptor outranks it on node-0, keeper on node-1.
    msg = (condition(pod(sim, "sneaky")) or {}).get("message", "")
    assert msg.startswith("0/2 nodes are available: 2 Insufficient cpu. preemption: "), msg
    sim.faults.configure(FaultConfig())


def test_victim_deleted_by_someone_else_before_our_delete(
    sim: SimCluster, start_scheduler: StartScheduler
) -> None:
    # DELETEs are slowed down, so the test can delete the victim after the scheduler patched its
    # DisruptionTarget condition and before the scheduler's own DELETE lands (which then gets 404).
    create(sim, "victim", priority=0, node="node-0")
    create(sim, "keeper", priority=20, node="node-1")
    sim.faults.configure(FaultConfig(latency=(LatencyRule(verb="delete", resource="pods", ms=1500),)))
    sched = start_scheduler()
    synced(sched, 2)
    create(sim, "high", priority=10)

    def marked() -> bool:
        obj = sim.store.get("pods", "victim", "default")
        return obj is not None and condition(obj, "DisruptionTarget") is not None

    wait_until(marked, what="the victim's DisruptionTarget condition")
    sim.store.delete("pods", "victim", "default", grace_period_s=0)
    bound_to(sim, "high", "node-0")
    # upstream records Preempted only after its own delete succeeded
    wait_until(lambda: sched.probe(lambda s: not s.preemption.in_progress), what="the preemption to end")
    assert events_about(sim, "victim", "Preempted") == []
    assert len(bindings_of(sim, "high")) == 1 and sim.audit.double_bindings() == []
    sim.faults.configure(FaultConfig())


def test_negative_priorities(sim: SimCluster, start_scheduler: StartScheduler) -> None:
    create(sim, "very-low", priority=-100, node="node-0")
    create(sim, "low", priority=-10, node="node-1")
    sched = start_scheduler()
    synced(sched, 2)
    create(sim, "neg", priority=-50)  # outranks only very-low
    bound_to(sim, "neg", "node-0")
    assert not exists(sim, "very-low") and exists(sim, "low")
    create(sim, "lowest", priority=-1000)  # outranks nobody: stays pending, evicts nothing
    wait_until(lambda: events_about(sim, "lowest", "FailedScheduling"), what="lowest to be tried")
    assert exists(sim, "neg") and exists(sim, "low") and not node_of(sim, "lowest")
    assert sim.audit.double_bindings() == []
    assert all(len(bindings_of(sim, n)) <= 1 for n in ("neg", "lowest"))
