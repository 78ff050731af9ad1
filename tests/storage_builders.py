"""Builders for the storage objects (PVs, PVCs, StorageClasses, CSI objects) of volume-plugin tests,
in the manner of :mod:`tests.builders`: raw API dicts, one keyword per API field, so that every test
also exercises the model's decoding; :func:`add_storage` feeds them to a cache's volume store as
the informer handlers would.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ksched.cache import volumes as vol
from ksched.cache.cluster import ClusterCache
from ksched.model.storage import (
    csi_driver_from_dict,
    csi_node_from_dict,
    csi_storage_capacity_from_dict,
    pv_from_dict,
    pvc_from_dict,
    storage_class_from_dict,
)
from tests.builders import TERMINATING_SINCE

WFFC = "WaitForFirstConsumer"
IMMEDIATE = "Immediate"


def affinity_terms(*terms: Mapping[str, Sequence[str]]) -> list[dict[str, Any]]:
    """Node selector terms, each ``{key: [values]}`` becoming ``key In values`` expressions (ANDed)."""
    return [
        {"matchExpressions": [{"key": k, "operator": "In", "values": list(v)} for k, v in t.items()]}
        for t in terms
    ]


def make_pv(
    name: str,
    *,
    storage_class: str = "",
    capacity: str | None = None,
    access_modes: Iterable[str] = (),
    phase: str | None = "Available",
    affinity: Mapping[str, Sequence[str]] | None = None,
    terms: list[dict[str, Any]] | None = None,
    claim: tuple[str, str, str] | None = None,
    bound_by_controller: bool = False,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    volume_mode: str | None = None,
    vac: str | None = None,
    terminating: bool = False,
    resource_version: str | None = "1",
    source: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A PersistentVolume; ``affinity`` is one required term (``{key: [values]}``), ``terms`` raw
    ones; ``claim`` is (namespace, name, uid) of the claimRef; ``source`` e.g.
    ``{"gcePersistentDisk": {"pdName": "d"}}`` (default: a CSI volume)."""
    meta: dict[str, Any] = {"name": name, "uid": f"uid-pv-{name}"}
    if labels:
        meta["labels"] = dict(labels)
    ann = dict(annotations or {})
    if bound_by_controller:
        ann["pv.kubernetes.io/bound-by-controller"] = "yes"
    if ann:
        meta["annotations"] = ann
    if resource_version is not None:
        meta["resourceVersion"] = resource_version
    if terminating:
        meta["deletionTimestamp"] = TERMINATING_SINCE
    spec: dict[str, Any] = {"storageClassName": storage_class, "accessModes": list(access_modes)}
    spec.update(
        dict(source) if source is not None else {"csi": {"driver": "csi.example.com", "volumeHandle": name}}
    )
    if capacity is not None:
        spec["capacity"] = {"storage": capacity}
    if affinity is not None:
        terms = affinity_terms(affinity)
    if terms is not None:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": terms}}
    if claim is not None:
        ns, cname, uid = claim
        spec["claimRef"] = {"kind": "PersistentVolumeClaim", "namespace": ns, "name": cname, "uid": uid}
    if volume_mode is not None:
        spec["volumeMode"] = volume_mode
    if vac is not None:
        spec["volumeAttributesClassName"] = vac
    raw: dict[str, Any] = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": meta, "spec": spec}
    if phase is not None:
        raw["status"] = {"phase": phase}
    return raw


