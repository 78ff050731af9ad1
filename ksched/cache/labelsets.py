"""Label sets: pods grouped by (namespace, labels), with per-node counts, for affinity and spreading.

Inter-pod affinity and topology spread ask "how many pods matching this selector, in these
namespaces, are on each node". Pods of one workload share their labels, so the cache groups pods
into *label sets* — one id per distinct ``(namespace, frozenset(labels.items()))`` — and keeps, per
set, how many of its pods sit on each node row, plus how many of those are terminating
(``deletionTimestamp`` set: topology spread leaves them out, inter-pod affinity counts them).
A selector is evaluated against label sets, never pods, and the answer is memoized, so a per-node
count is a sum over a few sets: :meth:`LabelSetIndex.counts` over
:meth:`LabelSetIndex.matching_sets`. Per-domain counts are then one ``np.bincount`` over a
topology column.

Storage, per set, is :class:`RowCounts`: a ``dict`` row → count while the set covers few rows,
switched to a dense int32 array over the node table's capacity once it covers more than
``max(64, capacity // 16)`` rows, the point where the array costs no more memory than the dict
(a dict entry is ~100 bytes, an array cell 4). So 100,000 pods of a few workloads cost a few
dense arrays, and 100,000 pods with unique labels (StatefulSet pod-name labels) cost one tiny dict
each; nothing is allocated per pod. A set's storage is dropped when its last pod goes.

Ids: a set whose last pod leaves becomes a *zombie*: it keeps its id and key, so a pod that comes
back with the same labels (an update is remove + add) revives it and memoized selectors stay
right. Zombie ids are reused for new keys; every (re)assignment of an id to a key is appended to a
log, and a memoized selector replays the log entries it has not seen (re-testing those ids) before
answering. So memos are never stale, and each pays only for sets created since it was last used.
When the log grows long all memos are dropped and it starts over; memos are also bounded (LRU).

Pods on a node that is not in the table (row -1) belong to their set but count on no row; the
cache moves them onto the row when the node comes back, as it does for requested resources.

What it does not do: it knows nothing of topology keys or affinity terms (the plugins do), and
``counts`` is over rows ``[0, n_rows)`` including rows of removed nodes (always zero there).

Every mutator is called only from the scheduling thread.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping, Set

import numpy as np

from ksched.cache.node_table import NodeTable
from ksched.model.selectors import LabelSelector

LabelSetKey = tuple[str, frozenset[tuple[str, str]]]

MIN_DENSE_ROWS = 64
"""A set's counts stay a dict until they cover more than ``max(MIN_DENSE_ROWS, capacity // 16)`` rows."""
MEMO_LIMIT = 4096
"""Memoized (selector, namespaces) answers kept, least recently used dropped first."""
LOG_SLACK = 4096
"""The reassignment log is reset (and memos dropped) past ``LOG_SLACK + 2 * ids`` entries."""

_EMPTY: frozenset[int] = frozenset()


class RowCounts:
    """Per-row counts of one label set: a sparse ``{row: count}`` dict, or a dense int32 array."""

    __slots__ = ("dense", "sparse", "total")

    def __init__(self) -> None:
        self.sparse: dict[int, int] = {}
        self.dense: np.ndarray | None = None
        self.total = 0

    def add(self, row: int, delta: int, dense_rows: int, capacity: int) -> None:
        """Add ``delta`` at ``row``; switch to dense once more than ``dense_rows`` rows are used."""
        self.total += delta
        dense = self.dense
        if dense is not None:
            if row >= len(dense):
                grown = np.zeros(max(capacity, row + 1), dtype=np.int32)
                grown[: len(dense)] = dense
                self.dense = dense = grown
            dense[row] += delta
            return
        sparse = self.sparse
        count = sparse.get(row, 0) + delta
        if count:
            sparse[row] = count
        else:
            del sparse[row]
        if len(sparse) > dense_rows:
            dense = np.zeros(max(capacity, max(sparse) + 1), dtype=np.int32)
            dense[np.fromiter(sparse.keys(), np.intp, len(sparse))] = np.fromiter(
                sparse.values(), np.int32, len(sparse)
            )
            self.dense = dense
            self.sparse = {}

    def add_into(self, out: np.ndarray, sign: int = 1) -> None:
        """``out[row] += sign * count`` for every row (``out`` covers rows ``[0, len(out))``)."""
        dense = self.dense
        if dense is not None:
            n = min(len(out), len(dense))
            if sign > 0:
                out[:n] += dense[:n]
            else:
                out[:n] -= dense[:n]
            return
        sparse = self.sparse
        if len(sparse) <= 8:
            for row, count in sparse.items():
                out[row] += sign * count
        else:
            rows = np.fromiter(sparse.keys(), np.intp, len(sparse))
            values = np.fromiter(sparse.values(), out.dtype, len(sparse))
            out[rows] += values if sign > 0 else -values  # rows are distinct: fancy add is exact

    def get(self, row: int) -> int:
        if self.dense is not None:
            return int(self.dense[row]) if row < len(self.dense) else 0
        return self.sparse.get(row, 0)


