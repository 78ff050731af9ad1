"""One scheduling cycle per plugin set at 1,000, 5,000 and 15,000 nodes: compiled vs numpy vs plain Python.

Plugin sets are chosen by the incoming pod, run through the real default profile (a plugin whose
PreFilter finds nothing to do skips itself, as upstream's do):

- ``resources``: the resource-only profile of ``test_cycle.py`` (NodeUnschedulable, NodeName,
  NodeResourcesFit, BalancedAllocation): the kernel alone;
- ``default-plain``: the default profile, a pod with requests only;
- ``default-node-affinity``: required node affinity on the zone, a toleration, a node selector;
- ``default-spread``: a hard zone topology-spread constraint (PodTopologySpread);
- ``default-anti-affinity``: required pod anti-affinity by hostname against labelled pods
  (InterPodAffinity).

The cluster: nodes in three zones with a few sizes, ~5 pods per node, a tenth of them labelled
``app=web``. The plain-Python baseline (``python_cycle`` from ``test_cycle.py``, resources only) shows
what vectorizing buys at each size. Group names are ``cycle-<nodes>``; read each group's table for the
ratio between paths.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from benches.test_cycle import SEED, default_framework, python_cycle, reduced_framework
from ksched.cache.cluster import ClusterCache
from ksched.framework import kernels
from ksched.framework.runtime import Framework
from ksched.model.node import node_from_dict
from ksched.model.pod import Pod, pod_from_dict
from tests import builders
from tests.builders import make_node, make_pod

SIZES = (1_000, 5_000, 15_000)
PODS_PER_NODE = 5
ZONE = "topology.kubernetes.io/zone"
_CLUSTERS: dict[int, ClusterCache] = {}


def seeded_nodes(n_nodes: int, rng: np.random.Generator, labels: dict[str, str]) -> ClusterCache:
    """``n_nodes`` nodes of three sizes drawn from ``rng``, in three zones, a tenth tainted
    ``dedicated=batch``, each with ``labels`` besides its zone and hostname; no pods yet."""
    cache = ClusterCache(node_capacity=n_nodes)
    sizes = [("4", "16Gi"), ("8", "32Gi"), ("16", "64Gi")]
    for i in range(n_nodes):
        cpu, mem = sizes[int(rng.integers(len(sizes)))]
        name = f"node-{i:05d}"
        node_labels = {ZONE: f"zone-{i % 3}", "kubernetes.io/hostname": name, **labels}
        taints = [builders.taint("dedicated", "batch")] if i % 10 == 0 else []
        cache.add_node(
            node_from_dict(make_node(name, cpu=cpu, memory=mem, pods=110, labels=node_labels, taints=taints))
        )
    return cache


def build_cluster(n_nodes: int) -> ClusterCache:
    """Seeded and memoized per size: 15,000 nodes with 75,000 pods take a few seconds to build."""
    if n_nodes in _CLUSTERS:
        return _CLUSTERS[n_nodes]
    rng = np.random.default_rng(SEED)
    cache = seeded_nodes(n_nodes, rng, {"disk": "ssd"})
    plain = builders.pod("tpl", requests={"cpu": "100m", "memory": "256Mi"})
    web = builders.pod("web", requests={"cpu": "100m", "memory": "256Mi"}, labels={"app": "web"})
    k = 0
    for i in range(n_nodes):
        for _ in range(int(rng.integers(PODS_PER_NODE - 2, PODS_PER_NODE + 3))):
            tpl = web if k % 10 == 0 else plain
            cache.add_pod(dataclasses.replace(tpl, uid=f"u{k}", name=f"p{k}", node_name=f"node-{i:05d}"))
            k += 1
    _CLUSTERS[n_nodes] = cache
    return cache


def incoming(kind: str) -> Pod:
    requests = {"cpu": "500m", "memory": "1Gi"}
    if kind == "node-affinity":
        term = {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["zone-0", "zone-1"]}]}
        return pod_from_dict(
            make_pod(
                "incoming",
                requests=requests,
                node_selector={"disk": "ssd"},
                affinity={
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
                    }
                },
                tolerations=[
                    {"key": "dedicated", "operator": "Equal", "value": "batch", "effect": "NoSchedule"}
                ],
            )
        )
    if kind == "spread":
        raw = make_pod("incoming", requests=requests, labels={"app": "spread"})
        raw["spec"]["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": ZONE,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "spread"}},
            }
        ]
        return pod_from_dict(raw)
    if kind == "anti-affinity":
        term = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
        return pod_from_dict(
            make_pod(
                "incoming",
                requests=requests,
                labels={"app": "web"},
                affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
            )
        )
    return builders.pod("incoming", requests=requests)


PLUGIN_SETS = {
    "resources": ("reduced", "plain"),
    "default-plain": ("default", "plain"),
    "default-node-affinity": ("default", "node-affinity"),
    "default-spread": ("default", "spread"),
    "default-anti-affinity": ("default", "anti-affinity"),
}


@pytest.fixture(params=["compiled", "numpy"])
def path(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "compiled" and kernels.compiled() is None:
        pytest.skip("compiled kernels are not built")
    kernels.use_compiled(request.param == "compiled")
    yield request.param
    kernels.use_compiled(True)


@pytest.mark.parametrize("n_nodes", SIZES)
@pytest.mark.parametrize("plugin_set", list(PLUGIN_SETS))
def test_cycle(benchmark: Any, path: str, n_nodes: int, plugin_set: str) -> None:
    profile, pod_kind = PLUGIN_SETS[plugin_set]
    cluster = build_cluster(n_nodes)
    framework: Framework = default_framework() if profile == "default" else reduced_framework()
    pod = incoming(pod_kind)
    benchmark.group = f"cycle-{n_nodes}"
    benchmark.extra_info.update(path=path, plugin_set=plugin_set, nodes=n_nodes)
    result = benchmark(framework.schedule_pod, pod, cluster)
    assert result.status.ok, result.message()


@pytest.mark.parametrize("n_nodes", SIZES)
def test_cycle_python_loop(benchmark: Any, n_nodes: int) -> None:
    cluster = build_cluster(n_nodes)
    benchmark.group = f"cycle-{n_nodes}"
    benchmark.extra_info.update(path="python-loop", plugin_set="resources", nodes=n_nodes)
    name, _ = benchmark.pedantic(python_cycle, args=(incoming("plain"), cluster), rounds=5, iterations=1)
    assert name is not None
