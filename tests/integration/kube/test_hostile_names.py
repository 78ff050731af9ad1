"""Hostile names against the embedded cluster over HTTP: every request names exactly its object.

Names holding ``? # \\n NUL``, spaces or non-ASCII letters go through every writer (binding, status
patch, event create and series patch, Lease get/create/update, the preemption's delete), in
process and through the bind worker child; names no path can carry (``/``, ``%``, ``.``, ``..``)
are refused before anything is sent. The sim's write audit is the judge: each record's raw path,
segment by segment unquoted, names the object meant, its decoded path is that unquoted, and no
object but the ones meant changed. Last, look-alikes of a pod ``twin`` of another scheduler run
through the scheduler itself, which must never write to ``twin``.

Such objects cannot be created through the API (kube-apiserver refuses their names), so they are
put into the store directly: admitted under a placeholder name by a scratch store (so they carry
what admission gives a real object), then committed under the hostile name with the store's own
``_commit``.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import http.client
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import orjson
import pytest

from ksched.errors import ApiError, Conflict
from ksched.kube import ApiClient, IOThread
from ksched.kube import writers as w
from ksched.kube.bind_worker import BindWorker
from ksched.kube.fence import Fence
from ksched.model.paths import PathSegmentError
from ksched.scheduler.leader import LeaderElectionSettings, LeaderElector
from ksched.sim import SimCluster
from ksched.sim.store import Store
from ksched.sim.workloads import make_pods, pod_template
from tests.integration.scheduler.sched_harness import (
    InProcessScheduler,
    metric_value,
    wait_until,
    write_config,
)

SENDABLE = ["tw\nin", "twin?x", "twin#", "twin ", "nul\x00", "caf\u00e9", "\u65e5\u672c", "tab\tx", "a;b:c@d"]
UNSENDABLE = ["twin/binding", "twin/status", "twin/", "tw%0Ain", "50%", "..", "."]
EVENTS = "events.events.k8s.io"
LEASES = "leases.coordination.k8s.io"
Key = tuple[str, str, str]
"""(store key, namespace, name)."""


def _insert(sim: SimCluster, resource: str, obj: dict[str, Any]) -> dict[str, Any]:
    """Store ``obj`` under its own name, however odd, as admission would have stored it."""
    name = obj["metadata"]["name"]
    scratch = Store()
    placeholder = {**obj, "metadata": {**obj["metadata"], "name": "placeholder"}}
    scratch.create(resource, placeholder)
    table = scratch.table(resource)
    (stored,) = (orjson.loads(orjson.dumps(e.obj)) for e in table.objects.values())
    stored["metadata"]["name"] = name
    with sim.store.lock:
        stored["metadata"]["uid"] = sim.store._new_uid()
        sim.store._commit(sim.store.table(resource), "ADDED", stored, None, own_meta=True)
    return stored


def _pod(sim: SimCluster, name: str, scheduler: str = "default-scheduler") -> dict[str, Any]:
    (pod,) = make_pods(1, pod_template(cpu="10m", memory="10Mi"), "default", "x")
    pod["metadata"]["name"] = name
    pod["spec"]["schedulerName"] = scheduler
    return _insert(sim, "pods", pod)


def _versions(sim: SimCluster) -> dict[Key, str]:
    """Every pod's, event's and lease's resourceVersion."""
    out: dict[Key, str] = {}
    for resource in ("pods", EVENTS, LEASES):
        for (ns, name), entry in list(sim.store.table(resource).objects.items()):
            out[(resource, ns, name)] = entry.obj["metadata"]["resourceVersion"]
    return out


def _regarding(sim: SimCluster, key: Key) -> str:
    """The name of the object an Event is about."""
    event = sim.store.get(EVENTS, key[2], key[1])
    assert event is not None
    return str(event["regarding"]["name"])


def _changed(before: dict[Key, str], after: dict[Key, str]) -> set[Key]:
    keys = before.keys() | after.keys()
    return {k for k in keys if before.get(k) != after.get(k)}


def _target(raw_path: str) -> tuple[str, str, str, str]:
    """(resource, namespace, name, subresource) of an API path, each segment unquoted."""
    parts = [unquote(p, errors="strict") for p in raw_path.split("/")[1:]]
    rest = parts[2:] if parts[0] == "api" else parts[3:]
    assert rest[0] == "namespaces", raw_path
    ns, rest = rest[1], rest[2:]
    assert 1 <= len(rest) <= 3, raw_path
    return rest[0], ns, rest[1] if len(rest) > 1 else "", rest[2] if len(rest) > 2 else ""


