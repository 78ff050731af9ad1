"""Counting matching pods per topology domain over every node at once.

Upstream walks every node and every pod on it for each constraint (``calPreFilterState``,
``PreScore``). Here the cache already knows, per label set, how many pods sit on each node row
(:class:`~ksched.cache.labelsets.LabelSetIndex`), so a constraint's per-node count is a sum of a few
arrays (:func:`node_counts`), and a topology key's label column holds each node's domain as an
interned value id, so per-domain sums are one pass over the rows
(``kernels.spread_domain_sums``: a bincount in numpy, one loop compiled). The skew check, the score
terms, the rounding and the normalization are kernels too (``kernels.spread_*``), each with its numpy
reference: on the numpy path most of PreFilter and Filter goes to the bincounts and the boolean-mask
passes, which the compiled twins do in one loop each without temporaries.

Domain ids are label-value ids in ``[0, V)`` with ``V = len(nodes.label_values)``; every per-domain
array has ``V + 1`` cells and the last one stays 0, so indexing it with a column's ``-1`` (label
absent) reads 0 without a branch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ksched.cache.node_selector import RowMatcher, compile_required
from ksched.cache.node_table import HARD_TAINT_EFFECTS
from ksched.framework import kernels
from ksched.framework.api import ClusterReader
from ksched.framework.plugins.podtopologyspread.constraints import LABEL_HOSTNAME, Constraint
from ksched.model.pod import Pod
from ksched.model.selectors import LabelSelector


def node_counts(
    cluster: ClusterReader, namespace: frozenset[str], selector: LabelSelector | None
) -> np.ndarray:
    """Pods in ``namespace`` matching ``selector`` per node row (not terminating), ``int64[n_rows]``.

    A nil or empty selector counts nothing (upstream ``countPodsMatchSelector``).
    """
    if selector is None or selector.empty:
        return np.zeros(cluster.nodes.n_rows, dtype=np.int64)
    sets = cluster.labelsets.matching_sets(namespace, selector)
    return cluster.labelsets.counts(sets, exclude_terminating=True)


class Inclusion:
    """The rows each constraint counts, per cycle: valid, every topology key present, and the
    node inclusion policies (``nodeAffinityPolicy`` / ``nodeTaintsPolicy``) where Honor."""

    def __init__(
        self, cluster: ClusterReader, pod: Pod, constraints: Sequence[Constraint], require_all: bool
    ):
        nodes = cluster.nodes
        self.n = nodes.n_rows
        self.cluster = cluster
        self.pod = pod
        base = nodes.valid[: self.n].copy()
        if require_all:
            for c in constraints:
                base &= nodes.label_column(c.topology_key) >= 0
        self.base = base
        self._affinity: np.ndarray | None = None
        self._taints: np.ndarray | None = None

    def affinity(self) -> np.ndarray:
        """Rows matching the pod's nodeSelector and required node affinity (parse errors: no match)."""
        if self._affinity is None:
            pod = self.pod
            required = pod.node_affinity.required if pod.node_affinity is not None else None
            if required is None and not pod.node_selector:
                self._affinity = np.ones(self.n, dtype=np.bool_)
            else:
                m = RowMatcher(self.cluster.nodes)
                mask = m.required(compile_required(required) if required is not None else None)
                if pod.node_selector:
                    mask &= m.node_selector(pod.node_selector)
                self._affinity = mask
        return self._affinity

    def taints(self) -> np.ndarray:
        """Rows without an untolerated NoSchedule / NoExecute taint."""
        if self._taints is None:
            nodes = self.cluster.nodes
            hard = nodes.taint_mask(HARD_TAINT_EFFECTS)
            tolerations = self.pod.tolerations
            if tolerations:
                hard &= ~nodes.tolerated_mask(lambda t: any(tol.tolerates(t) for tol in tolerations))
            if not hard.any():
                self._taints = np.ones(self.n, dtype=np.bool_)
            else:
                self._taints = ~np.any(nodes.taint_bits[: self.n] & hard, axis=1)
        return self._taints

    def rows(self, c: Constraint) -> np.ndarray:
        mask = self.base
        if c.honor_affinity:
            mask = mask & self.affinity()
        if c.honor_taints:
            mask = mask & self.taints()
        return mask


