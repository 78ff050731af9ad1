"""client-go's REST client metrics from ksched's API client and its bind worker, against the sim.

What client-go counts (``rest/request.go``, ``with_retry.go``): one ``requests_total`` per request for
its final answer, one ``request_retries_total`` per retried attempt, the duration of a whole request
but not of a watch, each attempt's body size and each wait on the client-side limiter.
"""

from __future__ import annotations

import asyncio
import threading
from contextlib import aclosing
from pathlib import Path

import pytest

from ksched.errors import NotFound
from ksched.kube import ApiClient, ClientSettings, IOThread, load_connection
from ksched.kube import writers as w
from ksched.kube.bind_worker import BindWorker
from ksched.kube.request_metrics import RequestTally
from ksched.sim import ErrorRule, FaultConfig, SimCluster
from tests.integration.kube.conftest import FAST_RETRY


def _client(io: IOThread, kubeconfig: Path, tally: RequestTally, *, qps: float = 0.0) -> ApiClient:
    settings = ClientSettings(qps=qps, burst=1, retry=FAST_RETRY, request_timeout_s=5.0)
    return io.client(load_connection(str(kubeconfig)), settings=settings, metrics=tally)


def _uid(sim: SimCluster, name: str) -> str:
    pod = sim.store.get("pods", name, "default")
    assert pod is not None
    return str(pod["metadata"]["uid"])


def test_requests_answers_retries_sizes_and_limiter_waits(
    sim: SimCluster, io: IOThread, kubeconfig: Path
) -> None:
    tally = RequestTally()
    client = _client(io, kubeconfig, tally, qps=20.0)
    host = client.host
    assert host == sim.url.removeprefix("http://")
    sim.add_pods(3)
    io.run(client.get("/api/v1/namespaces/default/pods/pod-0"))
    with pytest.raises(NotFound):
        io.run(client.get("/api/v1/namespaces/default/pods/nope"))
    rule = ErrorRule(verb="create", resource="pods/binding", code=503, rate=1.0, retry_after_s=0)
    sim.faults.configure(FaultConfig(errors=(rule,)))
    timer = threading.Timer(0.1, sim.faults.configure, args=(FaultConfig(),))
    timer.start()
    try:
        io.run(w.bind(client, "default", "pod-1", _uid(sim, "pod-1"), "node-1"))
    finally:
        timer.join()
    for name in ("pod-0", "pod-2"):  # back to back at 20/s with a burst of 1: the second one waits
        io.run(w.bind(client, "default", name, _uid(sim, name), "node-2"))

    assert tally.requests[("200", "GET", host)] == 1
    assert tally.requests[("404", "GET", host)] == 1
    assert tally.requests[("201", "POST", host)] == 3
    retried = tally.retries[("503", "POST", host)]
    assert retried >= 1
    posts = 3 + retried  # one body per attempt
    assert sum(tally.request_size[("POST", host)].counts) == posts
    assert tally.request_size[("GET", host)].sum == 0.0  # a GET has no body
    assert sum(tally.duration[("POST", host)].counts) == 3  # per request, retries included
    assert sum(tally.response_size[("GET", host)].counts) == 2
    limiter = tally.rate_limiter[("POST", host)]
    assert sum(limiter.counts) == posts and limiter.sum > 0.0  # writes only, every attempt
    assert ("GET", host) not in tally.rate_limiter


def test_a_watch_counts_its_answer_but_no_duration(sim: SimCluster, io: IOThread, kubeconfig: Path) -> None:
    tally = RequestTally()
    client = _client(io, kubeconfig, tally)

    async def first_event() -> None:
        async with aclosing(client.watch("/api/v1/nodes", timeout_s=5)) as stream:
            async for _ in stream:
                return

    sim.add_nodes(1)
    io.run(first_event())
    assert tally.requests == {("200", "GET", client.host): 1}
    assert tally.duration == {}


def test_the_bind_workers_requests_are_counted_by_the_scheduler(
    sim: SimCluster, io: IOThread, kubeconfig: Path
) -> None:
    async def unused(namespace: str, name: str, uid: str, node: str) -> None:
        raise AssertionError("in-process fallback used")

    tally = RequestTally()
    worker = BindWorker(unused, kubeconfig=str(kubeconfig), qps=0.0, burst=1, request_metrics=tally)
    assert io.run(worker.start(), timeout=30)
    try:
        sim.add_pods(20)

        async def bind_all() -> None:
            await asyncio.gather(
                *(worker.bind("default", f"pod-{i}", _uid(sim, f"pod-{i}"), "node-0") for i in range(20))
            )

        io.run(bind_all(), timeout=60)
    finally:
        io.run(worker.close(), timeout=15)
    host = sim.url.removeprefix("http://")
    # The counts travel with the answers: by the time a binding is answered, it is counted.
    assert tally.requests[("201", "POST", host)] == 20
    assert sum(tally.duration[("POST", host)].counts) == 20
