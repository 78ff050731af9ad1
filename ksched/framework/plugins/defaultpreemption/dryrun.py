"""Victim selection by dry run (upstream ``SelectVictimsOnNode``), for many nodes at once.

For each node: take out every lower-priority pod; if the preemptor still does not fit, the node is
not a candidate. Otherwise put the pods back one at a time, PDB-violating ones first, each group
most important first, keeping each back if the preemptor still fits and making it a victim if not.
"Fits" is always the profile's own filters (with nominated pods), run by
:meth:`~ksched.framework.handle.Handle.dry_run_filters`, so ports, affinity and every other filter
count, not just resources.

The pods a dry run may move are a :class:`Residents` table (entries plus row and request arrays);
nodes and probes refer to them by index. Two probes change the cache for a dry run, through its
what-if overlay (:mod:`ksched.cache.what_if`, the only writer of the cache's arrays besides the
cache itself), and put it back exactly:

- :class:`ArrayProbe` adjusts only the per-row accounting (requested, non-zero requested, pod
  count, host ports) with vectorized integer arithmetic (a :class:`~ksched.cache.what_if.RowAdjustment`:
  per-row sums with ``np.add.reduceat`` over a table grouped by node, else ``np.add.at`` over
  index arrays). It is
  exact when every filter that ran is row-local (reads only the node's own row), the common case;
  then one filter pass answers step *j* of the reprieve loop for every node at once, because a
  change on one row cannot move another row's verdict. It is also exact for a node whose
  potential victims no non-row-local filter that ran would count (inter-pod affinity and
  topology spread say which pods they read: ``Handle.batch_guard``): leaving those pods in
  the label sets and the affinity index changes nothing those filters see.
- :class:`CacheProbe` removes and re-adds pods through the cache's own pod bookkeeping (a
  :class:`~ksched.cache.what_if.PodMoves`), so
  label-set counts and the affinity index see the change too (inter-pod affinity, topology
  spread). It is used one node at a time, like upstream's cloned NodeInfo: for every node when
  a non-row-local filter cannot say which pods it reads, else for the nodes ``ArrayProbe`` may
  not batch (:func:`select_victims` splits a chunk).

Both leave the cache's arrays bit-for-bit as they found them, even when a filter raises.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import chain
from operator import itemgetter
from typing import TYPE_CHECKING, Protocol

import numpy as np

from ksched.cache.cluster import PodEntry
from ksched.cache.what_if import RowAdjustment
from ksched.framework.api import ClusterReader
from ksched.framework.interface import Code, NominatedPods, Status
from ksched.framework.result import CycleResult
from ksched.model.pod import Pod

if TYPE_CHECKING:
    from ksched.framework.handle import Handle

ERR_NO_VICTIMS = "No preemption victims found for incoming pod"
NO_VICTIMS = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_NO_VICTIMS,))


@dataclass(slots=True)
class NodeWork:
    """One node's dry run: its potential victims (indices into :class:`Residents`) and the outcome."""

    row: int
    node: str
    potential: list[int]
    """Lower-priority pods on the node, most important first."""
    order: list[int] = field(default_factory=list)
    """Reprieve order: PDB-violating first, then the rest, each most important first."""
    violating: frozenset[int] = frozenset()
    victims: list[int] = field(default_factory=list)
    num_pdb_violations: int = 0
    status: Status | None = None
    """Why the node is not a candidate (None: it is one, with ``victims``)."""


def request_columns(pods: Sequence[Pod], cluster: ClusterReader, width: int) -> list[tuple[int, np.ndarray]]:
    """The pods' requests as (column, per-pod values) for every resource column (below ``width``)
    that one of them asks for; the others are all zero and need no accounting.

    Built per resource name present rather than per pod: a few list comprehensions in C-speed
    loops, instead of a numpy vector per pod, and only the columns in use (a dry run's pods
    usually ask for cpu and memory out of many columns).
    """
    if not pods:
        return []
    reqs = [p.requests for p in pods]
    names = set().union(*reqs)
    names.discard("pods")
    resources = cluster.resources
    out: list[tuple[int, np.ndarray]] = []
    for name in names:
        col = resources.column(name)  # known already: these pods are in the cache
        if col < width:
            try:  # every pod names it (cpu, memory usually): a C-level map, about twice as fast
                values = np.fromiter(map(itemgetter(name), reqs), dtype=np.int64, count=len(reqs))
            except KeyError:
                values = np.array([r.get(name, 0) for r in reqs], dtype=np.int64)
            out.append((col, values))
    out.sort(key=lambda cv: cv[0])
    return out


