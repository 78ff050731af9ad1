"""Opportunistic batching (upstream KEP-5598, gate ``OpportunisticBatching``), kept exact.

A pod's scheduling signature is what the profile's plugins read of it; a pod with the signature of
the profile's last fully evaluated pod reuses that cycle's Filter and Score results. Upstream reuses
the previous pod's sorted node list and hands out the next node; ksched keeps the per-row results
instead and brings them up to date, so that a batched cycle chooses exactly the node (and consumes
exactly the tie-break draw) the full cycle would:

- rows whose ``row_version`` moved since, as the node table's journal tells (typically the one
  row the previous pod was assumed on), are asked again, by the plugins that read a row's pods
  (:data:`ROW_ACCOUNTING`, through their ``batch_rows`` method); every other row keeps its verdict
  and raw scores;
- plugins that read only the pod and the row's node object (:data:`NODE_ONLY`) keep theirs while
  the node table's ``generation`` (every node write) stands still;
- normalization and the weighted sum are redone when the feasible rows changed, else patched on
  the changed rows; selectHost runs the same kernel with the same draw.

PreFilter and PreScore run for real on every batched cycle: plugins whose results depend on other
nodes' pods (:data:`MUST_SKIP`: topology spread, inter-pod affinity) allow batching only when they
say Skip, and every Skip must match the reused cycle's. Anything else that is not provably exact
(extenders, explanations, nominated pods, ``percentageOfNodesToScore``, PreFilter narrowing, a
feasible row appearing, a node write, too many changed rows) runs the full cycle, which then stores
its results for the next pod. An out-of-tree plugin signs with ``batch_sign(pod)`` (None: unsignable)
and declares ``batch_reads`` ("node" or "rows", the latter with ``batch_rows``); one that does not
makes every pod unsignable, as upstream.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import numpy as np

from ksched.cache.cluster import ClusterCache
from ksched.framework import kernels, names
from ksched.framework.interface import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    CycleState,
    FilterPlugin,
    NormalizeScorePlugin,
    ScorePlugin,
    Scores,
)
from ksched.framework.plans import Plan
from ksched.framework.result import weighted_sum
from ksched.framework.tie_rows import TieRows
from ksched.model.pod import Pod

MAX_CHANGED_ROWS = 64
"""More changed rows than this and the full cycle is cheaper than asking them one set at a time."""

TRACK_TIES_FROM = 20_000
"""Node rows from which the best rows are kept between cycles (:func:`select`): below, one compiled
scan of the totals costs less than their upkeep."""

MAX_STORED = 4
"""Signatures a profile keeps results for: workloads interleave a few pod shapes, and each stored
cycle costs a few arrays of one value per node."""


def _resources(pod: Pod) -> object:
    return (tuple(pod.requests.items()), pod.nonzero_cpu, pod.nonzero_memory)


SIGNERS: dict[str, Callable[[Pod], object]] = {
    names.NODE_UNSCHEDULABLE: lambda pod: pod.tolerations,
    names.NODE_NAME: lambda pod: pod.node_name,
    names.TAINT_TOLERATION: lambda pod: pod.tolerations,
    names.NODE_AFFINITY: lambda pod: (pod.node_selector, pod.node_affinity),
    names.IMAGE_LOCALITY: lambda pod: (pod.images, pod.container_count),
    names.NODE_PORTS: lambda pod: pod.host_ports,
    names.NODE_RESOURCES_FIT: _resources,
    names.NODE_RESOURCES_BALANCED_ALLOCATION: _resources,
}
"""What each in-tree plugin reads of the pod (compared with ``==``, never hashed)."""

NODE_ONLY = frozenset(
    {
        names.NODE_UNSCHEDULABLE,
        names.NODE_NAME,
        names.TAINT_TOLERATION,
        names.NODE_AFFINITY,
        names.IMAGE_LOCALITY,
    }
)
"""In-tree plugins whose Filter verdict and raw Score on a row read only the signed pod fields, that
row's node object and the node count: unchanged while the node table's generation is."""

ROW_ACCOUNTING = frozenset(
    {names.NODE_RESOURCES_FIT, names.NODE_RESOURCES_BALANCED_ALLOCATION, names.NODE_PORTS}
)
"""In-tree plugins that read a row's pods too; those with ``batch_rows`` answer for a few rows."""

