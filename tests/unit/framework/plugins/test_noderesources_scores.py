"""Scores of NodeResourcesFit's strategies and of NodeResourcesBalancedAllocation, plus one cycle.

Cases follow upstream's tests in ``pkg/scheduler/framework/plugins/noderesources/``:
``requested_to_capacity_ratio_test.go``, ``least_allocated_test.go``, ``most_allocated_test.go`` and
``balanced_allocation_test.go`` (cluster shapes: nodes of 4000m/10000 and 6000m/10000, the
best-effort Skip of 1.33+). Expected values are computed by hand from upstream's formulas and
asserted exactly on both paths. Upstream's own tables (``TestBrokenLinearFunction`` among them)
are in the ``test_noderesources_upstream_*`` modules.
"""

from __future__ import annotations

import numpy as np
import pytest

from ksched.config.types import (
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    ResourceSpec,
    ScoringStrategy,
    UtilizationShapePoint,
)
from ksched.framework.interface import Code, CycleState
from ksched.framework.plugins.noderesources import new_balanced_allocation, new_fit
from ksched.framework.plugins.noderesources.scoring import round_half_away, tdiv
from ksched.framework.registry import Handle
from ksched.framework.runtime import Framework
from tests import builders
from tests.builders import cluster_of, make_node, make_pod


def test_go_arithmetic_helpers() -> None:
    assert list(tdiv(np.array([7, -7, -8, 0], dtype=np.int64), 2)) == [3, -3, -4, 0]
    assert list(round_half_away(np.array([0.5, 1.5, 2.5, -0.5, 2.4999], dtype=np.float64))) == [
        1,
        2,
        3,
        -1,
        2,
    ]


def _args(
    kind: str, resources: tuple[tuple[str, int], ...], shape: tuple[tuple[int, int], ...] = ()
) -> NodeResourcesFitArgs:
    return NodeResourcesFitArgs(
        scoring_strategy=ScoringStrategy(
            type=kind,
            resources=tuple(ResourceSpec(name=n, weight=w) for n, w in resources),
            shape=tuple(UtilizationShapePoint(utilization=u, score=s) for u, s in shape),
        )
    )


CPU_MEM = (("cpu", 1), ("memory", 1))
NODES = [
    make_node("node1", cpu="4000m", memory="10000", pods=110),
    make_node("node2", cpu="6000m", memory="10000", pods=110),
]
EXISTING = [
    make_pod("e1", node_name="node1", requests={"cpu": "3000m", "memory": "5000"}),
    make_pod("e2", node_name="node2", requests={"cpu": "3000m", "memory": "5000"}),
]


@pytest.mark.parametrize(
    ("args", "req", "want"),
    [
        # nothing scheduled on the node side but the existing pods; pod 1000m/2000
        # node1: cpu (4000-4000)*100/4000=0, mem (10000-7000)*100/10000=30 -> 15
        # node2: cpu (6000-4000)*100/6000=33, mem 30 -> 31
        pytest.param(
            _args("LeastAllocated", CPU_MEM), {"cpu": "1000m", "memory": "2000"}, [15, 31], id="least"
        ),
        # weights 3:1 -> node1 (0*3+30)/4=7, node2 (33*3+30)/4=32
        pytest.param(
            _args("LeastAllocated", (("cpu", 3), ("memory", 1))),
            {"cpu": "1000m", "memory": "2000"},
            [7, 32],
            id="least weighted",
        ),
        # most: node1 cpu 100, mem 70 -> 85; node2 cpu 4000*100/6000=66, mem 70 -> 68
        pytest.param(
            _args("MostAllocated", CPU_MEM), {"cpu": "1000m", "memory": "2000"}, [85, 68], id="most"
        ),
        # pod without requests: non-zero defaults 100m / 200Mi, memory over capacity -> capped
        # node1 cpu 3100*100/4000=77, mem 100 -> 88; node2 cpu 3100*100/6000=51, mem 100 -> 75
        pytest.param(_args("MostAllocated", CPU_MEM), None, [88, 75], id="most with non-zero defaults"),
        # rtcr shape (0,0),(100,10): node1 util cpu 100 -> 100, mem 70 -> 70: round(85)=85
        # node2 util cpu 66 -> 66, mem 70 -> 70 -> round(68.0)=68
        pytest.param(
            _args("RequestedToCapacityRatio", CPU_MEM, ((0, 0), (100, 10))),
            {"cpu": "1000m", "memory": "2000"},
            [85, 68],
            id="rtcr",
        ),
        # rtcr shape (0,10),(100,0): node1 cpu 0 (dropped, score 0), mem 30 -> 30; node2 cpu 34, mem 30 -> 32
        pytest.param(
            _args("RequestedToCapacityRatio", CPU_MEM, ((0, 10), (100, 0))),
            {"cpu": "1000m", "memory": "2000"},
            [30, 32],
            id="rtcr drops zero scores",
        ),
        # an extended resource no node has, requested by the pod: skipped (allocatable 0)
        pytest.param(
            _args("LeastAllocated", (("cpu", 1), ("memory", 1), ("example.com/gpu", 5))),
            {"cpu": "1000m", "memory": "2000", "example.com/gpu": "1"},
            [15, 31],
            id="least skips absent scalar",
        ),
    ],
)
def test_strategies(
    path: str, args: NodeResourcesFitArgs, req: dict[str, str] | None, want: list[int]
) -> None:
    cluster = cluster_of(NODES, EXISTING)
    fit = new_fit(args, Handle("p"))
    pod = builders.pod("p", requests=req)
    assert list(np.asarray(fit.score(CycleState(), pod, cluster, np.ones(2, dtype=np.bool_)))) == want


