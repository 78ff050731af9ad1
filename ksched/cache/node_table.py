"""NodeTable: the cluster's nodes as a structure of numpy arrays, one row per node.

Rows are stable while a node exists; a removed node's row goes to a free list and is reused by the
next node added, after being cleared. ``n_rows`` is the high-water mark: plugins compute over rows
``[0, n_rows)`` and the framework masks out rows whose ``valid`` flag is off, so no plugin needs to
know about holes.

Columns:

- ``allocatable[row, col]`` / ``requested[row, col]``: canonical integer units per resource column
  (:mod:`ksched.model.resources`); ``requested`` is the sum of actual requests of pods on the node,
  assumed ones included.
- ``nonzero_requested[row, 0|1]``: cpu and memory with upstream's 100m / 200Mi defaults, for scoring.
- ``allowed_pods`` / ``pod_count``: pod capacity and pods on the node.
- ``taint_bits[row, word]``: bitset of interned taint ids (see :meth:`taint_mask`).
- label columns: for every label key that some plugin asked for, an int32 column of interned value
  ids (-1 when the node lacks the key), built on first use and kept up to date on node changes.

Every mutator is called only from the scheduling thread (the single writer); readers in a cycle see
arrays that cannot change under them, so there are no snapshot copies.

Read-only to everyone else: each array the table hands out (the attributes above, label columns,
parsed integer labels) is a view with ``writeable=False`` over an array only the table writes
(its ``_``-prefixed twin). A plugin that assigns into one gets ``ValueError: assignment destination
is read-only`` instead of corrupting the cache for every later pod. Not guaranteed: numpy's
``ufunc.at`` (``np.add.at``) ignores the flag, and a view's ``base`` is writable; the what-if
overlay's debug check catches such writes made while an overlay is open. The views are made once per
reallocation (growing rows or columns), so reading costs what it did. The table's own mutators
write the twins: node changes here, pod accounting (:meth:`count_pod`) for the cache, and
:meth:`shift_rows` for the cache's what-if overlay (:mod:`ksched.cache.what_if`), which is how a
dry run changes the accounting for a while.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from ksched.cache.interning import Interner
from ksched.cache.row_journal import RowJournal
from ksched.model.node import Node
from ksched.model.pod import Pod
from ksched.model.resources import ResourceColumns
from ksched.model.selectors import Taint, parse_go_int64

HARD_TAINT_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
_INITIAL_ROWS = 64
_INITIAL_COLS = 8
_MATRICES = ("allocatable", "requested", "nonzero_requested", "taint_bits")
_VECTORS = ("allowed_pods", "pod_count", "valid", "unschedulable", "row_version")
ARRAYS: tuple[str, ...] = _MATRICES + _VECTORS
"""The per-row arrays, by attribute name: each is a read-only view of the table's ``_`` twin."""


def read_only(a: np.ndarray) -> np.ndarray:
    """A view of ``a`` that refuses writes (the memory stays shared)."""
    v = a.view()
    v.flags.writeable = False
    return v


