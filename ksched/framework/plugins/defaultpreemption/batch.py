"""The row-local dry run for a whole chunk of nodes as arrays, instead of Python lists per node.

Why: at thousands of full nodes one PostFilter call reads hundreds of nodes and thousands of
pods (``numCandidates`` is 10% of the nodes), and building a victim list, a sort and a reprieve
order per node in Python cost more than the filter passes themselves. Here every step is a few
array operations over all pods of the chunk:

- :func:`gather`: the lower-priority pods of every node of the chunk in one table, grouped by
  node in chunk order and each node's pods most important first (:func:`.memo.importance_order`:
  one ``lexsort``, the uid breaking exact ties as :func:`.plugin._entry_importance` does; the
  plugin reads the per-node numbers through its :class:`.memo.ListingMemo`), the
  PodDisruptionBudget flags by a segmented cumulative count per budget (:func:`violations`,
  upstream's ``filterPodsWithPDBViolation`` node by node), and the reprieve order (violating
  pods first) by one stable sort.
- :func:`select`: the reprieve loop of :func:`.dryrun._select_together` over index arrays, with
  an :class:`~.dryrun.ArrayProbe`; the nodes whose pods the probe may not move
  (:meth:`~.dryrun.ArrayProbe.clean`) run one at a time through a :class:`~.dryrun.CacheProbe`.
- :func:`outcomes`: per node its status or victims (re-sorted by importance when the node had
  both violating and other pods, as upstream does) and PDB violation count.

The node-by-node reference is :meth:`.plugin.DefaultPreemption._works` with
:func:`.dryrun.select_victims`; ``tests/property/test_preemption_batch_props.py`` checks that both
give the same tables, orders and outcomes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ksched.cache.cluster import PodEntry
from ksched.framework.api import ClusterReader, Code, Status
from ksched.framework.plugins.defaultpreemption.dryrun import (
    NO_VICTIMS,
    ArrayProbe,
    NodeWork,
    Residents,
    _select_together,
)
from ksched.framework.plugins.defaultpreemption.memo import ListingMemo, read_nodes
from ksched.framework.plugins.defaultpreemption.pdb import BudgetIndex
from ksched.model.pod import Pod

_MAX_DENSE_BUDGETS = 64
"""Above this many budgets covering pods of one chunk, :func:`violations` goes node by node
(the dense per-pod-per-budget count would grow with the product)."""


@dataclass(slots=True)
class Chunk:
    """The potential victims of a chunk of nodes, as one table (see :func:`gather`).

    Table indices ``first[j] .. first[j] + count[j]`` are node ``j``'s pods. ``importance`` and
    ``order`` are permutations of the table within those same slots: each node's pods most
    important first (:func:`gather` lists them so: the identity), and in reprieve order.
    """

    rows: np.ndarray
    """Cache row of each node, chunk order."""
    names: list[str]
    entries: list[PodEntry]
    pods: list[Pod]
    node: np.ndarray
    """Chunk position of each table entry (non-decreasing)."""
    priority: np.ndarray
    start: np.ndarray
    """Start time of each table entry, ``inf`` when not started (upstream ``GetPodStartTime``)."""
    first: np.ndarray
    count: np.ndarray
    importance: np.ndarray
    violating: np.ndarray
    """Per table entry: whether evicting it, after the node's more important pods, violates a PDB."""
    order: np.ndarray
    requests: np.ndarray
    """Per table entry, its request per resource column (:class:`.memo.Listing`)."""
    nonzero: np.ndarray
    ported: np.ndarray

    def residents(self) -> Residents:
        """The table for the probes; grouped by node, so the array probe can sum per row."""
        return Residents(
            self.entries,
            pods=self.pods,
            rows=self.rows[self.node],
            grouped=True,
            accounting=(self.requests, self.nonzero, self.ported),
        )


def gather(
    pod: Pod,
    cluster: ClusterReader,
    rows: np.ndarray,
    index: BudgetIndex | None,
    memo: ListingMemo | None = None,
) -> Chunk:
    """The lower-priority pods of the nodes at ``rows``, as :meth:`.plugin.DefaultPreemption._works`
    finds them node by node.

    The nodes' pods come from ``memo`` where it still holds them (:mod:`.memo`), else from the
    cache; each node's pods are already most important first there, and dropping the pods of the
    preemptor's priority or higher keeps that order, so ``importance`` is the identity.
    """
    got = memo.listing(cluster, rows) if memo is not None else read_nodes(cluster, rows)
    n = len(got.names)
    entries, pods, priority, start = got.entries, got.pods, got.priority, got.start
    requests, nonzero, ported = got.requests, got.nonzero, got.ported
    node = np.repeat(np.arange(n, dtype=np.intp), got.counts)
    keep = np.flatnonzero(priority < pod.priority)
    if keep.size < len(pods):
        kept = keep.tolist()
        entries = [entries[i] for i in kept]
        pods = [pods[i] for i in kept]
        priority, start, node = priority[keep], start[keep], node[keep]
        requests, nonzero, ported = requests[keep], nonzero[keep], ported[keep]
    importance = np.arange(len(pods), dtype=np.intp)
    count = np.bincount(node, minlength=n)
    first = np.cumsum(count) - count
    violating = np.zeros(len(pods), dtype=np.bool_)
    order = importance
    if index is not None and pods:
        violating[importance] = violations(index, [entries[i] for i in importance.tolist()], node, first)
        if violating.any():
            order = importance[np.argsort(node * 2 + ~violating[importance], kind="stable")]
    return Chunk(
        rows,
        got.names,
        entries,
        pods,
        node,
        priority,
        start,
        first,
        count,
        importance,
        violating,
        order,
        requests,
        nonzero,
        ported,
    )


