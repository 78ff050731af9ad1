"""Fixtures shared by the integration tests: a running embedded cluster and a kubeconfig for it.

A directory picks its cluster settings by overriding ``sim_config``.
"""

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
"""Small windows so that 410 Gone and bookmarks come quickly."""


@pytest.fixture
def sim_config() -> SimConfig:
    return SMALL


@pytest.fixture
def sim(sim_config: SimConfig) -> Iterator[SimCluster]:
    """A started cluster with 3 nodes in 2 zones; stopped (and its thread joined) afterwards."""
    cluster = SimCluster(sim_config)
    cluster.add_nodes(3, zones=2)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def kubeconfig(sim: SimCluster, tmp_path: Path) -> Path:
    return sim.write_kubeconfig(tmp_path / "kubeconfig")
