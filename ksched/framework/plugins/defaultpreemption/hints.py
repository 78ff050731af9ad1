"""DefaultPreemption's queueing hint: a deletion never requeues a pod on this plugin's word.

Upstream: ``default_preemption.go`` ``isPodSchedulableAfterPodDeletion``. The plugin rejects a pod
only at PreEnqueue, while its asynchronous preemption runs; the pod is let through when that
preemption ends, and whatever else rejected it (the Filter that preemption answered) decides about
the victims' deletions with its own hints. So this hint always answers QUEUE_SKIP, whatever the
objects are, exactly as upstream's (which checks no type).
"""

from __future__ import annotations

from ksched.framework.interface import QueueingHint
from ksched.model.pod import Pod


def after_pod_deleted(pod: Pod, old: object, new: object) -> QueueingHint:
    """Always QUEUE_SKIP (see the module docstring)."""
    return QueueingHint.QUEUE_SKIP


__all__ = ["after_pod_deleted"]
