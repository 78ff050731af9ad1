"""Fixtures: a running SimCluster per test (small windows so 410 and bookmarks come quickly)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ksched.sim import SimCluster


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
