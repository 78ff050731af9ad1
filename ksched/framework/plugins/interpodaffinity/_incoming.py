"""The incoming pod's terms: parsed once per pod record, namespaces resolved per cycle.

Upstream keeps a ``PodInfo`` per queued pod; here a small memo keyed by the record's identity (the
record itself is held, so its id cannot be reused while the entry lives) spares a pod that goes
round the queue the parse. The namespace selector of an incoming term is resolved against the
cache's namespaces every cycle, as upstream's ``mergeAffinityTermNamespacesIfNotEmpty`` does at
PreFilter / PreScore: a non-empty selector adds the matching namespaces to the listed ones, an
empty one (``{}``) means every namespace, a nil one adds nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ksched.framework.api import ClusterReader
from ksched.model.pod import Pod
from ksched.model.pod_affinity import (
    NO_TERMS,
    PREFERRED,
    PodAffinityTerm,
    PodAffinityTerms,
    parse_pod_affinity_terms,
)
from ksched.model.selectors import LabelSelector

MEMO_SIZE: Final = 1024


@dataclass(frozen=True, slots=True)
class Resolved:
    """An incoming term ready for the label-set index: ``namespaces`` None means every namespace."""

    namespaces: frozenset[str] | None
    selector: LabelSelector | None
    topology_key: str
    weight: int = 1

    def matches(self, namespace: str, labels: Mapping[str, str]) -> bool:
        """Upstream ``Matches(pod, nil)`` on a merged incoming term."""
        if self.namespaces is not None and namespace not in self.namespaces:
            return False
        return self.selector is not None and self.selector.matches(labels)


def resolve(term: PodAffinityTerm, cluster: ClusterReader, weight: int = 1) -> Resolved:
    sel = term.namespace_selector
    if sel is None:
        namespaces: frozenset[str] | None = term.namespaces
    elif sel.empty:
        namespaces = None
    else:
        namespaces = term.namespaces | cluster.namespaces_matching(sel)
    return Resolved(namespaces, term.selector, term.topology_key, weight)


def parse_problem(terms: PodAffinityTerms, pod: Pod) -> str | None:
    """Why the incoming pod's terms cannot be used (first parse error or empty topologyKey), or None."""
    if terms.errors:
        return f"parsing pod: {terms.errors[0]}"
    if terms.empty_topology_keys:
        return f"parsing pod: {pod.described}: {terms.empty_topology_keys[0]}: topologyKey must not be empty"
    return None


def has_preferred(pod: Pod) -> bool:
    """Upstream ``hasConstraints`` in PreScore: a non-empty preferred list in either part (raw spec)."""
    for part in ("podAffinity", "podAntiAffinity"):
        raw: Any = pod.affinity.get(part)
        if isinstance(raw, Mapping) and raw.get(PREFERRED):
            return True
    return False


class TermMemo:
    """Parsed terms per pod record, at most ``size`` records (cleared whole when full)."""

    __slots__ = ("_memo", "size")

    def __init__(self, size: int = MEMO_SIZE) -> None:
        self._memo: dict[int, tuple[Pod, PodAffinityTerms]] = {}
        self.size = size

    def get(self, pod: Pod) -> PodAffinityTerms:
        if not pod.affinity:
            return NO_TERMS
        hit = self._memo.get(id(pod))
        if hit is not None and hit[0] is pod:
            return hit[1]
        terms = parse_pod_affinity_terms(pod.affinity, pod.namespace, pod.described)
        if len(self._memo) >= self.size:
            self._memo.clear()
        self._memo[id(pod)] = (pod, terms)
        return terms
