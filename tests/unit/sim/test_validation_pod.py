"""Pod validation: create rules (tables in tests.sim_validation_cases), update and status rules, cost."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from ksched.sim._status import StatusError
from ksched.sim.store import Store
from tests.sim_validation_cases import IMAGE, POD_CASES, build

Obj = dict[str, Any]


def causes(exc: StatusError) -> list[tuple[str, str]]:
    return [(c["field"], c["reason"]) for c in (exc.details or {}).get("causes", [])]


@pytest.mark.parametrize(("kind", "fragment", "field", "reason"), POD_CASES, ids=lambda v: str(v)[:40])
def test_invalid_pod_is_refused_naming_the_field(kind: str, fragment: Any, field: str, reason: str) -> None:
    with pytest.raises(StatusError) as info:
        Store().create("pods", build(kind, fragment))
    assert info.value.code == 422 and (field, reason) in causes(info.value), causes(info.value)


def test_a_full_valid_pod_is_accepted() -> None:
    term = {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": "zone"}
    spec = {
        "containers": [
            {
                "name": "c",
                "image": IMAGE,
                "ports": [{"containerPort": 80, "hostPort": 8080, "name": "http", "protocol": "TCP"}],
                "env": [{"name": "MY_VAR.x-1"}],
                "resources": {
                    "requests": {
                        "cpu": "100m",
                        "memory": "1Gi",
                        "example.com/gpu": "1",
                        "hugepages-2Mi": "2Mi",
                    },
                    "limits": {"cpu": "1", "example.com/gpu": "1", "hugepages-2Mi": "2Mi"},
                },
            }
        ],
        "initContainers": [{"name": "sidecar", "image": IMAGE, "restartPolicy": "Always"}],
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "tolerations": [{"operator": "Exists"}, {"key": "k", "effect": "NoExecute", "tolerationSeconds": 5}],
        "affinity": {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 1,
                        "preference": {"matchExpressions": [{"key": "k", "operator": "Gt", "values": ["1"]}]},
                    }
                ]
            },
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]},
        },
        "topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "minDomains": 2}
        ],
        "schedulingGates": [{"name": "example.com/gate"}],
        "volumes": [{"name": "v"}, {"name": "w", "persistentVolumeClaim": {"claimName": "c"}}],
        "overhead": {"cpu": "10m"},
        "activeDeadlineSeconds": 10,
        "restartPolicy": "OnFailure",
        "dnsPolicy": "ClusterFirst",
        "preemptionPolicy": "Never",
        "terminationGracePeriodSeconds": -1,
    }
    Store().create("pods", build("Pod", {"spec": spec}))


def _store_with(spec: Obj) -> Store:
    store = Store()
    store.create("pods", build("Pod", {"spec": spec}))
    return store


def _update(store: Store, change: Callable[[Obj], None], subresource: str = "") -> Obj:
    def fn(cur: Obj) -> Obj:
        new = {**cur, "spec": _deep(cur["spec"])}
        change(new["spec"])
        return new

    return store.mutate("pods", "p", "default", fn, subresource=subresource)


def _deep(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _deep(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_deep(v) for v in value]
    return value


_BASE = {"containers": [{"name": "c", "image": IMAGE}], "tolerations": [{"key": "k", "operator": "Exists"}]}

UPDATE_REFUSED = [
    (
        lambda s: s["containers"][0].update(resources={"requests": {"cpu": "1"}}),
        "spec",
        "FieldValueForbidden",
    ),
    (lambda s: s.update(nodeSelector={"a": "b"}), "spec", "FieldValueForbidden"),
    (
        lambda s: s["containers"].append({"name": "d", "image": IMAGE}),
        "spec.containers",
        "FieldValueForbidden",
    ),
    (lambda s: s.update(tolerations=[]), "spec.tolerations", "FieldValueForbidden"),
    (
        lambda s: s.update(schedulingGates=[{"name": "g"}]),
        "spec.schedulingGates[0].name",
        "FieldValueForbidden",
    ),
    (lambda s: s["containers"][0].update(image=""), "spec.containers[0].image", "FieldValueRequired"),
    (lambda s: s.update(nodeName="n1"), "spec", "FieldValueForbidden"),
]


@pytest.mark.parametrize(("change", "field", "reason"), UPDATE_REFUSED)
def test_pod_spec_is_immutable_but_for_upstreams_fields(change: Any, field: str, reason: str) -> None:
    store = _store_with(_BASE)
    with pytest.raises(StatusError) as info:
        _update(store, change)
    assert (field, reason) in causes(info.value), causes(info.value)


def test_resources_change_has_upstreams_message() -> None:
    store = _store_with(_BASE)
    with pytest.raises(StatusError) as info:
        _update(store, lambda s: s["containers"][0].update(resources={"limits": {"cpu": "1"}}))
    assert "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`," in str(
        info.value.message
    )


def test_allowed_pod_updates_pass() -> None:
    store = _store_with({**_BASE, "schedulingGates": [{"name": "g"}], "activeDeadlineSeconds": 100})
    _update(store, lambda s: s["containers"][0].update(image="other:1"))
    _update(store, lambda s: s["tolerations"].append({"key": "x", "operator": "Exists"}))
    _update(store, lambda s: s.update(activeDeadlineSeconds=50))
    _update(store, lambda s: s.update(nodeSelector={"zone": "a"}))  # additions while gated
    _update(store, lambda s: s.update(schedulingGates=[]))
    got = _update(store, lambda s: s.update(nodeName="n1"), subresource="binding")
    assert got["spec"]["nodeName"] == "n1"


def test_active_deadline_may_only_go_down() -> None:
    store = _store_with({**_BASE, "activeDeadlineSeconds": 10})
    with pytest.raises(StatusError) as info:
        _update(store, lambda s: s.update(activeDeadlineSeconds=20))
    assert ("spec.activeDeadlineSeconds", "FieldValueInvalid") in causes(info.value)
    with pytest.raises(StatusError) as info:
        _update(store, lambda s: s.pop("activeDeadlineSeconds"))
    assert ("spec.activeDeadlineSeconds", "FieldValueInvalid") in causes(info.value)


def test_status_write_checks_nominated_node_and_condition_types() -> None:
    store = _store_with(_BASE)
    for status, field in (
        ({"nominatedNodeName": "Bad_Node"}, "status.nominatedNodeName"),
        ({"conditions": [{"type": "bad type", "status": "True"}]}, "status.conditions[0].type"),
    ):
        with pytest.raises(StatusError) as info:
            store.update(
                "pods",
                {"metadata": {"name": "p"}, "status": status},
                namespace="default",
                subresource="status",
            )
        assert (field, "FieldValueInvalid") in causes(info.value)
    store.update(
        "pods",
        {
            "metadata": {"name": "p"},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
        },
        namespace="default",
        subresource="status",
    )


def test_validation_cost_per_pod_write_stays_small() -> None:
    """A pod create + bind + status write: validation must stay a small part of the write."""
    from ksched.sim import _admission as admission

    pod = build("Pod", {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [
        {"name": "c", "image": IMAGE, "resources": {"requests": {"cpu": "100m", "memory": "1Gi"}}}
    ]}})  # fmt: skip
    store = Store()
    start = time.perf_counter()
    for i in range(300):
        obj = {**pod, "metadata": {**pod["metadata"], "name": f"p{i}"}}
        store.create("pods", obj, copy=False)
        store.mutate(
            "pods",
            f"p{i}",
            "default",
            lambda c: {**c, "spec": {**c["spec"], "nodeName": "n"}},
            subresource="binding",
        )
        store.mutate(
            "pods", f"p{i}", "default", lambda c: {**c, "status": {"phase": "Running"}}, subresource="status"
        )
    per_pod = (time.perf_counter() - start) / 300
    assert admission is not None and per_pod < 0.002, per_pod
