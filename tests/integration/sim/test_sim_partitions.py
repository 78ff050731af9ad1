"""Partitioning one client off the embedded cluster, and the write audit that names every writer.

Raw HTTP with chosen ``User-Agent`` and ``Authorization`` headers, so each case sees exactly what a
partitioned client sees: an error, a dropped connection, or silence until the partition heals.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from typing import Any
from urllib.parse import urlsplit

import pytest
from simhttp import request

from ksched.sim import PartitionRule, SimCluster
from ksched.sim.faults import FaultConfig
from ksched.sim.writes import credential_digest

CUT = "replica-a"
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p"},
    "spec": {"containers": [{"name": "c", "image": "pause"}]},
}
PODS = "/api/v1/namespaces/default/pods"


def _send(
    sim: SimCluster,
    method: str,
    path: str,
    body: Any = None,
    *,
    agent: str,
    token: str = "",
    timeout: float = 5,
) -> tuple[int, Any]:
    """(status, decoded body), or (0, the exception) when the connection drops or times out."""
    u = urlsplit(sim.url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    headers = {"User-Agent": agent, "Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read() or b"null")
    except (OSError, http.client.HTTPException) as exc:
        return 0, exc
    finally:
        conn.close()


def _partition(sim: SimCluster, **rule: Any) -> None:
    status, _, body = request(sim.url, "PUT", "/admin/partitions", json.dumps({"partitions": [rule]}))
    assert status == 200, body


@pytest.mark.parametrize(
    ("mode", "code"),
    [pytest.param("refuse", 503, id="refuse answers 503"), pytest.param("reset", 0, id="reset drops")],
)
def test_a_partitioned_client_is_cut_off_and_the_others_are_not(
    sim: SimCluster, mode: str, code: int
) -> None:
    _partition(sim, user_agent=CUT, mode=mode)
    got, _ = _send(sim, "POST", PODS, POD, agent=f"ksched/0.1.0 ({CUT})")
    assert got == code
    assert sim.store.get("pods", "p", "default") is None
    assert _send(sim, "GET", PODS, agent=f"ksched/0.1.0 ({CUT})")[0] == code  # reads too
    assert _send(sim, "POST", PODS, POD, agent="ksched/0.1.0 (replica-b)")[0] == 201
    writes = sim.writes.records()
    assert [(w.code, w.fault, w.user_agent) for w in writes] == [
        (code, f"partition-{mode}", f"ksched/0.1.0 ({CUT})"),
        (201, "", "ksched/0.1.0 (replica-b)"),
    ]
    assert not writes[0].reached_store and writes[1].reached_store
    assert sim.faults.counts[f"partition-{mode}"] == 2


def test_a_blackholed_write_is_held_unanswered_and_never_applied(sim: SimCluster) -> None:
    _partition(sim, user_agent=CUT, mode="blackhole")
    answers: list[tuple[int, Any]] = []
    sender = threading.Thread(
        target=lambda: answers.append(_send(sim, "POST", PODS, POD, agent=CUT, timeout=10)), daemon=True
    )
    sender.start()
    time.sleep(0.5)
    assert not answers, "a black-holed request was answered"
    assert sim.writes.records() == []  # still held: no outcome yet
    status, _, _ = request(sim.url, "DELETE", "/admin/partitions")
    assert status == 200
    sender.join(5)
    assert answers and answers[0][0] == 0  # the connection dropped once the partition healed
    assert sim.store.get("pods", "p", "default") is None  # and the write was never applied
    [rec] = sim.writes.records()
    assert (rec.method, rec.path, rec.code, rec.fault) == ("POST", PODS, 0, "partition-blackhole")


def test_a_partition_by_token_and_the_audit_names_the_credential_by_digest(sim: SimCluster) -> None:
    _partition(sim, token="secret-a", mode="refuse", code=500)
    assert _send(sim, "POST", PODS, POD, agent="same", token="secret-a")[0] == 500
    assert _send(sim, "POST", PODS, POD, agent="same", token="secret-b")[0] == 201
    first, second = sim.writes.records()
    assert first.credential == credential_digest("Bearer secret-a") != second.credential
    assert "secret" not in json.dumps(sim.writes.to_json())
    status, _, body = request(sim.url, "GET", "/admin/writes?since=1")
    assert status == 200 and [r["code"] for r in body["items"]] == [201] and body["dropped"] == 0


def test_a_partitioned_clients_watch_is_cut(sim: SimCluster) -> None:
    u = urlsplit(sim.url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=5)
    try:
        conn.request("GET", f"{PODS}?watch=true&allowWatchBookmarks=true", headers={"User-Agent": CUT})
        resp = conn.getresponse()
        assert resp.status == 200
        _partition(sim, user_agent=CUT, mode="refuse")
        with pytest.raises((OSError, http.client.HTTPException)):
            while resp.readline():  # bookmarks until the next wake-up, then the cut
                pass
            raise ConnectionResetError("stream ended")
    finally:
        conn.close()
    assert sim.faults.counts["partition-refuse-watch"] == 1


@pytest.mark.parametrize(
    ("rules", "problem"),
    [
        pytest.param([{"mode": "refuse"}], "set user_agent or token", id="a rule must name a client"),
        pytest.param([{"user_agent": "x", "mode": "drop"}], "mode", id="an unknown mode"),
        pytest.param([{"user_agent": "x", "code": 200}], "code", id="a non-error code"),
        pytest.param([{"user_agent": "x", "speed": 1}], "bad rule", id="an unknown field"),
    ],
)
def test_invalid_partitions_are_refused_with_the_field_named(
    sim: SimCluster, rules: list[dict[str, Any]], problem: str
) -> None:
    status, _, body = request(sim.url, "PUT", "/admin/partitions", json.dumps({"partitions": rules}))
    assert status == 400 and problem in body["message"], body
    with pytest.raises(ValueError, match=problem):
        FaultConfig.from_dict({"partitions": rules})


def test_partitions_replace_alone_and_round_trip(sim: SimCluster) -> None:
    sim.faults.configure(FaultConfig.from_dict({"seed": 3, "watch_drop_every": 7}))
    _partition(sim, user_agent=CUT, mode="blackhole")
    assert sim.faults.config.watch_drop_every == 7  # the other faults stay
    assert sim.faults.config.partitions == (PartitionRule(user_agent=CUT, mode="blackhole"),)
    status, _, body = request(sim.url, "GET", "/admin/faults")
    assert status == 200 and body["partitions"] == [
        {"user_agent": CUT, "token": "", "mode": "blackhole", "code": 503}
    ]
    assert FaultConfig.from_dict(body) == sim.faults.config
    status, _, body = request(sim.url, "DELETE", "/admin/partitions")
    assert status == 200 and body == {"partitions": []}
