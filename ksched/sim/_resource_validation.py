"""Resource names and quantities, as kube-apiserver v1.35 validates them for pods and nodes.

``ValidateResourceQuantityValue`` (non-negative; a whole number for integer resources such as
``pods`` and extended resources), ``validateContainerResourceName`` (a standard container resource,
or a qualified extended resource name) and ``ValidateContainerResourceRequirements`` (requests at
most limits; extended resources and hugepages not overcommitted: request equal to limit).
A quantity that does not parse is a :class:`~ksched.sim._storage_validation.DecodeError`, the 400
kube-apiserver's JSON decoder answers.
"""

from __future__ import annotations

import functools
from fractions import Fraction
from typing import Any

from ksched.model.labels import qualified_name_errors
from ksched.sim._storage_validation import Errors, mapping, quantity

Obj = dict[str, Any]

CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
STANDARD_RESOURCES = frozenset(
    {
        "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
        "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage",
        "pods", "services", "replicationcontrollers", "resourcequotas", "secrets", "configmaps",
        "persistentvolumeclaims", "storage", "requests.storage", "services.nodeports",
        "services.loadbalancers",
    }
)  # fmt: skip
INTEGER_RESOURCES = frozenset(
    {
        "pods", "services", "replicationcontrollers", "resourcequotas", "secrets", "configmaps",
        "persistentvolumeclaims", "services.nodeports", "services.loadbalancers",
    }
)  # fmt: skip


def is_native(name: str) -> bool:
    """``IsNativeResource``: no domain, or in the ``kubernetes.io`` domain."""
    return "/" not in name or "kubernetes.io/" in name


def is_extended(name: str) -> bool:
    """``IsExtendedResourceName``: a qualified name outside ``kubernetes.io``, not ``requests.*``."""
    if is_native(name) or name.startswith("requests."):
        return False
    return not qualified_name_errors("requests." + name)


def _overcommit_allowed(name: str) -> bool:
    return is_native(name) and not name.startswith("hugepages-")


def check_quantity_value(errs: Errors, name: str, value: Any, field: str) -> Fraction:
    """``ValidateResourceQuantityValue``: parse, non-negative, whole for integer resources."""
    q = quantity(value)
    if q < 0:
        errs.invalid(field, str(value), "must be greater than or equal to 0")
    if (name in INTEGER_RESOURCES or is_extended(name)) and q.denominator != 1:
        errs.invalid(field, str(value), "must be an integer")
    return q


def check_container_resource_name(errs: Errors, name: str, field: str) -> None:
    """``validateContainerResourceName``."""
    msgs = qualified_name_errors(name)
    for msg in msgs:
        errs.invalid(field, name, msg)
    if msgs:
        return
    if "/" not in name:
        hugepages = name.startswith("hugepages-")
        if name not in STANDARD_RESOURCES and not hugepages:
            errs.invalid(field, name, "must be a standard resource type or fully qualified")
        if name not in CONTAINER_RESOURCES and not hugepages:
            errs.invalid(field, name, "must be a standard resource for containers")
    elif not is_native(name) and not is_extended(name):
        errs.invalid(field, name, "doesn't follow extended resource name standard")


def validate_resource_list(errs: Errors, raw: Any, at: str, *, containers: bool) -> dict[str, Fraction]:
    """Each ``name: quantity`` of a requests, limits or overhead list, at ``at[name]``."""
    values: dict[str, Fraction] = {}
    for name, value in mapping(raw, at).items():
        if isinstance(value, str | int) and not isinstance(value, bool):
            q, problems = _checked_entry(name, value, containers)
        else:
            q, problems = _entry(name, value, containers)
        values[name] = q
        if problems:
            errs.causes.extend((r, f"{at}[{name}]", m) for r, m in problems)
    return values


def _entry(name: str, value: Any, containers: bool) -> tuple[Fraction, tuple[tuple[str, str], ...]]:
    """One entry's quantity and its (reason, message) problems, field left out (so it can be cached)."""
    sub = Errors()
    if containers:
        check_container_resource_name(sub, name, "")
    q = check_quantity_value(sub, name, value, "")
    return q, tuple((r, m) for r, _, m in sub.causes)


_checked_entry = functools.lru_cache(maxsize=4096)(_entry)
"""The same entries recur on almost every pod (``cpu: 100m``); their verdict is cached."""


def validate_requirements(errs: Errors, resources: Obj, at: str) -> None:
    """``ValidateContainerResourceRequirements``: requests against limits, hugepages need cpu or memory."""
    limits = validate_resource_list(errs, resources.get("limits"), f"{at}.limits", containers=True)
    requests = validate_resource_list(errs, resources.get("requests"), f"{at}.requests", containers=True)
    raw_limits = mapping(resources.get("limits"), f"{at}.limits")
    raw_requests = mapping(resources.get("requests"), f"{at}.requests")
    for name, req in requests.items():
        limit = limits.get(name)
        if limit is not None and raw_requests[name] == raw_limits[name]:
            continue  # the common case, spelled the same: equal without comparing fractions
        if limit is not None:
            if req != limit and not _overcommit_allowed(name):
                errs.invalid(
                    f"{at}.requests",
                    str(raw_requests[name]),
                    f"must be equal to {name} limit of {raw_limits[name]}",
                )
            elif req > limit:
                errs.invalid(
                    f"{at}.requests",
                    str(raw_requests[name]),
                    f"must be less than or equal to {name} limit of {raw_limits[name]}",
                )
        elif not _overcommit_allowed(name):
            errs.required(f"{at}.limits", "Limit must be set for non overcommitable resources")
    if "cpu" in requests or "memory" in requests or "cpu" in limits or "memory" in limits:
        return
    if any(n.startswith("hugepages-") for n in (*limits, *requests)):
        errs.forbidden(at, "HugePages require cpu or memory")
