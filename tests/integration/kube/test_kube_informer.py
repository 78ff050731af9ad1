"""Informers against the sim: sync, events, resumption after drops, 410 → Relisted, bad objects, stop."""

from __future__ import annotations

import concurrent.futures
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from ksched.kube import (
    ApiClient,
    Deleted,
    Informer,
    InformerSettings,
    Invalid,
    IOThread,
    Relisted,
    Synced,
    Upserted,
)
from ksched.kube.ratelimit import BackoffSettings
from ksched.model.namespace import namespace_from_dict
from ksched.model.node import node_from_dict
from ksched.model.pdb import pdb_from_dict
from ksched.model.pod import pod_from_dict
from ksched.sim import ErrorRule, FaultConfig, LatencyRule, SimCluster, SimConfig
from tests.integration.support import wait_until
from tests.sim_admission import switch_admission_off

FAST = InformerSettings(
    page_size=4, watch_timeout_s=30.0, backoff=BackoffSettings(initial_s=0.02, max_s=0.1, reset_after_s=5.0)
)
PODS = "/api/v1/pods"


def _informer(client: ApiClient, sink: Callable[[Any], None], resource: str = "pods", **kw: Any) -> Informer:
    paths = {
        "pods": (PODS, pod_from_dict),
        "nodes": ("/api/v1/nodes", node_from_dict),
        "namespaces": ("/api/v1/namespaces", namespace_from_dict),
        "poddisruptionbudgets": ("/apis/policy/v1/poddisruptionbudgets", pdb_from_dict),
    }
    path, decode = paths[resource]
    return Informer(client, resource, path, decode, sink, settings=FAST, **kw)


def _names(events: list[Any], cls: type, etype: str | None = None) -> list[str]:
    return [
        e.obj.name
        for e in events
        if type(e) is cls and (etype is None or getattr(e, "event_type", None) == etype)
    ]


def test_initial_sync_then_add_modify_delete(
    sim: SimCluster, io: IOThread, client: ApiClient, recorder: Any
) -> None:
    inf = _informer(client, recorder, "nodes")
    inf.start(io)
    assert inf.synced.wait(5)
    events = recorder.wait_for(lambda ev: any(isinstance(e, Synced) for e in ev))
    assert _names(events, Upserted, "ADDED") == ["node-0", "node-1", "node-2"]
    assert events[-1] == Synced("nodes")

    sim.add_nodes(1)
    sim.store.mutate(
        "nodes", "node-0", "", lambda n: {**n, "spec": {**n.get("spec", {}), "unschedulable": True}}
    )
    sim.store.delete("nodes", "node-1")
    events = recorder.wait_for(lambda ev: any(isinstance(e, Deleted) for e in ev))[4:]
    assert [type(e).__name__ for e in events] == ["Upserted", "Upserted", "Deleted"]
    assert events[0].event_type == "ADDED" and events[0].obj.name == "node-3"
    assert events[1].event_type == "MODIFIED" and events[1].obj.unschedulable
    assert events[2].obj.name == "node-1"
    inf.stop()


def test_paginated_initial_list_and_namespaces(
    sim: SimCluster, io: IOThread, client: ApiClient, recorder: Any
) -> None:
    sim.add_pods(10)
    inf = _informer(client, recorder)  # page_size 4: three pages
    inf.start(io)
    events = recorder.wait_for(lambda ev: any(isinstance(e, Synced) for e in ev))
    assert sorted(_names(events, Upserted)) == sorted(f"pod-{i}" for i in range(10))
    assert inf.stats["lists"] == 1

    ns_events: list[Any] = []
    done = threading.Event()
    ns_inf = _informer(
        client, lambda e: (ns_events.append(e), isinstance(e, Synced) and done.set()), "namespaces"
    )
    ns_inf.start(io)
    assert done.wait(5)
    names = {e.obj.name: e.obj for e in ns_events if isinstance(e, Upserted)}
    assert {"default", "kube-system"} <= set(names)
    assert names["default"].labels["kubernetes.io/metadata.name"] == "default"