class _Memo:
    __slots__ = ("ids", "log_pos", "result")

    def __init__(self, ids: set[int], log_pos: int) -> None:
        self.ids = ids
        self.log_pos = log_pos
        self.result: tuple[int, ...] | None = None


class LabelSetIndex:
    """Label-set ids for the cache's pods, with per-node (and per-node terminating) counts."""

    def __init__(self, nodes: NodeTable) -> None:
        self._nodes = nodes
        self._ids: dict[LabelSetKey, int] = {}
        self.keys: list[LabelSetKey] = []
        """``keys[id]``: the set's (namespace, frozenset of label items); zombies keep theirs."""
        self.labels: list[Mapping[str, str]] = []
        """``labels[id]``: the labels of the pod that created the set (records are immutable)."""
        self.pod_count: list[int] = []
        """Pods in the set, including pods on no row; 0 for a zombie."""
        self._all: list[RowCounts | None] = []
        self._terminating: list[RowCounts | None] = []
        self._free: list[int] = []
        self._in_free: list[bool] = []
        self._by_ns: dict[str, set[int]] = {}
        self._by_label: dict[tuple[str, str], set[int]] = {}
        self._log: list[int] = []
        self._memo: OrderedDict[tuple[LabelSelector, frozenset[str] | None], _Memo] = OrderedDict()

    # ------------------------------------------------------------------ queries
    def __len__(self) -> int:
        """Live sets (with at least one pod)."""
        return sum(1 for c in self.pod_count if c)

    @property
    def n_ids(self) -> int:
        """Ids ever handed out (live and zombie); ids are ``range(n_ids)``."""
        return len(self.keys)

    def lookup(self, namespace: str, labels: Mapping[str, str]) -> int:
        """The id of the set ``(namespace, labels)``, or -1 if it has none."""
        return self._ids.get((namespace, frozenset(labels.items())), -1)

    def namespace(self, set_id: int) -> str:
        return self.keys[set_id][0]

    def set_counts(self, set_id: int, *, terminating: bool = False) -> np.ndarray:
        """The set's per-row counts over ``[0, n_rows)`` (a fresh int64 array)."""
        out = np.zeros(self._nodes.n_rows, dtype=np.int64)
        rc = (self._terminating if terminating else self._all)[set_id]
        if rc is not None:
            rc.add_into(out)
        return out

    def counts(self, set_ids: Iterable[int], *, exclude_terminating: bool = False) -> np.ndarray:
        """Pods of the given sets per node row, ``int64[n_rows]``; optionally without terminating ones.

        Summed in int32 (no per-node count comes near 2**31, and same-dtype adds are much cheaper
        than int32 into int64) and widened once at the end.
        """
        n = self._nodes.n_rows
        out = np.zeros(n, dtype=np.int32)
        all_, term = self._all, self._terminating
        rows: list[int] = []  # sparse entries of every set, added in one go
        values: list[int] = []
        for sid in set_ids:
            rc = all_[sid]
            if rc is None:
                continue
            if rc.dense is not None:
                d = rc.dense[:n]
                out[: len(d)] += d
            else:
                rows.extend(rc.sparse)
                values.extend(rc.sparse.values())
            if exclude_terminating:
                t = term[sid]
                if t is None:
                    continue
                if t.dense is not None:
                    d = t.dense[:n]
                    out[: len(d)] -= d
                else:
                    rows.extend(t.sparse)
                    values.extend(-c for c in t.sparse.values())
        if rows:
            np.add.at(out, np.asarray(rows, dtype=np.intp), np.asarray(values, dtype=np.int32))
        return out.astype(np.int64)

    def set_matches(self, set_id: int, selector: LabelSelector, namespaces: frozenset[str] | None) -> bool:
        """Whether set ``set_id`` is in ``namespaces`` (``None``: any) and its labels match."""
        ns, _ = self.keys[set_id]
        if namespaces is not None and ns not in namespaces:
            return False
        return selector.matches(self.labels[set_id])

    def matching_sets(
        self, namespaces: frozenset[str] | None, selector: LabelSelector | None
    ) -> tuple[int, ...]:
        """Ids of the sets in ``namespaces`` (``None``: all) whose labels match ``selector``.

        A ``None`` (nil) selector matches nothing; an empty one matches every set. Memoized per
        (selector, namespaces); may include zombie ids (their counts are zero). Sorted ascending.
        """
        if selector is None or (namespaces is not None and not namespaces):
            return ()
        key = (selector, namespaces)
        memo = self._memo.get(key)
        log = self._log
        if memo is None:
            memo = _Memo(self._scan(selector, namespaces), len(log))
            self._memo[key] = memo
            if len(self._memo) > MEMO_LIMIT:
                self._memo.popitem(last=False)
        else:
            self._memo.move_to_end(key)
            if memo.log_pos < len(log):
                ids = memo.ids
                for sid in log[memo.log_pos :]:
                    if self.set_matches(sid, selector, namespaces):
                        ids.add(sid)
                    else:
                        ids.discard(sid)
                memo.log_pos = len(log)
                memo.result = None
        if memo.result is None:
            memo.result = tuple(sorted(memo.ids))
        return memo.result

    def _scan(self, selector: LabelSelector, namespaces: frozenset[str] | None) -> set[int]:
        """Test the smallest candidate group: a namespace list, a matchLabels pair or an In list."""
        groups: list[list[Set[int]]] = []
        if namespaces is not None:
            groups.append([self._by_ns.get(ns, _EMPTY) for ns in namespaces])
        by_label = self._by_label
        for pair in selector.match_labels:
            groups.append([by_label.get(pair, _EMPTY)])
        for req in selector.match_expressions:
            if req.operator == "In":
                groups.append([by_label.get((req.key, v), _EMPTY) for v in set(req.values)])
        if groups:
            best = min(groups, key=lambda g: sum(len(s) for s in g))
            candidates: Iterable[int] = (sid for s in best for sid in s)
        else:
            candidates = range(len(self.keys))
        return {sid for sid in candidates if self.set_matches(sid, selector, namespaces)}

    # ------------------------------------------------------------------ mutators (scheduling thread)
    def attach(self, namespace: str, labels: Mapping[str, str], row: int, terminating: bool) -> int:
        """Count one pod of ``(namespace, labels)`` at ``row`` (-1: on no row); returns its set id."""
        key = (namespace, frozenset(labels.items()))
        sid = self._ids.get(key)
        if sid is None:
            sid = self._assign(key, labels)
        self.pod_count[sid] += 1
        if row >= 0:
            self._add(sid, row, 1, terminating)
        return sid

    def detach(self, set_id: int, row: int, terminating: bool) -> None:
        """Exactly reverse :meth:`attach` of a pod now counted at ``row``."""
        if row >= 0:
            self._add(set_id, row, -1, terminating)
        self.pod_count[set_id] -= 1
        if self.pod_count[set_id] == 0:
            self._all[set_id] = None
            self._terminating[set_id] = None
            if not self._in_free[set_id]:
                self._in_free[set_id] = True
                self._free.append(set_id)

    def move(self, set_id: int, old_row: int, new_row: int, terminating: bool) -> None:
        """A pod of the set moves between rows (either may be -1: its node left or came back)."""
        if old_row >= 0:
            self._add(set_id, old_row, -1, terminating)
        if new_row >= 0:
            self._add(set_id, new_row, 1, terminating)

    def _add(self, sid: int, row: int, delta: int, terminating: bool) -> None:
        nodes = self._nodes
        dense_rows = max(MIN_DENSE_ROWS, nodes.capacity // 16)
        for store in (self._all, self._terminating) if terminating else (self._all,):
            rc = store[sid]
            if rc is None:
                rc = store[sid] = RowCounts()
            rc.add(row, delta, dense_rows, nodes.capacity)
            if rc.total == 0:
                store[sid] = None

    def _assign(self, key: LabelSetKey, labels: Mapping[str, str]) -> int:
        """Give ``key`` an id: a zombie's if there is one, else a new one; log it for the memos."""
        sid = -1
        while self._free:
            cand = self._free.pop()
            self._in_free[cand] = False
            if self.pod_count[cand] == 0:
                sid = cand
                break
        ns = key[0]
        if sid >= 0:
            old_ns, old_items = self.keys[sid]
            del self._ids[self.keys[sid]]
            self._by_ns[old_ns].discard(sid)
            if not self._by_ns[old_ns]:
                del self._by_ns[old_ns]
            for item in old_items:
                s = self._by_label[item]
                s.discard(sid)
                if not s:
                    del self._by_label[item]
            self.keys[sid] = key
            self.labels[sid] = labels
        else:
            sid = len(self.keys)
            self.keys.append(key)
            self.labels.append(labels)
            self.pod_count.append(0)
            self._all.append(None)
            self._terminating.append(None)
            self._in_free.append(False)
        self._ids[key] = sid
        self._by_ns.setdefault(ns, set()).add(sid)
        for item in key[1]:
            self._by_label.setdefault(item, set()).add(sid)
        self._log.append(sid)
        if len(self._log) > LOG_SLACK + 2 * len(self.keys):
            self._log.clear()
            self._memo.clear()
        return sid
