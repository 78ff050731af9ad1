"""VolumeRestrictions' queueing hints: pure functions of the rejected pod and the event's objects.

Upstream: ``volume_restrictions.go`` (``isSchedulableAfterPodDeleted``,
``isSchedulableAfterPersistentVolumeClaimAdded``). An object of the wrong type answers QUEUE, as
upstream's queue does when a hint returns an error.
"""

from __future__ import annotations

from ksched.cache.disks import CONFLICT_PLUGINS, conflicts, disk_sources
from ksched.framework.interface import QueueingHint
from ksched.model.pod import Pod
from ksched.model.storage import PersistentVolumeClaim
from ksched.model.volumes import IN_TREE, PVC

QUEUE = QueueingHint.QUEUE
SKIP = QueueingHint.QUEUE_SKIP


def after_pod_deleted(pod: Pod, old: object, new: object) -> QueueingHint:
    """A deleted pod of the same namespace that held a disk the pod conflicts with, or that named
    one of the pod's claims (it may have held a ReadWriteOncePod claim; the claim is not looked up)."""
    deleted = old if old is not None else new
    if not isinstance(deleted, Pod):
        return QUEUE
    if deleted.namespace != pod.namespace:
        return SKIP
    mine = disk_sources(pod)
    for v in deleted.volumes:
        src = v.in_tree
        disk = v.kind == IN_TREE and src is not None and src.plugin in CONFLICT_PLUGINS
        if disk and src is not None and any(conflicts(d, src) for d in mine):
            return QUEUE
    claims = {v.claim for v in pod.volumes if v.kind == PVC}
    if any(v.kind == PVC and v.claim in claims for v in deleted.volumes):
        return QUEUE
    return SKIP


def after_claim_added(pod: Pod, old: object, new: object) -> QueueingHint:
    """A claim the pod names (same namespace and name) was created: its access modes can be read now."""
    if not isinstance(new, PersistentVolumeClaim):
        return QUEUE
    if new.namespace != pod.namespace:
        return SKIP
    return QUEUE if any(v.kind == PVC and v.claim == new.name for v in pod.volumes) else SKIP


__all__ = ["after_claim_added", "after_pod_deleted"]
