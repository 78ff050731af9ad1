"""NodeAffinity's queueing hint: does the added or updated node now match what the pod requires?

Upstream: ``node_affinity.go`` ``isSchedulableAfterNodeChange``. The node must match the
scheduler-enforced ``addedAffinity`` (when configured) and the pod's required node affinity
(``spec.nodeSelector`` and ``requiredDuringSchedulingIgnoredDuringExecution``); an update must
turn a node that did not match into one that does. A term that failed to parse makes upstream's
``Match`` return an error when no other term matches, which the queue reads as QUEUE; so do these
functions. An object of the wrong type answers QUEUE too.

The pod's terms are compiled once per pod record (:class:`RequiredMemo`): the hint runs for every
parked pod on every node event, and compiling validates every requirement.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from ksched.framework.interface import QueueingHint
from ksched.framework.plugins.nodeaffinity._selector import NAME_FIELD, CompiledTerm, compile_required
from ksched.model.node import Node
from ksched.model.pod import Pod
from ksched.model.selectors import requirement_matches

QUEUE = QueueingHint.QUEUE
SKIP = QueueingHint.QUEUE_SKIP
MEMO_SIZE: Final = 65536
"""Pod records whose compiled terms are kept: more than the pods that wait in the queue at once."""

Required = tuple[CompiledTerm, ...] | None


def term_matches(term: CompiledTerm, node: Node) -> bool:
    """One parsed term against one node: every expression on its labels, every field on its name."""
    labels = node.labels
    for r in term.match_expressions:
        if not requirement_matches(r, labels):
            return False
    if not term.match_fields:
        return True
    fields = {NAME_FIELD: node.name}
    return all(requirement_matches(r, fields) for r in term.match_fields)


def required_match(selector: Mapping[str, str], terms: Required, node: Node) -> tuple[bool, bool]:
    """Upstream ``RequiredNodeAffinity.Match``: ``(matched, failed)``. ``failed`` is upstream's
    error: no term matched and some term did not parse."""
    labels = node.labels
    for k, v in selector.items():
        if labels.get(k) != v:
            return False, False
    if terms is None:
        return True, False
    failed = False
    for term in terms:
        if term.error is not None:
            failed = True
        elif term_matches(term, node):
            return True, False
    return False, failed


class RequiredMemo:
    """The pod's required terms compiled once per pod record (the record is held, so its id is not
    reused while the entry lives); cleared whole when full."""

    __slots__ = ("_memo",)

    def __init__(self) -> None:
        self._memo: dict[int, tuple[Pod, Required]] = {}

    def get(self, pod: Pod) -> Required:
        aff = pod.node_affinity
        if aff is None or aff.required is None:
            return None
        hit = self._memo.get(id(pod))
        if hit is not None and hit[0] is pod:
            return hit[1]
        terms = compile_required(aff.required)
        if len(self._memo) >= MEMO_SIZE:
            self._memo.clear()
        self._memo[id(pod)] = (pod, terms)
        return terms


class AfterNodeChange:
    """The hint for Node/Add and Node/UpdateNodeLabel, bound to the plugin's ``addedAffinity``."""

    __slots__ = ("added", "memo")

    def __init__(self, added: tuple[CompiledTerm, ...] | None) -> None:
        self.added = added
        """The scheduler-enforced required terms (parsed and checked when the plugin was built)."""
        self.memo = RequiredMemo()

    def __call__(self, pod: Pod, old: object, new: object) -> QueueingHint:
        if not isinstance(new, Node) or (old is not None and not isinstance(old, Node)):
            return QUEUE
        if self.added is not None and not any(term_matches(t, new) for t in self.added):
            return SKIP
        terms = self.memo.get(pod)
        matched, failed = required_match(pod.node_selector, terms, new)
        if failed:
            return QUEUE
        if not matched:
            return SKIP
        if old is None:
            return QUEUE
        was, failed = required_match(pod.node_selector, terms, old)
        return QUEUE if failed or not was else SKIP


__all__ = ["AfterNodeChange", "RequiredMemo", "required_match", "term_matches"]
