"""Upstream's DefaultPreemption unit-test tables, ported as data.

Sources (kubernetes/kubernetes):
- ``pkg/scheduler/framework/plugins/defaultpreemption/default_preemption_test.go``: TestPostFilter,
  TestDryRunPreemption, TestSelectBestCandidate, TestPodEligibleToPreemptOthers, TestPreempt,
  TestPreEnqueue.
- ``pkg/scheduler/framework/preemption/preemption_test.go``: TestNodesWherePreemptionMightHelp.

Not ported, because ksched has no such mechanism: cases driven by the ``test-plugin`` PreFilter
extension (AddPod/RemovePod errors: ksched re-runs PreFilter instead of calling extensions),
scheduler extenders, pod groups (TAS / workload-aware preemption gates are off in v1.35), and the
``IsEligiblePod`` / ``MoreImportantPod`` Go hooks (TestCustomSelection, TestCustomOrdering).
Upstream's filter-call counts (``expectedNumFilterCalled``) count per-node calls, which a vectorized
filter does not have. Upstream's offsets come from ``rand.New(rand.NewSource(4))``; the tables'
comments give them (4, 1, 3 for five nodes) and they are passed in directly.
"""

from __future__ import annotations

from typing import Any

import pytest

from ksched.config.types import DefaultPreemptionArgs
from ksched.framework.interface import Code
from ksched.framework.messages import fit_error_message
from ksched.framework.plugins.defaultpreemption import ERR_WAITING, DefaultPreemption
from ksched.framework.plugins.defaultpreemption.plugin import potential_rows
from ksched.framework.plugins.interpodaffinity import new as new_inter_pod_affinity
from ksched.framework.plugins.podtopologyspread import new as new_pod_topology_spread
from ksched.framework.registry import Handle
from ksched.model.pod import pod_from_dict
from tests.unit.framework.plugins.preemption_support import (
    HIGH,
    LARGE,
    LOW,
    MEDIUM,
    MID,
    NEG,
    ONE_POD,
    SMALL,
    VERY_HIGH,
    VERY_LARGE,
    AllFail,
    MatchName,
    cluster,
    cycle_with_statuses,
    fit_framework,
    node,
    pdb,
    vpod,
)

U, UU = Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE
NODE_RES = {"cpu": "200m", "memory": "400"}

