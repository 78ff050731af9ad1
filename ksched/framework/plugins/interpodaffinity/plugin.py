"""InterPodAffinity PreFilter / Filter and PreScore / Score / NormalizeScore over every node at once.

Upstream: ``pkg/scheduler/framework/plugins/interpodaffinity/filtering.go`` and ``scoring.go``.
Upstream walks pods and fills ``map[(topologyKey, value)]count``; here the same maps come from
the cache's indexes:

- pods matching an *incoming* term are counted per node with the label-set index
  (``labelsets.counts(matching_sets(namespaces, selector))``): a few array sums;
- *existing* pods' terms come grouped by distinct term with per-node counts
  (:class:`~ksched.cache.affinity_terms.AffinityTermIndex`): each distinct term is tested against
  the incoming pod once;
- per-domain totals are a bincount over the topology key's column, gathered back per node
  (:class:`~ksched.framework.plugins.interpodaffinity._vector.Domains`; a compiled kernel, or no
  bincount at all where every node is its own domain, as with hostname).

Filter, in upstream's order (the first failing check names the node): the incoming pod's required
affinity (every term's key on the node, a matching pod in each term's domain, or the first pod of
a group matching its own terms), its required anti-affinity, then the existing pods' required
anti-affinity. Score is the sum over the topology keys a node has of the weights accumulated at
its domain; NormalizeScore maps min..max of the scored nodes to 0..100 (all 0 when equal).

There are no PreFilter extensions (upstream's AddPod / RemovePod): nominated pods and preemption's
dry runs change the cache itself (assume / forget, remove / re-add, exact inverses) and re-run the
cycle, and the cache's indexes follow every such change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from ksched.cache.affinity_terms import (
    PREFERRED_AFFINITY,
    PREFERRED_ANTI_AFFINITY,
    REQUIRED_AFFINITY,
    REQUIRED_ANTI_AFFINITY,
)
from ksched.framework import names
from ksched.framework.api import (
    MAX_NODE_SCORE,
    SKIP,
    SUCCESS,
    ClusterEventSpec,
    ClusterReader,
    Code,
    CycleState,
    FilterResult,
    Handle,
    PreFilterResult,
    Scores,
    Status,
    cluster_event,
    error,
    unschedulable,
)
from ksched.framework.interface import HintFn
from ksched.framework.plugins.interpodaffinity._incoming import (
    Resolved,
    TermMemo,
    has_preferred,
    parse_problem,
    resolve,
)
from ksched.framework.plugins.interpodaffinity._vector import Domains, any_at_keyed_rows
from ksched.framework.plugins.interpodaffinity.hints import InterPodHints
from ksched.model.pod import Pod
from ksched.model.pod_affinity import PodAffinityTerms

NAME: Final = names.INTER_POD_AFFINITY
ERR_REASON_AFFINITY_RULES_NOT_MATCH: Final = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH: Final = "node(s) didn't match pod anti-affinity rules"
ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH: Final = (
    "node(s) didn't satisfy existing pods anti-affinity rules"
)
PRE_FILTER_STATE_KEY: Final = f"PreFilter{NAME}"
PRE_SCORE_STATE_KEY: Final = f"PreScore{NAME}"
DEFAULT_HARD_POD_AFFINITY_WEIGHT: Final = 1

_REASONS: Final = (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
)
_CODES: Final = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.UNSCHEDULABLE, Code.UNSCHEDULABLE)


@dataclass(slots=True)
class _Filtered:
    """PreFilter's answer for every row: the three failure masks (None: no row fails that check)."""

    affinity: np.ndarray | None
    anti_affinity: np.ndarray | None
    existing_anti_affinity: np.ndarray | None


