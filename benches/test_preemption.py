"""PostFilter (DefaultPreemption) at 5,000 nodes filled with low-priority pods.

Every node is full (8 pods of 500m on 4 cpu, priorities 0..7 mixed), so a high-priority pod asking
for 1 cpu fits nowhere and preemption can help everywhere: all 5,000 nodes are potential, and the
dry run must find ``numCandidates = 10% of 5,000 = 500`` candidates before picking one. That is
the work one upstream PostFilter call does on such a cluster, measured here on the real default
profile (its filters re-run for every dry-run step) with the compiled kernels and with numpy only.
``with_pdbs`` adds budgets covering half the pods so that PDB accounting is exercised too.
``async_like`` is the ``PreemptionAsync`` workload's shape instead: 4 pods of 900m per node, all
of one priority and not started, so every node's order comes down to the uid (the tie path), and
a 3000m priority-10 preemptor that needs 3 victims.

DefaultPreemption keeps its potential victims' numbers per node row across calls while the rows do
not change (``defaultpreemption/memo.py``), so after a few calls ``test_post_filter`` reads them
all from the memo, as a preemption does on nodes that kept their pods since the last one.
``test_post_filter_cold`` invalidates the memo before every call: the cost on nodes not read
since they changed (every node, the first time).

Run: ``PYTHONPATH=. python -m pytest benches/test_preemption.py -q -p no:cacheprovider --benchmark-only``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np
import pytest

from ksched.cache.cluster import ClusterCache
from ksched.config.load import default_config
from ksched.framework import kernels
from ksched.framework.plugins.defaultpreemption import DefaultPreemption
from ksched.framework.profile import build_profiles
from ksched.framework.result import CycleResult
from ksched.framework.runtime import Framework
from ksched.model.pdb import pdb_from_dict
from ksched.model.pod import Pod, pod_from_dict
from tests import builders
from tests.builders import make_pod

N_NODES = 5_000
PODS_PER_NODE = 8
SEED = 20240602


def build_async_like() -> ClusterCache:
    """PreemptionAsync's cluster: 5,000 nodes of 4 cpu, each with 4 pods of 900m, priority 0."""
    rng = np.random.default_rng(SEED)
    cache = ClusterCache(node_capacity=N_NODES)
    for i in range(N_NODES):
        cache.add_node(builders.node(f"node-{i:05d}", cpu="4", memory="32Gi", pods=110))
    tpl = builders.pod("tpl", requests={"cpu": "900m", "memory": "500Mi"}, priority=0)
    k = 0
    for i in range(N_NODES):
        for _ in range(4):
            uid = f"{int(rng.integers(1 << 62)):016x}-{k}"
            cache.add_pod(dataclasses.replace(tpl, uid=uid, name=f"p{k}", node_name=f"node-{i:05d}"))
            k += 1
    return cache


def build_cluster(with_pdbs: bool) -> ClusterCache:
    rng = np.random.default_rng(SEED)
    cache = ClusterCache(node_capacity=N_NODES)
    for i in range(N_NODES):
        cache.add_node(builders.node(f"node-{i:05d}", cpu="4", memory="16Gi", pods=110))
    tpl = builders.pod("tpl", requests={"cpu": "500m", "memory": "1Gi"})
    k = 0
    for i in range(N_NODES):
        for _ in range(PODS_PER_NODE):
            app = f"app-{int(rng.integers(20))}"
            cache.add_pod(
                dataclasses.replace(
                    tpl,
                    uid=f"u{k}",
                    name=f"p{k}",
                    node_name=f"node-{i:05d}",
                    priority=int(rng.integers(8)),
                    labels={"app": app},
                    start_time=float(rng.integers(1_000_000)),
                )
            )
            k += 1
    if with_pdbs:
        for a in range(10):
            raw = {
                "metadata": {"name": f"pdb-{a}", "namespace": "default"},
                "spec": {"selector": {"matchLabels": {"app": f"app-{a}"}}},
                "status": {"disruptionsAllowed": 50},
            }
            b = pdb_from_dict(raw)
            cache.pdbs[b.key] = b
    return cache


@pytest.fixture(scope="module", params=["no_pdbs", "with_pdbs", "async_like"])
def setup(request: pytest.FixtureRequest) -> tuple[Framework, ClusterCache, Pod, CycleResult, int]:
    fw = build_profiles(default_config(), seed=0)["default-scheduler"]
    if request.param == "async_like":
        cache = build_async_like()
        pod = pod_from_dict(
            make_pod("preemptor", uid="preemptor", requests={"cpu": "3", "memory": "500Mi"}, priority=10)
        )
        victims = 3
    else:
        cache = build_cluster(request.param == "with_pdbs")
        pod = pod_from_dict(
            make_pod("preemptor", uid="preemptor", requests={"cpu": "1", "memory": "1Gi"}, priority=1000)
        )
        victims = 2
    result = fw.schedule_pod(pod, cache)
    assert result.selected_node is None
    return fw, cache, pod, result, victims


@pytest.fixture(params=["compiled", "numpy"])
def path(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "compiled" and kernels.compiled() is None:
        pytest.skip("compiled kernels are not built")
    kernels.use_compiled(request.param == "compiled")
    yield request.param
    kernels.use_compiled(True)


def test_post_filter(
    benchmark: object, setup: tuple[Framework, ClusterCache, Pod, CycleResult, int], path: str
) -> None:
    fw, cache, pod, result, victims = setup
    before = cache.nodes.requested.copy()
    pf = benchmark(fw.run_post_filter, pod, cache, result)  # type: ignore[operator]
    assert pf is not None and pf.nominated_node and len(pf.victims) == victims
    assert np.array_equal(before, cache.nodes.requested)


def test_post_filter_cold(
    benchmark: object, setup: tuple[Framework, ClusterCache, Pod, CycleResult, int], path: str
) -> None:
    fw, cache, pod, result, victims = setup
    plugin = next(p for p in fw.post_filter_plugins if isinstance(p, DefaultPreemption))

    def cold() -> tuple[tuple[Pod, ClusterCache, CycleResult], dict[str, object]]:
        plugin._listings.invalidate()
        return (pod, cache, result), {}

    pf = benchmark.pedantic(fw.run_post_filter, setup=cold, rounds=30, warmup_rounds=1)  # type: ignore[attr-defined]
    assert pf is not None and pf.nominated_node and len(pf.victims) == victims
