"""The lean request path (ksched/kube/lean_http.py): the default for requests, and indistinguishable
from aiohttp on the wire and in its failures.

A scripted server on the I/O loop records the raw requests and answers as each test says (chunked,
up to the connection's end, closing idle or mid-answer), so both paths can be compared byte for
byte; the embedded cluster's fault injection (dropped connections, held requests) and its HTTPS
mode cover the rest. 5xx and 429 with Retry-After are in test_kube_client.py, which runs on the lean
path since it is the default.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ksched.errors import ApiError, TooManyRequests
from ksched.kube import (
    ApiClient,
    ApiConnectionError,
    ClientSettings,
    IOThread,
    RetrySettings,
    load_connection,
)
from ksched.kube.connection import Connection, Credentials
from ksched.kube.ratelimit import BackoffSettings
from ksched.sim import FaultConfig, PartitionRule, SimCluster
from tests.integration.kube.conftest import SMALL

RETRY = RetrySettings(max_retries=2, backoff=BackoffSettings(initial_s=0.01, max_s=0.02))
OK = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"a": "ok"}'
Answer = Callable[[int], list[bytes | None]]
"""What the scripted server sends for its n-th request: byte strings, ``None`` closes the connection."""


class Scripted:
    """An HTTP server on the I/O loop that records each request's raw head and body."""

    def __init__(self, io: IOThread, answer: Answer) -> None:
        self.io, self.answer = io, answer
        self.requests: list[tuple[bytes, bytes]] = []
        self.connections = 0
        self.server = io.run(self._start())
        self.port = self.server.sockets[0].getsockname()[1]

    async def _start(self) -> asyncio.Server:
        return await asyncio.start_server(self._serve, "127.0.0.1", 0)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next((int(v) for k, _, v in _fields(head) if k.lower() == b"content-length"), 0)
                body = await reader.readexactly(length)
                self.requests.append((head, body))
                for part in self.answer(len(self.requests) - 1):
                    if part is None:
                        writer.close()
                        return
                    writer.write(part)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()
        except asyncio.CancelledError:  # the loop is stopping: end quietly (asyncio logs a cancelled handler)
            writer.close()

    def client(self, **settings: Any) -> ApiClient:
        conn = Connection(
            server=f"http://127.0.0.1:{self.port}", ssl=None, credentials=Credentials(_Token()), source="test"
        )
        settings.setdefault("retry", RETRY)
        settings.setdefault("request_timeout_s", 2.0)
        s = ClientSettings(qps=0.0, **settings)
        return self.io.client(conn, settings=s, user_agent="ksched/test")

    def close(self) -> None:
        self.server.close()
        self.io.run(self.server.wait_closed())


def _fields(head: bytes) -> list[tuple[bytes, bytes, bytes]]:
    return [line.partition(b": ") for line in head.split(b"\r\n")[1:] if line]


class _Token:
    refresh_api_key_hook = None

    def get_api_key_with_prefix(self, identifier: str, alias: str | None = None) -> str:
        return "Bearer t0k3n"


@pytest.fixture
def scripted(io: IOThread) -> Iterator[Callable[[Answer], Scripted]]:
    servers: list[Scripted] = []

    def make(answer: Answer) -> Scripted:
        servers.append(Scripted(io, answer))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


# -- on the wire ------------------------------------------------------------------------------------
def _exchange_all(io: IOThread, client: ApiClient) -> None:
    io.run(client.get("/api/v1/namespaces/default/pods/caf%C3%A9"))
    params = {
        "limit": "5",
        "continue": "ab+c/==",
        "labelSelector": "app in (a b),x!=y",
        "fieldSelector": "a=é",
    }
    io.run(client.get("/api/v1/pods", params=params))
    io.run(client.post("/api/v1/namespaces/default/pods/twin%3Fx/binding", {"target": {"name": "n"}}))
    io.run(client.patch("/api/v1/nodes/n", {"metadata": {}}, patch_type="merge"))
    io.run(client.put("/api/v1/nodes/n", {"metadata": {"resourceVersion": "3"}}))
    io.run(client.delete("/api/v1/namespaces/default/pods/p", uid="u"))
    io.run(client.request("POST", "/api/v1/namespaces/default/pods/p/eviction", write=True))


