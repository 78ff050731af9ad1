"""NodeResourcesFit, ported from upstream's table tests as data.

Upstream: ``pkg/scheduler/framework/plugins/noderesources/fit_test.go`` (v1.35):
``TestEnoughRequests`` (all cases without the DRA extended-resource gate), ``TestNotEnoughRequests``,
``TestStorageRequests``, the sidecar-enabled cases of ``TestRestartableInitContainers`` and
``TestFitScore`` (cases without DRA objects). Every case runs on the compiled and the numpy path.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ksched.config.types import NodeResourcesFitArgs, ResourceSpec, ScoringStrategy, UtilizationShapePoint
from ksched.framework.interface import Code, CycleState
from ksched.framework.plugins.noderesources import (
    ERR_REASON_INSUFFICIENT_CPU,
    ERR_REASON_INSUFFICIENT_EPHEMERAL_STORAGE,
    ERR_REASON_INSUFFICIENT_MEMORY,
    ERR_REASON_TOO_MANY_PODS,
    new_fit,
)
from ksched.framework.registry import Handle
from ksched.model.pod import pod_from_dict
from tests import builders
from tests.builders import cluster_of, container, make_node, make_pod

EXT_A = "example.com/aaa"
EXT_B = "example.com/bbb"
K8S_IO_A = "kubernetes.io/something"
K8S_IO_B = "subdomain.kubernetes.io/something"
HUGE_A = "hugepages-2Mi"
DRA_NAME = "extended.resource.dra.io/something"
U = Code.UNSCHEDULABLE
UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def r(cpu: int = 0, mem: int = 0, eph: int = 0, **scalars: int) -> dict[str, Any]:
    """Upstream ``framework.Resource`` as a container request (cpu in millicores; always names cpu/memory)."""
    out: dict[str, Any] = {"cpu": f"{cpu}m", "memory": str(mem), "ephemeral-storage": str(eph)}
    out.update({k: str(v) for k, v in scalars.items()})
    return out


def rp(*usages: dict[str, Any], init: tuple[dict[str, Any], ...] = (), **extra: Any) -> dict[str, Any]:
    """``newResourcePod`` / ``newResourceInitPod``: one container per usage."""
    return make_pod(
        "p",
        containers=[container(f"c{i}", requests=u) for i, u in enumerate(usages)] or [container()],
        init_containers=[container(f"i{i}", requests=u) for i, u in enumerate(init)],
        **extra,
    )


S = {"ext_a": EXT_A, "ext_b": EXT_B, "k8s_a": K8S_IO_A, "k8s_b": K8S_IO_B, "huge": HUGE_A, "dra": DRA_NAME}


def sc(**kw: int) -> dict[str, int]:
    return {S[k]: v for k, v in kw.items()}


# (pod dict, existing pod usage, fit args kwargs, expected reasons, expected code)
ENOUGH = [
    pytest.param(make_pod("p"), r(10, 20), {}, [], None, id="no resources requested always fits"),
    pytest.param(
        rp(r(1, 1)),
        r(10, 20),
        {},
        ["Insufficient cpu", "Insufficient memory"],
        U,
        id="too many resources fails",
    ),
    pytest.param(
        rp(r(1, 1), init=(r(3, 1),)),
        r(8, 19),
        {},
        ["Insufficient cpu"],
        U,
        id="too many resources fails due to init container cpu",
    ),
    pytest.param(
        rp(r(1, 1), init=(r(3, 1), r(2, 1))),
        r(8, 19),
        {},
        ["Insufficient cpu"],
        U,
        id="too many resources fails due to highest init container cpu",
    ),
    pytest.param(
        rp(r(1, 1), init=(r(1, 3),)),
        r(9, 19),
        {},
        ["Insufficient memory"],
        U,
        id="too many resources fails due to init container memory",
    ),
    pytest.param(
        rp(r(1, 1), init=(r(1, 3), r(1, 2))),
        r(9, 19),
        {},
        ["Insufficient memory"],
        U,
        id="too many resources fails due to highest init container memory",
    ),
    pytest.param(
        rp(r(1, 1), init=(r(1, 1),)),
        r(9, 19),
        {},
        [],
        None,
        id="init container fits because it's the max, not sum, of containers and init containers",
    ),
    pytest.param(
        rp(r(1, 1), init=(r(1, 1), r(1, 1))),
        r(9, 19),
        {},
        [],
        None,
        id="multiple init containers fit because it's the max, not sum, of containers and init containers",
    ),
    pytest.param(rp(r(1, 1)), r(5, 5), {}, [], None, id="both resources fit"),
    pytest.param(rp(r(2, 1)), r(9, 5), {}, ["Insufficient cpu"], U, id="one resource memory fits"),
    pytest.param(rp(r(1, 2)), r(5, 19), {}, ["Insufficient memory"], U, id="one resource cpu fits"),
    pytest.param(rp(r(5, 1)), r(5, 19), {}, [], None, id="equal edge case"),
    pytest.param(
        rp(r(4, 1), init=(r(5, 1),)), r(5, 19), {}, [], None, id="equal edge case for init container"
    ),
    pytest.param(rp(r(**sc(ext_a=1))), r(), {}, [], None, id="extended resource fits"),
    pytest.param(
        rp(r(), init=(r(**sc(ext_a=1)),)), r(), {}, [], None, id="extended resource fits for init container"
    ),
    pytest.param(
        rp(r(1, 1, **sc(ext_a=10))),
        r(**sc(ext_a=0)),
        {},
        [f"Insufficient {EXT_A}"],
        UU,
        id="extended resource capacity enforced",
    ),
    pytest.param(
        rp(r(), init=(r(1, 1, **sc(ext_a=10)),)),
        r(**sc(ext_a=0)),
        {},
        [f"Insufficient {EXT_A}"],
        UU,
        id="extended resource capacity enforced for init container",
    ),
    pytest.param(
        rp(r(1, 1, **sc(ext_a=1))),
        r(**sc(ext_a=5)),
        {},
        [f"Insufficient {EXT_A}"],
        U,
        id="extended resource allocatable enforced",
    ),
    pytest.param(
        rp(r(), init=(r(1, 1, **sc(ext_a=1)),)),
        r(**sc(ext_a=5)),
        {},
        [f"Insufficient {EXT_A}"],
        U,
        id="extended resource allocatable enforced for init container",
    ),
    pytest.param(
        rp(r(1, 1, **sc(ext_a=3)), r(1, 1, **sc(ext_a=3))),
        r(**sc(ext_a=2)),
        {},
        [f"Insufficient {EXT_A}"],
        UU,
        id="extended resource allocatable enforced for multiple containers",
    ),
    pytest.param(
        rp(r(), init=(r(1, 1, **sc(ext_a=3)), r(1, 1, **sc(ext_a=3)))),
        r(**sc(ext_a=2)),
        {},
        [],
        None,
        id="extended resource allocatable admits multiple init containers",
    ),
    pytest.param(
        rp(r(), init=(r(1, 1, **sc(ext_a=6)), r(1, 1, **sc(ext_a=3)))),
        r(**sc(ext_a=2)),
        {},
        [f"Insufficient {EXT_A}"],
        UU,
        id="extended resource allocatable enforced for multiple init containers",
    ),
    pytest.param(
        rp(r(1, 1, **sc(ext_b=1))),
        r(),
        {},
        [f"Insufficient {EXT_B}"],
        UU,
        id="extended resource allocatable enforced for unknown resource",
    ),
    pytest.param(
        rp(r(), init=(r(1, 1, **sc(ext_b=1)),)),
        r(),
        {},
        [f"Insufficient {EXT_B}"],
        UU,
        id="extended resource allocatable enforced for unknown resource for init container",
    ),
    pytest.param(
        rp(r(1, 1, **sc(k8s_a=10))),
        r(),
        {},
        [f"Insufficient {K8S_IO_A}"],
        UU,
        id="kubernetes.io resource capacity enforced",
    ),
    pytest.param(
        rp(r(), init=(r(1, 1, **sc(k8s_b=10)),)),
        r(),
        {},
        [f"Insufficient {K8S_IO_B}"],
        UU,
        id="kubernetes.io resource capacity enforced for init container",
    ),
    pytest.param(
        rp(r(1, 1, **sc(huge=10))),
        r(**sc(huge=0)),
        {},
        [f"Insufficient {HUGE_A}"],
        UU,
        id="hugepages resource capacity enforced",
    ),
    pytest.param(
        rp(r(), init=(r(1, 1, **sc(huge=10)),)),
        r(**sc(huge=0)),
        {},
        [f"Insufficient {HUGE_A}"],
        UU,
        id="hugepages resource capacity enforced for init container",
    ),
    pytest.param(
        rp(r(1, 1, **sc(huge=3)), r(1, 1, **sc(huge=3))),
        r(**sc(huge=2)),
        {},
        [f"Insufficient {HUGE_A}"],
        UU,
        id="hugepages resource allocatable enforced for multiple containers",
    ),
    pytest.param(
        rp(r(1, 1, **sc(ext_b=1))),
        r(),
        {"ignored_resources": (EXT_B,)},
        [],
        None,
        id="skip checking ignored extended resource",
    ),
    pytest.param(
        rp(r(1, 1), overhead={"cpu": "3m", "memory": "13"}),
        r(5, 5),
        {},
        [],
        None,
        id="resources + pod overhead fits",
    ),
    pytest.param(
        rp(r(1, 1), overhead={"cpu": "1m", "memory": "15"}),
        r(5, 5),
        {},
        ["Insufficient memory"],
        U,
        id="requests + overhead does not fit for memory",
    ),
    pytest.param(
        rp(r(1, 1, **sc(ext_b=1, k8s_a=1))),
        r(),
        {"ignored_resource_groups": ("example.com",)},
        [f"Insufficient {K8S_IO_A}"],
        UU,
        id="skip checking ignored extended resource via resource groups",
    ),
    pytest.param(
        rp(r(1, 1, **sc(ext_a=0))),
        r(**sc(ext_a=6)),
        {},
        [],
        None,
        id="skip checking extended resource request with quantity zero via resource groups",
    ),
    pytest.param(
        rp(r(**sc(ext_a=1))),
        r(20, 30, **sc(ext_a=1)),
        {},
        [],
        None,
        id="skip checking resource request with quantity zero",
    ),
    pytest.param(
        rp(r(1, 1), resources={"requests": {"cpu": "1m", "memory": "2"}}),
        r(5, 5),
        {},
        [],
        None,
        id="both pod-level and container-level resources fit",
    ),
    pytest.param(
        rp(r(1, 1), resources={"requests": {"cpu": "7m", "memory": "2"}}),
        r(5, 5),
        {},
        ["Insufficient cpu"],
        U,
        id="pod-level cpu resource not fit",
    ),
    pytest.param(
        rp(r(1, 1), resources={"requests": {"cpu": "3m", "memory": "2"}}),
        r(5, 19),
        {},
        ["Insufficient memory"],
        U,
        id="pod-level memory resource not fit",
    ),
    pytest.param(
        rp(resources={"requests": {"cpu": "3m", "memory": "2", HUGE_A: "5"}}),
        None,
        {},
        [],
        None,
        id="pod-level hugepages resource fit",
    ),
    pytest.param(
        rp(r(1, 1, **sc(huge=3)), resources={"requests": {"cpu": "3m", "memory": "2", HUGE_A: "5"}}),
        None,
        {},
        [],
        None,
        id="both pod-level and container-level hugepages resource fit",
    ),
    pytest.param(
        rp(resources={"requests": {"cpu": "3m", "memory": "2", HUGE_A: "10"}}),
        None,
        {},
        [f"Insufficient {HUGE_A}"],
        UU,
        id="pod-level hugepages resource not fit",
    ),
    pytest.param(
        rp(r(1, 1), init=(r(1, 1),), resources={"requests": {"cpu": "3m", "memory": "2"}}),
        r(5, 19),
        {},
        ["Insufficient memory"],
        U,
        id="one pod-level cpu resource fits and all init and non-init containers resources fit",
    ),
    pytest.param(
        rp(r(1, 1, **sc(dra=1))),
        r(),
        {},
        [f"Insufficient {DRA_NAME}"],
        UU,
        id="extended resource backed by DRA not enabled",
    ),
]

INIT_EDGE_ID = (
    "even for equal edge case, predicate fails when there's no space for additional pod due to init container"
)
ENOUGH_NODE = {"cpu": "10m", "memory": "20", "pods": "32", EXT_A: "5", "ephemeral-storage": "20", HUGE_A: "5"}


def run_filter(
    pod_dict: dict[str, Any],
    existing: dict[str, Any] | None,
    alloc: dict[str, Any],
    args: NodeResourcesFitArgs | None = None,
) -> tuple[list[str], Code]:
    pods = (
        []
        if existing is None
        else [make_pod("existing", node_name="n", containers=[container(requests=existing)])]
    )
    cluster = cluster_of([make_node("n", allocatable=alloc)], pods)
    fit = new_fit(args, Handle("p"))
    state = CycleState()
    pod = pod_from_dict(pod_dict)
    _, status = fit.pre_filter(state, pod, cluster)
    assert status.ok
    return fit.filter(state, pod, cluster).reasons_at(0)


def fit_args(**kw: Any) -> NodeResourcesFitArgs:
    strategy = ScoringStrategy(
        type="LeastAllocated",
        resources=(ResourceSpec(name="cpu", weight=1), ResourceSpec(name="memory", weight=1)),
    )
    return NodeResourcesFitArgs(scoring_strategy=strategy, **kw)


@pytest.mark.parametrize(("pod", "existing", "args", "reasons", "code"), ENOUGH)
def test_enough_requests(
    path: str,
    pod: dict[str, Any],
    existing: dict[str, Any] | None,
    args: dict[str, Any],
    reasons: list[str],
    code: Code | None,
) -> None:
    got, got_code = run_filter(pod, existing, ENOUGH_NODE, fit_args(**args))
    assert got == reasons
    if reasons:
        assert got_code == code


@pytest.mark.parametrize(
    ("pod", "existing"),
    [
        pytest.param(
            make_pod("p"),
            r(10, 20),
            id="even without specified resources, predicate fails when there's no space for additional pod",
        ),
        pytest.param(
            rp(r(1, 1)),
            r(5, 5),
            id="even if both resources fit, predicate fails when there's no space for additional pod",
        ),
        pytest.param(
            rp(r(5, 1)),
            r(5, 19),
            id="even for equal edge case, predicate fails when there's no space for additional pod",
        ),
        pytest.param(
            rp(r(5, 1), init=(r(5, 1),)),
            r(5, 19),
            id=INIT_EDGE_ID,
        ),
    ],
)
def test_not_enough_requests(path: str, pod: dict[str, Any], existing: dict[str, Any]) -> None:
    alloc = {"cpu": "10m", "memory": "20", "pods": "1", EXT_A: "0", "ephemeral-storage": "0", HUGE_A: "0"}
    assert run_filter(pod, existing, alloc) == (["Too many pods"], U)
    assert ERR_REASON_TOO_MANY_PODS == "Too many pods"


@pytest.mark.parametrize(
    ("pod", "existing", "reasons", "code"),
    [
        pytest.param(rp(r(1, 1)), r(2, 10), [], None, id="empty storage requested, and pod fits"),
        pytest.param(
            rp(r(eph=25)),
            r(2, 2),
            ["Insufficient ephemeral-storage"],
            UU,
            id="storage ephemeral local storage request exceeds allocatable",
        ),
        pytest.param(rp(r(eph=5)), r(2, 2, eph=10), [], None, id="ephemeral local storage is sufficient"),
        pytest.param(rp(r(eph=10)), r(2, 2), [], None, id="pod fits"),
    ],
)
def test_storage_requests(
    path: str, pod: dict[str, Any], existing: dict[str, Any], reasons: list[str], code: Code | None
) -> None:
    got, got_code = run_filter(pod, existing, ENOUGH_NODE)
    assert got == reasons
    if reasons:
        assert got_code == code
        assert ERR_REASON_INSUFFICIENT_EPHEMERAL_STORAGE == "Insufficient ephemeral-storage"


@pytest.mark.parametrize(
    ("regular", "sidecar", "reasons"),
    [
        pytest.param(
            None, None, [], id="allow pod with restartable init containers if sidecar containers is enabled"
        ),
        pytest.param(
            {"cpu": "1m"},
            {"cpu": "1m"},
            [],
            id="allow pod if the total requested resources do not exceed the node's allocatable resources",
        ),
        pytest.param(
            {"cpu": "1m"},
            {"cpu": "2m"},
            ["Insufficient cpu"],
            id="not allow pod if the total requested resources do exceed the node's allocatable resources",
        ),
    ],
)
def test_restartable_init_containers(
    path: str, regular: dict[str, str] | None, sidecar: dict[str, str] | None, reasons: list[str]
) -> None:
    pod = make_pod(
        "p",
        containers=[container("regular", requests=regular)],
        init_containers=[container("restartable-init", requests=sidecar, restart_policy="Always")],
    )
    alloc = {"cpu": "2m", "memory": "0", "pods": "1", EXT_A: "0", "ephemeral-storage": "0", HUGE_A: "0"}
    got, code = run_filter(pod, None, alloc)
    assert got == reasons
    if reasons:
        assert code == UU
        assert ERR_REASON_INSUFFICIENT_CPU == "Insufficient cpu"
        assert ERR_REASON_INSUFFICIENT_MEMORY == "Insufficient memory"


def _strategy(kind: str, shape: tuple[tuple[int, int], ...] = ()) -> NodeResourcesFitArgs:
    return NodeResourcesFitArgs(
        scoring_strategy=ScoringStrategy(
            type=kind,
            resources=(ResourceSpec(name="cpu", weight=1), ResourceSpec(name="memory", weight=1)),
            shape=tuple(UtilizationShapePoint(utilization=u, score=s) for u, s in shape),
        )
    )


SCORE_NODES = [("node1", "4000", "10000"), ("node2", "6000", "10000")]
EXISTING = [
    ("node1", {"cpu": "2000", "memory": "4000"}, None),
    ("node2", {"cpu": "1000", "memory": "2000"}, None),
]
SIDECAR_NODES = [("node1", "4000", "10000"), ("node2", "4000", "10000")]
SIDECAR_EXISTING = [
    ("node1", {"cpu": "1000", "memory": "2000"}, {"cpu": "1000", "memory": "2000"}),
    ("node2", {"cpu": "1000", "memory": "2000"}, None),
]
BIG = {"cpu": "3000", "memory": "5000"}
SMALL = {"cpu": "1000", "memory": "2000"}


@pytest.mark.parametrize(
    ("req", "nodes", "existing", "args", "want"),
    [
        pytest.param(
            BIG,
            SCORE_NODES,
            EXISTING,
            _strategy("RequestedToCapacityRatio", ((0, 10), (100, 0))),
            [10, 32],
            id="test case for ScoringStrategy RequestedToCapacityRatio case1",
        ),
        pytest.param(
            BIG,
            SCORE_NODES,
            EXISTING,
            _strategy("RequestedToCapacityRatio", ((0, 0), (100, 10))),
            [95, 68],
            id="test case for ScoringStrategy RequestedToCapacityRatio case2",
        ),
        pytest.param(
            SMALL,
            SCORE_NODES,
            EXISTING,
            _strategy("MostAllocated"),
            [67, 36],
            id="test case for ScoringStrategy MostAllocated",
        ),
        pytest.param(
            SMALL,
            SCORE_NODES,
            EXISTING,
            _strategy("LeastAllocated"),
            [32, 63],
            id="test case for ScoringStrategy LeastAllocated",
        ),
        pytest.param(
            SMALL,
            SIDECAR_NODES,
            SIDECAR_EXISTING,
            _strategy("MostAllocated"),
            [67, 45],
            id="test case for ScoringStrategy MostAllocated with sidecar container",
        ),
        pytest.param(
            SMALL,
            SIDECAR_NODES,
            SIDECAR_EXISTING,
            _strategy("LeastAllocated"),
            [32, 55],
            id="test case for ScoringStrategy LeastAllocated with sidecar container",
        ),
    ],
)
def test_fit_score(
    path: str,
    req: dict[str, str],
    nodes: list[tuple[str, str, str]],
    existing: list[tuple[str, dict[str, str], dict[str, str] | None]],
    args: NodeResourcesFitArgs,
    want: list[int],
) -> None:
    pods = [
        make_pod(
            f"e{i}",
            node_name=node,
            containers=[container(requests=reqs)],
            init_containers=[container("side", requests=side, restart_policy="Always")] if side else [],
        )
        for i, (node, reqs, side) in enumerate(existing)
    ]
    cluster = cluster_of([make_node(name, cpu=cpu, memory=mem, pods=110) for name, cpu, mem in nodes], pods)
    fit = new_fit(args, Handle("p"))
    pod = builders.pod("p", requests=req)
    scores = fit.score(CycleState(), pod, cluster, np.ones(2, dtype=np.bool_))
    assert list(np.asarray(scores)) == want
    assert fit.scores_in_range


def test_explain_row(path: str) -> None:
    cluster = cluster_of(
        [make_node("n", cpu="4", memory="1Gi", pods=1)], [make_pod("e", node_name="n", requests={"cpu": "3"})]
    )
    fit = new_fit(None, Handle("p"))
    pod = builders.pod("p", requests={"cpu": "2500m"})
    assert (
        fit.explain_row(pod, cluster, 0) == "pods: 1 of 1 in use; cpu: requested 2500m, free 1000m of 4000m"
    )