# --------------------------------------------------------------------------- TestPostFilter
# (name, pod, pods, pdbs, nodes, statuses, want nominated node, want status code, want message)
POST_FILTER_CASES: list[tuple[Any, ...]] = [
    (
        "pod with higher priority can be made schedulable",
        vpod("p", priority=HIGH),
        [vpod("p1", "node1")],
        [],
        [node("node1", ONE_POD)],
        {"node1": U},
        "node1",
        Code.SUCCESS,
        "",
    ),
    (
        "pod with tied priority is still unschedulable",
        vpod("p"),
        [vpod("p1", "node1")],
        [],
        [node("node1", ONE_POD)],
        {"node1": U},
        "",
        U,
        "0/1 nodes are available: 1 No preemption victims found for incoming pod.",
    ),
    (
        "preemption should respect filteredNodesStatuses",
        vpod("p", priority=HIGH),
        [vpod("p1", "node1")],
        [],
        [node("node1", ONE_POD)],
        {"node1": UU},
        "",
        U,
        "0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
    ),
    (
        "preemption should respect absent NodeToStatusReader entry meaning UnschedulableAndUnresolvable",
        vpod("p", priority=HIGH),
        [vpod("p1", "node1")],
        [],
        [node("node1", ONE_POD)],
        {},
        "",
        U,
        "0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
    ),
    (
        "pod can be made schedulable on one node",
        vpod("p", priority=MID),
        [vpod("p1", "node1", priority=HIGH), vpod("p2", "node2", priority=LOW)],
        [],
        [node("node1", ONE_POD), node("node2", ONE_POD)],
        {"node1": U, "node2": U},
        "node2",
        Code.SUCCESS,
        "",
    ),
    (
        "pod can be made schedulable on minHighestPriority node",
        vpod("p", priority=VERY_HIGH),
        [
            vpod(
                "p1", "node1", priority=HIGH, labels={"test.kubernetes.io/is-violating-pdb": "non-violating"}
            ),
            vpod("p2", "node1", priority=LOW, labels={"test.kubernetes.io/is-violating-pdb": "violating"}),
            vpod("p3", "node2", priority=MID, labels={"test.kubernetes.io/is-violating-pdb": "violating"}),
        ],
        [
            pdb("violating-pdb", {"test.kubernetes.io/is-violating-pdb": "violating"}, 0),
            pdb("non-violating-pdb", {"test.kubernetes.io/is-violating-pdb": "non-violating"}, 2**31 - 1),
        ],
        [node("node1", ONE_POD), node("node2", ONE_POD)],
        {"node1": U, "node2": U},
        "node2",
        Code.SUCCESS,
        "",
    ),
    (
        "no candidate nodes found, no enough resource after removing low priority pods",
        vpod("p", priority=HIGH, req=LARGE),
        [vpod("p1", "node1"), vpod("p2", "node2")],
        [],
        [node("node1", NODE_RES), node("node2", NODE_RES)],
        {"node1": U, "node2": U},
        "",
        U,
        "0/2 nodes are available: 2 Insufficient cpu.",
    ),
    (
        "no candidate nodes found with mixed reasons, no lower priority pod and no enough CPU resource",
        vpod("p", priority=HIGH, req=LARGE),
        [vpod("p1", "node1", priority=HIGH), vpod("p2", "node2"), vpod("p3", "node3", priority=HIGH)],
        [],
        [node("node1", ONE_POD), node("node2", NODE_RES), node("node3", ONE_POD)],
        {"node1": U, "node2": U, "node3": U},
        "",
        U,
        "0/3 nodes are available: 1 Insufficient cpu, 2 No preemption victims found for incoming pod.",
    ),
    (
        "no candidate nodes found with mixed reason, 2 UnschedulableAndUnresolvable nodes and 2 nodes don't "
        "have enough CPU resource",
        vpod("p", priority=HIGH, req=LARGE),
        [vpod("p1", "node1"), vpod("p2", "node2")],
        [],
        [node("node1", NODE_RES), node("node2", NODE_RES), node("node3", NODE_RES), node("node4", NODE_RES)],
        {"node1": U, "node2": U, "node4": UU},
        "",
        U,
        "0/4 nodes are available: 2 Insufficient cpu, 2 Preemption is not helpful for scheduling.",
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "pods", "pdbs", "nodes", "statuses", "want_node", "want_code", "want_msg"),
    POST_FILTER_CASES,
    ids=[c[0] for c in POST_FILTER_CASES],
)
def test_post_filter(
    name: str,
    pod: Any,
    pods: Any,
    pdbs: Any,
    nodes: Any,
    statuses: Any,
    want_node: str,
    want_code: Code,
    want_msg: str,
) -> None:
    cache = cluster(nodes, pods, pdbs)
    fw, _ = fit_framework()
    p = pod_from_dict(pod)
    result = cycle_with_statuses(p, cache, statuses)
    got = fw.run_post_filter(p, cache, result)
    assert got is not None
    assert got.nominated_node == want_node
    assert got.status.code == want_code
    assert got.status.message == want_msg
    assert not got.keep_nomination  # upstream: NewPostFilterResultWithNominatedNode(...) in every case
    if want_msg:
        # The full FailedScheduling text carries upstream's "preemption: " prefix.
        assert fit_error_message(result, got.status.message).endswith(" preemption: " + want_msg)


# --------------------------------------------------------------------------- TestDryRunPreemption
def _fit() -> list[Any]:
    return []


def _ipa() -> list[Any]:
    return [new_inter_pod_affinity(None, Handle("default-scheduler"))]


def _pts() -> list[Any]:
    return [new_pod_topology_spread(None, Handle("default-scheduler"))]


ANTI = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]},
                "topologyKey": "hostname",
            }
        ]
    }
}
SPREAD = [
    {
        "maxSkew": 1,
        "topologyKey": key,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]},
    }
    for key in ("zone", "hostname")
]
FOO = {"foo": ""}
ARGS_40_1 = DefaultPreemptionArgs(min_candidate_nodes_percentage=40, min_candidate_nodes_absolute=1)
ARGS_40_2 = DefaultPreemptionArgs(min_candidate_nodes_percentage=40, min_candidate_nodes_absolute=2)
APP = {"app": "foo"}

