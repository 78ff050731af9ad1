"""percentageOfNodesToScore: which feasible nodes a cycle goes on with, as upstream's search finds them.

Upstream's ``findNodesThatPassFilters`` walks the snapshot's node list (the zone round-robin order of
:mod:`ksched.cache.node_tree`, or the nodes a PreFilter result allows) from ``nextStartNodeIndex``,
wrapping around, and stops once ``numFeasibleNodesToFind`` nodes passed; then
``nextStartNodeIndex`` advances by the nodes it processed (the feasible ones plus those that failed
on the way) modulo the number of nodes. Taken one node at a time (upstream's parallel workers only
blur which nodes past the limit get looked at), the walk keeps the first ``numFeasibleNodesToFind``
feasible nodes in rotated order and processes every node before the next feasible one. The walk
here filters every row at once and then reads that answer off the feasible mask (:func:`search`):
the same nodes, the same next start.

Upstream treats the nominated node apart: it is filtered first, and when it passes, the cycle takes
it without a search and the start index stays; when it fails, its status counts among the processed
nodes even if the walk never reaches it (:func:`processed_with_nominated`).

A profile that leaves ``percentageOfNodesToScore`` unset (and no global value) scores every
feasible node, ksched's default: its cycles process every node, so they move the shared start
index only when a PreFilter result narrowed the nodes, as upstream's would.

Not the same: upstream walks the nodes of a PreFilter result in Go map order (random); here they go
in node-tree order, one of the orders upstream may take. Upstream filters the nominated node even
when a PreFilter result leaves it out; the Filter pass here starts from that result, so such a node
fails (PreFilter results and the plugins' own Filters agree in practice). A Filter plugin error
leaves the start index where it was (upstream's depends on how far its workers got).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from ksched.cache.cluster import ClusterCache
from ksched.framework.result import num_feasible_nodes_to_find
from ksched.framework.runtime.filtering import Fit, reached_on


@dataclass(slots=True)
class StartIndex:
    """Upstream ``Scheduler.nextStartNodeIndex``: one per scheduler, shared by all its profiles.
    Written only by the scheduling thread's cycles."""

    value: int = 0

    def advance(self, processed: int, num_all_nodes: int) -> None:
        if num_all_nodes > 0:
            self.value = (self.value + processed) % num_all_nodes


@dataclass(frozen=True, slots=True)
class Found:
    """What one search found."""

    rows: np.ndarray | None
    """The feasible rows kept, in search order; None when every feasible row is kept."""
    processed: int
    """The nodes upstream's walk looked at: the kept ones and every failed one before it stopped."""
    visited: np.ndarray | None = None
    """Those nodes' rows, when the walk stopped early (for the per-node evaluation counts)."""


def nodes_to_find(num_nodes: int, percentage: int, *, scoring: bool) -> int:
    """How many feasible nodes the search looks for: upstream's ``numFeasibleNodesToFind``, or one
    when nothing would score them (no Score plugin: the first feasible node is as good as any)."""
    if not scoring:
        return 1
    return num_feasible_nodes_to_find(num_nodes, percentage)


def search(order: np.ndarray, feasible: np.ndarray, start: int, to_find: int, count: int) -> Found:
    """The walk over ``order`` (rows) from position ``start % len(order)``; ``count`` is the number of
    feasible rows among ``order``. Cost: a pass over the order only when the walk stops early."""
    m = int(order.shape[0])
    if count <= to_find or m == 0:
        return Found(None, m)
    s = start % m
    tail = order[s:]
    hits = np.flatnonzero(feasible[tail])
    if hits.shape[0] > to_find:
        stop = int(hits[to_find])
        return Found(tail[hits[:to_find]], stop, tail[:stop])
    head = order[:s]
    more = np.flatnonzero(feasible[head])
    need = to_find - int(hits.shape[0])
    stop = int(more[need])
    rows = np.concatenate((tail[hits], head[more[:need]]))
    return Found(rows, int(tail.shape[0]) + stop, np.concatenate((tail, head[:stop])))


def processed_with_nominated(found: Found, order: np.ndarray, nominated_row: int | None) -> int:
    """``found.processed`` plus the nominated node when it failed and the walk did not process it
    (it was past the stop, or outside the nodes a PreFilter result allowed): upstream filters it
    first and keeps its status, and the processed count is the number of statuses."""
    if nominated_row is None:
        return found.processed
    seen = order if found.visited is None else found.visited
    return found.processed + (0 if bool(np.any(seen == nominated_row)) else 1)


def keep_found(
    fit: Fit,
    cluster: ClusterCache,
    start_index: StartIndex,
    evaluated: Counter[str],
    *,
    percentage: int | None,
    scoring: bool,
    num_all: int,
    failed_nominated: int | None,
) -> bool:
    """Keep the feasible rows of ``fit`` that upstream's walk keeps, advance ``start_index`` as
    upstream's does, and make the Filter evaluations (counted over every row the plugins judged)
    those of the nodes the walk processed, and of a nominated node that failed. Returns whether
    ``fit`` was cut (its mask is then no plugin's own any more). Without a ``percentage`` every
    feasible row is kept."""
    if failed_nominated is not None:
        on_nominated = reached_on(fit, np.array([failed_nominated]))
        for name, n in zip(fit.ran, on_nominated, strict=True):
            evaluated[name] += n
    narrowed = fit.narrowed
    if percentage is None:
        if narrowed is not None:  # every allowed node processed, and a nominated one outside them
            outside = failed_nominated is not None and not narrowed[failed_nominated]
            start_index.advance(int(np.count_nonzero(narrowed)) + outside, num_all)
        return False
    order = cluster.node_order()
    if narrowed is not None:
        order = order[narrowed[order]]
    to_find = nodes_to_find(int(order.shape[0]), percentage, scoring=scoring)
    found = search(order, fit.feasible, start_index.value, to_find, fit.count)
    start_index.advance(processed_with_nominated(found, order, failed_nominated), num_all)
    if found.rows is None or found.visited is None:
        return False
    recount_evaluations(evaluated, fit, reached_on(fit, found.visited))
    feasible = np.zeros(fit.feasible.shape[0], dtype=np.bool_)
    feasible[found.rows] = True
    fit.feasible = feasible
    fit.count = int(found.rows.shape[0])
    fit.adopted = False
    return True


def recount_evaluations(evaluated: Counter[str], fit: Fit, counts: list[int]) -> None:
    """Make the Filter evaluations the runner counted (``fit.reached``) ``counts`` instead (aligned
    with ``fit.ran``): the nodes upstream would have judged were others than every row."""
    for name, n, counted in zip(fit.ran, counts, fit.reached, strict=True):
        evaluated[name] += n - counted
