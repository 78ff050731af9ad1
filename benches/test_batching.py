"""Opportunistic batching on identical pods: one cycle per pod, each pod assumed before the next.

The shape KEP-5598 targets: a run of pods with one signature, scheduled one after another, at 5,000
and 50,000 nodes, with the ``OpportunisticBatching`` gate on (a batched cycle asks only the row the
previous pod went to) and off (every cycle evaluates every node). Groups are
``batching-<nodes>``; the ratio of the two medians is the speedup. The cluster: nodes in three
zones with three sizes, a tenth tainted, two pods each; the assumed pods are forgotten afterwards
so both gate values see the same cluster.

Run: ``PYTHONPATH=. python -m pytest benches/test_batching.py --benchmark-only``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from benches.test_micro_cycle import seeded_nodes
from ksched.cache.cluster import ClusterCache
from ksched.config import default_config
from ksched.config.features import feature_gates
from ksched.framework.profile import build_profiles
from ksched.framework.runtime import Framework
from ksched.model.pod import Pod
from tests import builders

SIZES = (5_000, 50_000)
PODS = 400
SEED = 7
_CLUSTERS: dict[int, ClusterCache] = {}


def cluster(n_nodes: int) -> ClusterCache:
    """Seeded and memoized per size."""
    if n_nodes in _CLUSTERS:
        return _CLUSTERS[n_nodes]
    cache = seeded_nodes(n_nodes, np.random.default_rng(SEED), {})
    running = builders.pod("running", requests={"cpu": "500m", "memory": "1Gi"})
    for i in range(n_nodes * 2):
        cache.add_pod(dataclasses.replace(running, uid=f"r{i}", name=f"r{i}", node_name=f"node-{i // 2:05d}"))
    _CLUSTERS[n_nodes] = cache
    return cache


def framework(on: bool) -> Framework:
    config = dataclasses.replace(default_config(), feature_gates=feature_gates({"OpportunisticBatching": on}))
    return build_profiles(config, seed=SEED)["default-scheduler"]


@pytest.mark.parametrize("gate", ["on", "off"])
@pytest.mark.parametrize("n_nodes", SIZES)
def test_identical_pods(benchmark: Any, n_nodes: int, gate: str) -> None:
    benchmark.group = f"batching-{n_nodes}"
    benchmark.extra_info["gate"] = gate
    cache = cluster(n_nodes)
    fw = framework(gate == "on")
    template = builders.pod("incoming", requests={"cpu": "100m", "memory": "256Mi"})
    assumed: list[Pod] = []
    last: list[tuple[Pod, str]] = []

    def setup() -> tuple[tuple[Pod, ClusterCache], dict[str, Any]]:
        if last:
            pod, node = last.pop()
            cache.assume(pod, node)
            assumed.append(pod)
        i = len(assumed)
        return (dataclasses.replace(template, uid=f"b{i}", name=f"b{i}"), cache), {}

    def cycle(pod: Pod, cache: ClusterCache) -> None:
        last.append((pod, fw.schedule_pod(pod, cache).selected_node or ""))

    try:
        benchmark.pedantic(cycle, setup=setup, rounds=PODS, iterations=1, warmup_rounds=10)
    finally:
        for pod in assumed:
            cache.forget(pod.uid)
    benchmark.extra_info["batched"] = dict(fw.batch_outcomes)
