"""Storage objects as raw API dicts, for the embedded cluster's storage tests and its controller stand-ins."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def make_pv(
    name: str,
    *,
    storage: str = "1Gi",
    access_modes: Iterable[str] = ("ReadWriteOnce",),
    storage_class: str | None = None,
    labels: Mapping[str, str] | None = None,
    claim_ref: Mapping[str, str] | None = None,
    volume_mode: str | None = None,
    node_affinity: Mapping[str, Any] | None = None,
    reclaim_policy: str | None = None,
    driver: str = "csi.example.com",
) -> dict[str, Any]:
    """A PersistentVolume dict: a CSI volume of ``driver`` with ``storage`` capacity."""
    spec: dict[str, Any] = {
        "capacity": {"storage": storage},
        "accessModes": list(access_modes),
        "csi": {"driver": driver, "volumeHandle": f"handle-{name}"},
    }
    for key, value in (
        ("storageClassName", storage_class),
        ("claimRef", dict(claim_ref) if claim_ref is not None else None),
        ("volumeMode", volume_mode),
        ("nodeAffinity", dict(node_affinity) if node_affinity is not None else None),
        ("persistentVolumeReclaimPolicy", reclaim_policy),
    ):
        if value is not None:
            spec[key] = value
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = dict(labels)
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": meta, "spec": spec}


def make_pvc(
    name: str,
    *,
    namespace: str = "default",
    storage: str = "1Gi",
    access_modes: Iterable[str] = ("ReadWriteOnce",),
    storage_class: str | None = None,
    volume_name: str | None = None,
    selector: Mapping[str, Any] | None = None,
    annotations: Mapping[str, str] | None = None,
    volume_mode: str | None = None,
) -> dict[str, Any]:
    """A PersistentVolumeClaim dict asking for ``storage``; ``storage_class=None`` leaves the class unset."""
    spec: dict[str, Any] = {
        "accessModes": list(access_modes),
        "resources": {"requests": {"storage": storage}},
    }
    for key, value in (
        ("storageClassName", storage_class),
        ("volumeName", volume_name),
        ("selector", dict(selector) if selector is not None else None),
        ("volumeMode", volume_mode),
    ):
        if value is not None:
            spec[key] = value
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}


def make_storage_class(
    name: str,
    *,
    provisioner: str = "csi.example.com",
    binding_mode: str | None = None,
    reclaim_policy: str | None = None,
    default: bool = False,
    allowed_topologies: Mapping[str, Iterable[str]] | None = None,
) -> dict[str, Any]:
    """A StorageClass dict; ``allowed_topologies`` is one term, label key -> allowed values."""
    sc: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
    }
    if default:
        sc["metadata"]["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
    if binding_mode is not None:
        sc["volumeBindingMode"] = binding_mode
    if reclaim_policy is not None:
        sc["reclaimPolicy"] = reclaim_policy
    if allowed_topologies is not None:
        exprs = [{"key": k, "values": list(v)} for k, v in allowed_topologies.items()]
        sc["allowedTopologies"] = [{"matchLabelExpressions": exprs}]
    return sc


def make_csinode(
    node: str, drivers: Mapping[str, Iterable[str]], *, count: int | None = None
) -> dict[str, Any]:
    """A CSINode dict for ``node``: driver name -> its topology keys (``count``: allocatable volumes)."""
    out = []
    for driver, keys in drivers.items():
        d: dict[str, Any] = {"name": driver, "nodeID": node, "topologyKeys": list(keys)}
        if count is not None:
            d["allocatable"] = {"count": count}
        out.append(d)
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": node},
        "spec": {"drivers": out},
    }