def _targets(sim: SimCluster, since: int = 0) -> list[tuple[str, tuple[str, str, str, str], int]]:
    """(method, target, code) of every write the sim recorded; each decoded path checked too."""
    out = []
    for rec in sim.writes.records(since):
        assert rec.raw_path, rec
        assert unquote(rec.raw_path) == rec.path, rec  # decoded exactly: no normalising, no cut
        out.append((rec.method, _target(rec.raw_path), rec.code))
    return out


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


# ------------------------------------------------------------------------------------ every writer
async def _every_writer(client: ApiClient, name: str, uid: str) -> list[str]:
    """Run every writer on pod ``name`` (and an Event and a Lease of that name); what happened."""
    seen = []
    await w.bind(client, "default", name, uid, "node-0")
    cond = {"type": "PodScheduled", "status": "True", "reason": "Hostile"}
    await w.patch_pod_status(client, "default", name, {"status": {"conditions": [cond]}}, uid)
    with pytest.raises(Conflict, match="Precondition failed: UID in precondition: wrong"):
        await w.patch_pod_status(client, "default", name, {"status": {"nominatedNodeName": "x"}}, "wrong")
    ref = w.pod_reference("default", name, uid)
    event = w.event_body(regarding=ref, reason="Scheduled", note="n", action="Binding", now=_now())
    try:
        await w.create_event(client, event, retry=False)
        seen.append("event created")
    except ApiError as exc:  # the name may be refused as no valid Event name: a 4xx, never a 5xx
        assert 400 <= exc.status < 500, exc
        seen.append(f"event refused {exc.status}")
    await w.write_event(client, {"metadata": {"name": f"{name}.1", "namespace": "default"}}, _series())
    lease = await w.get_lease(client, "default", name)
    assert lease is not None and lease["metadata"]["name"] == name
    lease["spec"]["holderIdentity"] = "renewed"
    await w.update_lease(client, lease)
    try:
        await w.create_lease(client, "default", f"{name}-new", {"holderIdentity": "b"})
        seen.append("lease created")
    except ApiError as exc:
        assert 400 <= exc.status < 500, exc
        seen.append(f"lease refused {exc.status}")
    with pytest.raises(Conflict, match="Precondition failed"):
        await w.delete_pod(client, "default", name, "wrong")
    assert await w.delete_pod(client, "default", name, uid, grace=0)
    return seen


def _series() -> dict[str, Any]:
    return {"series": {"count": 2, "lastObservedTime": w.micro_time(_now())}}


def _event(name: str) -> dict[str, Any]:
    ref = w.pod_reference("default", "someone", "u")
    body = w.event_body(regarding=ref, reason="Scheduled", note="n", action="Binding", now=_now())
    body["metadata"]["name"] = name
    return body


def test_every_writer_names_exactly_its_object(sim: SimCluster, io: IOThread, client: ApiClient) -> None:
    for decoy in ("twin", "tw", "in", "nul", "caf", "a;b:c@d-new"):
        _pod(sim, decoy)
    uids = {name: _pod(sim, name)["metadata"]["uid"] for name in SENDABLE}
    for name in SENDABLE:
        _insert(sim, EVENTS, _event(f"{name}.1"))
        _insert(
            sim, LEASES, {"metadata": {"name": name, "namespace": "default"}, "spec": {"holderIdentity": "a"}}
        )
    before = _versions(sim)
    for name in SENDABLE:
        since = sim.writes.records()[-1].seq if sim.writes.records() else 0
        seen = io.run(_every_writer(client, name, uids[name]), timeout=30)
        pod_writes = {(m, t) for m, t, _ in _targets(sim, since) if t[0] == "pods"}
        assert pod_writes == {
            ("POST", ("pods", "default", name, "binding")),
            ("PATCH", ("pods", "default", name, "status")),
            ("DELETE", ("pods", "default", name, "")),
        }, (name, pod_writes)
        others = {(m, t) for m, t, _ in _targets(sim, since) if t[0] != "pods"}
        assert others == {
            ("POST", ("events", "default", "", "")),
            ("PATCH", ("events", "default", f"{name}.1", "")),
            ("PUT", ("leases", "default", name, "")),
            ("POST", ("leases", "default", "", "")),
        }, (name, others)
        assert sim.store.get("pods", name, "default") is None, seen
        assert sim.store.get(LEASES, name, "default")["spec"]["holderIdentity"] == "renewed"  # type: ignore[index]
        assert sim.store.get(EVENTS, f"{name}.1", "default")["series"]["count"] == 2  # type: ignore[index]
    meant = {("pods", "default", n) for n in SENDABLE} | {(LEASES, "default", n) for n in SENDABLE}
    meant |= {(EVENTS, "default", f"{n}.1") for n in SENDABLE} | {
        (LEASES, "default", f"{n}-new") for n in SENDABLE
    }
    for key in _changed(before, _versions(sim)) - meant:  # else only Events created about the pods
        assert key[0] == EVENTS and key[2].startswith(_regarding(sim, key) + "."), key
        assert _regarding(sim, key) in SENDABLE, key
    assert all(sim.store.get("pods", d, "default") is not None for d in ("twin", "tw", "in", "nul", "caf"))


