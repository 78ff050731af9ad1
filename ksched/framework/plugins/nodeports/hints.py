"""NodePorts' queueing hint: a pure function of the rejected pod and the deleted pod.

Upstream: ``node_ports.go`` ``isSchedulableAfterPodDeleted``. Only a deleted pod that was
assigned (or nominated) to a node and held a host port the rejected pod wants can help: the ports
of a pod cannot change while it exists, so no pod update is registered. An object of the wrong
type answers QUEUE, as upstream's queue does when a hint returns an error.
"""

from __future__ import annotations

from ksched.cache.sparse import clashes
from ksched.framework.interface import QueueingHint
from ksched.model.pod import Pod

QUEUE = QueueingHint.QUEUE
SKIP = QueueingHint.QUEUE_SKIP


def after_pod_deleted(pod: Pod, old: object, new: object) -> QueueingHint:
    """The deleted pod held a host port that clashes with one the rejected pod wants."""
    if not isinstance(old, Pod):
        return QUEUE
    if not old.node_name and not old.nominated_node_name:
        return SKIP
    held = old.host_ports
    return QUEUE if any(clashes(w, u) for w in pod.host_ports for u in held) else SKIP


__all__ = ["after_pod_deleted"]
