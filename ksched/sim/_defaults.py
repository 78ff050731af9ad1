"""Defaulting: the fields kube-apiserver fills in on a write, before validation.

``apply`` runs on every create (``old`` is None) and update, as upstream decodes and defaults every
write; the storage kinds' own defaults live in :mod:`ksched.sim._storage_api`.
"""

from __future__ import annotations

from typing import Any

from ksched.sim._resources import ResourceType

Obj = dict[str, Any]


def apply(rtype: ResourceType, obj: Obj, old: Obj | None) -> None:
    """Fill ``obj``'s defaulted fields in place (new dicts for changed parts: stored ones are shared)."""
    if old is not None:
        return
    if rtype.key == "pods":
        spec = obj.setdefault("spec", {})
        if not isinstance(spec, dict):
            return
        spec.setdefault("schedulerName", "default-scheduler")
        spec.setdefault("terminationGracePeriodSeconds", 30)
        spec.setdefault("restartPolicy", "Always")
        spec.setdefault("priority", 0)
        status = obj.get("status") or {}
        if isinstance(status, dict):
            status.setdefault("phase", "Pending")
            obj["status"] = status
    elif rtype.key == "namespaces":
        meta = obj["metadata"]
        meta["labels"] = {**(meta.get("labels") or {}), "kubernetes.io/metadata.name": meta["name"]}
        obj["spec"] = obj.get("spec") or {"finalizers": ["kubernetes"]}
        obj["status"] = {"phase": "Active"}
