"""The what-if overlay: the cluster as it would be with some pods added or taken away, for a while.

Preemption's dry run asks "would the pod fit if these pods were gone?" and the nominated-pods pass
"would it fit if those pods were here?". Both change what the cache counts, run filters, and put
everything back. This module is the one way to do that; nothing else writes the node table's
arrays besides the cache's own mutators (node changes, assume / confirm / forget), and plugins only
ever see read-only arrays (:mod:`ksched.cache.node_table`).

An overlay (:meth:`ClusterCache.what_if <ksched.cache.cluster.ClusterCache.what_if>`) changes the
cache in three ways, each undone exactly when it ends:

- ``add=[(pod, node_name), ...]``: the pods are assumed on those nodes (every index counts them:
  resources, ports, label sets, inter-pod affinity) and forgotten at the end.
- ``remove=[uid, ...]``: those cached pods are taken out the same way and put back at the end.
- handles for changes that come and go inside the overlay, many times, by index:
  :meth:`WhatIf.rows` (a :class:`RowAdjustment`: per-item amounts of requests, non-zero requests,
  pods and host ports on rows, moved with vectorized integer adds; what row-local filters read)
  and :meth:`WhatIf.pods` (a :class:`PodMoves`: cached pods taken out and put back through the
  cache's bookkeeping, for filters that read more than a row). ``take(idx)`` takes the items'
  amounts away from their rows, ``give(idx)`` adds them.

Lifetime: ``with cache.what_if(...) as w:`` is open for the block and, at its end, puts back what
its handles still hold, then undoes ``remove`` and ``add``. An overlay used without ``with``
(a dry-run probe that takes and gives as it goes) opens at its first move and closes when every
item is back where it started (counted, not tallied per item: give back only what was taken, take
back only what was given). Overlays nest (a dry run's filter pass runs the nominated-pods
pass): only the innermost open one may move, and it must close before the one around it moves
again (:class:`~ksched.errors.OverlayError` otherwise).

Counters: every move bumps the ``row_version`` of the rows it touches, and so does putting back;
the version never goes back. A memo keyed on row versions (the nominated pass's verdicts,
preemption's per-row listings) thus never mistakes the state inside an overlay for the one outside
it. ``generation`` (node changes) is left alone: an overlay changes no node.

Debug check (``KSCHED_CHECK_OVERLAY=1`` or ``ClusterCache(check_overlays=True)``): an overlay
copies the node table's arrays, the host-port counts, the pods' placement and the volume index's
state when it opens and compares when it closes; a difference raises
:class:`~ksched.errors.OverlayNotRestored` naming the array and the first differing row.
``row_version`` must only have grown; resource columns added meanwhile must be zero.

Called only from the scheduling thread, like every cache mutator.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ksched.cache.node_table import ARRAYS
from ksched.errors import OverlayError, OverlayNotRestored
from ksched.model.pod import HostPort, Pod

if TYPE_CHECKING:
    from types import TracebackType

    from ksched.cache.cluster import ClusterCache, PodEntry


class WhatIf:
    """One overlay over a :class:`~ksched.cache.cluster.ClusterCache` (see the module docstring)."""

    def __init__(
        self,
        cache: ClusterCache,
        stack: list[WhatIf],
        *,
        add: Sequence[tuple[Pod, str]],
        remove: Sequence[str],
        check: bool,
    ) -> None:
        self._cache = cache
        self._stack = stack
        """The cache's open overlays, innermost last."""
        self._add = list(add)
        self._remove = list(remove)
        self._check = check
        self._scoped = False
        self._open = False
        self._busy = 0
        """Handles with items away from where they started."""
        self._handles: list[RowAdjustment | PodMoves] = []
        self._added: list[str] = []
        self._removed: list[PodEntry] = []
        self._before: _Snapshot | None = None

    # ------------------------------------------------------------------ handles
    def rows(
        self,
        rows: np.ndarray,
        *,
        requests: Sequence[tuple[int, np.ndarray]],
        nonzero: Sequence[np.ndarray],
        counts: np.ndarray | None = None,
        ports: Mapping[int, tuple[HostPort, ...]] | None = None,
        grouped: bool = False,
    ) -> RowAdjustment:
        """A handle on per-item amounts counted on ``rows`` (one row per item).

        ``requests``: (resource column, amount per item) for the columns some item asks for;
        ``nonzero``: non-zero cpu and memory per item; ``counts``: pods per item (None: one each);
        ``ports``: host ports by item index, for the items that hold some. ``grouped`` promises
        that each row's items are contiguous and no two runs share a row (a table built node by
        node): then a sorted index set is summed per row with ``np.add.reduceat`` and added once
        per row, instead of the slower ``np.add.at``.
        """
        handle = RowAdjustment(self, rows, requests, nonzero, counts, ports, grouped)
        self._handles.append(handle)
        return handle

    def pods(self, entries: Sequence[PodEntry]) -> PodMoves:
        """A handle on cached pods (by index into ``entries``) taken out and put back through the
        cache's own bookkeeping, so that every index sees them go."""
        handle = PodMoves(self, entries)
        self._handles.append(handle)
        return handle

    # ------------------------------------------------------------------ scope
    def __enter__(self) -> WhatIf:
        if self._open:
            raise OverlayError("a what-if overlay was entered while it is open")
        self._begin()
        self._scoped = True
        cache = self._cache
        try:
            for uid in self._remove:
                entry = cache.pods[uid]
                cache.remove_pod(uid)
                self._removed.append(entry)
            for pod, node_name in self._add:
                cache.assume(pod, node_name)
                self._added.append(pod.uid)
        except BaseException:
            self._close()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._close()

    def _close(self) -> None:
        """Put back what the handles hold, undo ``remove`` and ``add`` (still scoped, so that
        handles coming home do not close the overlay half way), then close."""
        cache = self._cache
        try:
            for handle in reversed(self._handles):
                handle.put_back()
            while self._added:
                cache.forget(self._added.pop())
            while self._removed:
                _readd(cache, self._removed.pop())
        finally:
            self._scoped = False
            if self._open:
                self._end()

    def _begin(self) -> None:
        self._stack.append(self)
        self._open = True
        if self._check:
            self._before = _Snapshot(self._cache)

    def _end(self) -> None:
        if not self._stack or self._stack[-1] is not self:
            raise OverlayError("a what-if overlay was closed while one opened after it is still open")
        self._stack.pop()
        self._open = False
        before, self._before = self._before, None
        if before is not None:
            before.compare(self._cache)

    # ------------------------------------------------------------------ bookkeeping for handles
    def _moving(self) -> None:
        """A handle is about to move items: open the overlay if it is not, refuse if it is not
        the innermost open one."""
        if not self._open:
            self._begin()
        elif self._stack[-1] is not self:
            raise OverlayError("a what-if overlay moved items while one opened after it is still open")

    def _became(self, busy: bool) -> None:
        """A handle went from all items home to some away (``busy``) or back; an overlay used
        without ``with`` closes when all of its handles are home."""
        self._busy += 1 if busy else -1
        if not busy and self._busy == 0 and not self._scoped and self._open:
            self._end()