class InterPodAffinity:
    """Required (anti-)affinity filter and preferred / symmetric score for inter-pod affinity."""

    name = NAME
    scores_in_range = True

    def __init__(
        self, *, hard_pod_affinity_weight: int = 1, ignore_preferred_terms_of_existing_pods: bool = False
    ) -> None:
        self.hard_pod_affinity_weight = hard_pod_affinity_weight
        self.ignore_preferred_terms_of_existing_pods = ignore_preferred_terms_of_existing_pods
        self._memo = TermMemo()
        self._others = TermMemo()  # other pods' terms for relevance(), apart from incoming pods'
        self._domains = Domains()
        self._hints = InterPodHints()

    # ------------------------------------------------------------------ requeueing
    def events_to_register(self) -> list[ClusterEventSpec]:
        return list(self.queueing_hints())

    def queueing_hints(self) -> dict[ClusterEventSpec, HintFn | None]:
        """Upstream ``EventsToRegister`` with QueueingHints on: an assigned pod added, relabelled or
        deleted, a node added or relabelled (no UpdateNodeTaint, which stands in for a missed
        Node/Add only without queueing hints). See :mod:`.hints`."""
        return {
            cluster_event("Pod", "Add", "UpdatePodLabel", "Delete"): self._hints.after_pod_change,
            cluster_event("Node", "Add", "UpdateNodeLabel"): self._hints.after_node_change,
        }

    # ------------------------------------------------------------------ filtering
    def pre_filter(
        self, state: CycleState, pod: Pod, cluster: ClusterReader
    ) -> tuple[PreFilterResult | None, Status]:
        if not pod.affinity and not cluster.affinity_terms.terms(REQUIRED_ANTI_AFFINITY):
            return None, SKIP  # the common case, decided without allocating anything
        terms = self._memo.get(pod)
        problem = parse_problem(terms, pod)
        if problem is not None:
            return None, unschedulable(problem, resolvable=False)
        existing = self._existing_anti_affinity_fails(pod, cluster)
        if existing is None and not terms.required_affinity and not terms.required_anti_affinity:
            return None, SKIP
        state.write(PRE_FILTER_STATE_KEY, self._filter_masks(pod, terms, cluster, existing))
        return None, SUCCESS

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterReader) -> FilterResult:
        s: _Filtered | None = state.read(PRE_FILTER_STATE_KEY)
        if s is None:  # PreFilter did not run (a direct call): compute the same answer now
            terms = self._memo.get(pod)
            problem = parse_problem(terms, pod)
            if problem is not None:
                raise ValueError(problem)
            s = self._filter_masks(pod, terms, cluster, self._existing_anti_affinity_fails(pod, cluster))
        return _filter_result(s, cluster.nodes.n_rows)

    def _existing_anti_affinity_fails(self, pod: Pod, cluster: ClusterReader) -> np.ndarray | None:
        """Rows in a domain of an existing pod whose required anti-affinity term matches ``pod``.

        None when no such (pod, term, node with the key) exists: upstream's empty
        ``existingAntiAffinityCounts``.
        """
        anti = cluster.affinity_terms.terms(REQUIRED_ANTI_AFFINITY)
        if not anti:
            return None
        ns_labels = cluster.namespace_labels(pod.namespace)
        nodes = cluster.nodes
        n = nodes.n_rows
        by_key: dict[str, np.ndarray] = {}
        for (term, _weight), rows in anti.items():
            if term.matches(pod.namespace, pod.labels, ns_labels):
                acc = by_key.get(term.topology_key)
                if acc is None:
                    acc = by_key[term.topology_key] = np.zeros(n, dtype=np.int64)
                rows.add_into(acc)
        fails: np.ndarray | None = None
        for key, acc in by_key.items():
            hit = self._domains.totals(nodes, key, acc) > 0
            if hit.any():
                fails = hit if fails is None else fails | hit
        return fails

    def _filter_masks(
        self, pod: Pod, terms: PodAffinityTerms, cluster: ClusterReader, existing: np.ndarray | None
    ) -> _Filtered:
        affinity = None
        if terms.required_affinity:
            resolved = [resolve(t, cluster) for t in terms.required_affinity]
            affinity = _affinity_fails(resolved, pod, cluster, self._domains)
        anti = None
        if terms.required_anti_affinity:
            resolved = [resolve(t, cluster) for t in terms.required_anti_affinity]
            anti = _anti_affinity_fails(resolved, cluster, self._domains)
        return _Filtered(affinity, anti, existing)

    def relevance(self, pod: Pod, cluster: ClusterReader) -> Callable[[Pod], bool]:
        """Which pods could move this Filter's verdict for ``pod`` when counted on (or taken off) a
        node: those its required (anti-)affinity terms select (namespaces resolved as PreFilter
        does) and those with a required anti-affinity term that selects ``pod``. No other pod is
        read by Filter (existing pods' affinity and preferred terms only score), so the nominated
        pods and preemption victims outside this set can be counted in the row accounting alone.
        Says True when unsure (terms that do not parse).
        """
        terms = self._memo.get(pod)
        if parse_problem(terms, pod) is not None:
            return _always  # PreFilter rejects the pod whatever the pods; no need to be clever
        selected = [resolve(t, cluster) for t in (*terms.required_affinity, *terms.required_anti_affinity)]
        namespace, labels = pod.namespace, pod.labels
        ns_labels = cluster.namespace_labels(namespace)
        others = self._others

        def relevant(other: Pod) -> bool:
            for r in selected:
                if r.matches(other.namespace, other.labels):
                    return True
            if not other.affinity:
                return False
            theirs = others.get(other)
            if theirs.errors:
                return True
            return any(t.matches(namespace, labels, ns_labels) for t in theirs.required_anti_affinity)

        return relevant

    def affected_by(self, pod: Pod, other: Pod, cluster: ClusterReader) -> bool:
        """One-off :meth:`relevance` (tests, callers with a single pod)."""
        return self.relevance(pod, cluster)(other)

    # ------------------------------------------------------------------ scoring
    def pre_score(self, state: CycleState, pod: Pod, cluster: ClusterReader, feasible: np.ndarray) -> Status:
        scores = self._topology_scores(pod, cluster)
        if isinstance(scores, Status):
            return scores
        state.write(PRE_SCORE_STATE_KEY, scores)
        return SUCCESS

    def score(self, state: CycleState, pod: Pod, cluster: ClusterReader, feasible: np.ndarray) -> Scores:
        scores = state.read(PRE_SCORE_STATE_KEY)
        if scores is None:
            scores = self._topology_scores(pod, cluster)
            if isinstance(scores, Status):
                return 0
        return scores  # type: ignore[no-any-return]

    def normalize_score(self, state: CycleState, pod: Pod, scores: Scores, feasible: np.ndarray) -> Scores:
        """Upstream: ``int64(100 * (s - min) / (max - min))`` in float64 over the scored nodes; all 0
        when max == min."""
        if not isinstance(scores, np.ndarray):
            return 0
        n = feasible.shape[0]
        raw = scores[:n]
        scored = raw[feasible]
        if scored.size == 0:
            return 0
        lo = int(scored.min())
        diff = int(scored.max()) - lo
        if diff <= 0:
            return 0
        # Same float64 operations as upstream, in its order: (s - min) / diff, then times 100.
        # Rows outside ``feasible`` get garbage (they are never read).
        frac = (raw - lo) / float(diff)
        frac *= float(MAX_NODE_SCORE)
        return frac.astype(np.int64)

    def _topology_scores(self, pod: Pod, cluster: ClusterReader) -> np.ndarray | Status:
        """PreScore's ``topologyScore`` summed per node; ``SKIP`` when it would be empty."""
        preferred = has_preferred(pod)
        if not preferred and (
            self.ignore_preferred_terms_of_existing_pods or not self._existing_terms(cluster)
        ):
            return SKIP
        terms = self._memo.get(pod)
        problem = parse_problem(terms, pod)
        if problem is not None:
            return error(problem)
        nodes = cluster.nodes
        n = nodes.n_rows
        acc: dict[str, np.ndarray] = {}
        touched = False

        def add(key: str, counts: np.ndarray, weight: int) -> None:
            nonlocal touched
            if not touched:
                touched = any_at_keyed_rows(nodes.label_column(key), counts)
            if weight:
                weighted = counts if weight == 1 else counts * weight
                have = acc.get(key)
                if have is None:
                    acc[key] = weighted
                else:
                    have += weighted

        labelsets = cluster.labelsets
        for sign, wterms in ((1, terms.preferred_affinity), (-1, terms.preferred_anti_affinity)):
            for wt in wterms:
                r = resolve(wt.term, cluster, wt.weight)
                counts = labelsets.counts(labelsets.matching_sets(r.namespaces, r.selector))
                add(r.topology_key, counts, sign * r.weight)
        index = cluster.affinity_terms
        ns_labels = cluster.namespace_labels(pod.namespace)
        kinds: list[tuple[int, int, bool]] = []
        if self.hard_pod_affinity_weight > 0:
            kinds.append((REQUIRED_AFFINITY, 1, True))
        kinds += [(PREFERRED_AFFINITY, 1, False), (PREFERRED_ANTI_AFFINITY, -1, False)]
        for kind, sign, hard in kinds:
            for (term, weight), rows in index.terms(kind).items():
                if term.matches(pod.namespace, pod.labels, ns_labels):
                    counts = np.zeros(n, dtype=np.int64)
                    rows.add_into(counts)
                    add(term.topology_key, counts, sign * (self.hard_pod_affinity_weight if hard else weight))
        if not touched:
            return SKIP
        total = np.zeros(n, dtype=np.int64)
        for key, weights in acc.items():
            total += self._domains.totals(nodes, key, weights)
        return total

    def _existing_terms(self, cluster: ClusterReader) -> bool:
        """Whether any existing pod carries a term that PreScore could score."""
        index = cluster.affinity_terms
        return bool(
            (self.hard_pod_affinity_weight > 0 and index.terms(REQUIRED_AFFINITY))
            or index.terms(PREFERRED_AFFINITY)
            or index.terms(PREFERRED_ANTI_AFFINITY)
        )

    # ------------------------------------------------------------------ explain
    def explain_row(self, pod: Pod, cluster: ClusterReader, row: int) -> str | None:
        """Which topology keys of the pod's required terms the node lacks, when that is the reason."""
        node = cluster.nodes.nodes[row]
        if node is None:
            return None
        terms = self._memo.get(pod)
        missing = sorted({t.topology_key for t in terms.required_affinity} - set(node.labels))
        if missing:
            return f"node lacks topology key(s) {', '.join(missing)} of the pod's required affinity"
        return None