# (name, filters kind, extra filters, fit?, node specs, test pods, init pods, pdbs, args, offsets,
#  expected per cycle: {node: ([victim names sorted], num pdb violations)})
DRY_RUN_CASES: list[tuple[Any, ...]] = [
    (
        "a pod that does not fit on any node",
        [AllFail("FalseFilter")],
        False,
        ["node1", "node2"],
        [vpod("p", priority=HIGH)],
        [vpod("p1", "node1", priority=MID), vpod("p2", "node2", priority=MID)],
        [],
        None,
        None,
        [{}],
    ),
    (
        "a pod that fits with no preemption",
        [AllFail()],
        False,
        ["node1", "node2"],
        [vpod("p", priority=HIGH)],
        [vpod("p1", "node1", priority=MID), vpod("p2", "node2", priority=MID)],
        [],
        None,
        None,
        [{}],
    ),
    (
        "a pod that fits on one node with no preemption",
        [MatchName(), AllFail()],
        False,
        ["node1", "node2"],
        [vpod("node1", priority=HIGH)],
        [vpod("p1", "node1", priority=MID), vpod("p2", "node2", priority=MID)],
        [],
        None,
        None,
        [{}],
    ),
    (
        "a pod that fits on both nodes when lower priority pods are preempted",
        [],
        True,
        ["node1", "node2"],
        [vpod("p", priority=HIGH, req=LARGE)],
        [vpod("p1", "node1", priority=MID, req=LARGE), vpod("p2", "node2", priority=MID, req=LARGE)],
        [],
        None,
        None,
        [{"node1": (["p1"], 0), "node2": (["p2"], 0)}],
    ),
    (
        "a pod that would fit on the nodes, but other pods running are higher priority, no preemption would "
        "happen",
        [],
        True,
        ["node1", "node2"],
        [vpod("p", priority=LOW, req=LARGE)],
        [vpod("p1", "node1", priority=MID, req=LARGE), vpod("p2", "node2", priority=MID, req=LARGE)],
        [],
        None,
        None,
        [{}],
    ),
    (
        "medium priority pod is preempted, but lower priority one stays as it is small",
        [],
        True,
        ["node1", "node2"],
        [vpod("p", priority=HIGH, req=LARGE)],
        [
            vpod("p1.1", "node1", priority=LOW, req=SMALL),
            vpod("p1.2", "node1", priority=MID, req=LARGE),
            vpod("p2", "node2", priority=MID, req=LARGE),
        ],
        [],
        None,
        None,
        [{"node1": (["p1.2"], 0), "node2": (["p2"], 0)}],
    ),
    (
        "mixed priority pods are preempted",
        [],
        True,
        ["node1", "node2"],
        [vpod("p", priority=HIGH, req=LARGE)],
        [
            vpod("p1.1", "node1", priority=MID, req=SMALL),
            vpod("p1.2", "node1", priority=LOW, req=SMALL),
            vpod("p1.3", "node1", priority=MID, req=MEDIUM),
            vpod("p1.4", "node1", priority=HIGH, req=SMALL),
            vpod("p2", "node2", priority=HIGH, req=LARGE),
        ],
        [],
        None,
        None,
        [{"node1": (["p1.2", "p1.3"], 0)}],
    ),
    (
        "mixed priority pods are preempted, pick later StartTime one when priorities are equal",
        [],
        True,
        ["node1", "node2"],
        [vpod("p", priority=HIGH, req=LARGE)],
        [
            vpod("p1.1", "node1", priority=LOW, req=SMALL, start=5),
            vpod("p1.2", "node1", priority=LOW, req=SMALL, start=4),
            vpod("p1.3", "node1", priority=MID, req=MEDIUM, start=3),
            vpod("p1.4", "node1", priority=HIGH, req=SMALL, start=2),
            vpod("p2", "node2", priority=HIGH, req=LARGE, start=1),
        ],
        [],
        None,
        None,
        [{"node1": (["p1.1", "p1.3"], 0)}],
    ),
    (
        "pod with anti-affinity is preempted",
        "ipa",
        True,
        ["node1", "node2"],
        [vpod("p", priority=HIGH, req=SMALL, labels=FOO)],
        [
            vpod("p1.1", "node1", priority=LOW, req=SMALL, labels=FOO, affinity=ANTI),
            vpod("p1.2", "node1", priority=MID, req=SMALL),
            vpod("p1.3", "node1", priority=HIGH, req=SMALL),
            vpod("p2", "node2", priority=HIGH, req=SMALL),
        ],
        [],
        None,
        None,
        [{"node1": (["p1.1"], 0)}],
    ),
    (
        "preemption to resolve pod topology spread filter failure",
        "pts",
        False,
        ["node-a/zone1", "node-b/zone1", "node-x/zone2"],
        [vpod("p", priority=HIGH, labels=FOO, topologySpreadConstraints=SPREAD)],
        [
            vpod("pod-a1", "node-a", priority=MID, labels=FOO),
            vpod("pod-a2", "node-a", priority=LOW, labels=FOO),
            vpod("pod-b1", "node-b", priority=LOW, labels=FOO),
            vpod("pod-x1", "node-x", priority=HIGH, labels=FOO),
            vpod("pod-x2", "node-x", priority=HIGH, labels=FOO),
        ],
        [],
        None,
        None,
        [{"node-a": (["pod-a2"], 0), "node-b": (["pod-b1"], 0)}],
    ),
    (
        "get Unschedulable in the preemption phase when the filter plugins filtering the nodes",
        [AllFail()],
        True,
        ["node1", "node2"],
        [vpod("p", priority=HIGH, req=LARGE)],
        [vpod("p1", "node1", priority=MID, req=LARGE), vpod("p2", "node2", priority=MID, req=LARGE)],
        [],
        None,
        None,
        [{}],
    ),
    (
        "preemption with violation of same pdb",
        [],
        True,
        ["node1"],
        [vpod("p", priority=HIGH, req=VERY_LARGE)],
        [
            vpod("p1.1", "node1", priority=MID, req=MEDIUM, labels=APP),
            vpod("p1.2", "node1", priority=MID, req=MEDIUM, labels=APP),
        ],
        [pdb("pdb", APP, 1)],
        None,
        None,
        [{"node1": (["p1.1", "p1.2"], 1)}],
    ),
    (
        "preemption with violation of the pdb with pod whose eviction was processed, the victim doesn't "
        "belong to DisruptedPods",
        [],
        True,
        ["node1"],
        [vpod("p", priority=HIGH, req=VERY_LARGE)],
        [
            vpod("p1.1", "node1", priority=MID, req=MEDIUM, labels=APP),
            vpod("p1.2", "node1", priority=MID, req=MEDIUM, labels=APP),
        ],
        [pdb("pdb", APP, 1, ["p2"])],
        None,
        None,
        [{"node1": (["p1.1", "p1.2"], 1)}],
    ),
    (
        "preemption with violation of the pdb with pod whose eviction was processed, the victim belongs to "
        "DisruptedPods",
        [],
        True,
        ["node1"],
        [vpod("p", priority=HIGH, req=VERY_LARGE)],
        [
            vpod("p1.1", "node1", priority=MID, req=MEDIUM, labels=APP),
            vpod("p1.2", "node1", priority=MID, req=MEDIUM, labels=APP),
        ],
        [pdb("pdb", APP, 1, ["p1.2"])],
        None,
        None,
        [{"node1": (["p1.1", "p1.2"], 0)}],
    ),
    (
        "preemption with violation of the pdb with pod whose eviction was processed, the victim which "
        "belongs to DisruptedPods is treated as 'nonViolating'",
        [],
        True,
        ["node1"],
        [vpod("p", priority=HIGH, req=VERY_LARGE)],
        [
            vpod("p1.1", "node1", priority=MID, req=MEDIUM, labels=APP),
            vpod("p1.2", "node1", priority=MID, req=MEDIUM, labels=APP),
            vpod("p1.3", "node1", priority=MID, req=MEDIUM, labels=APP),
        ],
        [pdb("pdb", APP, 1, ["p1.3"])],
        None,
        None,
        [{"node1": (["p1.1", "p1.2", "p1.3"], 1)}],
    ),
    (
        "all nodes are possible candidates, but DefaultPreemptionArgs limits to 2",
        [],
        True,
        ["node1", "node2", "node3", "node4", "node5"],
        [vpod("p", priority=HIGH, req=LARGE)],
        [vpod(f"p{i}", f"node{i}", priority=MID, req=LARGE) for i in range(1, 6)],
        [],
        ARGS_40_1,
        [4],
        [{"node1": (["p1"], 0), "node5": (["p5"], 0)}],
    ),
    (
        "some nodes are not possible candidates, DefaultPreemptionArgs limits to 2",
        [],
        True,
        ["node1", "node2", "node3", "node4", "node5"],
        [vpod("p", priority=HIGH, req=LARGE)],
        [
            vpod("p1", "node1", priority=MID, req=LARGE),
            vpod("p2", "node2", priority=VERY_HIGH, req=LARGE),
            vpod("p3", "node3", priority=MID, req=LARGE),
            vpod("p4", "node4", priority=MID, req=LARGE),
            vpod("p5", "node5", priority=VERY_HIGH, req=LARGE),
        ],
        [],
        ARGS_40_1,
        [4],
        [{"node1": (["p1"], 0), "node3": (["p3"], 0)}],
    ),
    (
        "preemption offset across multiple scheduling cycles and wrap around",
        [],
        True,
        ["node1", "node2", "node3", "node4", "node5"],
        [vpod(f"tp{i}", priority=HIGH, req=LARGE) for i in range(1, 4)],
        [vpod(f"p{i}", f"node{i}", priority=MID, req=LARGE) for i in range(1, 6)],
        [],
        ARGS_40_1,
        [4, 1, 3],
        [
            {"node1": (["p1"], 0), "node5": (["p5"], 0)},
            {"node2": (["p2"], 0), "node3": (["p3"], 0)},
            {"node4": (["p4"], 0), "node5": (["p5"], 0)},
        ],
    ),
    (
        "preemption looks past numCandidates until a non-PDB violating node is found",
        [],
        True,
        ["node1", "node2", "node3", "node4", "node5"],
        [vpod("p", priority=HIGH, req=LARGE)],
        [
            vpod("p1", "node1", priority=MID, req=LARGE, labels=APP),
            vpod("p2", "node2", priority=MID, req=LARGE, labels=APP),
            vpod("p3", "node3", priority=MID, req=LARGE),
            vpod("p4", "node4", priority=MID, req=LARGE),
            vpod("p5", "node5", priority=MID, req=LARGE, labels=APP),
        ],
        [pdb("pdb", APP, 0)],
        ARGS_40_2,
        [4],
        [{"node1": (["p1"], 1), "node3": (["p3"], 0), "node5": (["p5"], 1)}],
    ),
]


