"""Fixtures of the deploy tests: replicas started as the Deployment starts them, and an embedded
cluster whose API requests are recorded."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from deploy_harness import Replica, RequestLog

from ksched.sim import SimCluster, SimConfig

RECORDED = SimConfig(bookmark_interval_s=0.5, running_delay_s=0.0, grace_scale=0.0, seed=1)


@pytest.fixture
def start_replica(tmp_path: Path) -> Iterator[Callable[[str, str, Path], Replica]]:
    """``start_replica(name, pod_ip, kubeconfig)``: killed and reaped after the test."""
    started: list[Replica] = []

    def start(name: str, pod_ip: str, kubeconfig: Path) -> Replica:
        replica = Replica(name, pod_ip, kubeconfig, tmp_path)
        started.append(replica)
        return replica

    yield start
    for replica in started:
        replica.close()


@pytest.fixture
def recorded_sim() -> Iterator[tuple[SimCluster, RequestLog]]:
    """A started cluster (no nodes) whose every API request is in the RequestLog."""
    cluster = SimCluster(RECORDED)
    log = RequestLog()
    log.attach(cluster)
    cluster.start()
    try:
        yield cluster, log
    finally:
        cluster.stop()
