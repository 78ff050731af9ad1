"""InterPodAffinity's queueing hints: functions of the rejected pod and the event's objects.

Upstream: ``plugin.go`` (``isSchedulableAfterPodChange``, ``isSchedulableAfterNodeChange``) and
``podMatchesAllAffinityTerms``. The rejected pod's *required* terms are what the hints read:

- an assigned pod added: QUEUE when it matches every affinity term (one pod must satisfy them all);
- an assigned pod's labels changed: QUEUE when it now matches every affinity term and did not, or
  matched every anti-affinity term and no longer does;
- an assigned pod deleted: QUEUE when it matched every anti-affinity term of the rejected pod, or
  when one of *its* required anti-affinity terms matched the rejected pod (it kept the rejected pod
  off its domain);
- the rejected pod's own labels changed: QUEUE (other pods' anti-affinity, or its own affinity to
  itself, may now judge it differently);
- a node added or relabelled: QUEUE when it gains (or changes) an affinity topology key, when it
  loses (or changes) an anti-affinity key, and on any new node when the pod has anti-affinity.

The rejected pod's own label change and the deleted pod's own anti-affinity come from upstream
fixes (kubernetes#135394, #135325) that the sources at hand do not place before or after v1.35.0;
they only ever answer QUEUE where the code without them skips, so a pod is never left parked that
either version would move. For the same reason a pod nominated to a node counts as placed, as an assigned one
does (the review of #135325 asks for it), and a term with a namespace selector of the deleted pod
is taken to cover the rejected pod's namespace (its labels are not at hand here).

Terms match like upstream's ``Matches(pod, nil)``: listed namespaces, or a namespace selector
tested against no labels. Terms are parsed once per pod record (:class:`TermMemo`); a term that
does not parse answers QUEUE, as upstream's error does; so does an object of the wrong type.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from ksched.framework.interface import QueueingHint
from ksched.framework.plugins.interpodaffinity._incoming import TermMemo
from ksched.model.node import Node
from ksched.model.pod import Pod
from ksched.model.pod_affinity import PodAffinityTerm
from ksched.model.selectors import selector_matches

QUEUE = QueueingHint.QUEUE
SKIP = QueueingHint.QUEUE_SKIP
MEMO_SIZE: Final = 65536
"""Pod records whose parsed terms are kept: more than the pods that wait in the queue at once."""
_NO_LABELS: Final[Mapping[str, str]] = {}


def matches_all(terms: Sequence[PodAffinityTerm], pod: Pod) -> bool:
    """Upstream ``podMatchesAllAffinityTerms``: some terms, and ``pod`` matches every one."""
    if not terms:
        return False
    return all(t.matches(pod.namespace, pod.labels, _NO_LABELS) for t in terms)


def may_match(term: PodAffinityTerm, pod: Pod) -> bool:
    """An existing pod's term matches ``pod``, taking a namespace selector to cover its namespace."""
    if pod.namespace not in term.namespaces and term.namespace_selector is None:
        return False
    return selector_matches(term.selector, pod.labels)


def _placed(pod: Pod) -> bool:
    return bool(pod.node_name or pod.nominated_node_name)


def _key_gained(term: PodAffinityTerm, old: Node | None, new: Node) -> bool:
    """The node now has the term's topology key where it had none, or with another value."""
    key = term.topology_key
    if key not in new.labels:
        return False
    return old is None or old.labels.get(key, None) != new.labels[key]


def _key_lost(term: PodAffinityTerm, old: Node, new: Node) -> bool:
    """The node had the term's topology key and lost it or changed its value."""
    key = term.topology_key
    return key in old.labels and old.labels[key] != new.labels.get(key, None)


class InterPodHints:
    """The two hint functions, sharing the parsed terms of the pods they are asked about."""

    __slots__ = ("events", "targets")

    def __init__(self) -> None:
        self.targets = TermMemo(MEMO_SIZE)
        """Terms of the rejected pods."""
        self.events = TermMemo(MEMO_SIZE)
        """Terms of the pods events are about: one event is asked about for every parked pod."""

    def after_pod_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Pod/Add, Pod/UpdatePodLabel and Pod/Delete (see the module docstring)."""
        if (old is not None and not isinstance(old, Pod)) or (new is not None and not isinstance(new, Pod)):
            return QUEUE
        if new is not None and new.uid == pod.uid:
            return QUEUE if old is None or old.labels != new.labels else SKIP
        if (new is not None and not _placed(new)) or (old is not None and not _placed(old)):
            return SKIP
        terms = self.targets.get(pod)
        if terms.errors:
            return QUEUE
        affinity, anti = terms.required_affinity, terms.required_anti_affinity
        if old is not None and new is not None:
            if not matches_all(affinity, old) and matches_all(affinity, new):
                return QUEUE
            return QUEUE if matches_all(anti, old) and not matches_all(anti, new) else SKIP
        if new is not None:
            return QUEUE if matches_all(affinity, new) else SKIP
        if old is None:
            return QUEUE
        if matches_all(anti, old):
            return QUEUE
        theirs = self.events.get(old)
        if theirs.errors:
            return QUEUE
        return QUEUE if any(may_match(t, pod) for t in theirs.required_anti_affinity) else SKIP

    def after_node_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Node/Add and Node/UpdateNodeLabel (see the module docstring)."""
        if not isinstance(new, Node) or (old is not None and not isinstance(old, Node)):
            return QUEUE
        terms = self.targets.get(pod)
        if terms.errors:
            return QUEUE
        if any(_key_gained(t, old, new) for t in terms.required_affinity):
            return QUEUE
        anti = terms.required_anti_affinity
        if not anti:
            return SKIP
        if old is None:
            return QUEUE
        return QUEUE if any(_key_lost(t, old, new) for t in anti) else SKIP


__all__ = ["InterPodHints", "matches_all", "may_match"]