class Residents:
    """The pods one dry run may take out, by index: cache entries with their rows as an array.

    ``grouped`` promises that each node's entries are contiguous and no two runs share a row (a
    table built node by node): then :class:`ArrayProbe` sums a sorted index set per row with
    ``np.add.reduceat`` and adds once per row, instead of the slower ``np.add.at``.

    ``accounting``, when given, is what :class:`ArrayProbe` would otherwise read from every pod:
    per entry its requests per resource column (the cache's width), its non-zero cpu and memory
    requests, and whether it holds host ports (:class:`.memo.Listing` keeps them).
    """

    def __init__(
        self,
        entries: list[PodEntry],
        pods: list[Pod] | None = None,
        *,
        rows: np.ndarray | None = None,
        grouped: bool = False,
        accounting: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    ) -> None:
        self.entries = entries
        self.pods = pods if pods is not None else [e.pod for e in entries]
        self.rows = rows if rows is not None else np.array([e.row for e in entries], dtype=np.intp)
        """Each entry's cache row (callers that know it per node pass it: every pod counted on a
        node that is in the table has that node's row)."""
        self.grouped = grouped
        self.accounting = accounting

    def __len__(self) -> int:
        return len(self.entries)


class Probe(Protocol):
    def remove(self, idx: np.ndarray) -> None: ...

    def restore(self, idx: np.ndarray) -> None: ...

    def passes(self, rows: np.ndarray) -> np.ndarray:
        """One filter pass: per row, whether the preemptor passes every filter there."""
        ...

    def failure(self, row: int) -> Status:
        """Why ``row`` failed in the last :meth:`passes`."""
        ...


class _Checker:
    def __init__(
        self,
        handle: Handle,
        pod: Pod,
        cluster: ClusterReader,
        nominated: NominatedPods | None,
        res: Residents,
    ) -> None:
        self.handle, self.pod, self.cluster, self.nominated, self.res = handle, pod, cluster, nominated, res
        self._last: CycleResult | None = None

    def passes(self, rows: np.ndarray) -> np.ndarray:
        # What dry_run_filters runs, without its batching verdict (asked once, before the dry run).
        result = self.handle.run_filter_plugins_with_nominated_pods(self.pod, self.cluster, self.nominated)
        self._last = result
        if result.status.code == Code.ERROR or result.feasible is None:
            return np.zeros(rows.shape[0], dtype=np.bool_)
        return result.feasible[rows]

    def failure(self, row: int) -> Status:
        result = self._last
        assert result is not None
        if result.status.code == Code.ERROR:
            return result.status
        found = result.first_failure(row)
        if found is None:
            return Status(Code.UNSCHEDULABLE)
        plugin, reasons, code = found
        return Status(code, tuple(reasons), plugin)


class ArrayProbe(_Checker):
    """Dry runs that adjust only the per-row accounting; exact for row-local filters, and for the
    others as long as the pods moved are not relevant to them (:meth:`clean`)."""

    def __init__(
        self,
        handle: Handle,
        pod: Pod,
        cluster: ClusterReader,
        nominated: NominatedPods | None,
        res: Residents,
    ) -> None:
        super().__init__(handle, pod, cluster, nominated, res)
        self.ported: np.ndarray | None
        if res.accounting is not None:
            # The columns some pod asks a non-zero amount of: adding the others' zeros is a no-op.
            requests, nonzero, ported = res.accounting
            used = np.flatnonzero(requests.any(axis=0)).tolist()
            self.columns = [(c, np.ascontiguousarray(requests[:, c])) for c in used]
            self.nonzero = [np.ascontiguousarray(nonzero[:, 0]), np.ascontiguousarray(nonzero[:, 1])]
            self.any_ports = bool(ported.any())
            self.ported = ported if self.any_ports else None
        else:
            pods = res.pods
            self.columns = request_columns(pods, cluster, cluster.nodes.requested.shape[1])
            self.nonzero = [
                np.array([p.nonzero_cpu for p in pods], dtype=np.int64),
                np.array([p.nonzero_memory for p in pods], dtype=np.int64),
            ]
            ports = [p.host_ports for p in pods]
            self.any_ports = any(ports)
            self.ported = np.array([bool(hp) for hp in ports], dtype=np.bool_) if self.any_ports else None
        self._guard = handle.batch_guard(pod, cluster)
        self._rows: RowAdjustment | None = None

    @property
    def guard(self) -> Callable[[Pod], bool] | None:
        """``Handle.batch_guard`` for this pod: which pods :meth:`clean` refuses (None: none)."""
        return self._guard

    def clean(self, work: NodeWork) -> bool:
        """Whether the node's potential victims can all be moved in the row accounting only.

        True when every filter that ran is row-local, or when no non-row-local one finds any of
        them relevant (``Handle.batch_guard``): those filters read label sets and the affinity
        index, which this probe leaves alone, and would not count these pods anyway.
        """
        guard = self._guard
        if guard is None:
            return True
        entries = self.res.entries
        return not any(guard(entries[i].pod) for i in work.potential)

    def node_by_node(self) -> CacheProbe:
        """A probe over the same residents that changes the cache itself, for the nodes not clean."""
        return CacheProbe(self.handle, self.pod, self.cluster, self.nominated, self.res)

    def _moves(self) -> RowAdjustment:
        """The residents' amounts as a handle on the cache's what-if overlay, made on first use."""
        moves = self._rows
        if moves is None:
            res = self.res
            ports = None
            if self.ported is not None:
                entries = res.entries
                ports = {i: entries[i].pod.host_ports for i in np.flatnonzero(self.ported).tolist()}
            moves = self._rows = self.cluster.what_if().rows(
                res.rows, requests=self.columns, nonzero=self.nonzero, ports=ports, grouped=res.grouped
            )
        return moves

    def remove(self, idx: np.ndarray) -> None:
        self._moves().take(idx)

    def restore(self, idx: np.ndarray) -> None:
        self._moves().give(idx)