def test_the_lean_path_sends_what_aiohttp_sends(io: IOThread, scripted: Callable[[Answer], Scripted]) -> None:
    lean_server, aio_server = scripted(lambda n: [OK]), scripted(lambda n: [OK])
    lean, aio = lean_server.client(), aio_server.client(lean_http=False)
    _exchange_all(io, lean)
    _exchange_all(io, aio)
    assert lean._session is None and lean._pool is not None and lean._pool.opened == 1  # kept alive
    assert aio._pool is None
    assert len(lean_server.requests) == len(aio_server.requests) == 7
    for (lean_head, lean_body), (aio_head, aio_body) in zip(
        lean_server.requests, aio_server.requests, strict=True
    ):
        assert lean_head.split(b"\r\n")[0] == aio_head.split(b"\r\n")[0]  # the request line, byte for byte
        aio_fields = {k.lower(): v for k, _, v in _fields(aio_head) if k.lower() != b"accept-encoding"}
        aio_fields[b"host"] = aio_fields[b"host"].replace(b"%d" % aio_server.port, b"%d" % lean_server.port)
        assert {k.lower(): v for k, _, v in _fields(lean_head)} == aio_fields
        assert lean_body == aio_body


def test_answers_chunked_or_ended_by_the_connection(
    io: IOThread, scripted: Callable[[Answer], Scripted]
) -> None:
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    chunked += b'4\r\n{"a"\r\n6\r\n: "ok"\r\n1\r\n}\r\n0\r\n\r\n'
    unframed = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"
    server = scripted(lambda n: [chunked] if n % 2 == 0 else [unframed, b'{"a": ', b'"ok"}', None])
    client = server.client()
    for _ in range(2):
        assert io.run(client.get("/api/v1/nodes")) == {"a": "ok"}
        assert io.run(client.get("/api/v1/nodes")) == {"a": "ok"}
    assert server.connections == 2  # the unframed answer closed its connection
    assert client.stats["retries"] == 0


def test_a_connection_the_server_closed_while_idle_is_replaced(
    io: IOThread, scripted: Callable[[Answer], Scripted]
) -> None:
    close_after = OK.replace(b"Content-Length", b"Connection: close\r\nContent-Length")
    server = scripted(lambda n: [OK, None] if n == 0 else [close_after] if n == 1 else [OK])
    client = server.client()
    for _ in range(4):
        assert io.run(client.post("/api/v1/namespaces/default/events", {})) == {"a": "ok"}
        io.run(asyncio.sleep(0.02))  # the close reaches the client while the connection is idle
    assert server.connections == 3
    assert client.stats == {"requests": 4, "retries": 0, "errors": 0}


@pytest.mark.parametrize("lean", [True, False])
@pytest.mark.parametrize("method", ["GET", "POST"])
@pytest.mark.parametrize("cut", [0, len(OK) - 4])
def test_an_answer_cut_short_fails_as_aiohttp_does(
    io: IOThread, scripted: Callable[[Answer], Scripted], lean: bool, method: str, cut: int
) -> None:
    server = scripted(lambda n: [OK[:cut], None])
    client = server.client(lean_http=lean)
    with pytest.raises(ApiConnectionError) as info:
        io.run(client.request(method, "/api/v1/nodes", body={} if method == "POST" else None, retry=True))
    assert info.value.status == 0 and info.value.reason == "ConnectionError"
    assert client.stats["retries"] == RETRY.max_retries
    # aiohttp sends an idempotent request once more when its connection ends before the answer's
    # headers (RFC 9112 9.3.1), and so does the lean path
    per_attempt = 2 if method == "GET" and cut == 0 else 1
    assert len(server.requests) == per_attempt * (RETRY.max_retries + 1)


@pytest.mark.parametrize("code", [429, 503])
def test_retry_after_is_read_as_aiohttp_reads_it(
    io: IOThread, scripted: Callable[[Answer], Scripted], code: int
) -> None:
    status = b'{"kind": "Status", "message": "slow down", "reason": "TooManyRequests"}'
    answer = b"HTTP/1.1 %d X\r\nretry-after: 3\r\nContent-Length: %d\r\n\r\n%s" % (code, len(status), status)
    server = scripted(lambda n: [answer])
    errors = []
    for lean in (True, False):
        client = server.client(lean_http=lean, retry=RetrySettings(max_retries=0))
        with pytest.raises(ApiError) as info:
            io.run(client.post("/api/v1/namespaces/default/events", {}, retry=False))
        errors.append(info.value)
    assert [(type(e), e.status, e.message, getattr(e, "retry_after_s", None)) for e in errors] == [
        (TooManyRequests if code == 429 else ApiError, code, "slow down", 3.0 if code == 429 else None)
    ] * 2


def test_each_held_request_times_out_at_its_own_deadline(
    io: IOThread, scripted: Callable[[Answer], Scripted]
) -> None:
    """One timer watches every request of the pool: a request sent later than a held one, and held
    too, still times out a whole timeout after it was sent, and one answered in between is not hurt."""
    server = scripted(lambda n: [OK] if n == 1 else [])
    client = server.client(request_timeout_s=0.4, retry=RetrySettings(max_retries=0))

    async def timed(delay: float) -> tuple[float, object]:
        await asyncio.sleep(delay)
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            result: object = await client.get("/api/v1/nodes")
        except ApiConnectionError as exc:
            result = exc.reason
        return loop.time() - started, result

    async def three() -> list[tuple[float, object]]:
        async with asyncio.timeout(5.0):  # a request no timer watches would hang here
            return list(await asyncio.gather(timed(0.0), timed(0.1), timed(0.2)))

    (held, first), (quick, answer), (later, second) = io.run(three())
    assert (first, answer, second) == ("Timeout", {"a": "ok"}, "Timeout")
    assert quick < 0.3
    assert 0.4 <= held < 0.6 and 0.4 <= later < 0.6
    assert not client._get_pool()._busy