MUST_SKIP = frozenset({names.POD_TOPOLOGY_SPREAD, names.INTER_POD_AFFINITY})
"""In-tree plugins that read other nodes' pods: a cycle batches only when their PreFilter and PreScore
both say Skip (checked on every cycle, so they need not sign)."""


class RowsAnswer(NamedTuple):
    """A row-accounting plugin's answer on a few rows (aligned with them)."""

    passed: np.ndarray | None
    """Bool per row: valid and passing the plugin's Filter (None: the plugin has no Filter)."""
    scores: np.ndarray | None
    """Raw scores per row (None: the plugin has no Score)."""
    in_range: bool


class RowsPlugin(Protocol):
    name: str

    def batch_rows(
        self, state: CycleState, pod: Pod, cluster: ClusterCache, rows: np.ndarray
    ) -> RowsAnswer: ...


def reads(plugin: object) -> str | None:
    """ "node", "rows", "skip" (:data:`MUST_SKIP`) or None when the plugin cannot batch."""
    name = getattr(plugin, "name", None)
    declared = getattr(plugin, "batch_reads", None)
    if declared in ("node", "rows", "skip"):
        return str(declared)
    if name in NODE_ONLY:
        return "node"
    if name in ROW_ACCOUNTING:
        return "rows"
    if name in MUST_SKIP:
        return "skip"
    return None


def sign(plan: Plan, pod: Pod) -> tuple[object, ...] | None:
    """The pod's signature under ``plan`` (the plugins its cycle calls), or None: unsignable."""
    signers = _signers_of(plan)
    if signers is None:
        return None
    parts: list[object] = [plan]
    for name, signer in signers:
        part = signer(pod)
        if part is None:
            return None
        parts.append((name, part))
    return tuple(parts)


_SIGNERS_BY_PLAN: dict[int, tuple[Plan, tuple[tuple[str, Callable[[Pod], object]], ...] | None]] = {}
"""Each plan's signers, worked out once (a profile has a handful of plans, kept alive here)."""


def _signers_of(plan: Plan) -> tuple[tuple[str, Callable[[Pod], object]], ...] | None:
    """``(plugin name, signer)`` for every plugin of ``plan`` that signs, once each; None when one
    cannot (:data:`MUST_SKIP` plugins sign nothing: their Skip is checked on every cycle)."""
    found = _SIGNERS_BY_PLAN.get(id(plan))
    if found is not None and found[0] is plan:
        return found[1]
    out: list[tuple[str, Callable[[Pod], object]]] | None = []
    seen: set[str] = set()
    for plugin in (*plan.pre_filter, *plan.filters, *plan.pre_score, *(s[0] for s in plan.scorers)):
        name = plugin.name
        if name in seen or out is None:
            continue
        seen.add(name)
        own = getattr(plugin, "batch_sign", None)
        if callable(own):
            out.append((name, own))
        elif name not in MUST_SKIP:
            signer = SIGNERS.get(name)
            out = None if signer is None else [*out, (name, signer)]
    signers = None if out is None else tuple(out)
    _SIGNERS_BY_PLAN[id(plan)] = (plan, signers)
    return signers


@dataclass(slots=True)
class ScorePart:
    """One Score plugin's share of the stored cycle."""

    plugin: ScorePlugin
    weight: int
    norm: NormalizeScorePlugin | None
    rows: bool
    """The plugin reads a row's pods (its raw scores are patched on changed rows)."""
    raw: Scores
    scores: Scores
    """Normalized (the raw scores when the plugin does not normalize)."""