class CacheProbe(_Checker):
    """Dry runs through the cache's pod bookkeeping: exact for every filter, one node at a time."""

    def __init__(
        self,
        handle: Handle,
        pod: Pod,
        cluster: ClusterReader,
        nominated: NominatedPods | None,
        res: Residents,
    ) -> None:
        super().__init__(handle, pod, cluster, nominated, res)
        self._pods = cluster.what_if().pods(res.entries)

    def remove(self, idx: np.ndarray) -> None:
        self._pods.take(idx)

    def restore(self, idx: np.ndarray) -> None:
        self._pods.give(idx)


def _ints(values: Sequence[int] | chain[int]) -> np.ndarray:
    return np.fromiter(values, dtype=np.intp)


def select_victims(probe: Probe, works: Sequence[NodeWork], n_residents: int) -> None:
    """Run the dry run on every node of ``works``; fills in victims or status.

    With an :class:`ArrayProbe`, the nodes whose potential victims it may move
    (:meth:`ArrayProbe.clean`) run together and the others one at a time through the cache
    (:class:`CacheProbe`). Each dry run starts from and leaves the cache as it was, so the order
    does not matter and every node gets what its own sequential loop gives.
    """
    if isinstance(probe, ArrayProbe):
        clean: list[NodeWork] = []
        dirty: list[NodeWork] = []
        for w in works:
            (clean if probe.clean(w) else dirty).append(w)
        if clean:
            _select_together(probe, clean, n_residents)
        if dirty:
            single = probe.node_by_node()
            for w in dirty:
                _select_together(single, [w], n_residents)
        return
    _select_together(probe, works, n_residents)


def _select_together(probe: Probe, works: Sequence[NodeWork], n_residents: int) -> None:
    """Run the dry run on every node of ``works`` together.

    Step 0 takes out every potential victim of every node and checks all nodes in one filter
    pass; step *j* puts back the *j*-th pod of each node's reprieve order and checks those nodes
    in one pass. With a row-local probe (or a single node) this is exactly each node's own
    sequential loop.
    """
    removed = np.zeros(n_residents, dtype=np.bool_)  # what is out now, to put back at the end

    def take(idx: np.ndarray) -> None:
        if idx.size:
            probe.remove(idx)
            removed[idx] = True

    def give(idx: np.ndarray) -> None:
        if idx.size:
            probe.restore(idx)
            removed[idx] = False

    try:
        take(_ints(chain.from_iterable(w.potential for w in works)))
        ok = probe.passes(_ints([w.row for w in works])).tolist()
        live: list[NodeWork] = []
        for w, good in zip(works, ok, strict=True):
            if good:
                live.append(w)
            else:
                w.status = probe.failure(w.row)
        step = 0
        while live:
            batch = [w for w in live if step < len(w.order)]
            if not batch:
                break
            items = _ints([w.order[step] for w in batch])
            give(items)
            bad = np.flatnonzero(~probe.passes(_ints([w.row for w in batch])))
            if bad.size:
                take(items[bad])
                for b in bad.tolist():
                    w = batch[b]
                    k = int(items[b])
                    w.victims.append(k)
                    if k in w.violating:
                        w.num_pdb_violations += 1
            step += 1
        for w in live:
            if not w.victims:
                w.status = Status(Code.ERROR, (f'expected at least one victim pod on node "{w.node}"',))
    finally:
        give(np.flatnonzero(removed))