class _Moves:
    """What both handles keep: how many items are away from where they started (``take``: one
    less, ``give``: one more) and, while any are, the moves made, so that the overlay knows when
    everything is back and can put back the rest.

    The count alone says when all is back, which is exact as long as an item is only given back
    after it was taken (or taken back after it was given), the way a dry run moves them; the log
    is replayed only to put back what a ``with`` block left out. Keeping a per-item tally on
    every move instead would cost a fancy-indexed add per move.
    """

    __slots__ = ("_balance", "_log", "_n", "_overlay")

    def __init__(self, overlay: WhatIf, n: int) -> None:
        self._overlay = overlay
        self._n = n
        self._balance = 0
        self._log: list[tuple[np.ndarray, int]] = []
        """The moves since the balance was last zero (empty: nothing is away)."""

    def take(self, idx: np.ndarray) -> None:
        """Take the items ``idx`` (distinct indices) away from their rows."""
        if idx.size:
            self._overlay._moving()
            self._move(idx, -1)
            self._moved(idx, -1)

    def give(self, idx: np.ndarray) -> None:
        """Add the items ``idx`` (distinct indices) to their rows."""
        if idx.size:
            self._overlay._moving()
            self._move(idx, +1)
            self._moved(idx, +1)

    def _moved(self, idx: np.ndarray, sign: int) -> None:
        was = self._balance
        self._balance = was + sign * int(idx.size)
        if self._balance == 0:
            self._log.clear()
            self._overlay._became(False)
            return
        self._log.append((idx, sign))
        if was == 0:
            self._overlay._became(True)

    def put_back(self) -> None:
        """Return every item to where it started."""
        if not self._log:
            return
        net = np.zeros(self._n, dtype=np.int64)
        for idx, sign in self._log:
            net[idx] += sign
        self._overlay._moving()
        while True:
            out, back = np.flatnonzero(net > 0), np.flatnonzero(net < 0)
            if out.size == 0 and back.size == 0:
                break
            if out.size:
                self._move(out, -1)
                net[out] -= 1
            if back.size:
                self._move(back, +1)
                net[back] += 1
        self._log.clear()
        self._balance = 0
        self._overlay._became(False)

    def _move(self, idx: np.ndarray, sign: int) -> None:
        raise NotImplementedError


