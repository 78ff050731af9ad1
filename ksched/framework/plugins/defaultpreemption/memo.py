"""Every pod of a set of nodes as arrays, and a memo of them per node row across PostFilter calls.

Why: a batched dry run (:func:`.batch.gather`) reads the pods of ``numCandidates`` nodes (a tenth of
the cluster by default, often thousands of pods) and turns each into numbers: priority, start time,
its place in the node's importance order (the uid breaks ties, so mostly a string sort), requests,
non-zero requests, host ports. That is a dozen passes over Python objects scattered in memory, most
of a PostFilter call. Those numbers depend only on the node's pods, and between two preemptions most
nodes keep the same pods; so :class:`ListingMemo` keeps them per node row, and a call only reads
them again for the rows that changed.

When a row's memo is still exact:

- The node table's ``row_version`` of the row is what it was when the memo was taken. The cache
  bumps it on every pod attached to or detached from a node (``ClusterReader._account``: the pod
  count changes, which a row-local filter reads) and on every node change or row reuse
  (``NodeTable._write`` / ``remove``); it never goes back. So the same version means the same
  :class:`~ksched.cache.cluster.PodEntry` objects on the same node name.
- Each entry still holds the same :class:`~ksched.model.pod.Pod` object (checked by identity on
  every read): ``ClusterReader.add_pod`` replaces ``entry.pod`` without a version bump when the new
  record counts the same (a bind confirmed, a status written), and a status may bring a start
  time. Pods are immutable, so the same object means the same numbers.

A dry run bumps the versions of its rows itself: the cache's what-if overlay, through which
:class:`.dryrun.ArrayProbe` and the nominated pods' pass change the counts, bumps every row it
moves and again when it puts it back. :meth:`ListingMemo.settle` re-takes those
versions afterwards when nothing in the run attached or detached entries for good: the array probe
moves only the row accounting, and the nominated pass's ``assume`` / ``forget`` of a nominated pod
leaves every other entry as it was. A run through :class:`.dryrun.CacheProbe` (which re-adds the
pods as new entries) is not settled, so those rows are read again next time.

Everything else (the ``assumed`` flag, label-set ids, the host ports themselves, the row) is read
from the live entries, as before.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ksched.cache.cluster import PodEntry
from ksched.framework.api import ClusterReader
from ksched.framework.plugins.defaultpreemption.dryrun import request_columns
from ksched.framework.plugins.defaultpreemption.pick import start_times
from ksched.model.pod import Pod


@dataclass(slots=True)
class Listing:
    """Every pod of some nodes, node after node (``counts`` per node), each node's pods most
    important first (:func:`.batch.importance_order`)."""

    names: list[str]
    counts: np.ndarray
    entries: list[PodEntry]
    pods: list[Pod]
    priority: np.ndarray
    start: np.ndarray
    """``inf`` when not started (upstream ``GetPodStartTime``)."""
    requests: np.ndarray
    """Per pod, its request per resource column (``NodeTable.requested``'s width)."""
    nonzero: np.ndarray
    """Per pod, its non-zero cpu and memory request."""
    ported: np.ndarray
    """Per pod, whether it holds host ports."""


@dataclass(slots=True)
class _Fresh:
    """A :class:`Listing` as read from the cache, with the entries and pods as object arrays
    (permuted into importance order and stored into the memo's pools without Python loops)."""

    names: list[str]
    counts: np.ndarray
    entries: np.ndarray
    pods: np.ndarray
    priority: np.ndarray
    start: np.ndarray
    requests: np.ndarray
    nonzero: np.ndarray
    ported: np.ndarray

    def listing(self) -> Listing:
        return Listing(
            self.names,
            self.counts,
            self.entries.tolist(),
            self.pods.tolist(),
            self.priority,
            self.start,
            self.requests,
            self.nonzero,
            self.ported,
        )


def read_nodes(cluster: ClusterReader, rows: np.ndarray) -> Listing:
    """The :class:`Listing` of the nodes at ``rows``, read from the cache."""
    return _read(cluster, rows).listing()


def _read(cluster: ClusterReader, rows: np.ndarray) -> _Fresh:
    node_at = cluster.nodes.node
    names = [node_at(r).name for r in rows.tolist()]
    entries, counts = cluster.entries_on_nodes(names)
    pods = [e.pod for e in entries]
    m = len(pods)
    count = np.array(counts, dtype=np.intp)
    node = np.repeat(np.arange(len(names), dtype=np.intp), count)
    priority = np.array([p.priority for p in pods], dtype=np.int64)
    start = start_times(pods)
    perm = importance_order(node, priority, start, pods)
    width = cluster.nodes.requested.shape[1]
    requests = np.zeros((m, width), dtype=np.int64)
    for col, values in request_columns(pods, cluster, width):
        requests[:, col] = values
    nonzero = np.stack(
        (
            np.array([p.nonzero_cpu for p in pods], dtype=np.int64),
            np.array([p.nonzero_memory for p in pods], dtype=np.int64),
        ),
        axis=1,
    )
    if any(map(_HOST_PORTS, pods)):
        ported = np.array([bool(p.host_ports) for p in pods], dtype=np.bool_)[perm]
    else:
        ported = np.zeros(m, dtype=np.bool_)
    return _Fresh(
        names,
        count,
        _objects(entries)[perm],
        _objects(pods)[perm],
        priority[perm],
        start[perm],
        requests[perm],
        nonzero[perm],
        ported,
    )


def importance_order(
    node: np.ndarray, priority: np.ndarray, start: np.ndarray, pods: list[Pod]
) -> np.ndarray:
    """The permutation that sorts each node's pods most important first (higher priority, then
    earlier start, then uid), nodes (``node`` non-decreasing) kept in place."""
    m = node.size
    if m < 2:
        return np.arange(m, dtype=np.intp)
    # (node, -priority) as one int64: priorities are int32, so 2**31 - 1 - priority fits 32 bits.
    major = node.astype(np.int64) * (1 << 32) + ((1 << 31) - 1 - priority)
    perm = np.lexsort((start, major))
    sm, ss = major[perm], start[perm]
    tied = (sm[1:] == sm[:-1]) & (ss[1:] == ss[:-1])
    if tied.any():
        uids = [p.uid for p in pods]
        if "\x00" in "".join(uids):
            # numpy's fixed-width strings drop trailing NULs; Python's order is the rule.
            keys = list(zip(major.tolist(), start.tolist(), uids, strict=True))
            perm = np.array(sorted(range(m), key=keys.__getitem__), dtype=np.intp)
        else:
            perm = np.lexsort((np.array(uids), start, major))
    return perm


_POD = operator.attrgetter("pod")
_HOST_PORTS = operator.attrgetter("host_ports")


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``starts[j] .. starts[j] + lengths[j]`` for every ``j``, one after the other."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.intp)
    offsets = np.cumsum(lengths) - lengths
    return np.arange(total, dtype=np.intp) + np.repeat(starts - offsets, lengths)


def _objects(values: Sequence[object]) -> np.ndarray:
    """An object array holding exactly these objects (``fromiter`` never unpacks sequences)."""
    return np.fromiter(values, dtype=object, count=len(values))


class ListingMemo:
    """Per node row, its :class:`Listing`, kept while it stays exact (see the module docstring).

    Segments live in flat pools (one per field), so a call's listing is one fancy index per
    field; a re-read row gets a new segment and the old one is garbage until the pools are
    compacted, which happens when they are full.
    """

    def __init__(self, *, min_pool: int = 4096) -> None:
        self._min_pool = min_pool
        """Smallest pool capacity (tests make it tiny, so that compaction runs often)."""
        self._reset(None)

    def _reset(self, cluster: ClusterReader | None) -> None:
        """Forget everything: another cache, or new resource columns."""
        self._cluster = cluster
        self._nodes = cluster.nodes if cluster is not None else None
        self._width = cluster.nodes.requested.shape[1] if cluster is not None else 0
        self._version = np.zeros(0, dtype=np.int64)
        """Per row: the ``row_version`` the segment is exact for; -1 when there is none."""
        self._first = np.zeros(0, dtype=np.intp)
        self._count = np.zeros(0, dtype=np.intp)
        self._names = np.empty(0, dtype=object)
        self._size = 0
        self._entries = np.empty(0, dtype=object)
        self._pods = np.empty(0, dtype=object)
        self._priority = np.zeros(0, dtype=np.int64)
        self._start = np.zeros(0, dtype=np.float64)
        self._requests = np.zeros((0, self._width), dtype=np.int64)
        self._nonzero = np.zeros((0, 2), dtype=np.int64)
        self._ported = np.zeros(0, dtype=np.bool_)
        self._read: tuple[np.ndarray, np.ndarray] | None = None

    def invalidate(self) -> None:
        """Hold no row any more: every next read goes to the cache (the pools stay, and their
        segments are garbage until the next compaction)."""
        self._version[:] = -1
        self._read = None

    def _fit_rows(self, capacity: int) -> None:
        have = self._version.size
        if capacity <= have:
            return
        grow = capacity - have
        self._version = np.concatenate((self._version, np.full(grow, -1, dtype=np.int64)))
        self._first = np.concatenate((self._first, np.zeros(grow, dtype=np.intp)))
        self._count = np.concatenate((self._count, np.zeros(grow, dtype=np.intp)))
        self._names = np.concatenate((self._names, np.empty(grow, dtype=object)))

    def listing(self, cluster: ClusterReader, rows: np.ndarray) -> Listing:
        """:func:`read_nodes` of ``rows`` (distinct rows of existing nodes), from the memo where
        it is exact, from the cache elsewhere (and memoized)."""
        nodes = cluster.nodes
        width = nodes.requested.shape[1]
        if cluster is not self._cluster or nodes is not self._nodes or width != self._width:
            self._reset(cluster)
        self._fit_rows(nodes.capacity)
        version = nodes.row_version[rows]
        ok = self._version[rows] == version
        self._read = (rows.copy(), version)
        if ok.all():  # the usual case: one pass over the entries for the identity check
            idx = _ranges(self._first[rows], self._count[rows])
            entries = self._entries[idx].tolist()
            pods = self._pods[idx].tolist()
            if not any(map(operator.is_not, map(_POD, entries), pods)):
                return self._listing(rows, idx, entries, pods)
        if ok.any():
            hit = rows[ok]
            idx = _ranges(self._first[hit], self._count[hit])
            if idx.size:
                now = list(map(_POD, self._entries[idx].tolist()))
                same = np.fromiter(
                    map(operator.is_, now, self._pods[idx].tolist()), dtype=np.bool_, count=idx.size
                )
                if not same.all():
                    owner = np.repeat(np.arange(hit.size, dtype=np.intp), self._count[hit])
                    self._version[hit[np.unique(owner[~same])]] = -1
                    ok = self._version[rows] == version
        miss = rows[~ok]
        if miss.size == rows.size:  # nothing to join: the read is the listing
            fresh = _read(cluster, rows)
            self._store(rows, version, fresh)
            return fresh.listing()
        if miss.size:
            self._store(miss, version[~ok], _read(cluster, miss))
        idx = _ranges(self._first[rows], self._count[rows])
        return self._listing(rows, idx, self._entries[idx].tolist(), self._pods[idx].tolist())

    def _listing(
        self, rows: np.ndarray, idx: np.ndarray, entries: list[PodEntry], pods: list[Pod]
    ) -> Listing:
        """The memoized numbers of ``rows`` (pool slots ``idx``) with these entries and pods."""
        return Listing(
            self._names[rows].tolist(),
            self._count[rows],
            entries,
            pods,
            self._priority[idx],
            self._start[idx],
            self._requests[idx],
            self._nonzero[idx],
            self._ported[idx],
        )

    def settle(self, cluster: ClusterReader, rows: np.ndarray, skip: np.ndarray) -> None:
        """After a dry run over the rows of the last :meth:`listing`: the rows' pods are what the
        memo holds, at the versions the run left them at, except at the positions ``skip`` (the
        nodes that ran through :class:`.dryrun.CacheProbe`, which re-added their pods as new
        entries). Elsewhere only :class:`.dryrun.ArrayProbe` and filter passes ran, which attach
        and detach no entry for good (see the module docstring)."""
        read = self._read
        self._read = None
        if read is None or cluster is not self._cluster or not np.array_equal(read[0], rows):
            return
        keep = np.ones(rows.size, dtype=np.bool_)
        keep[skip] = False
        keep &= self._version[rows] == read[1]
        self._version[rows[keep]] = cluster.nodes.row_version[rows[keep]]

    def _store(self, rows: np.ndarray, versions: np.ndarray, got: _Fresh) -> None:
        m = got.entries.size
        if self._size + m > self._entries.size:
            self._compact(m)
        a, b = self._size, self._size + m
        self._entries[a:b] = got.entries
        self._pods[a:b] = got.pods
        self._priority[a:b] = got.priority
        self._start[a:b] = got.start
        self._requests[a:b] = got.requests
        self._nonzero[a:b] = got.nonzero
        self._ported[a:b] = got.ported
        self._first[rows] = a + (np.cumsum(got.counts) - got.counts)
        self._count[rows] = got.counts
        self._names[rows] = _objects(got.names)
        self._version[rows] = versions
        self._size = b

    def _compact(self, extra: int) -> None:
        """New pools holding the live segments (rows with a version) and room for ``extra``."""
        live = np.flatnonzero(self._version >= 0)
        idx = _ranges(self._first[live], self._count[live])
        capacity = max(2 * (idx.size + extra), self._min_pool)
        old_size = idx.size

        def pool(old: np.ndarray) -> np.ndarray:
            new = np.zeros((capacity, *old.shape[1:]), dtype=old.dtype)
            new[:old_size] = old[idx]
            return new

        self._entries = pool(self._entries)
        self._pods = pool(self._pods)
        self._priority = pool(self._priority)
        self._start = pool(self._start)
        self._requests = pool(self._requests)
        self._nonzero = pool(self._nonzero)
        self._ported = pool(self._ported)
        counts = self._count[live]
        self._first[live] = np.cumsum(counts) - counts
        self._size = old_size
