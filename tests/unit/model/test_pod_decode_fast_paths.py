"""``pod_from_dict``'s shortcuts for the common shape keep the long way's answers and errors.

Quantities are memoized per (resource, text), field paths are built only for an error, a container
port without a host port is skipped early, one container needs no adding up. Each test pins one
shortcut to what the unoptimized parser gave.
"""

from __future__ import annotations

from typing import Any

import pytest

from ksched.errors import ObjectError, QuantityError
from ksched.model.pod import pod_from_dict
from tests.builders import container, make_pod


def test_the_same_text_means_different_values_for_cpu_and_memory() -> None:
    for _ in range(2):  # the second pass answers from the memo
        p = pod_from_dict(make_pod(requests={"cpu": "2", "memory": "2"}))
        assert dict(p.requests) == {"cpu": 2000, "memory": 2}
        assert (p.nonzero_cpu, p.nonzero_memory) == (2000, 2)


@pytest.mark.parametrize("kind", ["requests", "limits"])
def test_a_bad_quantity_fails_every_time_with_its_field(kind: str) -> None:
    raw = make_pod(name="web", containers=[container(**{kind: {"memory": "1Gi", "cpu": "lots"}})])
    for _ in range(2):  # a failure is never memoized
        with pytest.raises(QuantityError, match=rf"spec\.containers\[0\]\.resources\.{kind}\.cpu"):
            pod_from_dict(raw)


def test_numbers_and_texts_are_read_alike() -> None:
    raw = make_pod(containers=[{"name": "c", "resources": {"requests": {"cpu": 1, "memory": 1.5}}}])
    assert dict(pod_from_dict(raw).requests) == {"cpu": 1000, "memory": 2}


def test_limits_stand_in_and_requests_win() -> None:
    c = container(requests={"cpu": "100m"}, limits={"cpu": "1", "memory": "1Gi"})
    assert dict(pod_from_dict(make_pod(containers=[c])).requests) == {"cpu": 100, "memory": 1 << 30}


@pytest.mark.parametrize(
    ("ports", "want"),
    [
        pytest.param([{"containerPort": 80}], [], id="container port only"),
        pytest.param([{"containerPort": 80, "hostPort": 0}], [], id="host port zero"),
        pytest.param([{"hostPort": 81}], [("TCP", "0.0.0.0", 81)], id="defaults"),
        pytest.param([], [], id="empty"),
    ],
)
def test_host_ports(ports: list[dict[str, Any]], want: list[tuple[str, str, int]]) -> None:
    c = {"name": "c", "ports": ports}
    got = pod_from_dict(make_pod(containers=[c])).host_ports
    assert [(h.protocol, h.host_ip, h.port) for h in got] == want


@pytest.mark.parametrize(
    ("container_", "field"),
    [
        pytest.param({"name": "c", "ports": {}}, "spec.containers[0].ports", id="ports not a list"),
        pytest.param({"name": "c", "ports": [5]}, "spec.containers[0].ports[0]", id="port not an object"),
        pytest.param({"name": "c", "ports": [{"hostPort": "x"}]}, "ports[0].hostPort", id="host port"),
        pytest.param({"name": "c", "resources": []}, "spec.containers[0].resources", id="resources"),
        pytest.param({"name": "c", "resources": {"limits": 1}}, "resources.limits", id="limits"),
        pytest.param({"name": "c", "image": 3}, "spec.containers[0].image", id="image"),
        pytest.param("c", "spec.containers[0]", id="container not an object"),
    ],
)
def test_malformed_containers_name_the_field(container_: Any, field: str) -> None:
    raw = make_pod()
    raw["spec"]["containers"] = [container_]
    with pytest.raises(ObjectError) as err:
        pod_from_dict(raw)
    assert field in str(err.value)


def test_conditions_and_spread_constraints() -> None:
    raw = make_pod()
    raw["status"] = {
        "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "m"},
            {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"},
        ]
    }
    p = pod_from_dict(raw)
    assert p.scheduled_condition == ("False", "Unschedulable", "m")
    assert p.preempted_by_scheduler
    assert p.topology_spread_constraints == ()
    raw["spec"]["topologySpreadConstraints"] = [{"maxSkew": 1}]
    assert pod_from_dict(raw).topology_spread_constraints == ({"maxSkew": 1},)
    raw["spec"]["topologySpreadConstraints"] = [3]
    with pytest.raises(ObjectError, match=r"spec\.topologySpreadConstraints\[0\]"):
        pod_from_dict(raw)
    raw["status"]["conditions"] = ["x"]
    del raw["spec"]["topologySpreadConstraints"]
    with pytest.raises(ObjectError, match=r"status\.conditions\[0\]"):
        pod_from_dict(raw)