def violations(
    index: BudgetIndex, entries: list[PodEntry], node: np.ndarray, first: np.ndarray
) -> np.ndarray:
    """Per entry, :meth:`.pdb.BudgetIndex.split` of its node's entries, for all nodes at once.

    ``entries`` are grouped by node (``node`` per entry, non-decreasing; ``first`` per node),
    each node's most important first.

    A budget's count restarts at ``disruptionsAllowed`` on every node (each node is its own dry
    run); an entry violates when, counting it and the covered entries before it on its node,
    some budget covering it is over its allowance.
    """
    m = len(entries)
    budgets = index.budgets
    label_sets = np.array([e.label_set for e in entries], dtype=np.int64)
    uniq, where, inv = np.unique(label_sets, return_index=True, return_inverse=True)
    cover = np.zeros((uniq.size, len(budgets)), dtype=np.bool_)
    for u, (key, i) in enumerate(zip(uniq.tolist(), where.tolist(), strict=True)):
        hit = index.covering(entries[i].pod, key)
        if hit:
            cover[u, list(hit)] = True
    used = np.flatnonzero(cover.any(axis=0))
    if used.size == 0:
        return np.zeros(m, dtype=np.bool_)
    if used.size > _MAX_DENSE_BUDGETS:
        return _violations_by_node(index, entries, node, first)
    # One row per budget, one column per entry; then the covered (budget, entry) pairs, which
    # nonzero() lists by budget and, within one, by entry, so node by node.
    counted = np.ascontiguousarray(cover[:, used].T)[:, inv.reshape(-1)]
    names: list[str] | None = None
    for k, b in enumerate(used.tolist()):
        disrupted = budgets[b].disrupted
        if disrupted:
            if names is None:
                names = [e.pod.name for e in entries]
            counted[k] &= np.array([nm not in disrupted for nm in names], dtype=np.bool_)
    which, entry = np.nonzero(counted)
    out = np.zeros(m, dtype=np.bool_)
    if entry.size == 0:
        return out
    group = which * (int(node[-1]) + 1) + node[entry]  # (budget, node)
    fresh = np.ones(group.size, dtype=np.bool_)
    fresh[1:] = group[1:] != group[:-1]
    heads = np.flatnonzero(fresh)
    # How many covered entries of the same budget come before this one on its node.
    rank = np.arange(group.size) - np.repeat(heads, np.diff(np.append(heads, group.size)))
    allowed = np.array([budgets[b].allowed for b in used.tolist()], dtype=np.int64)
    out[entry[rank >= allowed[which]]] = True
    return out


def _violations_by_node(
    index: BudgetIndex, entries: list[PodEntry], node: np.ndarray, first: np.ndarray
) -> np.ndarray:
    out = np.zeros(len(entries), dtype=np.bool_)
    bounds = np.append(first, len(entries))
    for j in np.unique(node).tolist():
        a, b = int(bounds[j]), int(bounds[j + 1])
        group = entries[a:b]
        out[a:b] = index.split([e.pod for e in group], [e.label_set for e in group])
    return out


@dataclass(slots=True)
class Selection:
    """What :func:`select` found: per node a status (None: a candidate), and which reprieve
    slots (positions in :attr:`Chunk.order`) became victims."""

    status: list[Status | None]
    victim: np.ndarray
    single: np.ndarray
    """The chunk positions of the nodes that ran one at a time through the cache (whose pods
    :class:`~.dryrun.CacheProbe` took out and added back as new entries)."""


def select(probe: ArrayProbe, chunk: Chunk, res: Residents) -> Selection:
    """The dry run on every node of ``chunk``: nodes without lower-priority pods are not
    candidates, the nodes the probe may batch (all, with row-local filters only) share each
    filter pass, the others run one at a time through the cache."""
    n = len(chunk.names)
    status: list[Status | None] = [None if c else NO_VICTIMS for c in chunk.count.tolist()]
    victim = np.zeros(len(chunk.entries), dtype=np.bool_)
    todo = np.flatnonzero(chunk.count)
    if todo.size == 0:
        return Selection(status, victim, todo)
    guard = probe.guard
    if guard is None:
        batched = todo
        single = np.zeros(0, dtype=np.intp)
    else:
        moved = np.array([guard(p) for p in chunk.pods], dtype=np.bool_)
        stuck = np.bincount(chunk.node[moved], minlength=n)[todo] > 0
        batched, single = todo[~stuck], todo[stuck]
    if batched.size:
        _select_batched(probe, chunk, batched, status, victim)
    if single.size:
        _select_single(probe, chunk, res, single, status, victim)
    return Selection(status, victim, single)