def _always(other: Pod) -> bool:
    return True


def _affinity_fails(terms: list[Resolved], pod: Pod, cluster: ClusterReader, domains: Domains) -> np.ndarray:
    """Upstream ``satisfyPodAffinity`` negated, for every row.

    One existing pod must match *all* terms: the label sets matching every term are intersected,
    counted per node, and each term then needs a positive total in the node's domain of its key.
    """
    labelsets = cluster.labelsets
    nodes = cluster.nodes
    n = nodes.n_rows
    common: set[int] | None = None
    for t in terms:
        ids = labelsets.matching_sets(t.namespaces, t.selector)
        common = set(ids) if common is None else common.intersection(ids)
    counts = labelsets.counts(sorted(common or ()))
    has_keys = np.ones(n, dtype=np.bool_)
    pods_exist = np.ones(n, dtype=np.bool_)
    any_count = False
    for t in terms:
        col = nodes.label_column(t.topology_key)
        has_keys &= col >= 0
        present = domains.totals(nodes, t.topology_key, counts) > 0
        pods_exist &= present
        if not any_count:
            any_count = bool(present.any())
    if not any_count and all(t.matches(pod.namespace, pod.labels) for t in terms):
        # The first pod of a group whose terms select itself: only the topology keys are needed.
        return ~has_keys
    return ~(has_keys & pods_exist)


