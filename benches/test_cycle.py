"""One scheduling cycle at 5,000 nodes: compiled vs numpy vs a plain Python loop.

Two profiles, both run through ``Framework.schedule_pod``:

- ``default``: the real default profile, ``build_profiles(default_config())`` (every default plugin:
  TaintToleration, NodeAffinity, NodePorts, ImageLocality, the volume and pending stand-ins, ...).
  This is the number DESIGN §8 budgets.
- ``reduced``: NodeUnschedulable + NodeName filters, NodeResourcesFit (filter, LeastAllocated
  score, weight 1) and NodeResourcesBalancedAllocation (weight 1) only: the resource work alone.

The cluster is seeded: 5,000 nodes of a few sizes, ~10 pods per node. DESIGN §8 budgets the
compiled cycle at ≤ 50 µs median and the numpy cycle at ≤ 1 ms.

The baseline is a straightforward per-node Python implementation of the same filter and scores,
checked to pick the same node, to show what vectorizing buys.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from ksched.cache.cluster import ClusterCache
from ksched.config.load import default_config
from ksched.framework import kernels
from ksched.framework.plugins.nodename import new as new_node_name
from ksched.framework.plugins.noderesources import new_balanced_allocation, new_fit
from ksched.framework.plugins.nodeunschedulable import new as new_node_unschedulable
from ksched.framework.profile import build_profiles
from ksched.framework.registry import Handle
from ksched.framework.runtime import Framework
from ksched.model.pod import Pod
from tests import builders

N_NODES = 5_000
PODS_PER_NODE = 10
SEED = 20240601


@pytest.fixture(scope="module")
def cluster() -> ClusterCache:
    rng = np.random.default_rng(SEED)
    cache = ClusterCache(node_capacity=N_NODES)
    sizes = [("4", "16Gi"), ("8", "32Gi"), ("16", "64Gi"), ("32", "128Gi")]
    for i in range(N_NODES):
        cpu, mem = sizes[int(rng.integers(len(sizes)))]
        cache.add_node(builders.node(f"node-{i:05d}", cpu=cpu, memory=mem, pods=110))
    shapes = [
        builders.pod("tpl", requests=req)
        for req in (
            {"cpu": "100m", "memory": "128Mi"},
            {"cpu": "250m", "memory": "512Mi"},
            {"cpu": "500m"},
            None,
        )
    ]
    k = 0
    for i in range(N_NODES):
        for _ in range(int(rng.integers(PODS_PER_NODE - 3, PODS_PER_NODE + 4))):
            tpl = shapes[int(rng.integers(len(shapes)))]
            cache.add_pod(dataclasses.replace(tpl, uid=f"u{k}", name=f"p{k}", node_name=f"node-{i:05d}"))
            k += 1
    return cache


def reduced_framework() -> Framework:
    handle = Handle("default-scheduler")
    fit = new_fit(None, handle)
    bal = new_balanced_allocation(None, handle)
    return Framework(
        "default-scheduler",
        pre_filter=[fit],
        filters=[new_node_unschedulable(None, handle), new_node_name(None, handle), fit],
        pre_score=[fit, bal],
        scores=[(fit, 1), (bal, 1)],
        rng=np.random.default_rng(SEED),
    )


def default_framework() -> Framework:
    return build_profiles(default_config(), seed=SEED)["default-scheduler"]


@pytest.fixture(scope="module", params=["default", "reduced"])
def framework(request: pytest.FixtureRequest) -> Framework:
    return default_framework() if request.param == "default" else reduced_framework()


@pytest.fixture(scope="module")
def pod() -> Pod:
    return builders.pod("incoming", requests={"cpu": "1", "memory": "2Gi"})


@pytest.fixture(params=["compiled", "numpy"])
def path(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "compiled" and kernels.compiled() is None:
        pytest.skip("compiled kernels are not built")
    kernels.use_compiled(request.param == "compiled")
    yield request.param
    kernels.use_compiled(True)


def test_cycle(benchmark: Any, path: str, cluster: ClusterCache, framework: Framework, pod: Pod) -> None:
    benchmark.group = "cycle-5000-nodes"
    benchmark.extra_info["path"] = path
    fast = kernels.compiled()
    benchmark.extra_info["simd"] = fast.simd_level() if path == "compiled" and fast is not None else "none"
    benchmark.extra_info["plugins"] = sorted(framework.plugins) or "reduced"
    result = benchmark(framework.schedule_pod, pod, cluster)
    assert result.status.ok
    assert (
        result.selected_node == python_cycle(pod, cluster)[0]
        or result.selected_row in python_cycle(pod, cluster)[1]
    )


# --------------------------------------------------------------------------- plain Python baseline
def python_cycle(pod: Pod, cluster: ClusterCache) -> tuple[str | None, list[int]]:
    """Per-node loop: Fit filter (cpu, memory, pods), LeastAllocated + BalancedAllocation, best node.

    Returns the first best node and all rows tying for best (the framework breaks ties randomly).
    """
    nodes = cluster.nodes
    want_cpu = pod.requests.get("cpu", 0)
    want_mem = pod.requests.get("memory", 0)
    best = -1
    best_rows: list[int] = []
    for row in range(nodes.n_rows):
        if not nodes.valid[row] or nodes.unschedulable[row]:
            continue
        if pod.node_name and nodes.nodes[row].name != pod.node_name:  # type: ignore[union-attr]
            continue
        if int(nodes.pod_count[row]) + 1 > int(nodes.allowed_pods[row]):
            continue
        a_cpu = int(nodes.allocatable[row, 0])
        a_mem = int(nodes.allocatable[row, 1])
        if want_cpu > a_cpu - int(nodes.requested[row, 0]) or want_mem > a_mem - int(nodes.requested[row, 1]):
            continue
        least = 0
        for alloc, used in (
            (a_cpu, int(nodes.nonzero_requested[row, 0]) + pod.nonzero_cpu),
            (a_mem, int(nodes.nonzero_requested[row, 1]) + pod.nonzero_memory),
        ):
            least += 0 if used > alloc else (alloc - used) * 100 // alloc
        least //= 2
        f_cpu = min(1.0, (int(nodes.requested[row, 0]) + want_cpu) / a_cpu)
        f_mem = min(1.0, (int(nodes.requested[row, 1]) + want_mem) / a_mem)
        total = least + int((1 - abs((f_cpu - f_mem) / 2)) * 100)
        if total > best:
            best, best_rows = total, [row]
        elif total == best:
            best_rows.append(row)
    if not best_rows:
        return None, []
    return nodes.nodes[best_rows[0]].name, best_rows  # type: ignore[union-attr]


def test_cycle_python_loop(benchmark: Any, cluster: ClusterCache, pod: Pod) -> None:
    benchmark.group = "cycle-5000-nodes"
    benchmark.extra_info["path"] = "python-loop"
    name, _ = benchmark.pedantic(python_cycle, args=(pod, cluster), rounds=5, iterations=1)
    assert name is not None