@pytest.mark.parametrize(
    ("name", "extra", "fit", "node_specs", "test_pods", "init_pods", "pdbs", "args", "offsets", "expected"),
    DRY_RUN_CASES,
    ids=[c[0] for c in DRY_RUN_CASES],
)
def test_dry_run_preemption(
    name: str,
    extra: Any,
    fit: bool,
    node_specs: list[str],
    test_pods: Any,
    init_pods: Any,
    pdbs: Any,
    args: DefaultPreemptionArgs | None,
    offsets: list[int] | None,
    expected: list[dict[str, Any]],
) -> None:
    filters = _ipa() if extra == "ipa" else _pts() if extra == "pts" else list(extra)
    pre = [f for f in filters if hasattr(f, "pre_filter")]
    _fw, plugin = fit_framework(filters, fit=fit, args=args, pre_filter=pre, offsets=offsets)
    cache = cluster([node(s) for s in node_specs], init_pods, pdbs)
    for cycle, raw in enumerate(test_pods):
        p = pod_from_dict(raw)
        result = cycle_with_statuses(p, cache, None)  # upstream passes every node as potential
        candidates, _statuses, _errors = plugin.find_candidates(p, cache, result)
        got = {c.node: (sorted(v.name for v in c.victims), c.num_pdb_violations) for c in candidates}
        assert got == expected[cycle], f"cycle {cycle}"


