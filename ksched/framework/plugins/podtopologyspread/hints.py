"""PodTopologySpread's queueing hints: functions of the rejected pod and the event's objects.

Upstream: ``plugin.go`` (``isSchedulableAfterPodChange``, ``isSchedulableAfterNodeChange``,
``involvedInTopologySpreading``, ``checkTopologyKeyLabelsChanged``) and ``common.go``
(``podLabelsMatchSpreadConstraints``, ``nodeLabelsMatchSpreadConstraints``). The constraints read
are the pod's DoNotSchedule ones, its own or, when it has none, the default constraints bound to
its default selector (upstream ``getConstraints``):

- a pod event counts only when it is about the rejected pod itself, or about an assigned pod of
  its namespace. Added or deleted: QUEUE when some constraint's selector matches it. Updated: the
  rejected pod got new tolerations and some constraint has ``nodeTaintsPolicy: Honor``, or the
  labels changed so that some selector now matches where it did not, or the reverse;
- a node counts when it carries every constraint's topology key ("matches"): added or deleted
  matching, updated into or out of matching, or still matching with a topology value or its
  taints changed.

Constraints that cannot be worked out answer QUEUE (upstream's error): a constraint that does not
parse, or default constraints whose selector needs the cluster's Services and workloads when the
plugin has no snapshot of them (``ksched explain``, tests). An object of the wrong type answers
QUEUE too. The node's taints are compared as the record holds them (key, value, effect): a change
of a taint's ``timeAdded`` alone is not seen, as it is no change of the record either.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Final

from ksched.framework.interface import QueueingHint
from ksched.framework.plugins.podtopologyspread.constraints import Constraint
from ksched.model.node import Node
from ksched.model.pod import Pod
from ksched.model.selectors import selector_matches

QUEUE = QueueingHint.QUEUE
SKIP = QueueingHint.QUEUE_SKIP
MEMO_SIZE: Final = 65536
"""Pod records whose constraints are kept: more than the pods that wait in the queue at once."""

ConstraintsOf = Callable[[Pod], "tuple[Constraint, ...] | None"]
"""The rejected pod's DoNotSchedule constraints, or None when they cannot be worked out."""


def labels_match(constraints: Sequence[Constraint], labels: Mapping[str, str]) -> bool:
    """Upstream ``podLabelsMatchSpreadConstraints``: some constraint's selector matches."""
    return any(selector_matches(c.selector, labels) for c in constraints)


def node_matches(labels: Mapping[str, str], constraints: Sequence[Constraint]) -> bool:
    """Upstream ``nodeLabelsMatchSpreadConstraints``: the node has every topology key."""
    return all(c.topology_key in labels for c in constraints)


def topology_changed(
    old: Mapping[str, str], new: Mapping[str, str], constraints: Sequence[Constraint]
) -> bool:
    """Upstream ``checkTopologyKeyLabelsChanged`` (a missing label reads as empty)."""
    for c in constraints:
        key = c.topology_key
        if old.get(key, "") != new.get(key, ""):
            return True
    return False


def _involved(other: Pod, pod: Pod) -> bool:
    """Upstream ``involvedInTopologySpreading``: the pod itself, or assigned in its namespace."""
    return other.uid == pod.uid or (bool(other.node_name) and other.namespace == pod.namespace)


def pod_change(constraints: Sequence[Constraint], pod: Pod, old: Pod | None, new: Pod | None) -> QueueingHint:
    """The pod-event rule of the module docstring, for an involved pod."""
    if old is not None and new is not None:
        tolerations_changed = new.uid == pod.uid and old.tolerations != new.tolerations
        if tolerations_changed and any(c.honor_taints for c in constraints):
            return QUEUE
        if old.labels == new.labels:
            return SKIP
        changed = any(
            selector_matches(c.selector, old.labels) != selector_matches(c.selector, new.labels)
            for c in constraints
        )
        return QUEUE if changed else SKIP
    other = new if new is not None else old
    if other is None:
        return QUEUE
    return QUEUE if labels_match(constraints, other.labels) else SKIP


def node_change(constraints: Sequence[Constraint], old: Node | None, new: Node | None) -> QueueingHint:
    """The node-event rule of the module docstring."""
    was = old is not None and node_matches(old.labels, constraints)
    now = new is not None and node_matches(new.labels, constraints)
    if old is not None and new is not None:
        if was != now:
            return QUEUE
        if now and (topology_changed(old.labels, new.labels, constraints) or old.taints != new.taints):
            return QUEUE
        return SKIP
    if new is not None:
        return QUEUE if now else SKIP
    return QUEUE if was else SKIP


class SpreadHints:
    """The two hint functions, reading the rejected pod's constraints through ``constraints_of``."""

    __slots__ = ("constraints_of",)

    def __init__(self, constraints_of: ConstraintsOf) -> None:
        self.constraints_of = constraints_of

    def after_pod_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Pod/Add, Pod/UpdatePodLabel, Pod/UpdatePodToleration and Pod/Delete."""
        if (old is not None and not isinstance(old, Pod)) or (new is not None and not isinstance(new, Pod)):
            return QUEUE
        if (new is not None and not _involved(new, pod)) or (old is not None and not _involved(old, pod)):
            return SKIP
        constraints = self.constraints_of(pod)
        if constraints is None:
            return QUEUE
        return pod_change(constraints, pod, old, new)

    def after_node_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Node/Add, Node/Delete, Node/UpdateNodeLabel and Node/UpdateNodeTaint."""
        if (old is not None and not isinstance(old, Node)) or (new is not None and not isinstance(new, Node)):
            return QUEUE
        constraints = self.constraints_of(pod)
        if constraints is None:
            return QUEUE
        return node_change(constraints, old, new)


class ConstraintMemo:
    """``constraints_of``'s answers per pod record and stamp (the stamp is what else the answer
    depends on: the generation of the cluster's Services and workloads), cleared whole when full.
    The record is held, so its id is not reused while the entry lives."""

    __slots__ = ("_memo",)

    def __init__(self) -> None:
        self._memo: dict[int, tuple[Pod, int, tuple[Constraint, ...] | None]] = {}

    def get(self, pod: Pod, stamp: int, compute: ConstraintsOf) -> tuple[Constraint, ...] | None:
        hit = self._memo.get(id(pod))
        if hit is not None and hit[0] is pod and hit[1] == stamp:
            return hit[2]
        found = compute(pod)
        if len(self._memo) >= MEMO_SIZE:
            self._memo.clear()
        self._memo[id(pod)] = (pod, stamp, found)
        return found


__all__ = [
    "ConstraintMemo",
    "ConstraintsOf",
    "SpreadHints",
    "labels_match",
    "node_change",
    "node_matches",
    "pod_change",
]