async def _refused(client: ApiClient, name: str) -> None:
    calls = [
        w.bind(client, "default", name, "u", "node-0"),
        w.patch_pod_status(client, "default", name, {"status": {}}, "u"),
        w.delete_pod(client, "default", name, "u"),
        w.get_lease(client, "default", name),
        w.update_lease(client, {"metadata": {"name": name, "namespace": "default", "resourceVersion": "1"}}),
        w.write_event(client, {"metadata": {"name": name, "namespace": "default"}}, _series()),
        w.create_event(client, {"metadata": {"name": "e", "namespace": name}}),
    ]
    for call in calls:
        with pytest.raises(PathSegmentError, match=r"invalid (resource name|namespace)|may not be empty"):
            await call


def test_names_no_path_can_carry_are_refused_before_sending(
    sim: SimCluster, io: IOThread, client: ApiClient
) -> None:
    _pod(sim, "twin")
    before, writes = _versions(sim), len(sim.writes.records())
    for name in UNSENDABLE:
        _pod(sim, name)
        io.run(_refused(client, name), timeout=10)
    assert len(sim.writes.records()) == writes  # not one request went out
    assert _changed(before, _versions(sim)) == {("pods", "default", n) for n in UNSENDABLE}  # the inserts


def test_a_lease_named_by_leader_election_resource_name(
    sim: SimCluster, io: IOThread, client: ApiClient
) -> None:
    _insert(sim, LEASES, {"metadata": {"name": "ksched", "namespace": "kube-system"}, "spec": {}})
    # The sendable names reach the server as themselves and are refused there (a Lease name is a
    # DNS-1123 subdomain); the unsendable ones never leave. Neither touches the Lease "ksched".
    for name, sendable in (("ksched?x", True), ("ksched\n", True), ("ksched/x", False), ("ksched%", False)):
        fence = Fence(leader_election=True, lease=f"kube-system/{name}")
        settings = LeaderElectionSettings(name=name, identity="me")
        elector = LeaderElector(
            client, settings, fence=fence, on_started=lambda: None, on_stopped=lambda: None
        )
        since = len(sim.writes.records())
        assert io.run(elector._try_acquire_or_renew(), timeout=10) is False
        assert sim.store.get(LEASES, name, "kube-system") is None
        sent = sim.writes.records()[since:]
        assert [(r.method, _target(r.raw_path), r.code) for r in sent] == (
            [("POST", ("leases", "kube-system", "", ""), 422)] if sendable else []
        )
    assert sim.store.get(LEASES, "ksched", "kube-system")["spec"] == {}  # type: ignore[index]


# ------------------------------------------------------------------------------------ the sim's side
def _raw(sim: SimCluster, method: str, path: str, body: bytes | None = None) -> tuple[int, Any]:
    """One request with ``path`` on the wire exactly as written (http.client encodes nothing)."""
    host, port = sim.url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=5)
    try:
        headers = {"Content-Type": "application/merge-patch+json"} if body is not None else {}
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        return resp.status, orjson.loads(resp.read())
    finally:
        conn.close()


ESCAPES = [
    ("50%25", "50%"),
    ("nul%00", "nul\x00"),
    ("tw%0Ain", "tw\nin"),
    ("q%3Fx", "q?x"),
    ("h%23", "h#"),
    ("%C3%A9", "\u00e9"),
    ("%2E%2E", ".."),
    ("tw%250Ain", "tw%0Ain"),
]


def test_the_sim_decodes_each_escape_to_the_exact_name(sim: SimCluster) -> None:
    for escaped, name in ESCAPES:
        _pod(sim, name)
        code, pod = _raw(sim, "GET", f"/api/v1/namespaces/default/pods/{escaped}")
        assert code == 200 and pod["metadata"]["name"] == name, pod
        code, _ = _raw(sim, "PATCH", f"/api/v1/namespaces/default/pods/{escaped}/status", b'{"status":{}}')
        assert code == 200
        rec = sim.writes.records()[-1]
        assert rec.path == f"/api/v1/namespaces/default/pods/{name}/status"
        assert rec.raw_path == f"/api/v1/namespaces/default/pods/{escaped}/status"


def test_the_client_sends_an_escaped_slash_as_it_is(sim: SimCluster, io: IOThread, client: ApiClient) -> None:
    _pod(sim, "a")
    with pytest.raises(ApiError) as err:  # decoded, a%2Fb is two segments: no such path, nothing written
        io.run(client.post("/api/v1/namespaces/default/pods/a%2Fb/binding", {}), timeout=10)
    assert err.value.status == 404
    (rec,) = sim.writes.records()
    assert (rec.raw_path, rec.path) == (
        "/api/v1/namespaces/default/pods/a%2Fb/binding",
        unquote(rec.raw_path),
    )


