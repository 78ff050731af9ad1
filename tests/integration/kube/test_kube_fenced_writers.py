"""Every writer refuses once the fence is shut, checked from the server's side (the write audit).

The writers: the API client itself (each attempt, retries and rate-limited writes included), the
outbox (bindings, status patches, events, preemptions), a preemption's evictions, the plugin
client, and the bind worker in both processes (the parent's hand-off and the child's own check).
"""

from __future__ import annotations

import itertools
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from ksched.errors import ApiError
from ksched.kube import ApiClient, IOThread
from ksched.kube.bind_worker import READY, BindWorker
from ksched.kube.fence import Fence, Fenced
from ksched.model.pod import Pod, pod_from_dict
from ksched.scheduler.binder import ApiOutbox
from ksched.scheduler.inbox import BindDone, Inbox, PreemptionDone
from ksched.scheduler.plugin_client import NotLeading, PluginApiClient
from ksched.scheduler.preemption import Eviction, PreemptionJob, carry_out, disruption_patch
from ksched.sim import ErrorRule, FaultConfig, SimCluster

POD_PATH = "/api/v1/namespaces/default/pods/pod-0"
STATUS = {"status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}}


def _pod(sim: SimCluster, name: str = "pod-0") -> Pod:
    return pod_from_dict(sim.store.get("pods", name, "default") or {})


def _leading(fence: Fence, for_s: float = 60.0) -> Fence:
    fence.acquired(until=time.monotonic() + for_s)
    return fence


def _fenced_client(make_client: Callable[..., ApiClient], fence: Fence, **kw: object) -> ApiClient:
    client = make_client(**kw)
    client.gate = fence.writes
    return client


def test_a_shut_gate_stops_every_write_and_no_read(
    sim: SimCluster, io: IOThread, make_client: Callable[..., ApiClient]
) -> None:
    sim.add_pods(1)
    client = _fenced_client(make_client, Fence(leader_election=True))
    with pytest.raises(Fenced, match=f"PATCH {POD_PATH}/status not sent: this replica is a standby"):
        io.run(client.patch(POD_PATH + "/status", STATUS), timeout=10)
    assert io.run(client.get(POD_PATH), timeout=10)["metadata"]["name"] == "pod-0"
    assert sim.writes.records() == []


def test_retries_stop_at_the_fence(
    sim: SimCluster, io: IOThread, make_client: Callable[..., ApiClient]
) -> None:
    """The gate is asked before every attempt: two attempts pass, the third finds it shut."""
    sim.add_pods(1)
    sim.faults.configure(FaultConfig(errors=(ErrorRule(verb="patch", code=503, rate=1.0),)))
    ticks = itertools.count()
    fence = Fence(leader_election=True, clock=lambda: float(next(ticks)))
    fence.acquired(until=1.5)  # the clock reads 0, then 1: open; then 2: shut
    client = _fenced_client(make_client, fence)
    with pytest.raises(Fenced):
        io.run(client.patch(POD_PATH + "/status", STATUS), timeout=10)
    assert [w.code for w in sim.writes.records()] == [503, 503]


def test_a_write_waiting_for_the_rate_limiter_is_not_sent_after_the_loss(
    sim: SimCluster, io: IOThread, make_client: Callable[..., ApiClient]
) -> None:
    sim.add_pods(1)
    fence = _leading(Fence(leader_election=True))
    client = _fenced_client(make_client, fence, qps=2.0, burst=1)
    io.run(client.patch(POD_PATH + "/status", STATUS), timeout=10)  # takes the only token
    waiting = io.submit(client.patch(POD_PATH + "/status", STATUS))  # waits ~0.5 s for the next
    time.sleep(0.1)
    io.call_soon(fence.deposed, "lost")
    with pytest.raises(Fenced, match="lost the Lease"):
        waiting.result(10)
    assert len(sim.writes.records()) == 1


def test_the_outbox_sends_nothing_while_fenced(
    sim: SimCluster, io: IOThread, make_client: Callable[..., ApiClient]
) -> None:
    sim.add_pods(2)
    fence = Fence(leader_election=True)
    client = _fenced_client(make_client, fence)
    inbox = Inbox()
    outbox = ApiOutbox(io, client, inbox, fence=fence.writes)
    pod = _pod(sim)
    outbox.bind(pod, "node-0")
    outbox.patch_status(pod, STATUS)
    outbox.event({"metadata": {"namespace": "default"}, "reason": "FailedScheduling", "type": "Warning"})
    outbox.preempt(PreemptionJob(_pod(sim, "pod-1"), "node-0", ()))
    bound, preempted = inbox.wait(5), inbox.wait(5)
    assert isinstance(bound, BindDone) and isinstance(bound.error, Fenced)
    assert isinstance(preempted, PreemptionDone) and isinstance(preempted.error, Fenced)
    assert outbox.fenced_writes == 4
    io.run(outbox.drain(1.0), timeout=5)

    _leading(fence)
    outbox.bind(pod, "node-0")
    done = inbox.wait(10)
    assert isinstance(done, BindDone) and done.error is None
    assert [(w.method, w.code) for w in sim.writes.records()] == [("POST", 201)]
    io.run(outbox.close(), timeout=5)


def test_a_preemption_started_before_the_loss_evicts_no_one_after_it(
    sim: SimCluster, io: IOThread, make_client: Callable[..., ApiClient]
) -> None:
    sim.add_pods(2)
    fence = _leading(Fence(leader_election=True))
    outbox = ApiOutbox(io, _fenced_client(make_client, fence), Inbox(), fence=fence.writes)
    victim = _pod(sim, "pod-1")
    job = PreemptionJob(
        _pod(sim), "node-0", (Eviction(victim, disruption_patch("default-scheduler", 0.0), {}),)
    )
    io.run(_deposed_then(fence), timeout=5)
    done: list[PreemptionDone] = []
    io.run(carry_out(job, outbox, done.append), timeout=10)
    assert len(done) == 1 and done[0].error is not None
    assert sim.store.get("pods", "pod-1", "default") is not None
    assert sim.writes.records() == []


async def _deposed_then(fence: Fence) -> None:
    fence.deposed("lost")


def test_the_plugin_client_refuses_writes_once_deposed(
    sim: SimCluster, io: IOThread, make_client: Callable[..., ApiClient]
) -> None:
    sim.add_pods(1)
    fence = _leading(Fence(leader_election=True))
    plugins = PluginApiClient(io, _fenced_client(make_client, fence), fence=fence.writes)
    patch = {"metadata": {"annotations": {"a": "b"}}}
    plugins.request("PATCH", POD_PATH, patch, timeout_s=5).result(10)
    io.run(_deposed_then(fence), timeout=5)
    with pytest.raises(NotLeading):
        plugins.request("PATCH", POD_PATH, patch, timeout_s=5).result(10)
    assert plugins.request("GET", POD_PATH, timeout_s=5).result(10)["metadata"]["name"] == "pod-0"
    assert len(sim.writes.records()) == 1


async def _unused(namespace: str, name: str, uid: str, node: str) -> None:
    raise AssertionError(f"in-process fallback used for {namespace}/{name}")


def test_the_bind_worker_shares_the_fence(sim: SimCluster, io: IOThread, kubeconfig: Path) -> None:
    sim.add_pods(2)
    fence = _leading(Fence(leader_election=True))
    agent = "ksched/test (replica-x) bind-worker"
    bw = BindWorker(_unused, kubeconfig=str(kubeconfig), qps=0.0, burst=1, fence=fence, user_agent=agent)
    try:
        assert io.run(bw.start(), timeout=30)
        pod = _pod(sim)
        io.run(bw.bind("default", pod.name, pod.uid, "node-0"), timeout=30)
        io.run(_deposed_then(fence), timeout=5)
        other = _pod(sim, "pod-1")
        with pytest.raises(Fenced):
            io.run(bw.bind("default", other.name, other.uid, "node-0"), timeout=30)
    finally:
        io.run(bw.close(), timeout=15)
        fence.close()
    assert [(w.path.rsplit("/", 2)[1], w.user_agent) for w in sim.writes.records()] == [("pod-0", agent)]


@pytest.mark.parametrize("bound", [pytest.param(True, id="leading"), pytest.param(False, id="deposed")])
def test_the_bind_worker_child_checks_the_shared_deadline_itself(
    sim: SimCluster, kubeconfig: Path, bound: bool
) -> None:
    """A binding already handed to the child is not sent once the parent's fence is shut."""
    sim.add_pods(1)
    fence = _leading(Fence(leader_election=True))
    fd = fence.share()
    if not bound:
        fence.deposed("lost")
    request = orjson.dumps([7, "default", "pod-0", _pod(sim).uid, "node-2"])
    cmd = [
        sys.executable,
        "-m",
        "ksched.kube.bind_worker",
        "--kubeconfig",
        str(kubeconfig),
        "--fence-fd",
        str(fd),
    ]
    proc = subprocess.run(
        [*cmd, "--qps", "0", "--burst", "1"],
        input=request + b"\n",
        capture_output=True,
        timeout=60,
        check=False,
        pass_fds=(fd,),
    )
    fence.close()
    assert proc.returncode == 0, proc.stderr.decode()
    # The child's request metrics travel as ["metrics", ...] lines ahead of the answers.
    ready, answer = [line for line in proc.stdout.splitlines() if not line.startswith(b'["metrics"')]
    assert ready == READY.strip()
    if bound:
        assert answer == b"[7]"
    else:
        assert orjson.loads(answer)[:3] == [7, 0, "Fenced"]
        assert sim.writes.records() == []
    assert bool((sim.store.get("pods", "pod-0", "default") or {})["spec"].get("nodeName")) is bound


def test_a_deposed_writes_error_is_not_an_api_answer() -> None:
    """Callers that handle API answers (retry, read back after 409) do not mistake a refusal for one."""
    assert not issubclass(Fenced, ApiError)
