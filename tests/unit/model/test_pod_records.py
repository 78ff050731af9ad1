"""Pod and Node records: effective requests as upstream's ``PodRequests`` computes them.

Cases follow ``staging/src/k8s.io/component-helpers/resource/helpers_test.go`` (TestPodRequests,
the sidecar and init-container cases) and ``pkg/scheduler/util/pod_resources_test.go`` (non-zero
defaults), written as data here.
"""

from __future__ import annotations

from typing import Any

import pytest

from ksched.errors import ObjectError, QuantityError
from ksched.model.node import node_from_dict
from ksched.model.pod import DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST, pod_from_dict
from tests.builders import container, make_node, make_pod

GI = 1024**3
MI = 1024**2


@pytest.mark.parametrize(
    ("containers", "init", "overhead", "want"),
    [
        pytest.param([{"cpu": "1"}, {"cpu": "2"}], [], None, {"cpu": 3000}, id="sum of regular containers"),
        pytest.param(
            [{"cpu": "1"}],
            [({"cpu": "2"}, False)],
            None,
            {"cpu": 2000},
            id="init container peak above the sum",
        ),
        pytest.param(
            [{"cpu": "1"}],
            [({"cpu": "1"}, True), ({"cpu": "2"}, False)],
            None,
            {"cpu": 3000},
            id="init container runs beside an earlier sidecar",
        ),
        pytest.param(
            [{"cpu": "1"}],
            [({"cpu": "2"}, False), ({"cpu": "1"}, True)],
            None,
            {"cpu": 2000},
            id="sidecar after an init container adds to the sum only",
        ),
        pytest.param(
            [{"cpu": "1", "memory": "1Gi"}],
            [({"cpu": "500m"}, True), ({"cpu": "500m"}, True)],
            None,
            {"cpu": 2000, "memory": GI},
            id="two sidecars add to the sum",
        ),
        pytest.param(
            [{"cpu": "1"}],
            [],
            {"cpu": "250m", "memory": "120Mi"},
            {"cpu": 1250, "memory": 120 * MI},
            id="pod overhead is added on top",
        ),
        pytest.param(
            [{"nvidia.com/gpu": "2", "hugepages-2Mi": "4Mi"}],
            [],
            None,
            {"nvidia.com/gpu": 2, "hugepages-2Mi": 4 * MI},
            id="extended resources and hugepages",
        ),
        pytest.param([{"cpu": "0.1m"}], [], None, {"cpu": 1}, id="cpu rounds up to the millicore"),
    ],
)
def test_effective_requests(
    containers: list[dict[str, str]],
    init: list[tuple[dict[str, str], bool]],
    overhead: dict[str, str] | None,
    want: dict[str, int],
) -> None:
    raw = make_pod(
        containers=[container(f"c{i}", requests=r) for i, r in enumerate(containers)],
        init_containers=[
            container(f"i{i}", requests=r, restart_policy="Always" if sidecar else None)
            for i, (r, sidecar) in enumerate(init)
        ],
        overhead=overhead,
    )
    assert dict(pod_from_dict(raw).requests) == want


@pytest.mark.parametrize(
    ("requests", "want_cpu", "want_mem"),
    [
        pytest.param(
            None, DEFAULT_MILLI_CPU_REQUEST, DEFAULT_MEMORY_REQUEST, id="no requests get both defaults"
        ),
        pytest.param({"cpu": "0"}, 0, DEFAULT_MEMORY_REQUEST, id="an explicit zero stays zero"),
        pytest.param({"memory": "1Gi"}, DEFAULT_MILLI_CPU_REQUEST, GI, id="missing cpu only"),
        pytest.param({"cpu": "2", "memory": "1Gi"}, 2000, GI, id="both named"),
    ],
)
def test_nonzero_requests(requests: dict[str, str] | None, want_cpu: int, want_mem: int) -> None:
    p = pod_from_dict(make_pod(containers=[container(requests=requests)]))
    assert (p.nonzero_cpu, p.nonzero_memory) == (want_cpu, want_mem)