def _bal(resources: tuple[str, ...]) -> NodeResourcesBalancedAllocationArgs:
    return NodeResourcesBalancedAllocationArgs(
        resources=tuple(ResourceSpec(name=n, weight=1) for n in resources)
    )


@pytest.mark.parametrize(
    ("resources", "nodes", "req", "want"),
    [
        # node1 fractions cpu 4000/4000=1, mem 7000/10000=0.7 -> std 0.15 -> 85
        # node2 cpu 4000/6000=0.666.., mem 0.7 -> std 0.01666.. -> 98
        pytest.param(
            ("cpu", "memory"), NODES, {"cpu": "1000m", "memory": "2000"}, [85, 98], id="cpu and memory"
        ),
        # three resources on node1 only has cpu+memory+eph: fractions 1, 0.7, 0.5 -> std 0.2054.. -> 79
        pytest.param(
            ("cpu", "memory", "ephemeral-storage"),
            [
                make_node(
                    "node1", cpu="4000m", memory="10000", pods=10, allocatable={"ephemeral-storage": "100"}
                )
            ],
            {"cpu": "1000m", "memory": "2000", "ephemeral-storage": "50"},
            [79],
            id="three resources, population std",
        ),
    ],
)
def test_balanced_allocation(
    path: str,
    resources: tuple[str, ...],
    nodes: list[dict[str, object]],
    req: dict[str, str],
    want: list[int],
) -> None:
    cluster = cluster_of(nodes, EXISTING)
    bal = new_balanced_allocation(_bal(resources), Handle("p"))
    pod = builders.pod("p", requests=req)
    feasible = np.ones(len(nodes), dtype=np.bool_)
    state = CycleState()
    assert bal.pre_score(state, pod, cluster, feasible).ok
    assert list(np.asarray(bal.score(state, pod, cluster, feasible))) == want


def test_balanced_allocation_skips_best_effort_pods(path: str) -> None:
    cluster = cluster_of(NODES, EXISTING)
    bal = new_balanced_allocation(None, Handle("p"))
    pod = builders.pod("p")
    assert bal.pre_score(CycleState(), pod, cluster, np.ones(2, dtype=np.bool_)).code == Code.SKIP
    # requests of resources BalancedAllocation does not look at do not count
    pod = builders.pod("p", requests={"example.com/gpu": "1"})
    assert bal.pre_score(CycleState(), pod, cluster, np.ones(2, dtype=np.bool_)).code == Code.SKIP


def test_framework_run_selects_with_both_plugins(path: str) -> None:
    nodes = [
        make_node("small", cpu="2", memory="4Gi", pods=10),
        make_node("big", cpu="16", memory="32Gi", pods=10),
        make_node("full", cpu="16", memory="32Gi", pods=1),
        make_node("tiny", cpu="500m", memory="4Gi", pods=10),
    ]
    cluster = cluster_of(nodes, [make_pod("e", node_name="full", requests={"cpu": "1"})])
    handle = Handle("default-scheduler")
    fit = new_fit(None, handle)
    bal = new_balanced_allocation(None, handle)
    fw = Framework(
        "default-scheduler",
        pre_filter=[fit],
        filters=[fit],
        pre_score=[fit, bal],
        scores=[(fit, 1), (bal, 1)],
        rng=np.random.default_rng(7),
    )
    pod = builders.pod("p", requests={"cpu": "1", "memory": "2Gi"})
    result = fw.schedule_pod(pod, cluster, explain=True)
    assert result.status.ok
    assert result.selected_node == "big"
    assert result.first_failure(2) == ("NodeResourcesFit", ["Too many pods"], Code.UNSCHEDULABLE)
    assert result.first_failure(3) == (
        "NodeResourcesFit",
        ["Insufficient cpu"],
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    )
    assert [s.plugin for s in result.scores] == ["NodeResourcesFit", "NodeResourcesBalancedAllocation"]
    # one fused sweep served both plugins
    assert fit._pass is bal._pass