@dataclass(slots=True)
class Stored:
    """The last fully evaluated signable cycle of a profile, kept up to date by batched cycles."""

    signature: tuple[object, ...]
    cluster: ClusterCache
    generation: int
    n_rows: int
    width: int
    journal_end: int
    """The node table's journal position the stored results are up to date with."""
    skip_filter: frozenset[str]
    skip_score: frozenset[str]
    row_filters: list[Any]
    static_ok: np.ndarray
    """Valid and passing every node-only Filter plugin that ran."""
    feasible: np.ndarray
    count: int
    parts: list[ScorePart]
    const: int
    total: np.ndarray | None
    best: int = 0
    ties: TieRows | None = None
    """The feasible rows whose total is ``best`` (None: to be rebuilt on the next pick)."""


def capturable(
    plan: Plan, state: CycleState, ran: Sequence[str], filters: Sequence[FilterPlugin]
) -> list[Any] | None:
    """The row-accounting Filter plugins that ran, when every plugin of the cycle can batch."""
    by_name = {p.name: p for p in filters}
    row_filters: list[Any] = []
    for name in ran:
        kind = reads(by_name[name])
        if kind == "rows" and callable(getattr(by_name[name], "batch_rows", None)):
            row_filters.append(by_name[name])
        elif kind != "node":
            return None
    for plugin in plan.filters:
        if reads(plugin) == "skip" and plugin.name not in state.skip_filter:
            return None
    for plugin, name, _, _ in plan.scorers:
        if name in state.skip_score:
            continue
        kind = reads(plugin)
        if kind == "rows" and not callable(getattr(plugin, "batch_rows", None)):
            return None
        if kind not in ("node", "rows"):
            return None
    return row_filters


def store(
    signature: tuple[object, ...],
    cluster: ClusterCache,
    state: CycleState,
    row_filters: list[Any],
    filtered: Sequence[tuple[str, Any]],
    feasible: np.ndarray,
    count: int,
    kept: list[tuple[ScorePlugin, int, NormalizeScorePlugin | None, Scores, Scores]],
) -> Stored:
    """A :class:`Stored` from a full cycle: ``filtered`` its failing Filter results, ``kept`` its
    Score plugins' weights, raw and normalized scores (private copies are kept)."""
    nodes = cluster.nodes
    n = nodes.n_rows
    row_names = {p.name for p in row_filters}
    static_ok = nodes.valid[:n].copy()
    for name, fr in filtered:
        if name not in row_names and fr.failed is not None:
            static_ok &= fr.failed[:n] == 0
    parts = []
    for p, w, norm, raw, scores in kept:
        own = _own(raw, n)  # without NormalizeScore the scores are the raw ones: one copy
        parts.append(ScorePart(p, w, norm, reads(p) == "rows", own, own if norm is None else _own(scores, n)))
    out = Stored(
        signature,
        cluster,
        nodes.generation,
        n,
        nodes.requested.shape[1],
        nodes.journal.end,
        frozenset(state.skip_filter),
        frozenset(state.skip_score),
        row_filters,
        static_ok,
        feasible.copy(),
        count,
        parts,
        0,
        None,
    )
    resum(out)
    return out


def find(stored: list[Stored], signature: tuple[object, ...] | None) -> Stored | None:
    """The stored cycle of ``signature`` (compared with ``==``), or None."""
    if signature is None:
        return None
    for entry in stored:
        if entry.signature == signature:
            return entry
    return None


def keep(stored: list[Stored], entry: Stored) -> None:
    """``entry`` first, replacing one of its signature; the oldest goes past :data:`MAX_STORED`."""
    old = find(stored, entry.signature)
    if old is not None:
        stored.remove(old)
    stored.insert(0, entry)
    del stored[MAX_STORED:]


