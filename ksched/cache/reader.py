"""ClusterReader: the one read-only window on the cluster every plugin receives.

In-tree and out-of-tree plugins are given the same protocol: built-in plugins get the cache itself,
plugins loaded from outside get a :class:`~ksched.framework.view.ClusterView` over it. Either way a
plugin reads

- **columns by name** (:class:`ReaderAccessors`): ``allocatable("cpu")``, ``requested(...)``,
  ``label("zone")``, ``has_taint(...)``, ``pod_count``, ``valid``, ... one entry per node-table row,
  ``0 <= row < n_rows``;
- **the indexes** the built-in plugins use for speed: ``nodes`` (the node table and its columns),
  ``resources``, ``ports``, ``images``, ``labelsets``, ``affinity_terms``, ``selector_owners``,
  ``pdbs``, ``volumes`` (PVs, PVCs, storage classes, CSI objects), ``volume_index`` (each row's
  attached volumes per CSI driver and inline disks), and the pods on a node
  (``pods_on``, ``entries_on``);
- **a what-if overlay** (``what_if``) for asking how the cluster would look with pods added or
  taken away; everything is put back exactly when it ends (:mod:`ksched.cache.what_if`).

Every array is read-only (``writeable=False``): a plugin that writes into one fails with
``ValueError: assignment destination is read-only`` instead of corrupting the cache for every later
pod. Arrays go stale when the table grows: read them inside one call, never keep them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:
    from ksched.cache.affinity_terms import AffinityTermIndex
    from ksched.cache.cluster import PodEntry
    from ksched.cache.labelsets import LabelSetIndex
    from ksched.cache.node_table import NodeTable
    from ksched.cache.selector_owners import SelectorOwnerIndex
    from ksched.cache.sparse import ImageIndex, PortIndex
    from ksched.cache.volume_index import VolumeIndex
    from ksched.cache.volumes import VolumeStore
    from ksched.cache.what_if import WhatIf
    from ksched.model.node import Node
    from ksched.model.pdb import PodDisruptionBudget
    from ksched.model.pod import Pod
    from ksched.model.resources import ResourceColumns
    from ksched.model.selectors import LabelSelector


class ClusterReader(Protocol):
    """What a plugin may read of the cluster (see the module docstring)."""

    nodes: NodeTable
    resources: ResourceColumns
    ports: PortIndex
    images: ImageIndex
    labelsets: LabelSetIndex
    affinity_terms: AffinityTermIndex
    selector_owners: SelectorOwnerIndex
    pdbs: Mapping[str, PodDisruptionBudget]
    volumes: VolumeStore
    volume_index: VolumeIndex

    def __contains__(self, uid: object) -> bool: ...
    def pods_on(self, node_name: str) -> list[Pod]: ...
    def entries_on(self, node_name: str) -> list[PodEntry]: ...
    def entries_on_nodes(self, node_names: list[str]) -> tuple[list[PodEntry], list[int]]: ...
    def namespace_labels(self, name: str) -> Mapping[str, str]: ...
    def namespaces_matching(self, selector: LabelSelector | None) -> frozenset[str]: ...
    def what_if(self, *, add: Sequence[tuple[Pod, str]] = (), remove: Sequence[str] = ()) -> WhatIf: ...
    def pod(self, uid: str) -> Pod | None: ...

    @property
    def n_rows(self) -> int: ...
    @property
    def num_nodes(self) -> int: ...
    @property
    def valid(self) -> np.ndarray: ...
    def row_of(self, node_name: str) -> int | None: ...
    def node(self, row: int) -> Node: ...
    def node_name(self, row: int) -> str: ...
    @property
    def resource_names(self) -> tuple[str, ...]: ...
    def allocatable(self, resource: str) -> np.ndarray: ...
    def requested(self, resource: str) -> np.ndarray: ...
    def free(self, resource: str) -> np.ndarray: ...
    @property
    def pod_count(self) -> np.ndarray: ...
    @property
    def allowed_pods(self) -> np.ndarray: ...
    @property
    def unschedulable(self) -> np.ndarray: ...
    def label(self, key: str) -> np.ndarray: ...
    def label_id(self, value: str) -> int: ...
    def label_value(self, value_id: int) -> str: ...
    def has_label(self, key: str) -> np.ndarray: ...
    def label_equals(self, key: str, value: str) -> np.ndarray: ...
    def label_in(self, key: str, values: Iterable[str]) -> np.ndarray: ...
    def label_int(self, key: str) -> tuple[np.ndarray, np.ndarray]: ...
    def has_taint(self, key: str, *, effect: str | None = None, value: str | None = None) -> np.ndarray: ...


class ReaderAccessors:
    """The by-name column accessors of :class:`ClusterReader`, over ``self.nodes`` and
    ``self.resources`` (the cache has them; the view delegates them). Each costs a slice."""

    __slots__ = ()
    nodes: NodeTable
    resources: ResourceColumns

    # ------------------------------------------------------------------ rows
    @property
    def n_rows(self) -> int:
        """Length of every per-node array (rows that hold no node included)."""
        return self.nodes.n_rows

    @property
    def num_nodes(self) -> int:
        return len(self.nodes)

    @property
    def valid(self) -> np.ndarray:
        """bool[n_rows]: the row holds a node."""
        nodes = self.nodes
        return nodes.valid[: nodes.n_rows]

    def row_of(self, node_name: str) -> int | None:
        return self.nodes.row_of.get(node_name)

    def node(self, row: int) -> Node:
        """The node record of ``row`` (name, labels, taints, allocatable); KeyError for an empty row."""
        return self.nodes.node(row)

    def node_name(self, row: int) -> str:
        return self.nodes.node(row).name

    # ------------------------------------------------------------------ resources
    @property
    def resource_names(self) -> tuple[str, ...]:
        """Resource columns known so far (cpu, memory, ephemeral-storage, pods, then extended ones)."""
        return tuple(self.resources.names)

    def allocatable(self, resource: str) -> np.ndarray:
        """int64[n_rows]: allocatable ``resource`` per node (cpu in millicores, memory in bytes);
        all zeros for a resource no object has named yet."""
        return self._column(self.nodes.allocatable, resource)

    def requested(self, resource: str) -> np.ndarray:
        """int64[n_rows]: sum of the requests of pods on (or assumed on) each node."""
        return self._column(self.nodes.requested, resource)

    def free(self, resource: str) -> np.ndarray:
        """int64[n_rows]: ``allocatable - requested`` (a new array, the caller's to modify)."""
        return self.allocatable(resource) - self.requested(resource)

    def _column(self, table: np.ndarray, resource: str) -> np.ndarray:
        n = self.nodes.n_rows
        col = self.resources.get(resource)
        if col is None or col >= table.shape[1]:
            out = np.zeros(n, dtype=np.int64)
            out.flags.writeable = False
            return out
        return table[:n, col]

    @property
    def pod_count(self) -> np.ndarray:
        """int64[n_rows]: pods on (or assumed on) each node."""
        nodes = self.nodes
        return nodes.pod_count[: nodes.n_rows]

    @property
    def allowed_pods(self) -> np.ndarray:
        """int64[n_rows]: the node's pod capacity (``allocatable.pods``)."""
        nodes = self.nodes
        return nodes.allowed_pods[: nodes.n_rows]

    @property
    def unschedulable(self) -> np.ndarray:
        """bool[n_rows]: ``spec.unschedulable`` (cordoned)."""
        nodes = self.nodes
        return nodes.unschedulable[: nodes.n_rows]

    # ------------------------------------------------------------------ labels
    def label(self, key: str) -> np.ndarray:
        """int32[n_rows]: interned value id of node label ``key``; -1 where the node lacks it."""
        return self.nodes.label_column(key)

    def label_id(self, value: str) -> int:
        """The id :meth:`label` uses for ``value``; -1 when no node has had it (matches nothing).
        Values are interned when a key's column is first built: call ``label(key)`` first."""
        return self.nodes.label_values.lookup(value)

    def label_value(self, value_id: int) -> str:
        return self.nodes.label_values.values[value_id]

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
        return self.nodes.label_int_column(key)

    # ------------------------------------------------------------------ taints
    def has_taint(self, key: str, *, effect: str | None = None, value: str | None = None) -> np.ndarray:
        """bool[n_rows]: the node carries a taint with ``key`` (and ``effect`` / ``value`` if given)."""
        nodes = self.nodes
        n = nodes.n_rows
        mask = np.zeros(nodes.taint_bits.shape[1], dtype=np.uint64)
        for tid, taint in enumerate(nodes.taints.values):
            if taint.key == key and effect in (None, taint.effect) and value in (None, taint.value):
                mask[tid >> 6] |= np.uint64(1 << (tid & 63))
        if not mask.any():
            return np.zeros(n, dtype=np.bool_)
        return np.asarray((nodes.taint_bits[:n] & mask).any(axis=1))