class NodeTable:
    """Rows of node data in numpy arrays, with spare capacity that grows by doubling."""

    allocatable: np.ndarray
    requested: np.ndarray
    nonzero_requested: np.ndarray
    taint_bits: np.ndarray
    allowed_pods: np.ndarray
    pod_count: np.ndarray
    valid: np.ndarray
    unschedulable: np.ndarray
    row_version: np.ndarray
    """Bumped whenever anything a row-local filter reads on a row changes: the node itself, or
    the pods counted there (requests, pod count, host ports), for good or in a what-if overlay.
    What was computed from a few rows stays true while their versions stay the same."""
    _allocatable: np.ndarray
    _requested: np.ndarray
    _nonzero_requested: np.ndarray
    _taint_bits: np.ndarray
    _allowed_pods: np.ndarray
    _pod_count: np.ndarray
    _valid: np.ndarray
    _unschedulable: np.ndarray
    _row_version: np.ndarray

    def __init__(self, resources: ResourceColumns, capacity: int = _INITIAL_ROWS) -> None:
        self.resources = resources
        self.capacity = max(capacity, 1)
        cols = max(_INITIAL_COLS, len(resources))
        self._own("allocatable", np.zeros((self.capacity, cols), dtype=np.int64))
        self._own("requested", np.zeros((self.capacity, cols), dtype=np.int64))
        self._own("nonzero_requested", np.zeros((self.capacity, 2), dtype=np.int64))
        self._own("allowed_pods", np.zeros(self.capacity, dtype=np.int64))
        self._own("pod_count", np.zeros(self.capacity, dtype=np.int64))
        self._own("valid", np.zeros(self.capacity, dtype=np.bool_))
        self._own("unschedulable", np.zeros(self.capacity, dtype=np.bool_))
        self._own("taint_bits", np.zeros((self.capacity, 1), dtype=np.uint64))
        self._own("row_version", np.zeros(self.capacity, dtype=np.int64))
        self.journal = RowJournal()
        """Which rows' versions moved, for readers that must not compare every row."""
        self.n_rows = 0
        self.nodes: list[Node | None] = []
        self.row_of: dict[str, int] = {}
        self._free: list[int] = []
        self.label_values: Interner[str] = Interner()
        self._label_columns: dict[str, np.ndarray] = {}
        self._label_views: dict[str, np.ndarray] = {}
        """Read-only views of :attr:`_label_columns`, what :meth:`label_column` slices."""
        self.taints: Interner[Taint] = Interner()
        self._taint_users = np.zeros(0, dtype=np.int64)
        self.unschedulable_count = 0
        self.generation = 0
        """Bumped on every node change; derived views (integer label columns) key on it."""
        self._int_label_cache: dict[str, tuple[int, np.ndarray, np.ndarray]] = {}

    def _own(self, name: str, arr: np.ndarray) -> None:
        """Make ``arr`` the array behind attribute ``name``: kept writable as ``_name``, handed
        out read-only as ``name``."""
        setattr(self, "_" + name, arr)
        setattr(self, name, read_only(arr))

    # ------------------------------------------------------------------ sizes
    def __len__(self) -> int:
        return len(self.row_of)

    @property
    def n_columns(self) -> int:
        return len(self.resources)

    def rows(self) -> np.ndarray:
        """Rows of the nodes that exist, in row order."""
        return np.flatnonzero(self.valid[: self.n_rows])

    def _grow_rows(self) -> None:
        new = self.capacity * 2
        for name in _MATRICES:
            old = getattr(self, "_" + name)
            arr = np.zeros((new, old.shape[1]), dtype=old.dtype)
            arr[: self.capacity] = old
            self._own(name, arr)
        for name in _VECTORS:
            old = getattr(self, "_" + name)
            arr = np.zeros(new, dtype=old.dtype)
            arr[: self.capacity] = old
            self._own(name, arr)
        for key, col in self._label_columns.items():
            arr = np.full(new, -1, dtype=np.int32)
            arr[: self.capacity] = col
            self._label_columns[key] = arr
            self._label_views[key] = read_only(arr)
        self.capacity = new

    # ------------------------------------------------------------------ pod accounting
    def count_pod(self, row: int, pod: Pod, sign: int) -> None:
        """Add (``sign=1``) or take away (``-1``) ``pod``'s requests, non-zero requests and one
        pod on ``row``, and bump the row's version. The cache calls it as pods attach and detach;
        integer adds, so ``+1`` then ``-1`` leaves the row exactly as it was."""
        requested = self._requested
        for name, value in pod.requests.items():
            if name == "pods":
                continue
            col = self.resources.column(name)
            if col >= requested.shape[1]:
                self.ensure_columns()
                requested = self._requested
            requested[row, col] += sign * value
        nonzero = self._nonzero_requested
        nonzero[row, 0] += sign * pod.nonzero_cpu
        nonzero[row, 1] += sign * pod.nonzero_memory
        self._pod_count[row] += sign
        self._row_version[row] += 1
        self.journal.add(row)

    def shift_rows(
        self,
        rows: np.ndarray,
        columns: Sequence[tuple[int, np.ndarray]],
        nonzero: Sequence[np.ndarray],
        counts: np.ndarray | int,
        sign: int,
        *,
        distinct: bool,
    ) -> None:
        """Add (``sign=1``) or take away (``-1``) per-row amounts: ``columns`` (resource column,
        amount per entry of ``rows``) to ``requested``, ``nonzero`` (cpu, memory amounts) to
        ``nonzero_requested``, ``counts`` to ``pod_count``; and bump the rows' versions.

        ``distinct``: ``rows`` has no repeats, so one fancy-indexed add per column does it;
        otherwise ``np.add.at`` sums the repeats. Integer arithmetic either way, so adding then
        taking away the same amounts leaves the arrays bit for bit as they were. Called by the
        what-if overlay (:class:`ksched.cache.what_if.RowAdjustment`) only.
        """
        self._row_version[rows] += 1
        self.journal.add_many(rows)
        targets = [(self._requested, col, values) for col, values in columns]
        targets += [(self._nonzero_requested, k, values) for k, values in enumerate(nonzero)]
        if distinct:
            for array, col, values in targets:
                column = array[:, col]  # a view: indexing it by rows alone is about twice as fast
                if sign < 0:
                    column[rows] -= values
                else:
                    column[rows] += values
            if sign < 0:
                self._pod_count[rows] -= counts
            else:
                self._pod_count[rows] += counts
            return
        for array, col, values in targets:
            np.add.at(array[:, col], rows, values if sign > 0 else -values)
        np.add.at(self._pod_count, rows, counts if sign > 0 else -counts)

    def ensure_columns(self) -> None:
        """Widen the resource arrays after new resource columns were registered."""
        need = len(self.resources)
        have = self.allocatable.shape[1]
        if need <= have:
            return
        cols = max(need, have * 2)
        for name in ("allocatable", "requested"):
            old = getattr(self, "_" + name)
            arr = np.zeros((self.capacity, cols), dtype=np.int64)
            arr[:, :have] = old
            self._own(name, arr)

    def _ensure_taint_words(self) -> None:
        words = (len(self.taints) + 63) // 64
        if words > self._taint_bits.shape[1]:
            arr = np.zeros((self.capacity, words), dtype=np.uint64)
            arr[:, : self._taint_bits.shape[1]] = self._taint_bits
            self._own("taint_bits", arr)
        if len(self._taint_users) < len(self.taints):
            users = np.zeros(max(len(self.taints), 2 * len(self._taint_users)), dtype=np.int64)
            users[: len(self._taint_users)] = self._taint_users
            self._taint_users = users

    # ------------------------------------------------------------------ node changes
    def add(self, node: Node) -> int:
        """Add ``node`` (or replace it if the name exists); returns its row."""
        row = self.row_of.get(node.name)
        if row is not None:
            self._write(row, node)
            return row
        if self._free:
            row = self._free.pop()
        else:
            if self.n_rows == self.capacity:
                self._grow_rows()
            row = self.n_rows
            self.n_rows += 1
            self.nodes.append(None)
        self.row_of[node.name] = row
        self._valid[row] = True
        self._write(row, node)
        return row

    def remove(self, name: str) -> int | None:
        """Remove the node; its row is cleared and freed. Pods still on it are the caller's business."""
        row = self.row_of.pop(name, None)
        if row is None:
            return None
        self._clear_node_fields(row)
        self._requested[row] = 0
        self._nonzero_requested[row] = 0
        self._pod_count[row] = 0
        self._valid[row] = False
        self._row_version[row] += 1
        self.journal.add(row)
        self.nodes[row] = None
        self._free.append(row)
        self.generation += 1
        return row

    def _clear_node_fields(self, row: int) -> None:
        old = self.nodes[row]
        if old is not None:
            if old.unschedulable:
                self.unschedulable_count -= 1
            for t in old.taints:
                self._taint_users[self.taints.lookup(t)] -= 1
        self._allocatable[row] = 0
        self._allowed_pods[row] = 0
        self._unschedulable[row] = False
        self._taint_bits[row] = 0
        for col in self._label_columns.values():
            col[row] = -1

    def _write(self, row: int, node: Node) -> None:
        self._clear_node_fields(row)
        for rname, value in node.allocatable.items():
            if rname == "pods":
                self._allowed_pods[row] = value
                continue
            col = self.resources.column(rname)
            if col >= self._allocatable.shape[1]:
                self.ensure_columns()
            self._allocatable[row, col] = value
        self._unschedulable[row] = node.unschedulable
        if node.unschedulable:
            self.unschedulable_count += 1
        if node.taints:
            ids = [self.taints.intern(t) for t in node.taints]
            self._ensure_taint_words()
            for tid in ids:
                self._taint_bits[row, tid >> 6] |= np.uint64(1 << (tid & 63))
                self._taint_users[tid] += 1
        for key, col in self._label_columns.items():
            value = node.labels.get(key)
            col[row] = -1 if value is None else self.label_values.intern(value)
        self.nodes[row] = node
        self._row_version[row] += 1
        self.journal.add(row)
        self.generation += 1

    # ------------------------------------------------------------------ labels
    def label_column(self, key: str) -> np.ndarray:
        """Interned value ids of label ``key`` for rows ``[0, n_rows)``; -1 where absent (read-only)."""
        view = self._label_views.get(key)
        if view is None:
            col = np.full(self.capacity, -1, dtype=np.int32)
            intern = self.label_values.intern
            for row in range(self.n_rows):
                node = self.nodes[row]
                if node is not None:
                    value = node.labels.get(key)
                    if value is not None:
                        col[row] = intern(value)
            self._label_columns[key] = col
            view = self._label_views[key] = read_only(col)
        return view[: self.n_rows]

    def label_int_column(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        """Label ``key`` parsed as a base-10 integer (for ``Gt``/``Lt``): ``(values, parsed_ok)``."""
        hit = self._int_label_cache.get(key)
        if hit is not None and hit[0] == self.generation:
            return hit[1], hit[2]
        values = np.zeros(self.n_rows, dtype=np.int64)
        ok = np.zeros(self.n_rows, dtype=np.bool_)
        for row in range(self.n_rows):
            node = self.nodes[row]
            text = node.labels.get(key) if node is not None else None
            parsed = parse_go_int64(text) if text is not None else None
            if parsed is not None:
                values[row] = parsed
                ok[row] = True
        values.flags.writeable = False  # shared by every caller until the next node change
        ok.flags.writeable = False
        self._int_label_cache[key] = (self.generation, values, ok)
        return values, ok

    # ------------------------------------------------------------------ taints
    def taint_mask(self, effects: Iterable[str]) -> np.ndarray:
        """Bitset (uint64 words) of interned taints with one of ``effects`` present on some node."""
        wanted = frozenset(effects)
        mask = np.zeros(self.taint_bits.shape[1], dtype=np.uint64)
        for tid, taint in enumerate(self.taints.values):
            if taint.effect in wanted and self._taint_users[tid] > 0:
                mask[tid >> 6] |= np.uint64(1 << (tid & 63))
        return mask

    def tolerated_mask(self, tolerates: object) -> np.ndarray:
        """Bitset of interned taints that the predicate ``tolerates(taint) -> bool`` accepts."""
        mask = np.zeros(self.taint_bits.shape[1], dtype=np.uint64)
        for tid, taint in enumerate(self.taints.values):
            if tolerates(taint):  # type: ignore[operator]
                mask[tid >> 6] |= np.uint64(1 << (tid & 63))
        return mask

    def node(self, row: int) -> Node:
        node = self.nodes[row]
        if node is None:
            raise KeyError(f"row {row} holds no node")
        return node
