"""ApiClient against the sim: verbs, pagination, error mapping, retries, Retry-After and the write limit."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from ksched.errors import ApiError, Conflict, NotFound, TooManyRequests
from ksched.kube import ApiClient, ApiConnectionError, IOThread, RetrySettings
from ksched.kube.connection import Connection, Credentials
from ksched.kube.ratelimit import BackoffSettings
from ksched.sim import ErrorRule, FaultConfig, SimCluster

PODS = "/api/v1/namespaces/default/pods"


@contextmanager
def faults_for(sim: SimCluster, config: FaultConfig, seconds: float) -> Iterator[None]:
    """Inject ``config`` now and turn it off after ``seconds`` (from a timer thread joined on exit)."""
    sim.faults.configure(config)
    timer = threading.Timer(seconds, sim.faults.configure, args=(FaultConfig(),))
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        timer.join()
        sim.faults.configure(FaultConfig())


def test_list_follows_continue_tokens(sim: SimCluster, io: IOThread, client: ApiClient) -> None:
    sim.add_pods(25)
    pages = []

    async def collect() -> None:
        async for items, rv in client.list_pages(PODS, limit=10):
            pages.append((len(items), rv))

    io.run(collect())
    assert [n for n, _ in pages] == [10, 10, 5]
    items, rv = io.run(client.list(PODS, limit=10))
    assert sorted(p["metadata"]["name"] for p in items) == sorted(f"pod-{i}" for i in range(25))
    assert rv == pages[-1][1]
    assert int(rv) >= 25


def test_selectors_are_passed(sim: SimCluster, io: IOThread, client: ApiClient) -> None:
    sim.add_pods(3, {"metadata": {"labels": {"app": "a"}}}, name_prefix="a-")
    sim.add_pods(2, {"metadata": {"labels": {"app": "b"}}}, name_prefix="b-")
    items, _ = io.run(client.list(PODS, label_selector="app=b"))
    assert sorted(p["metadata"]["name"] for p in items) == ["b-0", "b-1"]
    items, _ = io.run(client.list("/api/v1/pods", field_selector="metadata.name=a-1"))
    assert [p["metadata"]["name"] for p in items] == ["a-1"]


def test_not_found_carries_the_server_message(io: IOThread, client: ApiClient) -> None:
    with pytest.raises(NotFound) as info:
        io.run(client.get(f"{PODS}/nope"))
    assert info.value.status == 404
    assert 'pods "nope" not found' in info.value.message


def test_create_conflict_and_patch_types(sim: SimCluster, io: IOThread, client: ApiClient) -> None:
    container = {"name": "c", "image": "registry.k8s.io/pause:3.10"}
    body = {"metadata": {"name": "p", "labels": {"a": "1"}}, "spec": {"containers": [container]}}
    io.run(client.post(PODS, body))
    with pytest.raises(Conflict, match="already exists"):
        io.run(client.post(PODS, body))
    io.run(client.patch(f"{PODS}/p", {"metadata": {"labels": {"b": "2"}}}, patch_type="merge"))
    io.run(
        client.patch(
            f"{PODS}/p", [{"op": "add", "path": "/metadata/labels/c", "value": "3"}], patch_type="json"
        )
    )
    pod = io.run(client.patch(f"{PODS}/p", {"metadata": {"labels": {"a": None}}}))
    assert pod["metadata"]["labels"] == {"b": "2", "c": "3"}
    with pytest.raises(ValueError, match="patch_type"):
        io.run(client.patch(f"{PODS}/p", {}, patch_type="apply"))


def test_429_retry_after_is_honoured(sim: SimCluster, io: IOThread, client: ApiClient) -> None:
    rule = ErrorRule(verb="get", resource="namespaces", code=429, rate=1.0, retry_after_s=1)
    with faults_for(sim, FaultConfig(errors=(rule,)), 0.2):
        start = time.monotonic()
        ns = io.run(client.get("/api/v1/namespaces/default"))
        elapsed = time.monotonic() - start
    assert ns["metadata"]["name"] == "default"
    # the client's own backoff is 10-50 ms: waiting a second means Retry-After was obeyed
    assert elapsed >= 0.95
    assert client.stats["retries"] == 1


def test_429_without_retry_raises_with_retry_after(sim: SimCluster, io: IOThread, client: ApiClient) -> None:
    sim.faults.configure(FaultConfig(errors=(ErrorRule(verb="create", code=429, rate=1.0, retry_after_s=7),)))
    with pytest.raises(TooManyRequests) as info:
        io.run(client.post(PODS, {"metadata": {"name": "x"}}))
    assert info.value.retry_after_s == 7.0
    assert "too many requests" in info.value.message
    assert client.stats["retries"] == 0


@pytest.mark.parametrize("code", [500, 503])
def test_5xx_is_retried_with_backoff(
    sim: SimCluster, io: IOThread, code: int, make_client: Callable[..., ApiClient]
) -> None:
    client = make_client(
        retry=RetrySettings(max_retries=20, backoff=BackoffSettings(initial_s=0.02, max_s=0.1))
    )
    rule = ErrorRule(verb="list", resource="pods", code=code, rate=1.0, retry_after_s=0)
    with faults_for(sim, FaultConfig(errors=(rule,)), 0.25):
        items, _ = io.run(client.list(PODS))
    assert items == []
    assert 2 <= client.stats["retries"] <= 20


def test_post_is_not_retried_unless_asked(sim: SimCluster, io: IOThread, client: ApiClient) -> None:
    sim.faults.configure(FaultConfig(errors=(ErrorRule(verb="create", resource="pods", code=500, rate=1.0),)))
    with pytest.raises(ApiError) as info:
        io.run(client.post(PODS, {"metadata": {"name": "x"}}))
    assert info.value.status == 500
    assert client.stats["retries"] == 0
    with pytest.raises(ApiError):
        io.run(client.post(PODS, {"metadata": {"name": "x"}}, retry=True))
    assert client.stats["retries"] == 4  # FAST_RETRY's max_retries


def test_connection_errors_are_retried_then_raised(io: IOThread) -> None:
    conn = Connection(
        server="http://127.0.0.1:9", ssl=None, credentials=Credentials(_NoAuth()), source="test"
    )
    from ksched.kube import ClientSettings

    retry = RetrySettings(max_retries=2, backoff=BackoffSettings(initial_s=0.01, max_s=0.02))
    client = io.client(conn, settings=ClientSettings(retry=retry, request_timeout_s=2.0))
    with pytest.raises(ApiConnectionError) as info:
        io.run(client.get("/api/v1/nodes"))
    assert info.value.status == 0
    assert client.stats["retries"] == 2


class _NoAuth:
    refresh_api_key_hook = None

    def get_api_key_with_prefix(self, identifier: str, alias: str | None = None) -> None:
        return None


def test_write_rate_is_bounded_by_qps(
    sim: SimCluster, io: IOThread, make_client: Callable[..., ApiClient]
) -> None:
    client = make_client(qps=40.0, burst=5)
    import asyncio

    async def writes(n: int) -> None:
        await asyncio.gather(
            *(
                client.post("/api/v1/namespaces/default/events", {"metadata": {"name": f"e{i}"}})
                for i in range(n)
            )
        )

    start = time.monotonic()
    io.run(writes(25))
    elapsed = time.monotonic() - start
    # 5 go at once, the other 20 at 40/s: at least half a second
    assert elapsed >= 0.45
    start = time.monotonic()
    for _ in range(10):  # reads are not limited
        io.run(client.get("/api/v1/namespaces/default"))
    assert client.stats["requests"] == 35