# --------------------------------------------------------------------------- TestSelectBestCandidate
SELECT_CASES: list[tuple[Any, ...]] = [
    (
        "a pod that fits on both nodes when lower priority pods are preempted",
        ["node1", "node2"],
        vpod("p", priority=HIGH, req=LARGE),
        [
            vpod("p1", "node1", priority=MID, req=LARGE, start=0),
            vpod("p2", "node2", priority=MID, req=LARGE, start=0),
        ],
        {"node1", "node2"},
    ),
    (
        "node with min highest priority pod is picked",
        ["node1", "node2", "node3"],
        vpod("p", priority=HIGH, req=VERY_LARGE),
        [
            vpod("p1.1", "node1", priority=MID, req=MEDIUM, start=0),
            vpod("p1.2", "node1", priority=MID, req=LARGE, start=0),
            vpod("p2.1", "node2", priority=MID, req=MEDIUM, start=0),
            vpod("p2.2", "node2", priority=LOW, req=MEDIUM, start=0),
            vpod("p3.1", "node3", priority=LOW, req=MEDIUM, start=0),
            vpod("p3.2", "node3", priority=LOW, req=MEDIUM, start=0),
        ],
        {"node3"},
    ),
    (
        "when highest priorities are the same, minimum sum of priorities is picked",
        ["node1", "node2", "node3"],
        vpod("p", priority=HIGH, req=VERY_LARGE),
        [
            vpod("p1.1", "node1", priority=MID, req=MEDIUM, start=0),
            vpod("p1.2", "node1", priority=MID, req=LARGE, start=0),
            vpod("p2.1", "node2", priority=MID, req=LARGE, start=0),
            vpod("p2.2", "node2", priority=LOW, req=MEDIUM, start=0),
            vpod("p3.1", "node3", priority=MID, req=MEDIUM, start=0),
            vpod("p3.2", "node3", priority=MID, req=MEDIUM, start=0),
        ],
        {"node2"},
    ),
    (
        "when highest priority and sum are the same, minimum number of pods is picked",
        ["node1", "node2", "node3"],
        vpod("p", priority=HIGH, req=VERY_LARGE),
        [
            vpod("p1.1", "node1", priority=MID, req=SMALL, start=0),
            vpod("p1.2", "node1", priority=NEG, req=SMALL, start=0),
            vpod("p1.3", "node1", priority=MID, req=SMALL, start=0),
            vpod("p1.4", "node1", priority=NEG, req=SMALL, start=0),
            vpod("p2.1", "node2", priority=MID, req=LARGE, start=0),
            vpod("p2.2", "node2", priority=NEG, req=MEDIUM, start=0),
            vpod("p3.1", "node3", priority=MID, req=MEDIUM, start=0),
            vpod("p3.2", "node3", priority=NEG, req=SMALL, start=0),
            vpod("p3.3", "node3", priority=LOW, req=SMALL, start=0),
        ],
        {"node2"},
    ),
    (
        "sum of adjusted priorities is considered",
        ["node1", "node2", "node3"],
        vpod("p", priority=HIGH, req=VERY_LARGE),
        [
            vpod("p1.1", "node1", priority=MID, req=SMALL, start=0),
            vpod("p1.2", "node1", priority=NEG, req=SMALL, start=0),
            vpod("p1.3", "node1", priority=NEG, req=SMALL, start=0),
            vpod("p2.1", "node2", priority=MID, req=LARGE, start=0),
            vpod("p2.2", "node2", priority=NEG, req=MEDIUM, start=0),
            vpod("p3.1", "node3", priority=MID, req=MEDIUM, start=0),
            vpod("p3.2", "node3", priority=NEG, req=SMALL, start=0),
            vpod("p3.3", "node3", priority=LOW, req=SMALL, start=0),
        ],
        {"node2"},
    ),
    (
        "non-overlapping lowest high priority, sum priorities, and number of pods",
        ["node1", "node2", "node3", "node4"],
        vpod("p", priority=VERY_HIGH, req=VERY_LARGE),
        [
            vpod("p1.1", "node1", priority=MID, req=SMALL, start=0),
            vpod("p1.2", "node1", priority=LOW, req=SMALL, start=0),
            vpod("p1.3", "node1", priority=LOW, req=SMALL, start=0),
            vpod("p2.1", "node2", priority=HIGH, req=LARGE, start=0),
            vpod("p3.1", "node3", priority=MID, req=MEDIUM, start=0),
            vpod("p3.2", "node3", priority=LOW, req=SMALL, start=0),
            vpod("p3.3", "node3", priority=LOW, req=SMALL, start=0),
            vpod("p3.4", "node3", priority=LOW, req=MEDIUM, start=0),
            vpod("p4.1", "node4", priority=MID, req=MEDIUM, start=0),
            vpod("p4.2", "node4", priority=MID, req=SMALL, start=0),
            vpod("p4.3", "node4", priority=MID, req=SMALL, start=0),
            vpod("p4.4", "node4", priority=NEG, req=SMALL, start=0),
        ],
        {"node1"},
    ),
    (
        "same priority, same number of victims, different start time for each node's pod",
        ["node1", "node2", "node3"],
        vpod("p", priority=HIGH, req=VERY_LARGE),
        [
            vpod("p1.1", "node1", priority=MID, req=MEDIUM, start=2),
            vpod("p1.2", "node1", priority=MID, req=MEDIUM, start=2),
            vpod("p2.1", "node2", priority=MID, req=MEDIUM, start=3),
            vpod("p2.2", "node2", priority=MID, req=MEDIUM, start=3),
            vpod("p3.1", "node3", priority=MID, req=MEDIUM, start=1),
            vpod("p3.2", "node3", priority=MID, req=MEDIUM, start=1),
        ],
        {"node2"},
    ),
    (
        "same priority, same number of victims, different start time for all pods",
        ["node1", "node2", "node3"],
        vpod("p", priority=HIGH, req=VERY_LARGE),
        [
            vpod("p1.1", "node1", priority=MID, req=MEDIUM, start=4),
            vpod("p1.2", "node1", priority=MID, req=MEDIUM, start=2),
            vpod("p2.1", "node2", priority=MID, req=MEDIUM, start=5),
            vpod("p2.2", "node2", priority=MID, req=MEDIUM, start=1),
            vpod("p3.1", "node3", priority=MID, req=MEDIUM, start=3),
            vpod("p3.2", "node3", priority=MID, req=MEDIUM, start=6),
        ],
        {"node3"},
    ),
    (
        "different priority, same number of victims, different start time for all pods",
        ["node1", "node2", "node3"],
        vpod("p", priority=HIGH, req=VERY_LARGE),
        [
            vpod("p1.1", "node1", priority=LOW, req=MEDIUM, start=4),
            vpod("p1.2", "node1", priority=MID, req=MEDIUM, start=2),
            vpod("p2.1", "node2", priority=MID, req=MEDIUM, start=6),
            vpod("p2.2", "node2", priority=LOW, req=MEDIUM, start=1),
            vpod("p3.1", "node3", priority=LOW, req=MEDIUM, start=3),
            vpod("p3.2", "node3", priority=MID, req=MEDIUM, start=5),
        ],
        {"node2"},
    ),
]


