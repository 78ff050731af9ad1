"""SchedulingGates' queueing hint: only the gated pod's own update can lift its gates.

Upstream: ``scheduling_gates.go`` ``isSchedulableAfterUpdatePodSchedulingGatesEliminated``. The
queue reports the event when a pod's gates went from some to none; it helps that pod alone. An
object of the wrong type answers QUEUE, as upstream's queue does when a hint returns an error.
"""

from __future__ import annotations

from ksched.framework.interface import QueueingHint
from ksched.model.pod import Pod

QUEUE = QueueingHint.QUEUE
SKIP = QueueingHint.QUEUE_SKIP


def after_gates_eliminated(pod: Pod, old: object, new: object) -> QueueingHint:
    """The updated pod is the gated pod itself."""
    if not isinstance(new, Pod) or (old is not None and not isinstance(old, Pod)):
        return QUEUE
    return QUEUE if new.uid == pod.uid else SKIP


__all__ = ["after_gates_eliminated"]
