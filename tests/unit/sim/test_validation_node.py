"""Node validation: create rules (tables in tests.sim_validation_cases) and update rules."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ksched.sim._status import StatusError
from ksched.sim.store import Store
from tests.sim_validation_cases import NODE_CASES, build

Obj = dict[str, Any]


def causes(exc: StatusError) -> list[tuple[str, str]]:
    return [(c["field"], c["reason"]) for c in (exc.details or {}).get("causes", [])]


@pytest.mark.parametrize(("kind", "fragment", "field", "reason"), NODE_CASES, ids=lambda v: str(v)[:40])
def test_invalid_node_is_refused_naming_the_field(kind: str, fragment: Any, field: str, reason: str) -> None:
    with pytest.raises(StatusError) as info:
        Store().create("nodes", build(kind, fragment))
    assert info.value.code == 422 and (field, reason) in causes(info.value), causes(info.value)


def test_a_full_valid_node_is_accepted() -> None:
    node = build(
        "Node",
        {
            "spec": {
                "podCIDRs": ["10.0.0.0/24", "fd00::/64"],
                "providerID": "sim://n",
                "unschedulable": True,
                "taints": [
                    {"key": "k", "value": "v", "effect": "NoSchedule"},
                    {"key": "k", "value": "v", "effect": "NoExecute"},
                ],
            },
            "status": {"capacity": {"example.com/foo": "2", "hugepages-2Mi": "0"}},
        },
    )
    Store().create("nodes", node)


def _store() -> Store:
    store = Store()
    store.create("nodes", build("Node", {"spec": {"podCIDRs": ["10.0.0.0/24"], "providerID": "sim://n"}}))
    return store


def _write(store: Store, change: Callable[[Obj], None], subresource: str = "") -> Obj:
    def fn(cur: Obj) -> Obj:
        new = {**cur, "spec": dict(cur.get("spec") or {}), "status": dict(cur.get("status") or {})}
        change(new)
        return new

    return store.mutate("nodes", "n", "", fn, subresource=subresource)


NODE_UPDATES_REFUSED = [
    (lambda n: n["spec"].update(podCIDRs=["10.1.0.0/24"]), "spec.podCIDRs", "FieldValueForbidden", ""),
    (lambda n: n["spec"].update(providerID="sim://other"), "spec.providerID", "FieldValueForbidden", ""),
    (
        lambda n: n["spec"].update(taints=[{"key": "k", "effect": "Bad"}]),
        "metadata.taints[0].effect",
        "FieldValueNotSupported",
        "",
    ),
    (
        lambda n: n["status"].update(allocatable={"cpu": "-2"}),
        "status.allocatable.cpu",
        "FieldValueInvalid",
        "status",
    ),
    (
        lambda n: n["status"].update(addresses=[{"type": "InternalIP", "address": "10.0.0.1"}] * 2),
        "status.addresses[1]",
        "FieldValueDuplicate",
        "status",
    ),
]


@pytest.mark.parametrize(("change", "field", "reason", "subresource"), NODE_UPDATES_REFUSED)
def test_node_update_rules(change: Any, field: str, reason: str, subresource: str) -> None:
    store = _store()
    with pytest.raises(StatusError) as info:
        _write(store, change, subresource)
    assert (field, reason) in causes(info.value), causes(info.value)
    assert store.get("nodes", "n")["status"]["allocatable"]["cpu"] == "4"  # the stored node is untouched


def test_allowed_node_updates_pass() -> None:
    store = Store()
    store.create("nodes", build("Node", {}))
    _write(store, lambda n: n["spec"].update(podCIDRs=["10.0.0.0/24"], providerID="sim://n"))
    _write(
        store, lambda n: n["spec"].update(unschedulable=True, taints=[{"key": "k", "effect": "NoSchedule"}])
    )
    got = _write(store, lambda n: n["status"].update(allocatable={"cpu": "3", "pods": "100"}), "status")
    assert got["status"]["allocatable"]["cpu"] == "3"