def make_pvc(
    name: str,
    *,
    namespace: str = "default",
    storage_class: str | None = None,
    request: str | None = None,
    volume_name: str = "",
    bound: bool = False,
    selected_node: str | None = None,
    phase: str | None = None,
    access_modes: Iterable[str] = (),
    volume_mode: str | None = None,
    selector: Mapping[str, Any] | None = None,
    annotations: Mapping[str, str] | None = None,
    owner_uid: str | None = None,
    uid: str | None = None,
    vac: str | None = None,
    terminating: bool = False,
    resource_version: str | None = "1",
) -> dict[str, Any]:
    """A PersistentVolumeClaim; ``bound`` adds ``pv.kubernetes.io/bind-completed`` (with
    ``volume_name``); ``owner_uid`` makes a pod its controller (generic ephemeral volumes)."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid or f"uid-pvc-{namespace}-{name}"}
    ann = dict(annotations or {})
    if bound:
        ann["pv.kubernetes.io/bind-completed"] = "yes"
    if selected_node is not None:
        ann["volume.kubernetes.io/selected-node"] = selected_node
    if ann:
        meta["annotations"] = ann
    if resource_version is not None:
        meta["resourceVersion"] = resource_version
    if terminating:
        meta["deletionTimestamp"] = TERMINATING_SINCE
    if owner_uid is not None:
        meta["ownerReferences"] = [{"kind": "Pod", "name": "owner", "uid": owner_uid, "controller": True}]
    spec: dict[str, Any] = {"accessModes": list(access_modes)}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    if request is not None:
        spec["resources"] = {"requests": {"storage": request}}
    if volume_name:
        spec["volumeName"] = volume_name
    if volume_mode is not None:
        spec["volumeMode"] = volume_mode
    if selector is not None:
        spec["selector"] = dict(selector)
    if vac is not None:
        spec["volumeAttributesClassName"] = vac
    raw: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": meta,
        "spec": spec,
    }
    if phase is not None:
        raw["status"] = {"phase": phase}
    return raw


def make_storage_class(
    name: str,
    *,
    binding_mode: str | None = WFFC,
    provisioner: str = "kubernetes.io/no-provisioner",
    allowed_topologies: Mapping[str, Sequence[str]] | list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A StorageClass; ``allowed_topologies`` as one term ``{key: [values]}`` or raw terms."""
    raw: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
    }
    if binding_mode is not None:
        raw["volumeBindingMode"] = binding_mode
    if isinstance(allowed_topologies, Mapping):
        allowed_topologies = [
            {"matchLabelExpressions": [{"key": k, "values": list(v)} for k, v in allowed_topologies.items()]}
        ]
    if allowed_topologies is not None:
        raw["allowedTopologies"] = allowed_topologies
    return raw


def make_csi_node(name: str, migrated: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if migrated is not None:
        meta["annotations"] = {"storage.alpha.kubernetes.io/migrated-plugins": migrated}
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": meta, "spec": {"drivers": []}}


def make_csi_driver(name: str, *, storage_capacity: bool | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if storage_capacity is not None:
        spec["storageCapacity"] = storage_capacity
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": name}, "spec": spec}


def make_capacity(
    name: str,
    storage_class: str,
    *,
    node_labels: Mapping[str, str] | None = None,
    everywhere: bool = False,
    capacity: str | None = None,
    maximum_volume_size: str | None = None,
    namespace: str = "kube-system",
) -> dict[str, Any]:
    """A CSIStorageCapacity reachable from nodes with ``node_labels`` (``everywhere``: an empty
    selector; neither: no ``nodeTopology`` at all, reachable from no node)."""
    raw: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIStorageCapacity",
        "metadata": {"name": name, "namespace": namespace},
        "storageClassName": storage_class,
    }
    if node_labels is not None:
        raw["nodeTopology"] = {"matchLabels": dict(node_labels)}
    elif everywhere:
        raw["nodeTopology"] = {}
    if capacity is not None:
        raw["capacity"] = capacity
    if maximum_volume_size is not None:
        raw["maximumVolumeSize"] = maximum_volume_size
    return raw


def claim_volume(claim: str, name: str | None = None) -> dict[str, Any]:
    """A pod ``spec.volumes`` entry mounting the claim."""
    return {"name": name or f"vol-{claim}", "persistentVolumeClaim": {"claimName": claim}}


def ephemeral_volume(name: str) -> dict[str, Any]:
    """A generic ephemeral volume (its claim is ``<pod>-<name>``)."""
    return {"name": name, "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}


DECODERS = {
    vol.PERSISTENT_VOLUMES: pv_from_dict,
    vol.PERSISTENT_VOLUME_CLAIMS: pvc_from_dict,
    vol.STORAGE_CLASSES: storage_class_from_dict,
    vol.CSI_NODES: csi_node_from_dict,
    vol.CSI_DRIVERS: csi_driver_from_dict,
    vol.CSI_STORAGE_CAPACITIES: csi_storage_capacity_from_dict,
}


def add_storage(
    cache: ClusterCache,
    *,
    pvs: Iterable[Mapping[str, Any]] = (),
    pvcs: Iterable[Mapping[str, Any]] = (),
    classes: Iterable[Mapping[str, Any]] = (),
    csi_nodes: Iterable[Mapping[str, Any]] = (),
    csi_drivers: Iterable[Mapping[str, Any]] = (),
    capacities: Iterable[Mapping[str, Any]] = (),
) -> ClusterCache:
    """Decode the objects and put them in ``cache.volumes`` (an informer add each)."""
    for kind, objs in (
        (vol.STORAGE_CLASSES, classes),
        (vol.PERSISTENT_VOLUMES, pvs),
        (vol.PERSISTENT_VOLUME_CLAIMS, pvcs),
        (vol.CSI_NODES, csi_nodes),
        (vol.CSI_DRIVERS, csi_drivers),
        (vol.CSI_STORAGE_CAPACITIES, capacities),
    ):
        for raw in objs:
            cache.volumes.upsert(kind, DECODERS[kind](raw))
    return cache