def _own(scores: Scores, n: int) -> Scores:
    return scores[:n].copy() if isinstance(scores, np.ndarray) else int(scores)


def resum(stored: Stored) -> None:
    """The stored weighted sum from the parts (upstream's arithmetic: int64, wrapping)."""
    arrays = [p.scores for p in stored.parts if isinstance(p.scores, np.ndarray)]
    weights = [p.weight for p in stored.parts if isinstance(p.scores, np.ndarray)]
    stored.const = sum(int(p.scores) * p.weight for p in stored.parts if not isinstance(p.scores, np.ndarray))
    stored.total = weighted_sum(arrays, weights, stored.const, stored.n_rows) if arrays else None
    stored.ties = None


def changed_rows(stored: Stored, cluster: ClusterCache) -> np.ndarray | None:
    """The rows whose accounting moved since ``stored`` was brought up to date; None when more
    than that changed (a node write, a resized table, too many rows)."""
    nodes = cluster.nodes
    if (
        cluster is not stored.cluster
        or nodes.generation != stored.generation
        or nodes.n_rows != stored.n_rows
        or nodes.requested.shape[1] != stored.width
    ):
        return None
    return nodes.journal.since(stored.journal_end, MAX_CHANGED_ROWS)


def out_of_range(scores: Scores, feasible: np.ndarray) -> bool:
    if isinstance(scores, np.ndarray):
        n = feasible.shape[0]
        lo = int(np.min(scores[:n], where=feasible, initial=MAX_NODE_SCORE))
        hi = int(np.max(scores[:n], where=feasible, initial=MIN_NODE_SCORE))
        return lo < MIN_NODE_SCORE or hi > MAX_NODE_SCORE
    return not MIN_NODE_SCORE <= int(scores) <= MAX_NODE_SCORE


def patch_total(stored: Stored, rows: np.ndarray) -> None:
    """The stored weighted sum on ``rows`` only, from the parts (the other rows did not move), and
    the best rows kept up to date with it."""
    total = stored.total
    if total is None or rows.size == 0:
        return
    acc = np.full(rows.size, stored.const, dtype=np.int64)
    for part in stored.parts:
        if isinstance(part.scores, np.ndarray):
            acc += part.scores[rows] * part.weight
    total[rows] = acc
    _update_ties(stored, rows)


def _update_ties(stored: Stored, rows: np.ndarray) -> None:
    """``stored.ties`` after ``rows`` (ascending) changed: drop them, then add those at the best
    (or start over when one beats it). None when no unchanged row is left at the best: the next
    pick rescans."""
    ties = stored.ties
    if ties is None:
        return
    assert stored.total is not None
    ties.discard(rows)
    cand = rows[stored.feasible[rows]]
    vals = stored.total[cand]
    top = int(vals.max()) if cand.size else None
    if top is not None and top > stored.best:
        stored.best, stored.ties = top, TieRows(cand[vals == top])
    elif ties.size == 0:
        stored.ties = None
    elif top is not None and top == stored.best:
        ties.add(cand[vals == top])


def select(stored: Stored, u: float, any_scorer: bool) -> tuple[int, Scores]:
    """selectHost over the stored rows for the draw ``u``: the ``floor(u * ties)``-th best row in
    row order, as :func:`.kernels.select_best` picks it (from the kept best rows, rebuilt when
    unknown), and the cycle's total."""
    total = stored.total
    if total is None:
        return kernels.nth_true_ref(stored.feasible, u), stored.const if any_scorer else 1
    if stored.n_rows < TRACK_TIES_FROM:
        return kernels.select_best(total, stored.feasible, u), total
    if stored.ties is None:
        rows = np.flatnonzero(stored.feasible)
        vals = total[rows]
        stored.best = int(vals.max())
        stored.ties = TieRows(rows[vals == stored.best])
    ties = stored.ties
    return ties.nth(min(int(u * ties.size), ties.size - 1)), total