def _anti_affinity_fails(
    terms: list[Resolved], cluster: ClusterReader, domains: Domains
) -> np.ndarray | None:
    """Upstream ``satisfyPodAntiAffinity`` negated: a matching pod in the node's domain of any term."""
    labelsets = cluster.labelsets
    nodes = cluster.nodes
    by_key: dict[str, set[int]] = {}
    for t in terms:
        by_key.setdefault(t.topology_key, set()).update(labelsets.matching_sets(t.namespaces, t.selector))
    fails: np.ndarray | None = None
    for key, ids in by_key.items():
        if not ids:
            continue
        hit = domains.totals(nodes, key, labelsets.counts(sorted(ids))) > 0
        if hit.any():
            fails = hit if fails is None else fails | hit
    return fails


def _filter_result(s: _Filtered, n: int) -> FilterResult:
    """Bits 0..2 for the three checks; a row carries only the first one it fails (upstream stops there)."""
    masks = [
        (i, m[:n])
        for i, m in enumerate((s.affinity, s.anti_affinity, s.existing_anti_affinity))
        if m is not None and m.any()
    ]
    if not masks:
        return FilterResult.all_pass()
    i, first = masks[0]
    bits = first.astype(np.uint64) << np.uint64(i) if i else first.astype(np.uint64)
    earlier = first
    for i, mask in masks[1:]:
        own = mask & ~earlier
        bits |= own.astype(np.uint64) << np.uint64(i)
        earlier = earlier | mask
    return FilterResult(bits, _REASONS, _CODES)


def new(args: Any, handle: Handle) -> InterPodAffinity:
    """Build from InterPodAffinityArgs (``args=None``: upstream defaults)."""
    if args is None:
        return InterPodAffinity()
    return InterPodAffinity(
        hard_pod_affinity_weight=args.hard_pod_affinity_weight,
        ignore_preferred_terms_of_existing_pods=args.ignore_preferred_terms_of_existing_pods,
    )


if TYPE_CHECKING:
    from ksched.framework.api import (
        FilterPlugin,
        NormalizeScorePlugin,
        PreFilterPlugin,
        PreScorePlugin,
        ScorePlugin,
    )

    _conforms: tuple[PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, NormalizeScorePlugin] = (
        InterPodAffinity(),
        InterPodAffinity(),
        InterPodAffinity(),
        InterPodAffinity(),
        InterPodAffinity(),
    )
