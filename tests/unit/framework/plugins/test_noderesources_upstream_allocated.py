"""NodeResourcesFit's LeastAllocated and MostAllocated strategies, ported from upstream's tables as data.

Upstream: ``pkg/scheduler/framework/plugins/noderesources/least_allocated_test.go``
(``TestLeastAllocatedScoringStrategy``) and ``most_allocated_test.go``
(``TestMostAllocatedScoringStrategy``), every case, same names, inputs and expected scores (the
second MostAllocated case named "nothing scheduled, resources requested, differently sized nodes"
carries Go's ``#01`` suffix), with ``defaultResources`` / ``extendedRes`` / ``extendedResourceSet``
from ``test_util.go``; plus the "... if PreScore is not called" cases of ``fit_test.go``
``TestFitScore`` that ``test_noderesources_fit.py`` does not hold, RequestedToCapacityRatio's
included. The two strategies' tables are written once each, below, and every test runs over both:
a test id names the strategy, then upstream's case name.

Inputs are copied literally: ``st.MakeNode().Capacity({"cpu": "4000"})`` is 4000 *cores* and a
``Req({"cpu": "1000"})`` 1000 cores, exactly as upstream's quantities parse; ``st.MakePod().Obj()``
has no containers at all (so it requests nothing, not even the 100m / 200Mi non-zero defaults),
every ``Req(...)`` adds one container and ``Container("container")`` adds one without requests
(which does get the non-zero defaults). Upstream calls Score per node on nodes without a ``pods``
allocatable (they would fail Filter), so the plugin runs in a Framework with no filters:
PreScore + Score over all rows, read from ``CycleResult.scores``. Each case runs on the compiled
and the numpy path.

Adapted (upstream asserts an error of ``NewFit`` on internal, undefaulted args; ksched validates
when it decodes the v1 args, see each case): the three weight-validation cases and "Resources not
set, pods scheduled with error".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from tests.unit.framework.plugins.noderesources_support import (
    DEFAULT_RESOURCES,
    EXTENDED_RES,
    EXTENDED_RESOURCE_SET,
    MAX,
    MIN,
    N4_10,
    N6_10,
    N10_20,
    REQ_1_2,
    REQ_2_3,
    check_resource_with_zero_weight,
    check_resources_not_set,
    fit_args,
    fit_score_without_pre_score,
    node,
    pod,
    run_cases,
    weight_errors,
)

LEAST, MOST = "LeastAllocated", "MostAllocated"
STRATEGIES = (LEAST, MOST)

NO_REQUESTS = None  # st.MakePod().Container("container"): one container, no requests

# (requestedPod, nodes, existingPods, resources, expected scores in node order)
LEAST_ALLOCATED_CASES = [
    pytest.param(
        pod(),
        [node("node1", N4_10), node("node2", N4_10)],
        [],
        DEFAULT_RESOURCES,
        [MAX, MAX],
        id="nothing scheduled, nothing requested",
    ),
    pytest.param(
        pod(REQ_1_2, REQ_2_3),
        [node("node1", N4_10), node("node2", N6_10)],
        [],
        DEFAULT_RESOURCES,
        [37, 50],
        id="nothing scheduled, resources requested, differently sized nodes",
    ),
    pytest.param(
        pod(),
        [node("node1", N4_10), node("node2", N4_10)],
        [pod(node_name="node1"), pod(node_name="node1"), pod(node_name="node2"), pod(node_name="node2")],
        DEFAULT_RESOURCES,
        [MAX, MAX],
        id="no resources requested, pods scheduled",
    ),
    pytest.param(
        pod(),
        [node("node1", N10_20), node("node2", N10_20)],
        [
            pod({"cpu": "3000", "memory": "0"}, node_name="node1"),
            pod({"cpu": "3000", "memory": "0"}, node_name="node1"),
            pod({"cpu": "3000", "memory": "0"}, node_name="node2"),
            pod({"cpu": "3000", "memory": "5000"}, node_name="node2"),
        ],
        DEFAULT_RESOURCES,
        [70, 57],
        id="no resources requested, pods scheduled with resources",
    ),
    pytest.param(
        pod(REQ_1_2, REQ_2_3),
        [node("node1", N10_20), node("node2", N10_20)],
        [
            pod({"cpu": "3000", "memory": "0"}, node_name="node1"),
            pod({"cpu": "3000", "memory": "5000"}, node_name="node2"),
        ],
        DEFAULT_RESOURCES,
        [57, 45],
        id="resources requested, pods scheduled with resources",
    ),
    pytest.param(
        pod(REQ_1_2, REQ_2_3),
        [node("node1", N10_20), node("node2", {"cpu": "10000", "memory": "50000"})],
        [
            pod({"cpu": "3000", "memory": "0"}, node_name="node1"),
            pod({"cpu": "3000", "memory": "5000"}, node_name="node2"),
        ],
        DEFAULT_RESOURCES,
        [57, 60],
        id="resources requested, pods scheduled with resources, differently sized nodes",
    ),
    pytest.param(
        pod({"cpu": "3000", "memory": "0"}),
        [node("node1", N4_10), node("node2", N4_10)],
        [
            pod({"cpu": "3000", "memory": "0"}, node_name="node1"),
            pod({"cpu": "3000", "memory": "5000"}, node_name="node2"),
        ],
        DEFAULT_RESOURCES,
        [50, 25],
        id="requested resources exceed node capacity",
    ),
    pytest.param(
        pod(),
        [node("node1"), node("node2")],
        [
            pod({"cpu": "3000", "memory": "0"}, node_name="node1"),
            pod({"cpu": "3000", "memory": "5000"}, node_name="node2"),
        ],
        DEFAULT_RESOURCES,
        [MIN, MIN],
        id="zero node resources, pods scheduled with resources",
    ),
    pytest.param(
        pod(REQ_1_2, REQ_2_3, node_name="node1"),
        [node("node1", N4_10), node("node2", N6_10)],
        [],
        (("memory", 2), ("cpu", 1)),
        [41, 50],
        id=(
            "nothing scheduled, resources requested with different weight on CPU and memory, "
            "differently sized nodes"
        ),
    ),
    pytest.param(
        pod(REQ_1_2, REQ_2_3, node_name="node1"),
        [node("node1", {"cpu": "6000", "memory": "10000"}), node("node2", {**N6_10, EXTENDED_RES: "4"})],
        [],
        EXTENDED_RESOURCE_SET,
        [50, 50],
        id="bypass extended resource if the pod does not request",
    ),
    pytest.param(
        pod({"cpu": "3000", "memory": "5000", EXTENDED_RES: "2"}, node_name="node1"),
        [node("node1", {**N6_10, EXTENDED_RES: "4"}), node("node2", {**N6_10, EXTENDED_RES: "10"})],
        [],
        EXTENDED_RESOURCE_SET,
        [50, 60],
        id="honor extended resource if the pod requests",
    ),
    pytest.param(
        pod({"cpu": "3000", "memory": "4000"}, node_name="node1"),
        [node("node1", N6_10), node("node2", {**N6_10, EXTENDED_RES: "4"})],
        [],
        ((EXTENDED_RES, 2), ("cpu", 1), ("memory", 1)),
        [55, 55],
        id="if the node doesn't have a resource",
    ),
]

# (requestedPod, nodes, existingPods, resources, expected scores in node order)
MOST_ALLOCATED_CASES = [
    pytest.param(
        pod(),
        [node("node1", N4_10), node("node2", N4_10)],
        [],
        DEFAULT_RESOURCES,
        [MIN, MIN],
        id="nothing scheduled, nothing requested",
    ),
    pytest.param(
        pod(REQ_1_2, REQ_2_3),
        [node("node1", N4_10), node("node2", N6_10)],
        [],
        DEFAULT_RESOURCES,
        [62, 50],
        id="nothing scheduled, resources requested, differently sized nodes",
    ),
    pytest.param(
        pod(),
        [node("node1", N10_20), node("node2", N10_20)],
        [
            pod({"cpu": "3000", "memory": "0"}, node_name="node1"),
            pod({"cpu": "3000", "memory": "0"}, node_name="node1"),
            pod({"cpu": "3000", "memory": "0"}, node_name="node2"),
            pod({"cpu": "3000", "memory": "5000"}, node_name="node2"),
        ],
        DEFAULT_RESOURCES,
        [30, 42],
        id="no resources requested, pods scheduled with resources",
    ),
    pytest.param(
        pod(REQ_1_2, REQ_2_3),
        [node("node1", N10_20), node("node2", N10_20)],
        [
            pod({"cpu": "3000", "memory": "0"}, node_name="node1"),
            pod({"cpu": "3000", "memory": "5000"}, node_name="node2"),
        ],
        DEFAULT_RESOURCES,
        [42, 55],
        id="resources requested, pods scheduled with resources",
    ),
    pytest.param(
        pod({"cpu": "2000", "memory": "4000"}, {"cpu": "3000", "memory": "5000"}),
        [
            node("node1", {"cpu": "5000", "memory": "10000"}),
            node("node2", {"cpu": "10000", "memory": "9000"}),
        ],
        [],
        DEFAULT_RESOURCES,
        [95, 75],
        id="resources requested equal node capacity",
    ),
    pytest.param(
        pod(REQ_1_2, REQ_2_3),
        [node("node1", N4_10), node("node2", N6_10)],
        [],
        (("memory", 2), ("cpu", 1)),
        [58, 50],
        id="nothing scheduled, resources requested, differently sized nodes#01",
    ),
    pytest.param(
        pod(NO_REQUESTS),
        [
            node("node1", {"cpu": "250m", "memory": "1000Mi"}),
            node("node2", {"cpu": "250m", "memory": "1000Mi"}),
        ],
        [pod(NO_REQUESTS, node_name="node1"), pod(NO_REQUESTS, node_name="node1")],
        DEFAULT_RESOURCES,
        [80, 30],
        id="no resources requested, pods scheduled, nonzero request for resource",
    ),
    pytest.param(
        pod(REQ_1_2, REQ_2_3),
        [node("node1", N6_10), node("node2", {**N6_10, EXTENDED_RES: "4"})],
        [],
        EXTENDED_RESOURCE_SET,
        [50, 50],
        id="bypass extended resource if the pod does not request",
    ),
    pytest.param(
        pod({"cpu": "3000", "memory": "5000", EXTENDED_RES: "2"}, node_name="node1"),
        [node("node1", {**N6_10, EXTENDED_RES: "4"}), node("node2", {**N6_10, EXTENDED_RES: "10"})],
        [],
        EXTENDED_RESOURCE_SET,
        [50, 40],
        id="honor extended resource if the pod request",
    ),
    pytest.param(
        pod({"cpu": "3000", "memory": "4000"}, node_name="node1"),
        [node("node1", N6_10), node("node2", {**N6_10, EXTENDED_RES: "4"})],
        [],
        ((EXTENDED_RES, 2), ("cpu", 1), ("memory", 1)),
        [45, 45],
        id="if the node doesn't have a resource",
    ),
]

# (resources as v1 args, fields upstream reports Invalid)
WEIGHT_CASES: Mapping[str, Sequence[Any]] = {
    LEAST: [
        pytest.param(
            [{"name": "memory", "weight": -1}, {"name": "cpu", "weight": 1}],
            ["scoringStrategy.resources[0].weight"],
            id="resource with negative weight",
        ),
        pytest.param(
            [{"name": "memory", "weight": 1}, {"name": "cpu", "weight": 101}],
            ["scoringStrategy.resources[1].weight"],
            id="resource weight larger than MaxNodeScore",
        ),
    ],
    MOST: [
        pytest.param(
            [{"name": "memory", "weight": -1}, {"name": "cpu", "weight": 1}],
            ["scoringStrategy.resources[0].weight"],
            id="resource with negative weight",
        ),
        pytest.param(
            [{"name": "memory", "weight": 101}],
            ["scoringStrategy.resources[0].weight"],
            id="resource weight larger than MaxNodeScore",
        ),
    ],
}

# fit_test.go TestFitScore, "test case for ScoringStrategy <strategy> if PreScore is not called":
# (args, requested pod, scores of node1 and node2 of fit_score_without_pre_score's cluster)
PRE_SCORE_NOT_CALLED_CASES = [
    pytest.param(fit_args(LEAST, DEFAULT_RESOURCES), pod(REQ_1_2), [32, 63], id=LEAST),
    pytest.param(fit_args(MOST, DEFAULT_RESOURCES), pod(REQ_1_2), [67, 36], id=MOST),
    pytest.param(
        fit_args("RequestedToCapacityRatio", DEFAULT_RESOURCES, ((0, 10), (100, 0))),
        pod({"cpu": "3000", "memory": "5000"}),
        [10, 32],
        id="RequestedToCapacityRatio case1",
    ),
]


def per_strategy(tables: Mapping[str, Sequence[Any]]) -> list[Any]:
    """One flat parameter list from per-strategy tables: the strategy becomes the first argument and
    prefixes the id, so that each table stays as upstream wrote it."""
    return [
        pytest.param(strategy, *case.values, id=f"{strategy}: {case.id}", marks=case.marks)
        for strategy, cases in tables.items()
        for case in cases
    ]


@pytest.mark.parametrize(
    ("strategy", "requested", "nodes", "existing", "resources", "want"),
    per_strategy({LEAST: LEAST_ALLOCATED_CASES, MOST: MOST_ALLOCATED_CASES}),
)
def test_allocated_scoring_strategy(
    path: str,
    strategy: str,
    requested: dict[str, Any],
    nodes: list[dict[str, Any]],
    existing: list[dict[str, Any]],
    resources: tuple[tuple[str, int], ...],
    want: list[int],
) -> None:
    assert run_cases(fit_args(strategy, resources), requested, nodes, existing) == want


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_resources_not_set_pods_scheduled_with_error(strategy: str) -> None:
    """Upstream "Resources not set, pods scheduled with error" (adapted, see the check)."""
    check_resources_not_set(strategy)


@pytest.mark.parametrize(("strategy", "resources", "want_fields"), per_strategy(WEIGHT_CASES))
def test_weight_validation(strategy: str, resources: list[dict[str, Any]], want_fields: list[str]) -> None:
    """Upstream: ``field.ErrorTypeInvalid`` at exactly these fields (ignoring BadValue/Detail)."""
    fields, _ = weight_errors(strategy, resources)
    assert fields == want_fields


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_resource_with_zero_weight(strategy: str) -> None:
    """Upstream "resource with zero weight" (adapted to v1 defaulting, see the check)."""
    check_resource_with_zero_weight(strategy)


@pytest.mark.parametrize(("args", "requested", "want"), PRE_SCORE_NOT_CALLED_CASES)
def test_fit_score_if_prescore_is_not_called(
    path: str, args: Any, requested: dict[str, Any], want: list[int]
) -> None:
    """Score straight after construction, no PreScore, on ``fit_test.go``'s two-node cluster."""
    assert fit_score_without_pre_score(args, requested) == want