class RowAdjustment(_Moves):
    """Per-item amounts on rows, moved by index (:meth:`WhatIf.rows`): requests, non-zero
    requests, pod counts and host ports, with vectorized integer adds (exact in both directions)."""

    __slots__ = ("_counts", "_grouped", "_nonzero", "_ported", "_ports", "_requests", "_rows")

    def __init__(
        self,
        overlay: WhatIf,
        rows: np.ndarray,
        requests: Sequence[tuple[int, np.ndarray]],
        nonzero: Sequence[np.ndarray],
        counts: np.ndarray | None,
        ports: Mapping[int, tuple[HostPort, ...]] | None,
        grouped: bool,
    ) -> None:
        super().__init__(overlay, int(rows.size))
        self._rows = rows
        self._requests = list(requests)
        self._nonzero = list(nonzero)
        self._counts = counts
        self._grouped = grouped
        self._ports = dict(ports) if ports else None
        self._ported: np.ndarray | None = None
        if self._ports:
            self._ported = np.zeros(rows.size, dtype=np.bool_)
            self._ported[list(self._ports)] = True

    def _move(self, idx: np.ndarray, sign: int) -> None:
        table = self._overlay._cache.nodes
        rows = self._rows[idx]
        if self._grouped and (rows.size < 2 or bool((idx[1:] > idx[:-1]).all())):
            # Same-row items are adjacent and runs have distinct rows: sum each run, then one
            # fancy-indexed add per column (exact integer sums, as np.add.at's).
            whole = idx.size == self._rows.size  # then idx is 0..n-1, sorted
            starts: np.ndarray | None = None
            if rows.size > 1:
                cut = np.flatnonzero(rows[1:] != rows[:-1]) + 1
                if cut.size + 1 < rows.size:
                    starts = np.concatenate((np.zeros(1, dtype=np.intp), cut))
            counts: np.ndarray | int = 1

            def pick(values: np.ndarray) -> np.ndarray:
                v = values if whole else values[idx]
                return v if starts is None else np.add.reduceat(v, starts)

            if self._counts is not None:
                counts = pick(self._counts)
            elif starts is not None:
                counts = np.diff(np.append(starts, rows.size))
            if starts is not None:
                rows = rows[starts]
            columns = [(col, pick(values)) for col, values in self._requests]
            table.shift_rows(rows, columns, [pick(v) for v in self._nonzero], counts, sign, distinct=True)
        else:
            columns = [(col, values[idx]) for col, values in self._requests]
            counts = 1 if self._counts is None else self._counts[idx]
            nonzero = [v[idx] for v in self._nonzero]
            table.shift_rows(rows, columns, nonzero, counts, sign, distinct=False)
        if self._ported is not None:
            assert self._ports is not None
            index = self._overlay._cache.ports
            all_rows = self._rows
            for i in idx[self._ported[idx]].tolist():
                index.add(int(all_rows[i]), self._ports[i], sign)


