"""NodeResourcesBalancedAllocation, ported from upstream's table test as data.

Upstream: ``pkg/scheduler/framework/plugins/noderesources/balanced_allocation_test.go``
(``TestNodeResourcesBalancedAllocation``, every case, same names, inputs and expected scores;
``makeNode`` is upstream's ``test_util.go`` one, taking milli-cpu and bytes). The pod specs
``cpuOnly`` (bound to node1), ``cpuAndMemory`` (bound to node2) and ``cpuAndMemoryAndGPU`` (bound to
node1) are copied with their ``NodeName``, which decides where the existing pods count.

The two DRA cases ("include DRA resource ...") need the ``DRAExtendedResource`` gate with a
DeviceClass and ResourceSlices (the extended resource is backed by DRA devices, not by node
allocatable); ksched does not model DRA, so they are listed and skipped. ``TestBalancedAllocation
SignPod`` (pod signatures for batched scheduling) has no counterpart in ksched and is not ported.

Upstream calls PreScore (when ``runPreScore``) and then Score per node on nodes without a ``pods``
allocatable, so the plugin runs in a Framework with no filters (PreScore + Score over all rows,
read from ``CycleResult.scores``), or, for the "PreScore not called" cases, its ``score`` is called
directly. Each case runs on the compiled and the numpy path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from ksched.config.types import NodeResourcesBalancedAllocationArgs, ResourceSpec
from ksched.framework.interface import Code, CycleState
from ksched.framework.plugins.noderesources import new_balanced_allocation
from ksched.framework.registry import Handle
from ksched.framework.runtime import Framework
from ksched.model.pod import pod_from_dict
from tests.builders import cluster_of
from tests.unit.framework.plugins.noderesources_support import MAX, by_node, pod
from tests.unit.framework.plugins.noderesources_support import make_node_ext as node

GPU = "nvidia.com/gpu"
DEFAULT_SET = ("cpu", "memory")  # defaultResourceBalancedAllocationSet
WITH_GPU = ("cpu", "memory", GPU)


def spec_pod(node_name: str, *reqs: Mapping[str, str]) -> dict[str, Any]:
    """``&v1.Pod{Spec: ...}`` / ``st.MakePod().Req(...)``: one container per request map."""
    return pod(*reqs, node_name=node_name)


def cpu_and_memory_and_gpu() -> dict[str, Any]:
    return spec_pod(
        "node1",
        {"cpu": "1000m", "memory": "2000"},
        {"cpu": "2000m", "memory": "3000", GPU: "3"},
    )


def cpu_only() -> dict[str, Any]:
    return spec_pod("node1", {"cpu": "1000m", "memory": "0"}, {"cpu": "2000m", "memory": "0"})


def cpu_and_memory() -> dict[str, Any]:
    return spec_pod("node2", {"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000"})


def bal_args(resources: tuple[str, ...]) -> NodeResourcesBalancedAllocationArgs:
    return NodeResourcesBalancedAllocationArgs(
        resources=tuple(ResourceSpec(name=n, weight=1) for n in resources)
    )


DRA_SKIP = pytest.mark.skip(
    reason="needs the DRAExtendedResource gate, a DeviceClass and ResourceSlices; ksched does not model DRA"
)

# (pod, existing pods, nodes, resources, runPreScore, expected scores in node order or Code.SKIP)
CASES = [
    pytest.param(
        spec_pod(""),
        [],
        [node("node1", 4000, 10000), node("node2", 4000, 10000)],
        DEFAULT_SET,
        True,
        Code.SKIP,
        id="nothing scheduled, nothing requested, skip in PreScore",
    ),
    pytest.param(
        cpu_and_memory(),
        [],
        [node("node1", 4000, 10000), node("node2", 6000, 10000)],
        DEFAULT_SET,
        True,
        [87, MAX],
        id="nothing scheduled, resources requested, differently sized nodes",
    ),
    pytest.param(
        cpu_and_memory(),
        [cpu_only(), cpu_and_memory()],
        [node("node1", 10000, 20000), node("node2", 10000, 20000)],
        DEFAULT_SET,
        True,
        [82, 95],
        id="resources requested, pods scheduled with resources",
    ),
    pytest.param(
        cpu_and_memory(),
        [cpu_only(), cpu_and_memory()],
        [node("node1", 10000, 20000), node("node2", 10000, 50000)],
        DEFAULT_SET,
        True,
        [82, 80],
        id="resources requested, pods scheduled with resources, differently sized nodes",
    ),
    pytest.param(
        cpu_only(),
        [cpu_only(), cpu_and_memory()],
        [node("node1", 6000, 10000), node("node2", 6000, 10000)],
        DEFAULT_SET,
        True,
        [50, 75],
        id="requested resources at node capacity",
    ),
    pytest.param(
        spec_pod("", {"memory": "0", GPU: "1"}),
        [cpu_and_memory(), cpu_and_memory_and_gpu()],
        [node("node1", 3500, 40000, {GPU: 8}), node("node2", 3500, 40000, {GPU: 8})],
        WITH_GPU,
        True,
        [70, 65],
        id="include scalar resource on a node for balanced resource allocation",
    ),
    pytest.param(
        cpu_and_memory(),
        [],
        [node("node1", 3500, 40000, {GPU: 8}), node("node2", 3500, 40000)],
        WITH_GPU,
        True,
        [63, 63],
        id="node without the scalar resource should skip the scalar resource",
    ),
    pytest.param(
        cpu_and_memory(),
        [cpu_only(), cpu_and_memory()],
        [node("node1", 10000, 20000), node("node2", 10000, 20000)],
        DEFAULT_SET,
        False,
        [82, 95],
        id="resources requested, pods scheduled with resources if PreScore not called",
    ),
    pytest.param(
        None,
        [cpu_only(), cpu_and_memory()],
        [node("node1", 3500, 40000), node("node2", 3500, 40000)],
        None,
        True,
        [62, 63],
        id="include DRA resource on a node for balanced resource allocation",
        marks=DRA_SKIP,
    ),
    pytest.param(
        None,
        [cpu_only(), cpu_and_memory()],
        [node("node1", 3500, 40000), node("node2", 3500, 40000)],
        None,
        False,
        [62, 63],
        id="include DRA resource on a node for balanced resource allocation if PreScore not called",
        marks=DRA_SKIP,
    ),
]


@pytest.mark.parametrize(("requested", "existing", "nodes", "resources", "run_pre_score", "want"), CASES)
def test_node_resources_balanced_allocation(
    path: str,
    requested: dict[str, Any],
    existing: list[dict[str, Any]],
    nodes: list[dict[str, Any]],
    resources: tuple[str, ...],
    run_pre_score: bool,
    want: list[int] | Code,
) -> None:
    cluster = cluster_of(nodes, existing)
    bal = new_balanced_allocation(bal_args(resources), Handle("p"))
    incoming = pod_from_dict(requested)
    names = [n["metadata"]["name"] for n in nodes]
    feasible = np.ones(cluster.nodes.n_rows, dtype=np.bool_)
    if not run_pre_score:
        assert by_node(cluster, bal.score(CycleState(), incoming, cluster, feasible), names) == want
        return
    want_code = want if isinstance(want, Code) else Code.SUCCESS
    assert bal.pre_score(CycleState(), incoming, cluster, feasible).code == want_code
    fw = Framework("p", pre_score=[bal], scores=[(bal, 1)], rng=np.random.default_rng(0))
    result = fw.schedule_pod(incoming, cluster, explain=True)
    assert result.status.ok, result.status
    assert bool(np.all(result.feasible))
    if want_code == Code.SKIP:
        assert result.scores == []  # skipped in PreScore: upstream never calls Score
        return
    assert [s.plugin for s in result.scores] == ["NodeResourcesBalancedAllocation"]
    assert by_node(cluster, result.scores[0].scores, names) == want
