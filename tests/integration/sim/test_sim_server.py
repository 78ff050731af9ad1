"""The HTTP layer's own routing (aiohttp's low-level server): /admin paths, methods, Expect, big bodies."""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlsplit

from simhttp import request

from ksched.sim import SimCluster


def test_admin_paths_route_by_method(sim: SimCluster) -> None:
    code, _, body = request(sim.url, "GET", "/admin/stats")
    assert code == 200 and body["objects"]["nodes"] == 3
    code, _, body = request(sim.url, "POST", "/admin/stats", "{}")
    assert code == 405 and body["kind"] == "Status" and body["reason"] == "MethodNotAllowed"
    code, _, body = request(sim.url, "GET", "/admin/nope")
    assert code == 404 and body["kind"] == "Status"
    code, _, body = request(sim.url, "POST", "/admin/pods", json.dumps({"count": 2, "name_prefix": "x-"}))
    assert code == 201 and body == {"created": 2}
    code, _, body = request(sim.url, "GET", "/admin/audit?since=0")
    assert code == 200 and body == {"items": []}


def test_expect_100_continue_gets_the_interim_response(sim: SimCluster) -> None:
    u = urlsplit(sim.url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    try:
        body = json.dumps({"metadata": {"name": "big", "annotations": {"a": "x" * 4096}}}).encode()
        conn.putrequest("POST", "/api/v1/namespaces/default/configmaps")
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Content-Length", str(len(body)))
        conn.putheader("Expect", "100-continue")
        conn.endheaders()
        assert conn.sock is not None
        interim = conn.sock.recv(64)
        assert interim.startswith(b"HTTP/1.1 100 Continue")
        conn.send(body)
        resp = conn.getresponse()
        assert resp.status == 201, resp.read()
    finally:
        conn.close()
    assert sim.store.get("configmaps", "big", "default") is not None


def test_a_body_over_one_mebibyte_is_accepted(sim: SimCluster) -> None:
    # A Lease's holder has no size limit (a ConfigMap's data has one of 1 MiB).
    data = {"metadata": {"name": "huge"}, "spec": {"holderIdentity": "x" * (3 * 1024 * 1024)}}
    path = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
    code, _, body = request(sim.url, "POST", path, json.dumps(data))
    assert code == 201, body