def test_a_malformed_answer_is_no_answer(io: IOThread, scripted: Callable[[Answer], Scripted]) -> None:
    client = scripted(lambda n: [b"HTTP/1.1 abc\r\n\r\n"]).client()
    with pytest.raises(ApiConnectionError):
        io.run(client.post("/api/v1/namespaces/default/events", {}))


# -- against the embedded cluster's faults ----------------------------------------------------------
def _lean_client(io: IOThread, kubeconfig: Path, **settings: Any) -> ApiClient:
    settings.setdefault("retry", RETRY)
    s = ClientSettings(qps=0.0, request_timeout_s=settings.pop("timeout", 5.0), **settings)
    return io.client(load_connection(str(kubeconfig)), settings=s, user_agent="ksched/lean-test")


def _bind(sim: SimCluster, io: IOThread, client: ApiClient, name: str) -> Any:
    sim.add_pods(1, name_prefix=name)
    pod = sim.store.get("pods", f"{name}0", "default")
    assert pod is not None
    meta = {"name": f"{name}0", "uid": pod["metadata"]["uid"]}
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": meta,
        "target": {"kind": "Node", "name": "node-0"},
    }
    path = f"/api/v1/namespaces/default/pods/{name}0/binding"
    return io.run(client.post(path, body, retry=True, decode=False))


def test_dropped_connections_are_retried_then_raised(sim: SimCluster, io: IOThread, kubeconfig: Path) -> None:
    client = _lean_client(io, kubeconfig)
    assert _bind(sim, io, client, "a-") is None
    sim.faults.set_partitions((PartitionRule(user_agent="lean-test", mode="reset"),))
    with pytest.raises(ApiConnectionError) as info:
        _bind(sim, io, client, "b-")
    assert info.value.reason == "ConnectionError" and client.stats["retries"] == RETRY.max_retries
    sim.faults.set_partitions(())
    assert _bind(sim, io, client, "c-") is None
    assert sim.store.get("pods", "c-0", "default")["spec"]["nodeName"] == "node-0"
    assert client._pool is not None and client._session is None


def test_a_held_request_times_out_and_its_connection_is_dropped(
    sim: SimCluster, io: IOThread, kubeconfig: Path
) -> None:
    client = _lean_client(io, kubeconfig, timeout=0.3, retry=RetrySettings(max_retries=0))
    io.run(client.get("/api/v1/nodes"))
    sim.faults.set_partitions((PartitionRule(user_agent="lean-test", mode="blackhole"),))
    with pytest.raises(ApiConnectionError) as info:
        io.run(client.get("/api/v1/nodes"))
    assert info.value.reason == "Timeout"
    sim.faults.configure(FaultConfig())
    assert io.run(client.get("/api/v1/nodes"))["items"]
    assert client._pool is not None and client._pool.opened == 2


# -- HTTPS ------------------------------------------------------------------------------------------
@pytest.fixture
def secure_sim(tmp_path: Path) -> Iterator[SimCluster]:
    cluster = SimCluster(dataclasses.replace(SMALL, secure=True))
    cluster.add_nodes(1)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.mark.parametrize("server_name", [None, "localhost", "kubernetes.default.svc", "elsewhere.example"])
def test_https_with_the_server_name_verified(
    secure_sim: SimCluster, io: IOThread, tmp_path: Path, server_name: str | None
) -> None:
    conn = load_connection(str(secure_sim.write_kubeconfig(tmp_path / "kc")))
    conn = dataclasses.replace(conn, tls_server_name=server_name)
    settings = ClientSettings(retry=RetrySettings(max_retries=0), request_timeout_s=5.0)
    lean, aio = (io.client(conn, settings=dataclasses.replace(settings, lean_http=x)) for x in (True, False))
    if server_name == "elsewhere.example":  # not in the serving certificate: refused both ways
        for client in (lean, aio):
            with pytest.raises(ApiConnectionError, match="certificate"):
                io.run(client.get("/api/v1/nodes"))
        return
    for _ in range(3):
        assert io.run(lean.get("/api/v1/nodes")) == io.run(aio.get("/api/v1/nodes"))
    assert lean._pool is not None and lean._pool.opened == 1 and lean._session is None
