"""The Handle's API client for binding-cycle plugins, against the embedded cluster over HTTP."""

from __future__ import annotations

import pytest

from ksched.errors import NotFound
from ksched.framework.handle import Handle, HandleServices
from ksched.kube import ApiClient, IOThread
from ksched.kube.fence import Fence
from ksched.scheduler.plugin_client import NotLeading, PluginApiClient
from ksched.sim import SimCluster

POD = "/api/v1/namespaces/default/pods/pod-0"


def test_a_plugin_reads_and_patches_through_the_handle(
    sim: SimCluster, io: IOThread, client: ApiClient
) -> None:
    sim.add_pods(1)
    handle = Handle("p", services=HandleServices(client=PluginApiClient(io, client, fence=None)))
    assert handle.client is not None
    got = handle.client.request("GET", POD, timeout_s=5).result(timeout=10)
    assert got["metadata"]["name"] == "pod-0"
    patch = {"metadata": {"annotations": {"example.com/prebound": "yes"}}}
    handle.client.request("PATCH", POD, patch, timeout_s=5).result(timeout=10)
    stored = sim.store.get("pods", "pod-0", "default")
    assert stored is not None and stored["metadata"]["annotations"]["example.com/prebound"] == "yes"
    with pytest.raises(NotFound):
        handle.client.request("GET", POD + "-missing", timeout_s=5).result(timeout=10)


def test_a_replica_that_does_not_lead_sends_no_write(
    sim: SimCluster, io: IOThread, client: ApiClient
) -> None:
    sim.add_pods(1)
    plugin_client = PluginApiClient(io, client, fence=Fence(leader_election=True).writes)
    before = sim.store.get("pods", "pod-0", "default")
    patch = {"metadata": {"annotations": {"example.com/prebound": "yes"}}}
    with pytest.raises(NotLeading, match="does not lead"):
        plugin_client.request("PATCH", POD, patch, timeout_s=5).result(timeout=10)
    assert sim.store.get("pods", "pod-0", "default") == before
    assert plugin_client.request("GET", POD, timeout_s=5).result(timeout=10)["metadata"]["name"] == "pod-0"


def test_events_go_to_the_scheduler_reporter_with_the_profile_name() -> None:
    seen: list[tuple[str, str, str, str, str]] = []

    class Reporter:
        def event(
            self, pod: object, controller: str, event_type: str, reason: str, action: str, note: str
        ) -> None:
            seen.append((controller, event_type, reason, action, note))

    Handle("gpu-scheduler", services=HandleServices(events=Reporter())).record_event(
        object(),
        "Normal",
        "Prebound",
        "Binding",
        "claims ready",  # type: ignore[arg-type]
    )
    Handle("quiet").record_event(object(), "Normal", "Prebound", "Binding", "dropped")  # type: ignore[arg-type]
    assert seen == [("gpu-scheduler", "Normal", "Prebound", "Binding", "claims ready")]


def test_the_snapshot_is_the_cache_read_only() -> None:
    from ksched.framework.view import ClusterView
    from tests.builders import cluster_of, make_node

    cache = cluster_of([make_node("n1", cpu="4")])
    handle = Handle("p", services=HandleServices(snapshot=ClusterView(cache)))
    assert handle.snapshot is not None and handle.snapshot.row_of("n1") == 0
    with pytest.raises(ValueError, match="read-only"):
        handle.snapshot.allocatable("cpu")[0] = 1
    assert Handle("explain").snapshot is None