def test_watch_resumes_after_dropped_streams_without_loss_or_duplicates(
    sim: SimCluster, io: IOThread, client: ApiClient, recorder: Any
) -> None:
    sim.faults.configure(FaultConfig(watch_drop_every=3))
    inf = _informer(client, recorder)
    inf.start(io)
    assert inf.synced.wait(5)
    for i in range(20):
        sim.add_pods(1, name_prefix="w-", start=i)
    events = recorder.wait_for(lambda ev: len(_names(ev, Upserted)) >= 20)
    assert _names(events, Upserted, "ADDED") == [f"w-{i}" for i in range(20)]
    assert inf.stats["watches"] >= 6
    assert inf.stats["relists"] == 0
    assert not any(isinstance(e, Relisted) for e in events)


def test_bookmarks_advance_the_version_and_server_timeouts_resume(
    sim: SimCluster, io: IOThread, client: ApiClient, recorder: Any
) -> None:
    settings = InformerSettings(watch_timeout_s=1.0, backoff=FAST.backoff)
    inf = Informer(client, "pods", PODS, pod_from_dict, recorder, settings=settings)
    inf.start(io)
    assert inf.synced.wait(5)
    listed_rv = int(inf.resource_version)
    sim.add_nodes(2)  # moves the store's resourceVersion without a pod event
    wait_until(
        lambda: int(inf.resource_version) > listed_rv,
        timeout_s=3.0,
        what="a BOOKMARK to carry the informer's resourceVersion forward",
    )
    for i in range(6):  # across at least one server-side watch timeout (1-2 s)
        sim.add_pods(1, name_prefix="t-", start=i)
        time.sleep(0.4)
    events = recorder.wait_for(lambda ev: len(_names(ev, Upserted)) >= 6)
    assert _names(events, Upserted) == [f"t-{i}" for i in range(6)]
    assert inf.stats["watches"] >= 2 and inf.stats["errors"] == 0


def _start_slow_list(sim: SimCluster, io: IOThread, client: ApiClient, recorder: Any) -> Informer:
    """Ten pods listed four a page, each page served 0.4 s after it is asked for."""
    sim.add_pods(10)
    sim.faults.configure(FaultConfig(latency=(LatencyRule(verb="list", resource="pods", ms=400),)))
    inf = _informer(client, recorder)
    inf.start(io)
    return inf


def test_first_list_emits_each_page_before_the_next_is_served(
    sim: SimCluster, io: IOThread, client: ApiClient, recorder: Any
) -> None:
    inf = _start_slow_list(sim, io, client, recorder)
    first_page = recorder.wait_for(lambda ev: len(ev) >= 4)
    assert not inf.synced.is_set()  # pages 2 and 3 are still being served
    assert [type(e) for e in first_page[:4]] == [Upserted] * 4
    events = recorder.wait_for(lambda ev: any(isinstance(e, Synced) for e in ev))
    assert sorted(_names(events, Upserted, "ADDED")) == sorted(f"pod-{i}" for i in range(10))
    assert events[-1] == Synced("pods") and not any(isinstance(e, Relisted) for e in events)


def test_first_list_cut_after_a_page_is_delivered_whole_as_a_relist(
    sim: SimCluster, io: IOThread, client: ApiClient, recorder: Any
) -> None:
    inf = _start_slow_list(sim, io, client, recorder)
    emitted = {e.obj.name for e in recorder.wait_for(lambda ev: len(ev) >= 4)}
    gone = ErrorRule(verb="list", resource="pods", code=410, rate=1.0)
    sim.faults.configure(FaultConfig(errors=(gone,)))  # a later page's request is refused
    victim = sorted(emitted)[0]
    sim.store.delete("pods", victim, "default", grace_period_s=0)
    wait_until(lambda: sim.faults.counts["error-410"] >= 1, timeout_s=5, what="a page to be refused")
    sim.faults.configure(FaultConfig())
    events = recorder.wait_for(lambda ev: any(isinstance(e, Synced) for e in ev))
    relisted, synced = events[-2:]
    assert synced == Synced("pods") and isinstance(relisted, Relisted)
    assert sorted(p.name for p in relisted.objs) == sorted(
        f"pod-{i}" for i in range(10) if f"pod-{i}" != victim
    )
    assert all(type(e) is Upserted for e in events[:-2])  # the pages emitted before the cut
    assert inf.stats["lists"] == 1 and inf.stats["relists"] == 0