@pytest.mark.parametrize(
    ("name", "nodes", "pod", "pods", "expected"), SELECT_CASES, ids=[c[0] for c in SELECT_CASES]
)
def test_select_best_candidate(name: str, nodes: list[str], pod: Any, pods: Any, expected: set[str]) -> None:
    fw, _ = fit_framework(offsets=[4])
    cache = cluster([node(n) for n in nodes], pods)
    p = pod_from_dict(pod)
    got = fw.run_post_filter(p, cache, cycle_with_statuses(p, cache, None))
    assert got is not None and got.status.code == Code.SUCCESS
    assert got.nominated_node in expected


# --------------------------------------------------------------------------- TestPodEligibleToPreemptOthers
ELIGIBLE_CASES: list[tuple[Any, ...]] = [
    (
        "Pod with nominated node",
        vpod("p_with_nominated_node", priority=HIGH, nominated="node1"),
        [vpod("p1", "node1", priority=LOW, terminating=True)],
        ["node1"],
        UU,
        True,
    ),
    ("Pod without nominated node", vpod("p_without_nominated_node", priority=HIGH), [], [], None, True),
    (
        "Pod with 'PreemptNever' preemption policy",
        vpod("p_with_preempt_never_policy", priority=HIGH, policy="Never"),
        [],
        [],
        None,
        False,
    ),
    (
        "preemption victim pod terminating, as indicated by the dedicated DisruptionTarget condition",
        vpod("p_with_nominated_node", priority=HIGH, nominated="node1"),
        [vpod("p1", "node1", priority=LOW, terminating=True, preempted=True)],
        ["node1"],
        None,
        False,
    ),
    (
        "non-victim Pods terminating",
        vpod("p_with_nominated_node", priority=HIGH, nominated="node1"),
        [vpod("p1", "node1", priority=LOW, terminating=True)],
        ["node1"],
        None,
        True,
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "pods", "nodes", "nominated_status", "expected"),
    ELIGIBLE_CASES,
    ids=[c[0] for c in ELIGIBLE_CASES],
)
def test_pod_eligible_to_preempt_others(
    name: str, pod: Any, pods: Any, nodes: list[str], nominated_status: Code | None, expected: bool
) -> None:
    _, plugin = fit_framework()
    cache = cluster([node(n) for n in nodes], pods)
    p = pod_from_dict(pod)
    statuses = {} if nominated_status is None else {"node1": nominated_status}
    result = cycle_with_statuses(p, cache, statuses, absent=U)
    assert (plugin.ineligible_reason(p, cache, result) == "") is expected


