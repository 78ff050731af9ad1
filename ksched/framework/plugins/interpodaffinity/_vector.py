"""The array work of InterPodAffinity: per-row pod counts turned into per-domain totals.

Everything the plugin asks reduces to one operation: given a topology key's column of interned
value ids (-1 where a node lacks the key) and a per-row int64 weight (matching pods, or weighted
term counts), give every row the total over all rows of its domain (0 where the key is absent).
Upstream keeps ``map[(key, value)]count`` built pod by pod; a bincount over the column is the same
map for every value at once, and gathering it back by row answers every node.

A key whose values are all distinct (``kubernetes.io/hostname``, the most common topology key)
needs no bincount at all: each domain is one row. :class:`Domains` remembers, per key and per
node-table generation, whether that holds.
"""

from __future__ import annotations

import numpy as np

from ksched.cache.node_table import NodeTable
from ksched.framework import kernels


class Domains:
    """Per-row domain totals over the node table, with the one-row-per-domain shortcut."""

    __slots__ = ("_unique",)

    def __init__(self) -> None:
        self._unique: dict[str, tuple[NodeTable, int, int, bool]] = {}

    def _is_unique(self, nodes: NodeTable, key: str, col: np.ndarray) -> bool:
        hit = self._unique.get(key)
        if hit is not None and hit[0] is nodes and hit[1] == nodes.generation and hit[2] == nodes.n_rows:
            return hit[3]
        ids = col[col >= 0]
        unique = ids.size == 0 or int(np.bincount(ids).max()) <= 1
        if len(self._unique) > 256:
            self._unique.clear()
        self._unique[key] = (nodes, nodes.generation, nodes.n_rows, unique)
        return unique

    def totals(self, nodes: NodeTable, key: str, weights: np.ndarray) -> np.ndarray:
        """``out[r] = sum(weights[s] for s in r's domain of key)``; 0 where the node lacks ``key`` (int64)."""
        col = nodes.label_column(key)
        if self._is_unique(nodes, key, col):
            return np.where(col >= 0, weights[: col.shape[0]], 0)
        return kernels.affinity_domain_totals(col, weights)


def any_at_keyed_rows(col: np.ndarray, counts: np.ndarray) -> bool:
    """Whether some row that has the key holds a non-zero count (upstream created a map entry)."""
    return bool(np.count_nonzero((col >= 0) & (counts[: col.shape[0]] != 0)))
