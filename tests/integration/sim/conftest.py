"""Fixtures: a running SimCluster per test (small windows so 410 and bookmarks come quickly)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ksched.sim import SimCluster, SimConfig

SMALL = SimConfig(
    history_window=50,
    bookmark_interval_s=0.2,
    running_delay_s=0.0,
    grace_scale=0.0,
    slow_watcher_timeout_s=0.5,
    seed=1,
)


@pytest.fixture
def sim() -> Iterator[SimCluster]:
    """A started cluster with 3 nodes in 2 zones; stopped (and its thread joined) afterwards."""
    cluster = SimCluster(SMALL)
    cluster.add_nodes(3, zones=2)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def kubeconfig(sim: SimCluster, tmp_path: Path) -> Path:
    return sim.write_kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def core(sim: SimCluster) -> Iterator[object]:
    """kubernetes.client.CoreV1Api pointed at the sim (closed afterwards)."""
    from kubernetes import client

    cfg = client.Configuration(host=sim.url)
    api = client.ApiClient(cfg)
    try:
        yield client.CoreV1Api(api)
    finally:
        api.close()