# --------------------------------------------------------------------------- TestPreempt
PREEMPT_CASES: list[tuple[Any, ...]] = [
    (
        "basic preemption logic",
        vpod("p", priority=HIGH, req=VERY_LARGE, policy="PreemptLowerPriority"),
        [
            vpod("p1.1", "node1", priority=LOW, req=SMALL),
            vpod("p1.2", "node1", priority=LOW, req=SMALL),
            vpod("p2.1", "node2", priority=HIGH, req=LARGE),
            vpod("p3.1", "node3", priority=MID, req=MEDIUM),
        ],
        ["node1", "node2", "node3"],
        "fit",
        "node1",
        ["p1.1", "p1.2"],
    ),
    (
        "preemption for topology spread constraints",
        vpod("p", priority=HIGH, labels=FOO, topologySpreadConstraints=SPREAD),
        [
            vpod("p-a1", "node-a", priority=HIGH, labels=FOO),
            vpod("p-a2", "node-a", priority=HIGH, labels=FOO),
            vpod("p-b1", "node-b", priority=LOW, labels=FOO),
            vpod("p-x1", "node-x", priority=HIGH, labels=FOO),
            vpod("p-x2", "node-x", priority=HIGH, labels=FOO),
        ],
        ["node-a/zone1", "node-b/zone1", "node-x/zone2"],
        "pts",
        "node-b",
        ["p-b1"],
    ),
    (
        "no preempting in pod",
        vpod("p", priority=HIGH, req=VERY_LARGE, policy="Never"),
        [
            vpod("p1.1", "node1", priority=LOW, req=SMALL),
            vpod("p1.2", "node1", priority=LOW, req=SMALL),
            vpod("p2.1", "node2", priority=HIGH, req=LARGE),
            vpod("p3.1", "node3", priority=MID, req=MEDIUM),
        ],
        ["node1", "node2", "node3"],
        "fit",
        None,
        [],
    ),
    (
        "PreemptionPolicy is nil",
        vpod("p", priority=HIGH, req=VERY_LARGE),
        [
            vpod("p1.1", "node1", priority=LOW, req=SMALL),
            vpod("p1.2", "node1", priority=LOW, req=SMALL),
            vpod("p2.1", "node2", priority=HIGH, req=LARGE),
            vpod("p3.1", "node3", priority=MID, req=MEDIUM),
        ],
        ["node1", "node2", "node3"],
        "fit",
        "node1",
        ["p1.1", "p1.2"],
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "pods", "nodes", "plugins", "want_node", "want_victims"),
    PREEMPT_CASES,
    ids=[c[0] for c in PREEMPT_CASES],
)
def test_preempt(
    name: str,
    pod: Any,
    pods: Any,
    nodes: list[str],
    plugins: str,
    want_node: str | None,
    want_victims: list[str],
) -> None:
    if plugins == "pts":
        fw, _ = fit_framework(_pts(), fit=False, pre_filter=_pts())
    else:
        fw, _ = fit_framework()
    cache = cluster([node(n) for n in nodes], pods)
    p = pod_from_dict(pod)
    got = fw.run_post_filter(p, cache, cycle_with_statuses(p, cache, None))
    assert got is not None
    if want_node is None:  # upstream: a nil result, so the nomination is left alone
        assert got.keep_nomination and got.status.code == U and not got.victims
        return
    assert got.nominated_node == want_node
    assert sorted(v.name for v in got.victims) == want_victims
    # Second attempt while the victims terminate: upstream passes an all-unresolvable status map.
    again = fw.run_post_filter(p, cache, cycle_with_statuses(p, cache, {}))
    assert again is not None and not again.nominated_node and not again.victims


