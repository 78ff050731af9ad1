"""Node validation as kube-apiserver v1.35's ``ValidateNode`` and ``ValidateNodeUpdate``.

Checked on every write (status writes included, as upstream's node status strategy runs
``ValidateNodeUpdate``): capacity and allocatable quantities (parse, non-negative, whole for
integer resources), taints (reported under ``metadata.taints``, upstream's own path: key, value,
effect, unique by key and effect), podCIDRs (valid, one per IP family, no duplicates), duplicate
addresses; on update podCIDRs and providerID may only go from unset to set. ``unschedulable`` is a
bool (the decoder's check). Parts that are the very dicts of the stored node are not re-checked.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from ksched.model.labels import label_value_errors, qualified_name_errors
from ksched.sim._pod_scheduling_validation import validate_taint_effect
from ksched.sim._resource_validation import check_quantity_value
from ksched.sim._storage_validation import DecodeError, Errors, mapping, strings, text

Obj = dict[str, Any]

CIDR_ERROR = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
_CIDR_CHANGE = 'node updates may not change podCIDR except from "" to valid'
_PROVIDER_CHANGE = 'node updates may not change providerID except from "" to valid'


def validate_node(errs: Errors, node: Obj, old: Obj | None, subresource: str) -> None:
    """The Node kind's rules for one write (``subresource`` "" or "status")."""
    spec = mapping(node.get("spec"), "spec")
    old_spec = None if old is None else old.get("spec")
    status = mapping(node.get("status"), "status")
    old_status = None if old is None else old.get("status")
    if spec is not old_spec:
        if spec.get("taints"):
            _validate_taints(errs, spec["taints"], "metadata.taints")
        if old is None or subresource != "status":
            _validate_cidrs(errs, spec)
        if not isinstance(spec.get("unschedulable", False), bool):
            raise DecodeError("spec.unschedulable: expected a bool")
    if status is not old_status:
        _validate_resources(errs, status)
    if old is None:
        return
    if status is not old_status:
        _check_addresses(errs, status)
    if spec is not old_spec:
        _validate_spec_update(errs, spec, mapping(old_spec, "spec"))


def _validate_resources(errs: Errors, status: Obj) -> None:
    """``ValidateNodeResources``: each capacity and allocatable quantity at ``status.<list>.<name>``."""
    for part in ("capacity", "allocatable"):
        for name, value in mapping(status.get(part), f"status.{part}").items():
            check_quantity_value(errs, name, value, f"status.{part}.{name}")


def _validate_taints(errs: Errors, taints: Any, at: str) -> None:
    """``validateNodeTaints``."""
    if not isinstance(taints, list):
        raise DecodeError("spec.taints: expected a list")
    seen: set[tuple[str, str]] = set()
    for i, raw in enumerate(taints):
        here = f"{at}[{i}]"
        taint = mapping(raw, here)
        key = text(taint.get("key"), f"{here}.key")
        for msg in qualified_name_errors(key):
            errs.invalid(f"{here}.key", key, msg)
        value = text(taint.get("value"), f"{here}.value")
        msgs = label_value_errors(value)
        if msgs:
            errs.invalid(f"{here}.value", value, ";".join(msgs))
        effect = text(taint.get("effect"), f"{here}.effect")
        validate_taint_effect(errs, effect, f"{here}.effect", allow_empty=False)
        if (key, effect) in seen:
            errs.causes.append(
                (
                    "FieldValueDuplicate",
                    here,
                    f"Duplicate value: {_go_taint(taint)}: taints must be unique by key and effect pair",
                )
            )
            continue
        seen.add((key, effect))


def _go_taint(taint: Obj) -> str:
    """A taint as Go's ``%#v`` prints the struct, near enough to read."""
    return (
        f'core.Taint{{Key:"{taint.get("key", "")}", Value:"{taint.get("value", "")}", '
        f'Effect:"{taint.get("effect", "")}", TimeAdded:<nil>}}'
    )


def _validate_cidrs(errs: Errors, spec: Obj) -> None:
    cidrs = strings(spec.get("podCIDRs"), "spec.podCIDRs")
    single = text(spec.get("podCIDR"), "spec.podCIDR")
    if single and not cidrs:
        cidrs = [single]
    families: list[int] = []
    for i, value in enumerate(cidrs):
        try:
            families.append(ipaddress.ip_network(value, strict=False).version)
        except ValueError:
            errs.invalid(f"spec.podCIDRs[{i}]", value, CIDR_ERROR)
    if len(cidrs) > 1:
        if len(cidrs) > 2 or len(set(families)) != len(families):
            errs.invalid("spec.podCIDRs", cidrs, "may specify no more than one CIDR for each IP family")
        seen: set[str] = set()
        for i, value in enumerate(cidrs):
            if value in seen:
                errs.duplicate(f"spec.podCIDRs[{i}]", value)
            seen.add(value)


def _check_addresses(errs: Errors, status: Obj) -> None:
    seen: set[tuple[Any, Any]] = set()
    addresses = status.get("addresses") or []
    if not isinstance(addresses, list):
        raise DecodeError("status.addresses: expected a list")
    for i, raw in enumerate(addresses):
        addr = mapping(raw, f"status.addresses[{i}]")
        key = (addr.get("type"), addr.get("address"))
        if key in seen:
            errs.duplicate(f"status.addresses[{i}]", addr)
        seen.add(key)


def _validate_spec_update(errs: Errors, spec: Obj, old: Obj) -> None:
    """podCIDRs and providerID: settable once, then immutable; externalID never changes."""
    old_cidrs = old.get("podCIDRs") or []
    if old_cidrs:
        new_cidrs = spec.get("podCIDRs") or []
        if len(new_cidrs) != len(old_cidrs):
            errs.forbidden("spec.podCIDRs", _CIDR_CHANGE)
        else:
            for a, b in zip(old_cidrs, new_cidrs, strict=True):
                if a != b:
                    errs.forbidden("spec.podCIDRs", _CIDR_CHANGE)
    old_provider = old.get("providerID") or ""
    if old_provider and old_provider != (spec.get("providerID") or ""):
        errs.forbidden("spec.providerID", _PROVIDER_CHANGE)
    if (spec.get("externalID") or "") != (old.get("externalID") or ""):
        errs.forbidden("spec.externalID", "may not be updated")