class PodMoves(_Moves):
    """Cached pods taken out and put back through the cache's bookkeeping (:meth:`WhatIf.pods`);
    exact for every filter, at the cost of a cache update per pod."""

    __slots__ = ("_entries",)

    def __init__(self, overlay: WhatIf, entries: Sequence[PodEntry]) -> None:
        super().__init__(overlay, len(entries))
        self._entries = entries

    def _move(self, idx: np.ndarray, sign: int) -> None:
        cache = self._overlay._cache
        entries = self._entries
        if sign < 0:
            for i in idx.tolist():
                cache.remove_pod(entries[i].pod.uid)
        else:
            for i in idx.tolist():
                _readd(cache, entries[i])


def _readd(cache: ClusterCache, entry: PodEntry) -> None:
    """Count a pod taken out of the cache again, as it was: assumed, or bound."""
    if entry.assumed:
        cache.assume(entry.pod, entry.node_name)
    else:
        cache.add_pod(entry.pod)


class _Snapshot:
    """What the debug check compares: the node table's arrays, host-port counts, pod placement,
    the volume index."""

    __slots__ = ("arrays", "n_rows", "placed", "ports", "volumes")

    def __init__(self, cache: ClusterCache) -> None:
        nodes = cache.nodes
        n = self.n_rows = nodes.n_rows
        self.arrays = {name: getattr(nodes, name)[:n].copy() for name in ARRAYS}
        self.ports = cache.ports.counts()
        self.placed = {uid: (e.pod, e.node_name, e.row, e.assumed) for uid, e in cache.pods.items()}
        self.volumes = cache.volume_index.state()

    def compare(self, cache: ClusterCache) -> None:
        nodes = cache.nodes
        n = self.n_rows
        if nodes.n_rows != n:
            raise OverlayNotRestored("NodeTable.n_rows", -1, f"{nodes.n_rows} rows, was {n}")
        for name, old in self.arrays.items():
            now = getattr(nodes, name)[:n]
            if old.ndim == 2 and now.shape[1] > old.shape[1]:  # columns added meanwhile
                extra = now[:, old.shape[1] :]
                bad = np.flatnonzero(extra.any(axis=1))
                if bad.size:
                    r = int(bad[0])
                    raise OverlayNotRestored(f"NodeTable.{name}", r, f"new columns {extra[r].tolist()}")
                now = now[:, : old.shape[1]]
            differs = now < old if name == "row_version" else now != old
            if differs.ndim == 2:
                differs = differs.any(axis=1)
            bad = np.flatnonzero(differs)
            if bad.size:
                r = int(bad[0])
                node = nodes.nodes[r]
                label = f" (node {node.name})" if node is not None else ""
                was = old[r].tolist()
                raise OverlayNotRestored(f"NodeTable.{name}", r, f"{now[r].tolist()}, was {was}{label}")
        if cache.ports.counts() != self.ports:
            raise OverlayNotRestored("PortIndex", -1, "host-port counts differ")
        if cache.volume_index.state() != self.volumes:
            raise OverlayNotRestored("VolumeIndex", -1, "attached volumes, disks or claim references differ")
        placed = {uid: (e.pod, e.node_name, e.row, e.assumed) for uid, e in cache.pods.items()}
        if placed.keys() != self.placed.keys():
            extra = sorted(placed.keys() ^ self.placed.keys())[:3]
            raise OverlayNotRestored("ClusterCache.pods", -1, f"pods {extra} added or gone")
        for uid, was in self.placed.items():
            now_ = placed[uid]
            if now_[0] is not was[0] or now_[1:] != was[1:]:
                raise OverlayNotRestored("ClusterCache.pods", was[2], f"pod {uid} not as it was")


__all__ = ["PodMoves", "RowAdjustment", "WhatIf"]
