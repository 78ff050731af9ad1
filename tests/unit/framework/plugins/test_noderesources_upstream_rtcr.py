"""NodeResourcesFit with the RequestedToCapacityRatio strategy, ported from upstream's tests as data.

Upstream: ``pkg/scheduler/framework/plugins/noderesources/requested_to_capacity_ratio_test.go``,
every case of every table, same names, inputs and expected values:
``TestRequestedToCapacityRatioScoringStrategy``, ``TestBrokenLinearFunction`` (each ``case_N`` with
all its assertions), ``TestResourceBinPackingSingleExtended`` and
``TestResourceBinPackingMultipleExtended``; ``defaultResources`` and ``makeNode`` are upstream's
``test_util.go`` ones (``makeNode`` takes milli-cpu and bytes). ``fit_test.go``'s "... case1 if
PreScore is not called" sits with the other strategies' such cases in
``test_noderesources_upstream_allocated.py``.

Inputs are copied literally: ``st.MakeNode().Capacity({"cpu": "4000"})`` is 4000 *cores*;
``st.MakePod().Obj()`` has no containers at all (it requests nothing, not even the non-zero
defaults) and every ``Req(...)`` adds one container. Upstream calls Score per node on nodes
without a ``pods`` allocatable (they would fail Filter), so the plugin runs in a Framework with no
filters: PreScore + Score over all rows, read from ``CycleResult.scores``. Each case runs on the
compiled and the numpy path; ``TestBrokenLinearFunction`` runs the shape function through the
``resource_score`` kernel of each path (one resource of allocatable 100, so utilization = p) and
through the numpy ``broken_line_ref`` directly.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ksched.framework import kernels
from ksched.framework.plugins.noderesources.scoring import (
    REQUESTED_TO_CAPACITY_RATIO,
    SRC_REQUESTED,
    broken_line_ref,
    resource_score_ref,
)
from tests.unit.framework.plugins.noderesources_support import (
    DEFAULT_RESOURCES,
    MAX,
    N4_10,
    N6_10,
    REQ_1_2,
    REQ_2_3,
    fit_args,
    make_node_ext,
    node,
    pod,
    run_cases,
)

STRATEGY = "RequestedToCapacityRatio"
SHAPE = ((0, 10), (100, 0))  # TestRequestedToCapacityRatioScoringStrategy's shape
BIN_PACKING_SHAPE = ((0, 0), (100, 1))  # both TestResourceBinPacking* tests

# (requestedPod, nodes, existingPods, expected scores in node order); resources defaultResources
SCORE_CASES = [
    pytest.param(
        pod(),
        [node("node1", N4_10), node("node2", N4_10)],
        [pod(node_name="node1"), pod(node_name="node1")],
        [MAX, MAX],
        id="nothing scheduled, nothing requested (default - least requested nodes have priority)",
    ),
    pytest.param(
        pod(REQ_1_2, REQ_2_3),
        [node("node1", N4_10), node("node2", N6_10)],
        [pod(node_name="node1"), pod(node_name="node1")],
        [38, 50],
        id=(
            "nothing scheduled, resources requested, differently sized nodes "
            "(default - least requested nodes have priority)"
        ),
    ),
    pytest.param(
        pod(),
        [node("node1", N4_10), node("node2", N6_10)],
        [
            pod({"cpu": "3000", "memory": "5000"}, node_name="node1"),
            pod({"cpu": "3000", "memory": "5000"}, node_name="node2"),
        ],
        [38, 50],
        id=(
            "no resources requested, pods scheduled with resources "
            "(default - least requested nodes have priority)"
        ),
    ),
]


@pytest.mark.parametrize(("requested", "nodes", "existing", "want"), SCORE_CASES)
def test_requested_to_capacity_ratio_scoring_strategy(
    path: str,
    requested: dict[str, Any],
    nodes: list[dict[str, Any]],
    existing: list[dict[str, Any]],
    want: list[int],
) -> None:
    assert run_cases(fit_args(STRATEGY, DEFAULT_RESOURCES, SHAPE), requested, nodes, existing) == want


# (shape points as (utilization, score), assertions as (p, expected))
BROKEN_LINEAR_CASES = [
    pytest.param(
        ((10, 1), (90, 9)),
        [
            (-10, 1),
            (0, 1),
            (9, 1),
            (10, 1),
            (15, 1),
            (19, 1),
            (20, 2),
            (89, 8),
            (90, 9),
            (99, 9),
            (100, 9),
            (110, 9),
        ],
        id="case_0",
    ),
    pytest.param(
        ((0, 2), (40, 10), (100, 0)),
        [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0), (110, 0)],
        id="case_1",
    ),
    pytest.param(
        ((0, 2), (40, 2), (100, 2)),
        [(-10, 2), (0, 2), (20, 2), (30, 2), (40, 2), (70, 2), (100, 2), (110, 2)],
        id="case_2",
    ),
]


@pytest.mark.parametrize(("points", "assertions"), BROKEN_LINEAR_CASES)
def test_broken_linear_function(
    path: str, points: tuple[tuple[int, int], ...], assertions: list[tuple[int, int]]
) -> None:
    shape_u = np.array([u for u, _ in points], dtype=np.int64)
    shape_s = np.array([s for _, s in points], dtype=np.int64)
    ps = np.array([p for p, _ in assertions], dtype=np.int64)
    want = [e for _, e in assertions]
    assert [int(v) for v in broken_line_ref(ps, shape_u, shape_s)] == want
    # Through the scoring kernel of this path: one resource of allocatable 100 requested p, weight
    # 1, so the utilization is p (p > 100 is capped at 100, where every shape here is already
    # flat), and the node score is the shape's value (a 0 drops out, leaving the score 0 anyway).
    n = ps.shape[0]
    alloc = np.full((n, 1), 100, dtype=np.int64)
    req = np.ascontiguousarray(ps.reshape(n, 1))
    nz = np.zeros((n, 2), dtype=np.int64)
    one = np.array([1], dtype=np.int64)
    run = kernels.dispatch("resource_score", resource_score_ref)
    scores, _ = run(
        alloc,
        req,
        nz,
        np.array([0], dtype=np.int64),
        np.array([SRC_REQUESTED], dtype=np.int64),
        np.array([0], dtype=np.int64),
        one,
        REQUESTED_TO_CAPACITY_RATIO,
        shape_u,
        shape_s,
    )
    assert [int(v) for v in scores] == want


FOO = "intel.com/foo"
BAR = "intel.com/bar"
MEM = 10000 * 1024 * 1024


def single_nodes() -> list[dict[str, Any]]:
    return [make_node_ext("node1", 4000, MEM, {FOO: 8}), make_node_ext("node2", 4000, MEM, {FOO: 4})]


def multiple_nodes() -> list[dict[str, Any]]:
    return [
        make_node_ext("node1", 4000, MEM, {FOO: 8, BAR: 4}),
        make_node_ext("node2", 4000, MEM, {FOO: 4, BAR: 8}),
    ]


EXT_3 = {FOO: "2"}  # extendedResource3
EXT_4 = {FOO: "4"}  # extendedResource4
EXT_POD_1 = {FOO: "2", BAR: "2"}  # extendedResourcePod1
EXT_POD_2 = {FOO: "4", BAR: "2"}  # extendedResourcePod2


# (pod, pods, expected scores of node1, node2)
SINGLE_EXTENDED_CASES = [
    pytest.param(pod(), [], [0, 0], id="nothing scheduled, nothing requested"),
    pytest.param(pod(EXT_3), [pod()], [2, 5], id="resources requested, pods scheduled with less resources"),
    pytest.param(
        pod(EXT_3),
        [pod(EXT_3, node_name="node2")],
        [2, 10],
        id="resources requested, pods scheduled with resources, on node with existing pod running ",
    ),
    pytest.param(pod(EXT_4), [pod()], [5, 10], id="resources requested, pods scheduled with more resources"),
]


@pytest.mark.parametrize(("requested", "existing", "want"), SINGLE_EXTENDED_CASES)
def test_resource_bin_packing_single_extended(
    path: str, requested: dict[str, Any], existing: list[dict[str, Any]], want: list[int]
) -> None:
    args = fit_args(STRATEGY, ((FOO, 1),), BIN_PACKING_SHAPE)
    assert run_cases(args, requested, single_nodes(), existing) == want


MULTIPLE_EXTENDED_CASES = [
    pytest.param(pod(), [], [0, 0], id="nothing scheduled, nothing requested"),
    pytest.param(
        pod(EXT_POD_1), [pod()], [4, 3], id="resources requested, pods scheduled with less resources"
    ),
    pytest.param(
        pod(EXT_POD_1),
        [pod(EXT_POD_2, node_name="node2")],
        [4, 7],
        id="resources requested, pods scheduled with resources, on node with existing pod running ",
    ),
    pytest.param(
        pod(EXT_POD_2), [pod()], [5, 5], id="resources requested, pods scheduled with more resources"
    ),
]


@pytest.mark.parametrize(("requested", "existing", "want"), MULTIPLE_EXTENDED_CASES)
def test_resource_bin_packing_multiple_extended(
    path: str, requested: dict[str, Any], existing: list[dict[str, Any]], want: list[int]
) -> None:
    args = fit_args(STRATEGY, ((FOO, 3), (BAR, 5)), BIN_PACKING_SHAPE)
    assert run_cases(args, requested, multiple_nodes(), existing) == want
