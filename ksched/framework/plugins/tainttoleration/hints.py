"""TaintToleration's queueing hints: pure functions of the rejected pod and the event's objects.

Upstream: ``taint_toleration.go`` (``isSchedulableAfterNodeChange``,
``isSchedulableAfterPodTolerationChange``). A node event helps when the node goes from having a
NoSchedule / NoExecute taint the pod does not tolerate (or not existing) to having none; a
toleration change helps only the pod whose tolerations changed. An object of the wrong type
answers QUEUE, as upstream's queue does when a hint returns an error.
"""

from __future__ import annotations

from collections.abc import Sequence

from ksched.cache.node_table import HARD_TAINT_EFFECTS
from ksched.framework.interface import QueueingHint
from ksched.model.node import Node
from ksched.model.pod import Pod
from ksched.model.selectors import Taint, Toleration

QUEUE = QueueingHint.QUEUE
SKIP = QueueingHint.QUEUE_SKIP


def untolerated(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> bool:
    """Upstream ``FindMatchingUntoleratedTaint`` with ``DoNotScheduleTaintsFilterFunc``: some
    NoSchedule or NoExecute taint that no toleration tolerates."""
    return any(
        t.effect in HARD_TAINT_EFFECTS and not any(tol.tolerates(t) for tol in tolerations) for t in taints
    )


def after_node_change(pod: Pod, old: object, new: object) -> QueueingHint:
    """A node added, or whose taints changed, that the pod now tolerates and did not before."""
    if not isinstance(new, Node) or (old is not None and not isinstance(old, Node)):
        return QUEUE
    was = True if old is None else untolerated(old.taints, pod.tolerations)
    return QUEUE if was and not untolerated(new.taints, pod.tolerations) else SKIP


def after_pod_toleration_change(pod: Pod, old: object, new: object) -> QueueingHint:
    """The rejected pod's own tolerations changed (not another pod's)."""
    if not isinstance(new, Pod) or (old is not None and not isinstance(old, Pod)):
        return QUEUE
    return QUEUE if new.uid == pod.uid else SKIP


__all__ = ["after_node_change", "after_pod_toleration_change", "untolerated"]
