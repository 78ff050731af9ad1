"""The cheap request path: URLs built without parsing, shared header objects, batched hand-off, bind slots.

These shortcuts must give exactly what the plain route gives (the same URL, the same headers, every
handed-over call run once and in order); the end-to-end behaviour against the sim is in
``tests/integration/kube/test_kube_bind_path.py``.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from yarl import URL

from ksched.kube import ApiClient, ClientSettings, IOThread
from ksched.kube.client import _Exchange
from ksched.kube.connection import Connection, Credentials
from ksched.scheduler.binder import ApiOutbox, OutboxSettings
from ksched.scheduler.inbox import Inbox


class _Config:
    """A stand-in for ``kubernetes.client.Configuration`` with a settable bearer token."""

    refresh_api_key_hook = None

    def __init__(self, token: str | None = None) -> None:
        self.token = token

    def get_api_key_with_prefix(self, identifier: str, alias: str | None = None) -> str | None:
        return f"Bearer {self.token}" if self.token else None


def _client(server: str = "http://127.0.0.1:6443", token: str | None = None, **settings: Any) -> ApiClient:
    conn = Connection(server=server, ssl=None, credentials=Credentials(_Config(token)), source="test")
    return ApiClient(conn, settings=ClientSettings(**settings))


# -- URLs -------------------------------------------------------------------------------------------
PLAIN = [
    "/api/v1/namespaces/default/pods/pod-0/binding",
    "/api/v1/nodes",
    "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/ksched",
    "/api/v1/namespaces/kube-system/pods/a.b-c_d~e/status",
    "/apis/rbac.authorization.k8s.io/v1/clusterroles/system:kube-scheduler",
]
ENCODED = [  # what ksched.model.paths makes of odd names: sent exactly so, never re-encoded or decoded
    "/api/v1/namespaces/default/pods/with%20space",
    "/api/v1/namespaces/default/pods/caf%C3%A9",
    "/api/v1/namespaces/default/pods/50%25",
    "/api/v1/namespaces/default/pods/a%2Fb/binding",
    "/api/v1/namespaces/default/pods/tw%0Ain/status",
    "/api/v1/namespaces/default/pods/twin%3Fx",
    "/api/v1/namespaces/default/pods/twin%23",
    "/api/v1/namespaces/default/pods/%2E%2E",
    "/api/v1/namespaces/default/pods/nul%00",
]
NOT_ENCODED = [
    "/api/v1/namespaces/default/pods/with space",
    "/api/v1/namespaces/default/pods/caf\u00e9",
    "/api/v1/namespaces/default/pods/tw\nin",
    "/api/v1/namespaces/default/pods/50%",
    "/api/v1/namespaces/default/pods/50%zz",
    "/api/v1/namespaces/default/pods/../nodes",
    "/api/v1/namespaces/default/pods/./x",
    "/api/v1/pods?watch=true",
    "/api/v1/pods#frag",
    "relative",
    "",
]


@pytest.mark.parametrize("server", ["http://127.0.0.1:6443", "https://kube.example:443/prefix/k8s"])
@pytest.mark.parametrize("path", PLAIN + ENCODED)
def test_an_encoded_path_is_sent_exactly_as_given(server: str, path: str) -> None:
    built = _client(server)._url(path)
    assert isinstance(built, URL)
    assert built.raw_path == URL(server).raw_path.rstrip("/") + path
    assert built.origin() == URL(server).origin()
    assert not built.raw_query_string and not built.raw_fragment


@pytest.mark.parametrize("path", PLAIN)
def test_plain_paths_are_the_url_parsing_would_give(path: str) -> None:
    assert _client()._url(path) == URL("http://127.0.0.1:6443" + path)


@pytest.mark.parametrize("path", NOT_ENCODED)
def test_a_path_that_is_not_encoded_is_refused(path: str) -> None:
    with pytest.raises(ValueError, match=r"percent-encoded|dot segment"):
        _client()._url(path)


def test_a_server_url_with_a_query_is_always_parsed() -> None:
    assert _client("http://h:1/?x=1")._url("/api/v1/nodes") == "http://h:1/?x=1/api/v1/nodes"


# -- headers ----------------------------------------------------------------------------------------
def test_headers_are_built_once_per_credential_and_content_type() -> None:
    client = _client(token="t1")
    json_headers = client._headers("application/json")
    assert json_headers is not None
    assert dict(json_headers) == {"Authorization": "Bearer t1", "Content-Type": "application/json"}
    assert client._headers("application/json") is json_headers
    get_headers = client._headers(None)
    assert get_headers is not None and dict(get_headers) == {"Authorization": "Bearer t1"}
    client.connection.credentials.header = "Bearer t2"  # what a refresh does
    assert dict(client._headers(None) or {}) == {"Authorization": "Bearer t2"}


def test_no_credentials_and_no_body_send_no_extra_headers() -> None:
    client = _client()
    assert client._headers(None) is None
    assert dict(client._headers("application/merge-patch+json") or {}) == {
        "Content-Type": "application/merge-patch+json"
    }


def test_the_header_cache_stays_small_when_tokens_rotate() -> None:
    client = _client(token="t0")
    for i in range(50):
        client.connection.credentials.header = f"Bearer t{i}"
        assert dict(client._headers(None) or {}) == {"Authorization": f"Bearer t{i}"}
    assert len(client._header_cache) <= 8


def test_pool_waits_arm_no_connect_timer_but_new_connections_are_bounded() -> None:
    timeout = _client(connect_timeout_s=3.0, request_timeout_s=9.0)._timeout
    assert (timeout.total, timeout.connect, timeout.sock_connect) == (9.0, None, 3.0)


# -- the lean path's request bytes -----------------------------------------------------------------
def test_a_binding_request_is_the_request_line_headers_and_body() -> None:
    client = _client(token="t1")
    path = "/api/v1/namespaces/default/pods/caf%C3%A9/binding"
    url = client._url(path)
    assert isinstance(url, URL)
    raw = client._lean_request(_Exchange("POST", url, path, None, b"{}", "application/json", True), url)
    assert raw == (
        b"POST /api/v1/namespaces/default/pods/caf%C3%A9/binding HTTP/1.1\r\nHost: 127.0.0.1:6443\r\n"
        b"User-Agent: " + client.user_agent.encode() + b"\r\nAccept: application/json\r\n"
        b"Authorization: Bearer t1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
    )
    get = client._lean_request(_Exchange("GET", url, "/api/v1/nodes", None, None, None, True), url)
    assert get.endswith(b"Authorization: Bearer t1\r\n\r\n") and b"Content-" not in get


@pytest.mark.parametrize("server", ["http://h:1/?x=1", "http://user:pw@h:1", "ftp://h:1"])
def test_servers_the_lean_path_cannot_reach_go_by_aiohttp(server: str) -> None:
    assert not _client(server)._lean
    assert _client("https://h:1/prefix")._lean


def test_a_header_value_that_would_split_the_request_is_refused() -> None:
    client = _client(token="t1\r\nX-Evil: 1")
    with pytest.raises(ValueError, match="newline"):
        client._lean_head("GET", None)


# -- batched hand-off -------------------------------------------------------------------------------
def test_batched_calls_all_run_once_in_order_from_several_threads() -> None:
    seen: list[tuple[int, int]] = []
    done = threading.Event()
    per_thread, threads = 3000, 3
    with IOThread(name="ksched-io-test") as io:

        def feed(t: int) -> None:
            for i in range(per_thread):
                io.call_soon_batched(seen.append, (t, i))

        workers = [threading.Thread(target=feed, args=(t,)) for t in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        io.call_soon_batched(done.set)
        assert done.wait(5.0)
    assert len(seen) == per_thread * threads
    for t in range(threads):
        assert [i for tt, i in seen if tt == t] == list(range(per_thread))


def test_a_failing_batched_call_does_not_stop_the_others() -> None:
    seen: list[int] = []
    errors: list[dict[str, Any]] = []
    done = threading.Event()

    def boom() -> None:
        raise ValueError("boom")

    with IOThread(name="ksched-io-test") as io:
        io.loop.set_exception_handler(lambda _loop, ctx: errors.append(ctx))
        io.call_soon_batched(seen.append, 1)
        io.call_soon_batched(boom)
        io.call_soon_batched(seen.append, 2)
        io.call_soon_batched(done.set)
        assert done.wait(5.0)
    assert seen == [1, 2]
    assert len(errors) == 1 and isinstance(errors[0]["exception"], ValueError)


def test_batched_calls_after_stop_raise() -> None:
    io = IOThread(name="ksched-io-test").start()
    io.stop()
    with pytest.raises(RuntimeError):
        io.call_soon_batched(print)


# -- bind slots -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("max_connections", "settings", "expected"),
    [
        (100, OutboxSettings(), 68),  # 100 - 16 writes - 16 reserved: binds never queue in aiohttp
        (100, OutboxSettings(max_binds_in_flight=10), 10),
        (1000, OutboxSettings(), 512),
        (0, OutboxSettings(), 512),  # aiohttp: no pool limit
        (20, OutboxSettings(), 1),
    ],
)
def test_bind_limit_fits_the_connection_pool(
    max_connections: int, settings: OutboxSettings, expected: int
) -> None:
    client = _client(max_connections=max_connections)
    outbox = ApiOutbox(IOThread(name="unused"), client, Inbox(), settings)
    assert outbox.bind_limit() == expected
