"""Existing pods' inter-pod (anti-)affinity terms, grouped by term, with per-node counts.

Every incoming pod is checked against the *existing* pods' terms: their required anti-affinity
(filter) and their required / preferred affinity and preferred anti-affinity (score). Pods of one
workload carry identical terms, so the cache groups them: for each distinct ``(term, weight)`` of
each kind it keeps how many pods carrying it sit on each node row (a
:class:`~ksched.cache.labelsets.RowCounts`, sparse or dense). A cycle then tests each *distinct*
term once against the incoming pod and adds the rows of the matching ones, instead of walking
10,000 pods. A pod that repeats a term counts once per occurrence, as upstream's per-term loop does.

Terms are parsed when the pod enters the cache (:func:`parse_pod_affinity_terms`, lenient:
a category that fails to parse contributes nothing, as upstream's ``PodInfo`` leaves it nil), and
the result is memoized by (namespace, canonical JSON of the affinity): every pod of a workload,
and every update of one pod (each bind confirmation re-adds it), carries the same terms, and
parsing them on every update would be a large share of the scheduling thread's time.
Pods on a node that is not in the table (row -1) keep their terms but count on no row.

Every mutator is called only from the scheduling thread.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import orjson

from ksched.cache.labelsets import MIN_DENSE_ROWS, RowCounts
from ksched.cache.node_table import NodeTable
from ksched.model.pod import Pod
from ksched.model.pod_affinity import PodAffinityTerm, parse_pod_affinity_terms

REQUIRED_AFFINITY: Final = 0
REQUIRED_ANTI_AFFINITY: Final = 1
PREFERRED_AFFINITY: Final = 2
PREFERRED_ANTI_AFFINITY: Final = 3
KINDS: Final = (REQUIRED_AFFINITY, REQUIRED_ANTI_AFFINITY, PREFERRED_AFFINITY, PREFERRED_ANTI_AFFINITY)

TermKey = tuple[PodAffinityTerm, int]
"""A term and its weight (1 for required terms)."""
_Occurrence = tuple[int, TermKey]
PARSE_MEMO_LIMIT: Final = 4096
"""Distinct (namespace, affinity) parses kept; the memo is dropped whole when it fills up."""


class AffinityTermIndex:
    """kind → (term, weight) → per-row counts of the existing pods carrying it."""

    __slots__ = ("_by_kind", "_nodes", "_parsed", "_pods", "generation")

    def __init__(self, nodes: NodeTable) -> None:
        self._nodes = nodes
        self._by_kind: tuple[dict[TermKey, RowCounts], ...] = tuple({} for _ in KINDS)
        self._pods: dict[str, tuple[_Occurrence, ...]] = {}
        self._parsed: dict[tuple[str, bytes], tuple[_Occurrence, ...]] = {}
        self.generation = 0
        """Bumped whenever any count changes."""

    # ------------------------------------------------------------------ queries
    def terms(self, kind: int) -> Mapping[TermKey, RowCounts]:
        """Distinct terms of ``kind`` carried by at least one pod on a node row, with their counts."""
        return self._by_kind[kind]

    def pod_terms(self, uid: str) -> tuple[_Occurrence, ...]:
        """The (kind, (term, weight)) occurrences of a pod in the index (empty when it has none)."""
        return self._pods.get(uid, ())

    # ------------------------------------------------------------------ mutators (scheduling thread)
    def attach(self, pod: Pod, row: int) -> None:
        """Index ``pod``'s terms, counted at ``row`` (-1: on no row)."""
        if not pod.affinity:
            return
        occ = self._occurrences(pod)
        if not occ:
            return
        self._pods[pod.uid] = occ
        if row >= 0:
            self._add(occ, row, 1)

    def _occurrences(self, pod: Pod) -> tuple[_Occurrence, ...]:
        """The pod's (kind, (term, weight)) occurrences, parsed once per distinct affinity."""
        try:
            key: tuple[str, bytes] | None = (
                pod.namespace,
                orjson.dumps(pod.affinity, option=orjson.OPT_SORT_KEYS),
            )
        except TypeError:  # not plain JSON data (a test double): parse without the memo
            key = None
        if key is not None:
            found = self._parsed.get(key)
            if found is not None:
                return found
        parsed = parse_pod_affinity_terms(pod.affinity, pod.namespace, pod.described)
        occ: list[_Occurrence] = [(REQUIRED_AFFINITY, (t, 1)) for t in parsed.required_affinity]
        occ += [(REQUIRED_ANTI_AFFINITY, (t, 1)) for t in parsed.required_anti_affinity]
        occ += [(PREFERRED_AFFINITY, (w.term, w.weight)) for w in parsed.preferred_affinity]
        occ += [(PREFERRED_ANTI_AFFINITY, (w.term, w.weight)) for w in parsed.preferred_anti_affinity]
        result = tuple(occ)
        if key is not None:
            if len(self._parsed) >= PARSE_MEMO_LIMIT:
                self._parsed.clear()
            self._parsed[key] = result
        return result

    def detach(self, uid: str, row: int) -> None:
        """Exactly reverse :meth:`attach` of a pod now counted at ``row``."""
        occ = self._pods.pop(uid, None)
        if occ is not None and row >= 0:
            self._add(occ, row, -1)

    def move(self, uid: str, old_row: int, new_row: int) -> None:
        """The pod's node left the table or came back (either row may be -1)."""
        occ = self._pods.get(uid)
        if occ is None:
            return
        if old_row >= 0:
            self._add(occ, old_row, -1)
        if new_row >= 0:
            self._add(occ, new_row, 1)

    def _add(self, occ: tuple[_Occurrence, ...], row: int, delta: int) -> None:
        nodes = self._nodes
        dense_rows = max(MIN_DENSE_ROWS, nodes.capacity // 16)
        for kind, key in occ:
            store = self._by_kind[kind]
            rc = store.get(key)
            if rc is None:
                rc = store[key] = RowCounts()
            rc.add(row, delta, dense_rows, nodes.capacity)
            if rc.total == 0:
                del store[key]
        self.generation += 1
