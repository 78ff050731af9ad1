"""Watch semantics: resume from a resourceVersion, 410 after the window, bookmarks, selectors, drops."""

from __future__ import annotations

import socket
import threading
import time
from urllib.parse import urlsplit

from kubernetes import client, watch
from simhttp import request
from simhttp import watch as read_watch

from ksched.sim import FaultConfig, SimCluster, SimConfig


def _rv(sim: SimCluster) -> int:
    return sim.store.rv


def test_watch_resumes_from_resource_version(sim: SimCluster) -> None:
    sim.add_pods(3, name_prefix="a-")
    start = _rv(sim)
    sim.add_pods(2, name_prefix="b-")
    sim.store.delete("pods", "a-0", "default")
    evs = read_watch(sim.url, f"/api/v1/namespaces/default/pods?watch=true&resourceVersion={start}", 3)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in evs] == [
        ("ADDED", "b-0"),
        ("ADDED", "b-1"),
        ("DELETED", "a-0"),
    ]
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in evs]
    assert rvs == sorted(rvs) and rvs[0] > start
    # resume after the second event: only the third comes again
    again = read_watch(sim.url, f"/api/v1/namespaces/default/pods?watch=1&resourceVersion={rvs[1]}", 1)
    assert again[0]["type"] == "DELETED"


def test_watch_without_rv_starts_with_current_state(sim: SimCluster) -> None:
    evs = read_watch(sim.url, "/api/v1/nodes?watch=true", 3)
    assert sorted(e["object"]["metadata"]["name"] for e in evs) == ["node-0", "node-1", "node-2"]
    assert {e["type"] for e in evs} == {"ADDED"}


def test_watch_too_old_gets_410_expired(sim: SimCluster) -> None:
    start = _rv(sim)
    sim.add_pods(60, name_prefix="x-")  # the fixture's window is 50 events
    evs = read_watch(sim.url, f"/api/v1/pods?watch=true&resourceVersion={start}", 5)
    assert len(evs) == 1 and evs[0]["type"] == "ERROR"
    status = evs[0]["object"]
    assert (status["kind"], status["code"], status["reason"]) == ("Status", 410, "Expired")
    # a recent RV still works
    ok = read_watch(sim.url, f"/api/v1/pods?watch=true&resourceVersion={_rv(sim) - 10}&timeoutSeconds=1", 20)
    assert len(ok) == 10 and all(e["type"] == "ADDED" for e in ok)


def test_bookmarks(sim: SimCluster) -> None:
    path = f"/api/v1/pods?watch=true&resourceVersion={_rv(sim)}&allowWatchBookmarks=true&timeoutSeconds=2"
    sim.add_pods(1, name_prefix="bm-")
    evs = read_watch(sim.url, path, 2)
    assert evs[0]["type"] == "ADDED"
    assert evs[1]["type"] == "BOOKMARK"
    assert evs[1]["object"]["kind"] == "Pod"
    assert set(evs[1]["object"]["metadata"]) == {"resourceVersion"}
    assert int(evs[1]["object"]["metadata"]["resourceVersion"]) >= int(
        evs[0]["object"]["metadata"]["resourceVersion"]
    )


def test_watch_timeout_seconds_ends_stream(sim: SimCluster) -> None:
    t0 = time.monotonic()
    evs = read_watch(sim.url, f"/api/v1/pods?watch=true&resourceVersion={_rv(sim)}&timeoutSeconds=1", 10)
    assert evs == [] and 0.9 < time.monotonic() - t0 < 4