def test_nonzero_defaults_apply_per_container() -> None:
    p = pod_from_dict(make_pod(containers=[container("a", requests={"cpu": "1"}), container("b")]))
    assert p.nonzero_cpu == 1000 + DEFAULT_MILLI_CPU_REQUEST
    assert p.nonzero_memory == 2 * DEFAULT_MEMORY_REQUEST


def test_limits_stand_in_for_missing_requests() -> None:
    p = pod_from_dict(make_pod(containers=[container(limits={"cpu": "2", "nvidia.com/gpu": "1"})]))
    assert dict(p.requests) == {"cpu": 2000, "nvidia.com/gpu": 1}


def test_host_ports_are_normalized_and_sidecars_count() -> None:
    raw = make_pod(
        containers=[container(host_ports=[("", "", 80)])],
        init_containers=[
            container("side", restart_policy="Always", host_ports=[("UDP", "10.0.0.1", 53)]),
            container("init", host_ports=[("TCP", "", 9000)]),
        ],
    )
    ports = pod_from_dict(raw).host_ports
    assert [(h.protocol, h.host_ip, h.port) for h in ports] == [
        ("TCP", "0.0.0.0", 80),
        ("UDP", "10.0.0.1", 53),
    ]


def test_invalid_quantity_names_object_and_field() -> None:
    raw = make_pod(name="web", namespace="prod", containers=[container(requests={"cpu": "abc"})])
    with pytest.raises(QuantityError) as err:
        pod_from_dict(raw)
    msg = str(err.value)
    assert "Pod prod/web" in msg
    assert "spec.containers[0].resources.requests.cpu" in msg
    assert "'abc'" in msg


def test_negative_allocatable_is_rejected() -> None:
    with pytest.raises(QuantityError, match=r"Node n1: status.allocatable.cpu: .*negative"):
        node_from_dict(make_node("n1", cpu="-1"))


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        pytest.param(
            lambda p: p["spec"].__setitem__("containers", "oops"),
            "spec.containers",
            id="containers not a list",
        ),
        pytest.param(
            lambda p: p["metadata"].__setitem__("labels", {"a": 1}),
            "metadata.labels",
            id="label value not a string",
        ),
        pytest.param(
            lambda p: p["spec"].__setitem__("priority", "high"), "spec.priority", id="priority not an int"
        ),
        pytest.param(
            lambda p: p["spec"].__setitem__("priority", 2**63), "spec.priority", id="priority out of range"
        ),
        pytest.param(
            lambda p: p["spec"].__setitem__("tolerations", [{"key": 5}]),
            "spec.tolerations[0].key",
            id="toleration key type",
        ),
    ],
)
def test_wrong_types_name_the_field(mutate: Any, field: str) -> None:
    raw = make_pod(name="x")
    mutate(raw)
    with pytest.raises(ObjectError) as err:
        pod_from_dict(raw)
    assert field in str(err.value)


def test_node_record_fields() -> None:
    raw = make_node(
        "n1",
        cpu="4",
        memory="8Gi",
        pods=110,
        labels={"zone": "a"},
        taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}],
        unschedulable=True,
        images=[(["img:1", "img@sha256:abc"], 1000)],
    )
    n = node_from_dict(raw)
    assert dict(n.allocatable) == {"cpu": 4000, "memory": 8 * GI, "pods": 110}
    assert n.unschedulable and n.taints[0].effect == "NoSchedule"
    assert n.images[0].names == ("img:1", "img@sha256:abc")


def test_node_without_allocatable_uses_capacity() -> None:
    raw = make_node("n1")
    raw["status"]["allocatable"] = {}
    raw["status"]["capacity"] = {"cpu": "2"}
    assert dict(node_from_dict(raw).allocatable) == {"cpu": 2000}


def test_bad_taint_effect() -> None:
    with pytest.raises(ObjectError, match=r"spec.taints\[0\].effect"):
        node_from_dict(make_node("n", taints=[{"key": "a", "value": "", "effect": "Sometimes"}]))
