"""The binding path against the sim: undecoded answers, retries, the outbox's batched hand-off."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from ksched.errors import Conflict, NotFound
from ksched.kube import ApiClient, IOThread
from ksched.kube import writers as w
from ksched.model.paths import pod_path
from ksched.model.pod import pod_from_dict
from ksched.scheduler.binder import ApiOutbox, OutboxSettings
from ksched.scheduler.inbox import BindDone, Inbox
from ksched.sim import ErrorRule, FaultConfig, SimCluster


def _pod(sim: SimCluster, name: str) -> dict:
    pod = sim.store.get("pods", name, "default")
    assert pod is not None
    return pod


def test_an_undecoded_post_returns_none_and_errors_still_carry_the_message(
    sim: SimCluster, io: IOThread, client: ApiClient
) -> None:
    sim.add_pods(1)
    path = pod_path("default", "pod-0", "binding")
    body = w.binding_body("default", "pod-0", _pod(sim, "pod-0")["metadata"]["uid"], "node-1")
    assert io.run(client.post(path, body, decode=False)) is None
    assert _pod(sim, "pod-0")["spec"]["nodeName"] == "node-1"
    with pytest.raises(Conflict, match="already assigned"):
        io.run(client.post(path, {**body, "target": {"kind": "Node", "name": "node-2"}}, decode=False))


def test_a_binding_answered_503_is_retried_until_it_lands(
    sim: SimCluster, io: IOThread, client: ApiClient
) -> None:
    sim.add_pods(1)
    uid = _pod(sim, "pod-0")["metadata"]["uid"]
    rule = ErrorRule(verb="create", resource="pods/binding", code=503, rate=1.0, retry_after_s=0)
    sim.faults.configure(FaultConfig(errors=(rule,)))
    timer = threading.Timer(0.05, sim.faults.configure, args=(FaultConfig(),))
    timer.start()
    try:
        io.run(w.bind(client, "default", "pod-0", uid, "node-2"))
    finally:
        timer.join()
    assert _pod(sim, "pod-0")["spec"]["nodeName"] == "node-2"
    assert client.stats["retries"] >= 1
    assert sim.audit.double_bindings() == []


def _wait_for(inbox: Inbox, n: int, timeout: float = 20.0) -> list[BindDone]:
    out: list[BindDone] = []
    deadline = time.monotonic() + timeout
    while len(out) < n and time.monotonic() < deadline:
        item = inbox.wait(0.1)
        if item is not None:
            out.append(item)
    assert len(out) == n, f"{len(out)} of {n} bind outcomes arrived"
    return out


def test_a_burst_of_binds_from_the_scheduling_thread_all_land_once(
    sim: SimCluster, io: IOThread, make_client: Callable[..., ApiClient]
) -> None:
    """More binds than bind slots (a small pool): they queue on the outbox's semaphore and all land."""
    client = make_client(max_connections=12)
    settings = OutboxSettings(max_writes_in_flight=2, reserved_connections=4)
    sim.add_pods(300)
    pods = [pod_from_dict(_pod(sim, f"pod-{i}")) for i in range(300)]
    inbox = Inbox()
    outbox = ApiOutbox(io, client, inbox, settings)
    assert outbox.bind_limit() == 6
    for i, pod in enumerate(pods):
        outbox.bind(pod, f"node-{i % 3}")
    done = _wait_for(inbox, 300)
    assert [d.error for d in done if d.error is not None] == []
    assert sorted(d.pod.name for d in done) == sorted(p.name for p in pods)
    assert len(sim.audit.bound()) == 300
    assert sim.audit.double_bindings() == []
    for i in (0, 1, 299):
        assert _pod(sim, f"pod-{i}")["spec"]["nodeName"] == f"node-{i % 3}"


def test_bind_failures_come_back_as_outcomes(sim: SimCluster, io: IOThread, client: ApiClient) -> None:
    sim.add_pods(2)
    bound_elsewhere = pod_from_dict(_pod(sim, "pod-0"))
    io.run(w.bind(client, "default", "pod-0", bound_elsewhere.uid, "node-0"))
    gone = pod_from_dict(_pod(sim, "pod-1"))
    sim.store.delete("pods", "pod-1", "default")
    inbox = Inbox()
    outbox = ApiOutbox(io, client, inbox)
    outbox.bind(bound_elsewhere, "node-1")
    outbox.bind(gone, "node-1")
    errors = {d.pod.name: d.error for d in _wait_for(inbox, 2)}
    assert isinstance(errors["pod-0"], Conflict)
    assert isinstance(errors["pod-1"], NotFound)