@pytest.mark.parametrize("sim_config", [SimConfig(history_window=5, kubelet=False, bookmark_interval_s=0.2)])
def test_gone_relists_and_reports_the_current_objects(
    sim: SimCluster, io: IOThread, client: ApiClient, recorder: Any
) -> None:
    sim.add_pods(3)
    # the informer lists, then cannot watch while more changes happen than the history window holds
    refuse = ErrorRule(verb="watch", resource="pods", code=503, rate=1.0, retry_after_s=0)
    sim.faults.configure(FaultConfig(errors=(refuse,)))
    inf = _informer(client, recorder)
    inf.start(io)
    assert inf.synced.wait(5)
    sim.store.delete("pods", "pod-0", "default", grace_period_s=0)
    sim.add_pods(8, name_prefix="new-")
    sim.faults.configure(FaultConfig())
    events = recorder.wait_for(lambda ev: any(isinstance(e, Relisted) for e in ev))
    assert not any(isinstance(e, Deleted) for e in events)  # the delete was never seen on a watch...
    relisted = events[-1]
    assert isinstance(relisted, Relisted)  # ...the relist is what tells the consumer
    assert sorted(p.name for p in relisted.objs) == sorted(
        ["pod-1", "pod-2"] + [f"new-{i}" for i in range(8)]
    )
    assert relisted.kind == "pods" and relisted.invalid == ()
    assert inf.stats["relists"] == 1
    # and it keeps watching from the relist's resourceVersion
    sim.add_pods(1, name_prefix="after-")
    events = recorder.wait_for(lambda ev: "after-0" in _names(ev, Upserted))
    assert events[-1].obj.name == "after-0" and events[-2] is relisted


@pytest.mark.parametrize("skip_managed_fields", [False, True])
def test_malformed_pod_is_reported_and_the_informer_carries_on(
    sim: SimCluster,
    io: IOThread,
    client: ApiClient,
    recorder: Any,
    monkeypatch: pytest.MonkeyPatch,
    skip_managed_fields: bool,
) -> None:
    switch_admission_off(monkeypatch)
    bad = {
        "metadata": {"name": "bad-0"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "abc"}}}]},
    }
    sim.store.create("pods", bad, namespace="default")
    inf = _informer(client, recorder, skip_managed_fields=skip_managed_fields)
    inf.start(io)
    events = recorder.wait_for(lambda ev: any(isinstance(e, Synced) for e in ev))
    listed = [e for e in events if isinstance(e, Invalid)]
    assert len(listed) == 1 and listed[0].event_type == "LIST"

    bad2 = {
        "metadata": {"name": "bad-1"},
        "spec": {
            "schedulerName": "ksched",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "abc"}}}],
        },
    }
    sim.store.create("pods", bad2, namespace="default")
    sim.add_pods(1, name_prefix="good-")
    events = recorder.wait_for(lambda ev: "good-0" in _names(ev, Upserted))
    inv = [e for e in events if isinstance(e, Invalid)][-1]
    assert (inv.namespace, inv.name, inv.event_type) == ("default", "bad-1", "ADDED")
    assert inv.uid == sim.store.get("pods", "bad-1", "default")["metadata"]["uid"]
    assert inv.error.field == "spec.containers[0].resources.requests.cpu"
    assert "abc" in str(inv.error)
    assert (inv.raw_scheduler_name, inv.raw_node_name) == ("ksched", "")
    assert inf.stats["invalid"] == 2


