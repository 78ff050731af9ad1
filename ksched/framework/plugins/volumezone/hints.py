"""VolumeZone's queueing hints: pure functions of the rejected pod and the event's objects.

Upstream: ``volume_zone.go`` (``isSchedulableAfterStorageClassAdded``,
``isSchedulableAfterPersistentVolumeClaimChange``, ``isSchedulableAfterPersistentVolumeChange``).
An object of the wrong type answers QUEUE, as upstream's queue does when a hint returns an error.
"""

from __future__ import annotations

from ksched.framework.interface import QueueingHint
from ksched.framework.plugins.volumezone.topology import pv_topologies
from ksched.model.pod import Pod
from ksched.model.storage import (
    WAIT_FOR_FIRST_CONSUMER,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)
from ksched.model.volumes import PVC

QUEUE = QueueingHint.QUEUE
SKIP = QueueingHint.QUEUE_SKIP


def after_storage_class_added(pod: Pod, old: object, new: object) -> QueueingHint:
    """A class that waits for the first consumer may let an unbound claim through."""
    if not isinstance(new, StorageClass):
        return QUEUE
    return QUEUE if new.binding_mode == WAIT_FOR_FIRST_CONSUMER else SKIP


def after_claim_change(pod: Pod, old: object, new: object) -> QueueingHint:
    """Upstream ``IsPVCRequestedFromPod``: the claim is one of the pod's (same namespace and name)."""
    if not isinstance(new, PersistentVolumeClaim):
        return QUEUE
    if new.namespace != pod.namespace:
        return SKIP
    wanted = any(v.kind == PVC and v.claim == new.name for v in pod.volumes)
    return QUEUE if wanted else SKIP


def after_volume_change(pod: Pod, old: object, new: object) -> QueueingHint:
    """A new PV, or a PV whose topology labels changed."""
    if not isinstance(new, PersistentVolume) or (old is not None and not isinstance(old, PersistentVolume)):
        return QUEUE
    if old is None:
        return QUEUE
    return QUEUE if pv_topologies(old) != pv_topologies(new) else SKIP


__all__ = ["after_claim_change", "after_storage_class_added", "after_volume_change"]
