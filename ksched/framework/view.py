"""ClusterView: the read-only window on the cluster cache that out-of-tree plugins receive.

Built-in plugins read the cache's arrays directly. A custom plugin gets this view instead: the same
numpy arrays (no copies), cut to the rows ``[0, n_rows)`` a cycle works on and marked read-only, so a
plugin that writes into one fails loudly (``ValueError: assignment destination is read-only``)
instead of silently corrupting the cache for every later pod.

Every array is indexed by *row*, the node's stable position in the node table. Rows that hold no
node (``valid`` is False) contain zeros or -1; the runtime masks them, so a plugin may compute
anything there. Each accessor costs a fraction of a microsecond (a slice and a flag), so call them
freely inside one plugin call, but do not keep arrays across calls: the table grows by reallocating,
and a kept array goes stale.

Labels are interned: ``label(key)`` is an int32 column of value ids (-1 where the node lacks the
key), and ``label_id(value)`` turns a value into its id (-1 when no node ever had it, which then
matches nothing). ``label_int(key)`` parses a numeric label once per node-table generation.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ksched.cache.cluster import ClusterCache
from ksched.model.node import Node
from ksched.model.pod import Pod


def _ro(a: np.ndarray) -> np.ndarray:
    v = a.view()
    v.flags.writeable = False
    return v


class ClusterView:
    """Read-only node columns and pod lookups over one :class:`ClusterCache`."""

    __slots__ = ("_cache",)

    def __init__(self, cache: ClusterCache) -> None:
        self._cache = cache

    # ------------------------------------------------------------------ rows
    @property
    def n_rows(self) -> int:
        """Length of every per-node array in this view (rows that hold no node included)."""
        return self._cache.nodes.n_rows

    @property
    def num_nodes(self) -> int:
        return len(self._cache.nodes)

    @property
    def valid(self) -> np.ndarray:
        """bool[n_rows]: the row holds a node."""
        nodes = self._cache.nodes
        return _ro(nodes.valid[: nodes.n_rows])

    def row_of(self, node_name: str) -> int | None:
        return self._cache.nodes.row_of.get(node_name)

    def node(self, row: int) -> Node:
        """The node record of ``row`` (name, labels, taints, allocatable); KeyError for an empty row."""
        return self._cache.nodes.node(row)

    def node_name(self, row: int) -> str:
        return self._cache.nodes.node(row).name

    # ------------------------------------------------------------------ resources
    @property
    def resource_names(self) -> tuple[str, ...]:
        """Resource columns known so far (cpu, memory, ephemeral-storage, pods, then extended ones)."""
        return tuple(self._cache.resources.names)

    def allocatable(self, resource: str) -> np.ndarray:
        """int64[n_rows]: allocatable ``resource`` per node (cpu in millicores, memory in bytes).

        A resource no object has named yet is all zeros.
        """
        return self._column(self._cache.nodes.allocatable, resource)

    def requested(self, resource: str) -> np.ndarray:
        """int64[n_rows]: sum of the requests of pods on (or assumed on) each node."""
        return self._column(self._cache.nodes.requested, resource)

    def free(self, resource: str) -> np.ndarray:
        """int64[n_rows]: ``allocatable - requested`` (a new array, yours to modify)."""
        return self.allocatable(resource) - self.requested(resource)

    def _column(self, table: np.ndarray, resource: str) -> np.ndarray:
        n = self._cache.nodes.n_rows
        col = self._cache.resources.get(resource)
        if col is None or col >= table.shape[1]:
            out = np.zeros(n, dtype=np.int64)
            out.flags.writeable = False
            return out
        return _ro(table[:n, col])

    @property
    def pod_count(self) -> np.ndarray:
        """int64[n_rows]: pods on (or assumed on) each node."""
        nodes = self._cache.nodes
        return _ro(nodes.pod_count[: nodes.n_rows])

    @property
    def allowed_pods(self) -> np.ndarray:
        """int64[n_rows]: the node's pod capacity (``allocatable.pods``)."""
        nodes = self._cache.nodes
        return _ro(nodes.allowed_pods[: nodes.n_rows])

    @property
    def unschedulable(self) -> np.ndarray:
        """bool[n_rows]: ``spec.unschedulable`` (cordoned)."""
        nodes = self._cache.nodes
        return _ro(nodes.unschedulable[: nodes.n_rows])

    # ------------------------------------------------------------------ labels
    def label(self, key: str) -> np.ndarray:
        """int32[n_rows]: interned value id of node label ``key``; -1 where the node lacks it."""
        return _ro(self._cache.nodes.label_column(key))

    def label_id(self, value: str) -> int:
        """The id ``label()`` uses for ``value``; -1 when no node has had it (matches nothing).

        Values are interned when a key's column is first built: call ``label(key)`` first."""
        return self._cache.nodes.label_values.lookup(value)

    def label_value(self, value_id: int) -> str:
        return self._cache.nodes.label_values.values[value_id]

    def has_label(self, key: str) -> np.ndarray:
        """bool[n_rows]: the node has label ``key`` (a new array)."""
        return self.label(key) >= 0

    def label_equals(self, key: str, value: str) -> np.ndarray:
        """bool[n_rows]: the node's label ``key`` is ``value`` (a new array)."""
        col = self.label(key)  # first: building a column interns its values
        vid = self.label_id(value)
        if vid < 0:
            return np.zeros(self.n_rows, dtype=np.bool_)
        return col == vid

    def label_in(self, key: str, values: Iterable[str]) -> np.ndarray:
        """bool[n_rows]: the node's label ``key`` is one of ``values`` (a new array)."""
        col = self.label(key)
        ids = [i for i in (self.label_id(v) for v in values) if i >= 0]
        return np.isin(col, np.asarray(ids, dtype=np.int32))

    def label_int(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        """(int64[n_rows] values, bool[n_rows] parsed): label ``key`` read as a base-10 integer."""
        values, ok = self._cache.nodes.label_int_column(key)
        return _ro(values), _ro(ok)

    # ------------------------------------------------------------------ taints
    def has_taint(self, key: str, *, effect: str | None = None, value: str | None = None) -> np.ndarray:
        """bool[n_rows]: the node carries a taint with ``key`` (and ``effect`` / ``value`` if given)."""
        nodes = self._cache.nodes
        n = nodes.n_rows
        mask = np.zeros(nodes.taint_bits.shape[1], dtype=np.uint64)
        for tid, taint in enumerate(nodes.taints.values):
            if taint.key == key and effect in (None, taint.effect) and value in (None, taint.value):
                mask[tid >> 6] |= np.uint64(1 << (tid & 63))
        if not mask.any():
            return np.zeros(n, dtype=np.bool_)
        return np.asarray((nodes.taint_bits[:n] & mask).any(axis=1))

    # ------------------------------------------------------------------ pods
    def pods_on(self, node_name: str) -> list[Pod]:
        """Pod records bound or assumed on ``node_name`` (a new list)."""
        return self._cache.pods_on(node_name)

    def pod(self, uid: str) -> Pod | None:
        """The record of a pod the cache counts on some node (bound or assumed), by uid."""
        entry = self._cache.pods.get(uid)
        return entry.pod if entry is not None else None

    def __repr__(self) -> str:
        return f"ClusterView({self.num_nodes} nodes, {self.n_rows} rows)"
