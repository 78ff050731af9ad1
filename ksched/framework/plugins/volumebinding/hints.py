"""VolumeBinding's queueing hints (upstream ``isSchedulableAfter...`` in ``volume_binding.go``):
for one pod the plugin rejected and one cluster event, may the event make it schedulable?

Each is a pure function of the pod and the object before (None on a creation) and after the event.
Upstream's hints also return an error when handed objects of the wrong type; ksched's records are
typed, so that case does not exist. Events registered without a hint (PersistentVolume, Node)
always queue the pod.

Two comparisons are on parsed records where upstream compares raw values: a CSINode's
migrated-plugins annotation as a set of plugin names (a reordered list is no change here), and a
StorageClass's ``allowedTopologies`` with each requirement's values as a set.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from ksched.framework.api import QueueingHint
from ksched.model.pod import Pod
from ksched.model.storage import CSIDriver, CSINode, CSIStorageCapacity, PersistentVolumeClaim, StorageClass
from ksched.model.volumes import CSI

T = TypeVar("T")
HintFn = Callable[[Pod, T | None, T], QueueingHint]
QUEUE = QueueingHint.QUEUE
SKIP = QueueingHint.QUEUE_SKIP


def after_persistent_volume_claim_change(
    pod: Pod, old: PersistentVolumeClaim | None, new: PersistentVolumeClaim
) -> QueueingHint:
    """``isSchedulableAfterPersistentVolumeClaimChange``: a claim of the pod (by name, generic
    ephemeral ones included) in its namespace was added or changed."""
    if pod.namespace != new.namespace:
        return SKIP
    if any(v.uses_claim and v.claim == new.name for v in pod.volumes):
        return QUEUE
    return SKIP


def after_storage_class_change(pod: Pod, old: StorageClass | None, new: StorageClass) -> QueueingHint:
    """``isSchedulableAfterStorageClassChange``: any new class, or a change of ``allowedTopologies``
    (the binding mode cannot change)."""
    if old is None:
        return QUEUE
    if old.allowed_topologies != new.allowed_topologies:
        return QUEUE
    return SKIP


def volume_limit(cap: CSIStorageCapacity) -> int | None:
    """``volumeLimit``: ``maximumVolumeSize`` when set (it is more precise), else ``capacity``."""
    return cap.maximum_volume_size if cap.maximum_volume_size is not None else cap.capacity


def after_csi_storage_capacity_change(
    pod: Pod, old: CSIStorageCapacity | None, new: CSIStorageCapacity
) -> QueueingHint:
    """``isSchedulableAfterCSIStorageCapacityChange``: a new capacity, or a larger volume limit
    (``nodeTopology`` and ``storageClassName`` cannot change)."""
    if old is None:
        return QUEUE
    new_limit, old_limit = volume_limit(new), volume_limit(old)
    if new_limit is not None and (old_limit is None or new_limit > old_limit):
        return QUEUE
    return SKIP


def after_csi_driver_change(pod: Pod, old: CSIDriver | None, new: CSIDriver) -> QueueingHint:
    """``isSchedulableAfterCSIDriverChange``: the driver of one of the pod's inline CSI volumes
    stopped asking for storage capacity tracking (registered for updates only)."""
    for v in pod.volumes:
        if v.kind != CSI or v.driver != new.name:
            continue
        if old is not None and old.storage_capacity and not new.storage_capacity:
            return QUEUE
    return SKIP


def after_csi_node_change(pod: Pod, old: CSINode | None, new: CSINode) -> QueueingHint:
    """``isSchedulableAfterCSINodeChange``: a new CSINode, or a change of the plugins it says are
    migrated to CSI (which changes how in-tree PVs are checked against the node)."""
    if old is None:
        return QUEUE
    if old.migrated_plugins != new.migrated_plugins:
        return QUEUE
    return SKIP