@dataclass(frozen=True, slots=True)
class HardConstraintState:
    """What Filter needs of one DoNotSchedule constraint."""

    constraint: Constraint
    col: np.ndarray
    sums: np.ndarray
    """Matching pods per domain id (``V + 1`` cells, last 0)."""
    min_match: int
    """The global minimum after the minDomains rule."""
    domains: int


def hard_state(
    cluster: ClusterReader, pod: Pod, constraints: Sequence[Constraint], namespace: frozenset[str]
) -> list[HardConstraintState]:
    """Upstream ``calPreFilterState`` for every constraint."""
    nodes = cluster.nodes
    cols = [nodes.label_column(c.topology_key) for c in constraints]
    n_values = len(nodes.label_values)  # after building the columns: they may intern new values
    inc = Inclusion(cluster, pod, constraints, require_all=True)
    out = []
    by_selector: dict[LabelSelector | None, np.ndarray] = {}
    for c, col in zip(constraints, cols, strict=True):
        counts = by_selector.get(c.selector)
        if counts is None:
            counts = by_selector[c.selector] = node_counts(cluster, namespace, c.selector)
        sums, domains, low = kernels.spread_domain_sums(col, inc.rows(c), counts, n_values)
        if domains < c.min_domains:
            low = 0
        out.append(HardConstraintState(c, col, sums, low, domains))
    return out


def filter_bits(states: Sequence[HardConstraintState], n: int) -> np.ndarray:
    """Per row: bit 0 set when a topology label is missing, bit 1 when the skew is too large.

    Upstream checks constraints in order and stops at the first failure, so a row gets the bit of
    the first constraint it fails.
    """
    bits = np.zeros(n, dtype=np.uint64)
    undecided = np.ones(n, dtype=np.uint8)
    for s in states:
        c = s.constraint
        offset = (1 if c.self_match else 0) - s.min_match
        kernels.spread_filter_pass(s.col, s.sums, offset, c.max_skew, undecided, bits)
    return bits


def soft_scores(
    cluster: ClusterReader,
    pod: Pod,
    constraints: Sequence[Constraint],
    namespace: frozenset[str],
    feasible: np.ndarray,
    require_all: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """Upstream ``PreScore`` + ``Score``: raw scores (``int64[n]``) and the ignored rows.

    Without ``require_all`` (system defaulting, pod without constraints of its own) upstream reads
    a missing label as the value "": such nodes form one domain together with nodes labelled "".
    Here that domain gets the spare id ``V`` (``dcol``), and its sum is copied to the id of "" so
    that rows labelled "" read it through their own column.
    """
    nodes = cluster.nodes
    n = feasible.shape[0]
    cols = [nodes.label_column(c.topology_key) for c in constraints]
    n_values = len(nodes.label_values)
    if require_all:
        has_all = np.ones(n, dtype=np.bool_)
        for col in cols:
            has_all &= col >= 0
        scored = feasible & has_all
        ignored = feasible & ~has_all
    else:
        scored = feasible
        ignored = np.zeros(n, dtype=np.bool_)
    n_scored = int(np.count_nonzero(scored))
    inc = Inclusion(cluster, pod, constraints, require_all)
    blank = nodes.label_values.lookup("")
    total = np.zeros(n, dtype=np.float64)
    by_selector: dict[LabelSelector | None, np.ndarray] = {}
    for c, col in zip(constraints, cols, strict=True):
        counts = by_selector.get(c.selector)
        if counts is None:
            counts = by_selector[c.selector] = node_counts(cluster, namespace, c.selector)
        if c.topology_key == LABEL_HOSTNAME:
            size, values, by_row = n_scored, counts, True
        else:
            dcol = col
            if not require_all:
                dcol = np.where(col < 0, np.int32(n_values), col)
                if blank >= 0:
                    dcol[dcol == blank] = n_values
            _, size, _ = kernels.spread_domain_sums(dcol, scored, counts, n_values + 1)
            values, _, _ = kernels.spread_domain_sums(dcol, inc.rows(c), counts, n_values + 1)
            if not require_all and blank >= 0:
                values[blank] = values[n_values]
            by_row = False
        weight = float(np.log(float(size + 2)))
        kernels.spread_score_pass(col, values, by_row, weight, float(c.max_skew - 1), total)
    return kernels.spread_round(total), ignored


def normalize(raw: np.ndarray, feasible: np.ndarray, ignored: np.ndarray) -> np.ndarray:
    """Upstream ``NormalizeScore``: fewer matching pods scores higher; ignored rows get 0."""
    return kernels.spread_normalize(raw, feasible, ignored)