# --------------------------------------------------------------------------- TestPreEnqueue
def test_pre_enqueue_holds_only_the_preempting_pod() -> None:
    plugin = DefaultPreemption()
    p, other = pod_from_dict(vpod("p", priority=HIGH)), pod_from_dict(vpod("p_other", priority=HIGH))
    assert plugin.pre_enqueue(p).ok
    plugin.mark_preempting(p.uid)
    status = plugin.pre_enqueue(p)
    assert status.code == UU and status.reasons == (ERR_WAITING,)
    assert status.message == "waiting for the preemption for this pod to be finished"
    assert plugin.pre_enqueue(other).ok
    plugin.done_preempting(p.uid)
    assert plugin.pre_enqueue(p).ok
    plugin.done_preempting(p.uid)  # idempotent


# ------------------------------------------------------------------ TestNodesWherePreemptionMightHelp
# preemption_test.go: node statuses by reason; an absent node there counts as tried (Unschedulable).
MIGHT_HELP_CASES: list[tuple[str, dict[str, Code], set[str]]] = [
    ("No node should be attempted", {"node1": UU, "node2": UU, "node3": UU, "node4": UU}, set()),
    (
        "ErrReasonAntiAffinityRulesNotMatch should be tried",
        {"node1": U, "node2": UU, "node3": UU},
        {"node1", "node4"},
    ),
    (
        "ErrReasonAffinityRulesNotMatch should not be tried",
        {"node1": UU, "node2": U},
        {"node2", "node3", "node4"},
    ),
    ("Mix of failed predicates works fine", {"node1": UU, "node2": U}, {"node2", "node3", "node4"}),
    ("Node condition errors should be considered unresolvable", {"node1": UU}, {"node2", "node3", "node4"}),
    ("ErrVolume... errors should not be tried", {"node1": UU, "node2": UU, "node3": UU}, {"node4"}),
    (
        "ErrReasonConstraintsNotMatch should be tried",
        {"node1": U, "node2": UU, "node3": U},
        {"node1", "node3", "node4"},
    ),
    (
        "UnschedulableAndUnresolvable status should be skipped",
        {"node2": UU, "node3": U, "node4": UU},
        {"node1", "node3"},
    ),
    (
        "ErrReasonNodeLabelNotMatch should not be tried",
        {"node2": UU, "node3": U, "node4": UU},
        {"node1", "node3"},
    ),
]


@pytest.mark.parametrize(
    ("name", "statuses", "expected"), MIGHT_HELP_CASES, ids=[c[0] for c in MIGHT_HELP_CASES]
)
def test_nodes_where_preemption_might_help(name: str, statuses: dict[str, Code], expected: set[str]) -> None:
    cache = cluster([node(f"node{i}") for i in range(1, 5)], [])
    p = pod_from_dict(vpod("p", priority=HIGH))
    rows = potential_rows(cycle_with_statuses(p, cache, statuses, absent=U))
    assert {cache.nodes.node(int(r)).name for r in rows} == expected
