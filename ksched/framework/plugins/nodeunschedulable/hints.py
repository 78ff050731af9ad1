"""NodeUnschedulable's queueing hints: pure functions of the rejected pod and the event's objects.

Upstream: ``node_unschedulable.go`` (``isSchedulableAfterNodeChange``,
``isSchedulableAfterPodTolerationChange``). A node helps when it is added schedulable or is
uncordoned; a toleration change helps only the rejected pod itself, and only when it now tolerates
``node.kubernetes.io/unschedulable:NoSchedule``. An object of the wrong type answers QUEUE, as
upstream's queue does when a hint returns an error.
"""

from __future__ import annotations

from typing import Final

from ksched.framework.interface import QueueingHint
from ksched.model.node import Node
from ksched.model.pod import Pod
from ksched.model.selectors import Taint

QUEUE = QueueingHint.QUEUE
SKIP = QueueingHint.QUEUE_SKIP
UNSCHEDULABLE_TAINT: Final = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")
"""What a pod must tolerate to go on a cordoned node (the Filter reads it too)."""


def after_node_change(pod: Pod, old: object, new: object) -> QueueingHint:
    """A schedulable node added, or a cordoned node uncordoned."""
    if not isinstance(new, Node) or (old is not None and not isinstance(old, Node)):
        return QUEUE
    if new.unschedulable:
        return SKIP
    return QUEUE if old is None or old.unschedulable else SKIP


def after_pod_toleration_change(pod: Pod, old: object, new: object) -> QueueingHint:
    """The rejected pod itself now tolerates the unschedulable taint.

    The old tolerations need no look: taints are only ever added to a pod's tolerations, and a pod
    this plugin rejected did not tolerate the taint before.
    """
    if not isinstance(new, Pod) or (old is not None and not isinstance(old, Pod)):
        return QUEUE
    if new.uid != pod.uid:
        return SKIP
    return QUEUE if any(t.tolerates(UNSCHEDULABLE_TAINT) for t in new.tolerations) else SKIP


__all__ = ["UNSCHEDULABLE_TAINT", "after_node_change", "after_pod_toleration_change"]
