"""The scheduler's writes against the sim: bindings, status patches, events, deletes and Leases."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Callable

import pytest

from ksched.errors import Conflict, NotFound
from ksched.kube import ApiClient, IOThread
from ksched.kube import writers as w
from ksched.sim import FaultConfig, LatencyRule, SimCluster


def _uid(sim: SimCluster, name: str) -> str:
    pod = sim.store.get("pods", name, "default")
    assert pod is not None
    return str(pod["metadata"]["uid"])


def test_bind_sets_node_and_a_second_bind_elsewhere_conflicts(
    sim: SimCluster, io: IOThread, client: ApiClient
) -> None:
    sim.add_pods(1)
    uid = _uid(sim, "pod-0")
    io.run(w.bind(client, "default", "pod-0", uid, "node-1"))
    assert sim.store.get("pods", "pod-0", "default")["spec"]["nodeName"] == "node-1"
    with pytest.raises(Conflict, match="already assigned"):
        io.run(w.bind(client, "default", "pod-0", uid, "node-2"))
    # the same binding again (a retry whose first answer was lost) is recognised as done
    io.run(w.bind(client, "default", "pod-0", uid, "node-1"))
    assert [r.result for r in sim.audit.records()] == ["bound", "conflict", "conflict"]
    assert sim.audit.double_bindings() == []


def test_bind_with_a_stale_uid_conflicts(sim: SimCluster, io: IOThread, client: ApiClient) -> None:
    sim.add_pods(1)
    with pytest.raises(Conflict, match="Precondition failed"):
        io.run(w.bind(client, "default", "pod-0", "not-the-uid", "node-1"))
    assert not sim.store.get("pods", "pod-0", "default")["spec"].get("nodeName")


def test_bind_of_a_missing_pod_is_not_found(io: IOThread, client: ApiClient) -> None:
    with pytest.raises(NotFound):
        io.run(w.bind(client, "default", "ghost", "u", "node-1"))


def test_injected_binding_conflict_is_reported(sim: SimCluster, io: IOThread, client: ApiClient) -> None:
    sim.add_pods(1)
    sim.faults.configure(FaultConfig(binding_conflict_rate=1.0))
    with pytest.raises(Conflict, match="injected"):
        io.run(w.bind(client, "default", "pod-0", _uid(sim, "pod-0"), "node-1"))


def test_patch_pod_status_merges_conditions(sim: SimCluster, io: IOThread, client: ApiClient) -> None:
    sim.add_pods(1)
    cond = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/3 nodes"}
    io.run(w.patch_pod_status(client, "default", "pod-0", {"status": {"conditions": [cond]}}))
    other = {"type": "Ready", "status": "False"}
    pod = io.run(w.patch_pod_status(client, "default", "pod-0", {"status": {"conditions": [other]}}))
    types = {c["type"]: c for c in pod["status"]["conditions"]}
    assert types["PodScheduled"]["reason"] == "Unschedulable"
    assert "Ready" in types
    pod = io.run(w.patch_pod_status(client, "default", "pod-0", {"status": {"nominatedNodeName": "node-2"}}))
    assert pod["status"]["nominatedNodeName"] == "node-2"


def test_delete_pod_with_uid_precondition(sim: SimCluster, io: IOThread, client: ApiClient) -> None:
    sim.add_pods(2)
    with pytest.raises(Conflict, match="Precondition"):
        io.run(w.delete_pod(client, "default", "pod-0", "wrong-uid", grace=0))
    io.run(w.delete_pod(client, "default", "pod-0", _uid(sim, "pod-0"), grace=0))
    assert sim.store.get("pods", "pod-0", "default") is None
    io.run(w.delete_pod(client, "default", "pod-0", "whatever", grace=0))  # already gone: fine


def test_create_event_matches_upstream_shape(sim: SimCluster, io: IOThread, client: ApiClient) -> None:
    sim.add_pods(1)
    now = dt.datetime(2025, 1, 2, 3, 4, 5, 678901, tzinfo=dt.UTC)
    body = w.event_body(
        regarding=w.pod_reference("default", "pod-0", _uid(sim, "pod-0")),
        reason="Scheduled",
        note="Successfully assigned default/pod-0 to node-1",
        action="Binding",
        now=now,
        reporting_instance="default-scheduler-host",
    )
    io.run(w.create_event(client, body))
    events = sim.store.list("events.events.k8s.io", "default")
    assert len(events) == 1
    ev = events[0]
    assert ev["metadata"]["name"].startswith("pod-0.")
    assert ev["eventTime"] == "2025-01-02T03:04:05.678901Z"
    assert ev["reportingController"] == "default-scheduler"
    assert ev["regarding"]["kind"] == "Pod"
    assert (ev["reason"], ev["action"], ev["type"]) == ("Scheduled", "Binding", "Normal")


def test_lease_create_get_update_and_stale_update(io: IOThread, client: ApiClient) -> None:
    assert io.run(w.get_lease(client, "kube-system", "ksched")) is None
    spec = {"holderIdentity": "a", "leaseDurationSeconds": 15}
    created = io.run(w.create_lease(client, "kube-system", "ksched", spec))
    with pytest.raises(Conflict):
        io.run(w.create_lease(client, "kube-system", "ksched", spec))
    lease = io.run(w.get_lease(client, "kube-system", "ksched"))
    assert lease["spec"]["holderIdentity"] == "a"
    lease["spec"]["holderIdentity"] = "b"
    updated = io.run(w.update_lease(client, lease))
    assert updated["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]
    stale = {**created, "spec": {**created["spec"], "holderIdentity": "c"}}
    with pytest.raises(Conflict, match="modified"):
        io.run(w.update_lease(client, stale))
    with pytest.raises(ValueError, match="resourceVersion"):
        io.run(w.update_lease(client, {"metadata": {"name": "ksched", "namespace": "kube-system"}}))
    assert io.run(w.get_lease(client, "kube-system", "ksched"))["spec"]["holderIdentity"] == "b"


def test_many_bindings_in_flight(
    sim: SimCluster, io: IOThread, make_client: Callable[..., ApiClient]
) -> None:
    """200 concurrent bindings with server latency: all land once (throughput is measured in benches)."""
    client = make_client()
    sim.add_pods(200)
    sim.faults.configure(FaultConfig(latency=(LatencyRule(verb="create", resource="pods/binding", ms=20),)))
    pods = [(f"pod-{i}", _uid(sim, f"pod-{i}")) for i in range(200)]

    async def bind_all() -> None:
        await asyncio.gather(
            *(w.bind(client, "default", n, u, f"node-{i % 3}") for i, (n, u) in enumerate(pods))
        )

    io.run(bind_all())
    assert len(sim.audit.bound()) == 200
    assert sim.audit.double_bindings() == []