def _select_batched(
    probe: ArrayProbe, chunk: Chunk, which: np.ndarray, status: list[Status | None], victim: np.ndarray
) -> None:
    """:func:`.dryrun._select_together` over arrays: step 0 takes out every pod of the nodes
    ``which`` and checks them in one pass; step *j* puts back each live node's *j*-th pod in
    reprieve order and checks those nodes in one pass, taking back out (as victims) the pods
    whose node then fails."""
    removed = np.zeros(len(chunk.entries), dtype=np.bool_)
    rows, count, first, order = chunk.rows, chunk.count, chunk.first, chunk.order
    try:
        if which.size == len(chunk.names):
            idx = np.arange(len(chunk.entries), dtype=np.intp)
        else:
            mine = np.zeros(len(chunk.names), dtype=np.bool_)
            mine[which] = True
            idx = np.flatnonzero(mine[chunk.node])
        probe.remove(idx)
        removed[idx] = True
        ok = probe.passes(rows[which])
        for j in which[~ok].tolist():
            status[j] = probe.failure(int(rows[j]))
        alive = which[ok]
        live = alive
        step = 0
        while True:
            live = live[count[live] > step]
            if live.size == 0:
                break
            slots = first[live] + step
            items = order[slots]
            probe.restore(items)
            removed[items] = False
            bad = np.flatnonzero(~probe.passes(rows[live]))
            if bad.size:
                out = items[bad]
                probe.remove(out)
                removed[out] = True
                victim[slots[bad]] = True
            step += 1
        if alive.size:
            found = np.bincount(chunk.node[victim], minlength=len(chunk.names))
            for j in alive[found[alive] == 0].tolist():
                status[j] = _no_victim_error(chunk.names[j])
    finally:
        back = np.flatnonzero(removed)
        if back.size:
            probe.restore(back)


def _select_single(
    probe: ArrayProbe,
    chunk: Chunk,
    res: Residents,
    which: np.ndarray,
    status: list[Status | None],
    victim: np.ndarray,
) -> None:
    """The nodes whose pods only the cache's own bookkeeping may move, one at a time."""
    single = probe.node_by_node()
    slot_of = np.empty(len(chunk.entries), dtype=np.intp)
    slot_of[chunk.order] = np.arange(len(chunk.entries), dtype=np.intp)
    for j in which.tolist():
        a = int(chunk.first[j])
        b = a + int(chunk.count[j])
        work = NodeWork(int(chunk.rows[j]), chunk.names[j], chunk.importance[a:b].tolist())
        work.order = chunk.order[a:b].tolist()
        work.violating = frozenset((np.flatnonzero(chunk.violating[a:b]) + a).tolist())
        _select_together(single, [work], len(res))
        status[j] = work.status
        if work.status is None:
            victim[slot_of[np.array(work.victims, dtype=np.intp)]] = True


def _no_victim_error(node: str) -> Status:
    return Status(Code.ERROR, (f'expected at least one victim pod on node "{node}"',))


@dataclass(slots=True)
class Outcome:
    """Per node of a chunk, what the dry run gave: ``victims[j]`` (most important first) and
    ``violations[j]`` for a candidate, ``status[j]`` (not None) for the others."""

    status: list[Status | None]
    victims: list[tuple[Pod, ...]]
    violations: list[int]


def outcomes(chunk: Chunk, sel: Selection) -> Outcome:
    """Victim pods per node in upstream's final order, and their PDB violation counts.

    Victims come out in reprieve order; a node that had both violating and other pods re-sorts
    them by importance (priority, then start time; stable, so the reprieve order breaks ties),
    as upstream's ``SelectVictimsOnNode`` does. For every other node the reprieve order already
    is that order, so one stable sort over all victims does it for every node.
    """
    n = len(chunk.names)
    slots = np.flatnonzero(sel.victim)
    items = chunk.order[slots]
    vnode = chunk.node[slots]
    if chunk.violating.any() and items.size > 1:
        resort = np.lexsort((slots, chunk.start[items], -chunk.priority[items], vnode))
        items, vnode = items[resort], vnode[resort]
    per_node = np.bincount(vnode, minlength=n).tolist()
    bad = np.bincount(vnode[chunk.violating[items]], minlength=n).tolist()
    pods = chunk.pods
    chosen = [pods[k] for k in items.tolist()]
    victims: list[tuple[Pod, ...]] = []
    at = 0
    for c in per_node:
        victims.append(tuple(chosen[at : at + c]))
        at += c
    return Outcome(sel.status, victims, bad)