def test_pods_and_nodes_arrive_without_managed_fields_other_kinds_with_them(
    sim: SimCluster, io: IOThread, client: ApiClient, recorder: Any
) -> None:
    """What each decoder is handed, from the list and from the watch: kube-scheduler's informers
    drop managedFields too, and the other kinds keep theirs."""
    seen: dict[str, list[dict[str, Any]]] = {"pods": [], "nodes": [], "namespaces": []}

    def keeping(resource: str, decode: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def inner(raw: Any) -> Any:
            seen[resource].append(raw)
            return decode(raw)

        return inner

    sim.add_pods(2, name_prefix="listed-")
    decoders = {"pods": pod_from_dict, "nodes": node_from_dict, "namespaces": namespace_from_dict}
    paths = {"pods": PODS, "nodes": "/api/v1/nodes", "namespaces": "/api/v1/namespaces"}
    informers = [
        Informer(
            client,
            resource,
            paths[resource],
            keeping(resource, decode),
            recorder,
            settings=FAST,
            skip_managed_fields=resource != "namespaces",
        )
        for resource, decode in decoders.items()
    ]
    for inf in informers:
        inf.start(io)
    assert all(inf.synced.wait(5) for inf in informers)
    sim.add_pods(1, name_prefix="watched-")
    sim.store.mutate("nodes", "node-0", "", lambda n: {**n, "spec": {"unschedulable": True}})
    recorder.wait_for(
        lambda ev: "watched-0" in _names(ev, Upserted) and "node-0" in _names(ev, Upserted, "MODIFIED")
    )
    stored = sim.store.get("pods", "watched-0", "default")
    assert stored["metadata"]["managedFields"]  # the server records them; the informer leaves them out
    watched = next(raw for raw in seen["pods"] if raw["metadata"]["name"] == "watched-0")
    assert watched == {
        **stored,
        "metadata": {k: v for k, v in stored["metadata"].items() if k != "managedFields"},
    }
    for resource in ("pods", "nodes"):
        assert len(seen[resource]) >= 3
        assert not any("managedFields" in raw["metadata"] for raw in seen[resource])
    assert seen["namespaces"] and all(raw["metadata"]["managedFields"] for raw in seen["namespaces"])
    for inf in informers:
        inf.stop()


def test_malformed_node_taint_is_reported(
    sim: SimCluster, io: IOThread, client: ApiClient, recorder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    switch_admission_off(monkeypatch)
    inf = _informer(client, recorder, "nodes")
    inf.start(io)
    assert inf.synced.wait(5)
    sim.store.mutate("nodes", "node-2", "", lambda n: {**n, "spec": {"taints": [{"key": "k", "effect": 7}]}})
    events = recorder.wait_for(lambda ev: any(isinstance(e, Invalid) for e in ev))
    inv = events[-1]
    assert inv.name == "node-2" and inv.event_type == "MODIFIED"
    assert inv.error.field.startswith("spec.taints[0]")
    assert inv.raw_node_name == ""


def test_throttled_list_honours_retry_after(
    sim: SimCluster, io: IOThread, make_client: Callable[..., ApiClient], recorder: Any
) -> None:
    from ksched.kube import RetrySettings

    client = make_client(retry=RetrySettings(max_retries=0))  # the informer itself must wait
    sim.faults.configure(
        FaultConfig(errors=(ErrorRule(verb="list", resource="pods", code=429, rate=1.0, retry_after_s=1),))
    )
    inf = _informer(client, recorder)
    inf.start(io)
    assert not inf.synced.wait(0.3)
    sim.faults.configure(FaultConfig())
    assert not inf.synced.wait(0.4)  # still inside the one-second Retry-After
    assert inf.synced.wait(3)
    assert inf.stats["errors"] == 1


def test_pdb_informer(sim: SimCluster, io: IOThread, client: ApiClient, recorder: Any) -> None:
    pdb = {
        "metadata": {"name": "web"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
        "status": {"disruptionsAllowed": 2},
    }
    sim.store.create("poddisruptionbudgets", pdb, namespace="default")
    inf = _informer(client, recorder, "poddisruptionbudgets")
    inf.start(io)
    events = recorder.wait_for(lambda ev: any(isinstance(e, Synced) for e in ev))
    rec = events[0].obj
    assert (rec.key, rec.selector, rec.disruptions_allowed) == (
        "default/web",
        {"matchLabels": {"app": "web"}},
        2,
    )


def test_stop_ends_delivery_and_io_stop_leaves_no_threads(
    sim: SimCluster, client: ApiClient, io: IOThread, recorder: Any
) -> None:
    inf = _informer(client, recorder)
    future = inf.start(io)
    assert inf.synced.wait(5)
    inf.stop()
    with pytest.raises(concurrent.futures.CancelledError):
        future.result(2)
    n = len(recorder.snapshot())
    sim.add_pods(3)
    sim.store.delete("nodes", "node-0")
    time.sleep(0.2)
    # nothing arrives for a watcher that is gone: the sim has no open watch left to send on
    assert recorder.snapshot()[n:] == []
    # a second informer left running is cancelled by io.stop(); the leak check runs after teardown
    other = _informer(client, recorder, "nodes")
    other.start(io)
    assert other.synced.wait(5)
    io.stop()
    assert not [t for t in threading.enumerate() if t.name == "ksched-io-test"]
