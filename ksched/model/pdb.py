"""Compact PodDisruptionBudget records (policy/v1) built from raw API JSON.

Preemption needs, per budget, which pods it covers and how many more disruptions it allows. The
selector is kept raw (after its shape is checked) because policy/v1 gives ``null`` and ``{}``
different meanings: a budget without a selector covers no pod, an empty selector covers every pod in
the namespace. ``disruptions_allowed`` is the controller's ``status.disruptionsAllowed``; a budget the
controller has not processed yet reads as 0, which is what upstream's preemption assumes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ksched.errors import ObjectError, describe_object
from ksched.model import _fields as f

_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


@dataclass(frozen=True, slots=True)
class PodDisruptionBudget:
    """One budget. Immutable: an update builds a new record."""

    namespace: str
    name: str
    uid: str
    selector: Mapping[str, Any] | None
    """Raw ``spec.selector`` (a LabelSelector); ``None`` selects nothing, ``{}`` selects everything."""
    disruptions_allowed: int
    disrupted_pods: frozenset[str] = frozenset()
    """Names in ``status.disruptedPods``: evictions the API server already counted against the budget,
    which preemption must not count twice."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def described(self) -> str:
        return describe_object("PodDisruptionBudget", self.namespace, self.name)


def _check_selector(raw: Any, obj: str, field: str) -> Mapping[str, Any] | None:
    """Validate a LabelSelector's shape; return it unchanged (``None`` stays ``None``)."""
    if raw is None:
        return None
    sel = f.mapping(raw, obj, field)
    f.string_map(sel.get("matchLabels"), obj, f"{field}.matchLabels")
    for i, e in enumerate(f.sequence(sel.get("matchExpressions"), obj, f"{field}.matchExpressions")):
        path = f"{field}.matchExpressions[{i}]"
        em = f.mapping(e, obj, path)
        key = f.string(em.get("key"), obj, f"{path}.key")
        if not key:
            raise ObjectError(obj, f"{path}.key", "a selector requirement needs a key")
        op = f.string(em.get("operator"), obj, f"{path}.operator")
        if op not in _OPERATORS:
            raise ObjectError(obj, f"{path}.operator", f"{op!r} is not one of {', '.join(_OPERATORS)}")
        values = [
            f.string(v, obj, f"{path}.values[{j}]")
            for j, v in enumerate(f.sequence(em.get("values"), obj, f"{path}.values"))
        ]
        if op in ("In", "NotIn") and not values:
            raise ObjectError(obj, f"{path}.values", f"operator {op} needs at least one value")
        if op in ("Exists", "DoesNotExist") and values:
            raise ObjectError(obj, f"{path}.values", f"operator {op} takes no values")
    return sel


def pdb_from_dict(raw: Any) -> PodDisruptionBudget:
    """Build a :class:`PodDisruptionBudget` from API JSON; raise :class:`ObjectError` naming the field."""
    kind = "PodDisruptionBudget"
    top = f.mapping(raw, kind, "")
    meta = f.mapping(top.get("metadata"), kind, "metadata")
    namespace = f.string(meta.get("namespace"), kind, "metadata.namespace", "default") or "default"
    name = f.string(meta.get("name"), kind, "metadata.name")
    obj = describe_object(kind, namespace, name)
    if not name:
        raise ObjectError(obj, "metadata.name", "a PodDisruptionBudget needs a name")
    spec = f.mapping(top.get("spec"), obj, "spec")
    status = f.mapping(top.get("status"), obj, "status")
    return PodDisruptionBudget(
        namespace=namespace,
        name=name,
        uid=f.string(meta.get("uid"), obj, "metadata.uid") or f"{namespace}/{name}",
        selector=_check_selector(spec.get("selector"), obj, "spec.selector"),
        disruptions_allowed=f.integer(
            status.get("disruptionsAllowed"), obj, "status.disruptionsAllowed", lo=0, hi=2**31 - 1
        ),
        disrupted_pods=frozenset(f.mapping(status.get("disruptedPods"), obj, "status.disruptedPods")),
    )
