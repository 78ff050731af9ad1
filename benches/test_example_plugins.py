"""What the example plugins cost per scheduling cycle at 5,000 nodes, guard included.

- ``call-*``: one call of the plugin's hot method through its :class:`GuardedPlugin` (the read-only
  view, the result checks, timing), on a 5,000-node cluster: the plugin's own per-cycle cost.
- ``cycle-default`` / ``cycle-with-examples``: a whole ``Framework.schedule_pod`` with the default profile,
  and with the example config (default plugins + NodeCost + SystemReserve + Gang): the difference
  is what the three plugins add to a cycle. Gang's Permit runs after the cycle (binding cycle) and
  is measured on its own (``call-gang-permit``: a pod without the gang label, and a member that
  has to wait).

Run: ``PYTHONPATH=. python -m pytest benches/test_example_plugins.py --benchmark-only``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ksched.cache.cluster import ClusterCache
from ksched.config import default_config
from ksched.framework.interface import CycleState
from ksched.framework.loader import load_with_plugins
from ksched.framework.profile import build_profiles
from ksched.framework.runtime import Framework
from tests import builders

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "examples" / "plugins" / "config.yaml"
PLUGINS = (
    "examples.plugins.node_cost:NodeCost",
    "examples.plugins.system_reserve:SystemReserve",
    "examples.plugins.gang:Gang",
)
N_NODES = 5_000
SEED = 7


@pytest.fixture(scope="module")
def cluster() -> ClusterCache:
    rng = np.random.default_rng(SEED)
    cache = ClusterCache(node_capacity=N_NODES)
    for i in range(N_NODES):
        cpu = str(int(rng.choice([4, 8, 16, 32])))
        labels = {"example.com/hourly-cost": str(int(rng.integers(5, 200)))}
        cache.add_node(
            builders.node(f"node-{i:05d}", cpu=cpu, memory="64Gi", pods=110, labels=labels)
        )
    for k in range(N_NODES * 5):
        node = f"node-{int(rng.integers(N_NODES)):05d}"
        cache.add_pod(builders.pod(f"p{k}", uid=f"u{k}", node_name=node, requests={"cpu": "500m"}))
    return cache


@pytest.fixture(scope="module")
def frameworks() -> dict[str, Framework]:
    config, registry = load_with_plugins(str(CONFIG), PLUGINS, entry_points=False)
    return {
        "examples": build_profiles(config, registry=registry, seed=1)["default-scheduler"],
        "default": build_profiles(default_config(), seed=1)["default-scheduler"],
    }


POD = builders.pod("new", requests={"cpu": "1", "memory": "1Gi"})


def _feasible(cache: ClusterCache) -> np.ndarray:
    return cache.nodes.valid[: cache.nodes.n_rows].copy()


def test_call_node_cost_score_and_normalize(benchmark: Any, cluster: ClusterCache, frameworks: Any) -> None:
    plugin = frameworks["examples"].plugins["NodeCost"]
    feasible = _feasible(cluster)
    state = CycleState()

    def run() -> Any:
        return plugin.normalize_score(state, POD, plugin.score(state, POD, cluster, feasible), feasible)

    out = benchmark(run)
    assert isinstance(out, np.ndarray) and out.max() == 100


def test_call_system_reserve_filter(benchmark: Any, cluster: ClusterCache, frameworks: Any) -> None:
    plugin = frameworks["examples"].plugins["SystemReserve"]
    state = CycleState()
    benchmark(plugin.filter, state, POD, cluster)


@pytest.mark.parametrize("member", [False, True], ids=["no-gang", "member-waits"])
def test_call_gang_permit(benchmark: Any, frameworks: Any, member: bool) -> None:
    plugin = frameworks["examples"].plugins["Gang"]
    labels = {"example.com/gang": "g", "example.com/gang-size": "8"} if member else {}
    pod = builders.pod("m", labels=labels)
    state = CycleState()
    status, _ = benchmark(plugin.permit, state, pod, "node-00001")
    assert (status.code == 4) is member


@pytest.mark.parametrize("profile", ["default", "examples"], ids=["cycle-default", "cycle-with-examples"])
def test_cycle(benchmark: Any, cluster: ClusterCache, frameworks: Any, profile: str) -> None:
    fw = frameworks[profile]
    result = benchmark(fw.schedule_pod, POD, cluster)
    assert result.selected_node is not None
