"""NodeVolumeLimits' queueing hints: pure functions of the rejected pod and the event's objects.

Upstream: ``csi.go`` (``isSchedulableAfterPodDeleted``, ``isSchedulableAfterPVCAdded``,
``isSchedulableAfterVolumeAttachmentDeleted``, ``isSchedulableAfterCSINodeUpdated``). An object of
the wrong type answers QUEUE, as upstream's queue does when a hint returns an error.
"""

from __future__ import annotations

from ksched.framework.interface import QueueingHint
from ksched.model.pod import Pod
from ksched.model.storage import CSINode, PersistentVolumeClaim, VolumeAttachment
from ksched.model.volumes import CSI_DRIVER_OF, IN_TREE, PVC

QUEUE = QueueingHint.QUEUE
SKIP = QueueingHint.QUEUE_SKIP


def after_pod_deleted(pod: Pod, old: object, new: object) -> QueueingHint:
    """A deleted pod that was on a node and had a claim, an ephemeral volume or an in-tree volume
    csi-translation-lib can translate."""
    deleted = old if old is not None else new
    if not isinstance(deleted, Pod):
        return QUEUE
    if not deleted.volumes or not deleted.node_name:
        return SKIP
    for v in deleted.volumes:
        if v.kind != IN_TREE or (v.in_tree is not None and v.in_tree.migratable):
            return QUEUE
    return SKIP


def after_claim_added(pod: Pod, old: object, new: object) -> QueueingHint:
    """A claim of the pod's namespace that one of its claim or ephemeral volumes names."""
    if not isinstance(new, PersistentVolumeClaim):
        return QUEUE
    if new.namespace != pod.namespace:
        return SKIP
    return QUEUE if any(v.uses_claim and v.claim == new.name for v in pod.volumes) else SKIP


def after_attachment_deleted(pod: Pod, old: object, new: object) -> QueueingHint:
    """The pod has a claim, or an inline in-tree volume whose CSI driver is the attachment's attacher
    (one the translator refuses answers QUEUE, as upstream's error does)."""
    deleted = old if old is not None else new
    if not isinstance(deleted, VolumeAttachment):
        return QUEUE
    for v in pod.volumes:
        if v.kind == PVC:
            return QUEUE
        src = v.in_tree
        if v.kind != IN_TREE or src is None or not src.migratable:
            continue
        if src.translation_error or CSI_DRIVER_OF[src.plugin] == deleted.attacher:
            return QUEUE
    return SKIP


def after_csi_node_updated(pod: Pod, old: object, new: object) -> QueueingHint:
    """A driver's ``allocatable.count`` went up (a driver without a count reads as 0)."""
    if not isinstance(new, CSINode) or not isinstance(old, CSINode):
        return QUEUE
    before = {d.name: d.allocatable_count or 0 for d in old.drivers.values()}
    for d in new.drivers.values():
        if (d.allocatable_count or 0) > before.get(d.name, 0):
            return QUEUE
    return SKIP


__all__ = ["after_attachment_deleted", "after_claim_added", "after_csi_node_updated", "after_pod_deleted"]