def test_an_empty_segment_in_the_sim_names_nothing(sim: SimCluster) -> None:
    tw = _pod(sim, "tw")
    for path in ("/api/v1/namespaces/default/pods/tw%2F/status", "/api/v1/namespaces/default/pods//status"):
        code, status = _raw(sim, "PATCH", path, b'{"status":{"nominatedNodeName":"x"}}')
        assert code == 404, status
    now = sim.store.get("pods", "tw", "default")
    assert now is not None and now["metadata"]["resourceVersion"] == tw["metadata"]["resourceVersion"]


# ------------------------------------------------------------------------------------ bind worker
async def _unused(namespace: str, name: str, uid: str, node: str) -> None:
    raise AssertionError(f"in-process fallback used for {namespace}/{name}")


def test_the_bind_worker_child_binds_exactly_the_pod_named(
    sim: SimCluster, io: IOThread, kubeconfig: Path
) -> None:
    twin = _pod(sim, "twin")
    uids = {name: _pod(sim, name)["metadata"]["uid"] for name in SENDABLE + UNSENDABLE}
    bw = BindWorker(_unused, kubeconfig=str(kubeconfig), qps=0.0, burst=1, max_in_flight=8)
    assert io.run(bw.start(), timeout=30)
    try:

        async def all_of() -> list[BaseException | None]:
            jobs = [bw.bind("default", n, uids[n], "node-1") for n in SENDABLE + UNSENDABLE]
            results = await asyncio.gather(*jobs, return_exceptions=True)
            return [r if isinstance(r, BaseException) else None for r in results]

        results = io.run(all_of(), timeout=30)
    finally:
        io.run(bw.close(), timeout=15)
    assert results[: len(SENDABLE)] == [None] * len(SENDABLE)
    assert all(isinstance(r, PathSegmentError) for r in results[len(SENDABLE) :])
    assert sorted(t for _, t, _ in _targets(sim)) == sorted(
        ("pods", "default", n, "binding") for n in SENDABLE
    )
    for name in SENDABLE:
        assert sim.store.get("pods", name, "default")["spec"]["nodeName"] == "node-1"  # type: ignore[index]
    for name in UNSENDABLE:
        assert not sim.store.get("pods", name, "default")["spec"].get("nodeName")  # type: ignore[index]
    now = sim.store.get("pods", "twin", "default")
    assert now is not None and now["metadata"]["resourceVersion"] == twin["metadata"]["resourceVersion"]


# ------------------------------------------------------------------------------------ look-alikes
def test_the_scheduler_never_writes_to_a_look_alike_it_did_not_schedule(
    sim: SimCluster, kubeconfig: Path, tmp_path: Path
) -> None:
    twin = _pod(sim, "twin", scheduler="other-scheduler")
    for name in SENDABLE + UNSENDABLE:
        _pod(sim, name)
    sched = InProcessScheduler(kubeconfig, write_config(tmp_path / "ksched.yaml", max_backoff=1)).start()
    try:

        def settled() -> bool:
            bound = all(
                sim.store.get("pods", n, "default")["spec"].get("nodeName")  # type: ignore[index]
                for n in SENDABLE
            )
            text = _metrics(sched)
            return bound and metric_value(text, "scheduler_schedule_attempts_total", result="error") >= len(
                UNSENDABLE
            )

        wait_until(settled, timeout=20, what="the look-alikes bound and the unsendable ones tried")
    finally:
        sched.stop()
    targets = _targets(sim)
    assert not [t for t in targets if t[1][0] == "pods" and t[1][2] == "twin"], targets
    for method, (resource, ns, name, sub), code in targets:
        if resource == "pods":
            assert ns == "default" and name in SENDABLE, (method, name, sub, code)
            assert (method, sub) in {("POST", "binding"), ("PATCH", "status")}, (method, name, sub)
    now = sim.store.get("pods", "twin", "default")
    assert now is not None and now["metadata"]["resourceVersion"] == twin["metadata"]["resourceVersion"]
    assert not now["spec"].get("nodeName") and not (now.get("status") or {}).get("conditions")
    for ns, name in list(sim.store.table(EVENTS).objects):
        about = _regarding(sim, (EVENTS, ns, name))
        assert about != "twin" and about in SENDABLE + UNSENDABLE and name.startswith(about + "."), name


def _metrics(sched: InProcessScheduler) -> str:
    from prometheus_client import generate_latest

    return generate_latest(sched.metrics.registry).decode()
