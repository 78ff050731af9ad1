"""Cluster events that move parked pods: a bound pod's label change, a node delete.

Issue "the control loop as upstream's", Done when: a label change on a bound pod that satisfies a
parked pod's required affinity gets that pod scheduled within 2 s (not after the 5-minute
unschedulable timeout); a node delete does likewise for spreading. Against the embedded cluster
over HTTP, the scheduler in-process.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from sched_harness import InProcessScheduler, assert_bound_exactly_once, events_about, node_of, wait_until

from ksched.sim import SimCluster
from ksched.sim.workloads import make_nodes, node_template, pod_template

StartScheduler = Callable[..., InProcessScheduler]
MOVE_BOUND_S = 2.0
ZONE = "topology.kubernetes.io/zone"


def _create_pod(sim: SimCluster, name: str, body: dict[str, Any]) -> None:
    body = {**body, "metadata": {**body.get("metadata", {}), "name": name}}
    sim.store.create("pods", body, namespace="default")


def _parked(sim: SimCluster, name: str) -> None:
    """Wait for the first FailedScheduling of ``name``, then past its backoff, so that only a
    cluster event can move it."""
    wait_until(lambda: events_about(sim, name, "FailedScheduling"), what=f"{name} to fail once")
    time.sleep(1.2)
    assert node_of(sim, name) == ""
    assert len(events_about(sim, name, "FailedScheduling")) == 1


def _bound_within(sim: SimCluster, name: str, t0: float) -> float:
    wait_until(lambda: node_of(sim, name), timeout=10, interval=0.01, what=f"{name} to be bound")
    return time.monotonic() - t0


def test_sched_label_change_on_bound_pod_moves_pod_waiting_for_affinity(
    sim: SimCluster, start_scheduler: StartScheduler
) -> None:
    sim.add_nodes(3, node_template(cpu="4", memory="16Gi"))
    start_scheduler()
    _create_pod(sim, "backend", pod_template(labels={"app": "backend"}))
    wait_until(lambda: node_of(sim, "backend"), what="the backend pod to be bound")
    wants_db = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"role": "db"}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    _create_pod(sim, "client", pod_template(affinity=wants_db))
    _parked(sim, "client")

    def relabel(obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj["metadata"]
        return {**obj, "metadata": {**meta, "labels": {**meta.get("labels", {}), "role": "db"}}}

    t0 = time.monotonic()
    sim.store.mutate("pods", "backend", "default", relabel)
    elapsed = _bound_within(sim, "client", t0)
    print(f"bound {elapsed * 1000:.0f} ms after the label change")
    assert node_of(sim, "client") == node_of(sim, "backend")
    assert elapsed <= MOVE_BOUND_S, f"bound {elapsed:.2f}s after the bound pod's label changed"
    assert_bound_exactly_once(sim, 2)


def test_sched_node_delete_moves_pod_waiting_for_spread(
    sim: SimCluster, start_scheduler: StartScheduler
) -> None:
    (in_a,) = make_nodes(1, node_template(labels={ZONE: "a"}), name_prefix="a-")
    tainted = node_template(
        labels={ZONE: "b"}, taints=[{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
    )
    (in_b,) = make_nodes(1, tainted, name_prefix="b-")
    sim.store.create("nodes", in_a)
    sim.store.create("nodes", in_b)
    start_scheduler()
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]
    _create_pod(sim, "web-0", pod_template(labels={"app": "web"}, topology_spread=spread))
    wait_until(lambda: node_of(sim, "web-0"), what="the first web pod to be bound")
    # Zone b counts as a domain with no web pod (its taint is ignored by default), so a second
    # pod in zone a would make the skew 2; zone b's node does not tolerate it either.
    _create_pod(sim, "web-1", pod_template(labels={"app": "web"}, topology_spread=spread))
    _parked(sim, "web-1")

    t0 = time.monotonic()
    sim.store.delete("nodes", "b-0")
    elapsed = _bound_within(sim, "web-1", t0)
    print(f"bound {elapsed * 1000:.0f} ms after the node delete")
    assert node_of(sim, "web-1") == "a-0"
    assert elapsed <= MOVE_BOUND_S, f"bound {elapsed:.2f}s after the node was deleted"
    assert_bound_exactly_once(sim, 2)