def test_selector_transitions_become_added_and_deleted(sim: SimCluster) -> None:
    sim.add_pods(1, name_prefix="t-")
    start = _rv(sim)

    def bind(cur: dict) -> dict:
        return {**cur, "spec": {**cur["spec"], "nodeName": "node-0"}}

    sim.kubelet.detach()  # keep this test to exactly the two writes below
    sim.store.mutate("pods", "t-0", "default", bind, subresource="binding")
    unbound = read_watch(
        sim.url,
        f"/api/v1/pods?watch=1&resourceVersion={start}&fieldSelector=spec.nodeName%3D&timeoutSeconds=1",
        5,
    )
    on_node = read_watch(
        sim.url,
        f"/api/v1/pods?watch=1&resourceVersion={start}&fieldSelector=spec.nodeName%3Dnode-0&timeoutSeconds=1",
        5,
    )
    assert [e["type"] for e in unbound] == ["DELETED"]
    assert [e["type"] for e in on_node] == ["ADDED"]


def test_python_client_watch_resume(sim: SimCluster) -> None:
    with client.ApiClient(client.Configuration(host=sim.url)) as api:
        v1 = client.CoreV1Api(api)
        listed = v1.list_namespaced_pod("default")
        sim.add_pods(2, name_prefix="w-")
        w = watch.Watch()
        seen = []
        for ev in w.stream(
            v1.list_namespaced_pod,
            "default",
            resource_version=listed.metadata.resource_version,
            timeout_seconds=1,
        ):
            seen.append((ev["type"], ev["object"].metadata.name))
            if len(seen) == 2:
                w.stop()
        assert seen == [("ADDED", "w-0"), ("ADDED", "w-1")]


def test_injected_watch_drop(sim: SimCluster) -> None:
    sim.faults.configure(FaultConfig(watch_drop_every=3))
    start = _rv(sim)
    sim.add_pods(7, name_prefix="d-")
    evs = read_watch(sim.url, f"/api/v1/pods?watch=true&resourceVersion={start}", 10)
    assert len(evs) == 3  # stream closed after three events; a client resumes from the third's RV
    rest = read_watch(
        sim.url,
        f"/api/v1/pods?watch=true&resourceVersion={evs[-1]['object']['metadata']['resourceVersion']}",
        10,
    )
    assert len(rest) == 3


def test_slow_watcher_is_closed_and_does_not_stall_others() -> None:
    N = 2000
    """A watcher that stops reading is cut off; a fast one sees every event meanwhile."""
    # 1 s: the fast reader is a thread sharing the interpreter with 2,000 creates, and may pause
    # for a few hundred milliseconds without being slow.
    with SimCluster(SimConfig(slow_watcher_timeout_s=1.0, kubelet=False)) as sim:
        u = urlsplit(sim.url)
        start = _rv(sim)
        with socket.socket() as slow:
            slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            slow.connect((u.hostname, u.port))
            slow.sendall(
                f"GET /api/v1/pods?watch=true&resourceVersion={start} HTTP/1.1\r\nHost: x\r\n\r\n".encode()
            )
            fast_result: list[int] = []
            big = {
                "metadata": {"annotations": {"pad": "x" * 5000}},
                "spec": {"containers": [{"name": "c", "image": "pause"}]},
            }

            def fast() -> None:
                evs = read_watch(sim.url, f"/api/v1/pods?watch=true&resourceVersion={start}", N, timeout_s=10)
                fast_result.append(len(evs))

            t = threading.Thread(target=fast)
            t.start()
            time.sleep(0.1)
            for i in range(N):  # ~10 MB of events, more than the kernel and transport buffers hold
                meta = {**big["metadata"], "name": f"big-{i}"}
                sim.store.create("pods", {**big, "metadata": meta}, namespace="default")
            t.join(10)
            assert fast_result == [N]
            time.sleep(sim.config.slow_watcher_timeout_s + 0.5)
            slow.settimeout(5)
            received = b""
            try:
                while chunk := slow.recv(65536):
                    received += chunk
            except (ConnectionResetError, TimeoutError):
                pass
        assert b"HTTP/1.1 200" in received
        assert received.count(b'"type":"ADDED"') < N  # it was cut off before the end
        assert request(sim.url, "GET", "/admin/stats")[2]["watches"] == 0
