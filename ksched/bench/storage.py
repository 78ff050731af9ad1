"""The storage side of a workload: classes and drivers, a CSINode per node, a claim (and volume) per pod.

Shaped like scheduler_perf's: ``nodeAllocatableStrategy`` gives every node of a group a CSINode with
per-driver attach limits and the migrated-plugins annotation; ``persistentVolumeClaimTemplatePath``
and ``persistentVolumeTemplatePath`` give every pod its own claim and, when a volume template is
given, its own volume bound to that claim (the volume's ``claimRef`` and phase Bound, the claim's
``volumeName``, as ``CreatePodWithPersistentVolume`` with ``bindVolume`` writes them). Volume ids
and CSI volume handles are the volume's name, so every volume is a distinct disk.

Everything here is created before the pods that use it (and before measuring), in bulk through the
embedded cluster's admin endpoint; the pods themselves mount ``<pod name>-vol`` through the
``{pod}`` placeholder the cluster's pod generator fills in.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from ksched.bench.workload import NodeGroup, PodGroup, Workload

Obj = dict[str, Any]
CLAIM_SUFFIX = "-vol"
CLAIM_PLACEHOLDER = "{pod}" + CLAIM_SUFFIX
MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"


def pod_manifest(group: PodGroup) -> Obj:
    """The group's pod template, mounting its per-pod claim when it has one."""
    if group.claim is None:
        return group.manifest
    manifest = copy.deepcopy(group.manifest)
    volumes = manifest.setdefault("spec", {}).setdefault("volumes", [])
    volumes.append({"name": "vol", "persistentVolumeClaim": {"claimName": CLAIM_PLACEHOLDER}})
    return manifest


def csi_nodes(workload: Workload) -> list[Obj]:
    """A CSINode for every node of the groups that ask for one (nodes are ``node-<i>`` in group order)."""
    out: list[Obj] = []
    offset = 0
    for group in workload.nodes:
        if group.csi_node is not None:
            out.extend(_csi_node(f"node-{offset + i}", group) for i in range(group.count))
        offset += group.count
    return out


def _csi_node(name: str, group: NodeGroup) -> Obj:
    spec = group.csi_node or {}
    drivers = [
        {"name": driver, "nodeID": name, "allocatable": {"count": count}, "topologyKeys": []}
        for driver, count in spec.get("drivers", {}).items()
    ]
    meta: Obj = {"name": name}
    if spec.get("migratedPlugins"):
        meta["annotations"] = {MIGRATED_PLUGINS: ",".join(spec["migratedPlugins"])}
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": meta,
        "spec": {"drivers": drivers},
    }


def claims_and_volumes(group: PodGroup, pod_names: Iterable[str]) -> tuple[list[Obj], list[Obj]]:
    """(claims, volumes) for the pods of ``group`` named ``pod_names``; no volumes without a template."""
    claims: list[Obj] = []
    volumes: list[Obj] = []
    if group.claim is None:
        return claims, volumes
    ns = group.namespace
    for pod in pod_names:
        claim = copy.deepcopy(group.claim)
        claim_name = pod + CLAIM_SUFFIX
        claim.setdefault("metadata", {}).update(name=claim_name, namespace=ns)
        claims.append(claim)
        if group.volume is None:
            continue
        volume = copy.deepcopy(group.volume)
        pv_name = f"{ns}-{claim_name}"
        volume.setdefault("metadata", {})["name"] = pv_name
        spec = volume.setdefault("spec", {})
        _unique_disk(spec, pv_name)
        spec["claimRef"] = {
            "kind": "PersistentVolumeClaim",
            "apiVersion": "v1",
            "namespace": ns,
            "name": claim_name,
        }
        volume["status"] = {"phase": "Bound"}
        claim.setdefault("spec", {})["volumeName"] = pv_name
        claim["status"] = {"phase": "Bound"}
        volumes.append(volume)
    return claims, volumes


def _unique_disk(spec: Obj, name: str) -> None:
    """Give the volume its own disk: the CSI handle, or the in-tree source's id, is its name."""
    if "csi" in spec:
        spec["csi"]["volumeHandle"] = name
    for source, key in (("awsElasticBlockStore", "volumeID"), ("gcePersistentDisk", "pdName")):
        if source in spec:
            spec[source][key] = name
