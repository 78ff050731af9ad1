"""ClusterView: the :class:`~ksched.cache.reader.ClusterReader` that out-of-tree plugins receive.

Built-in plugins get the cache itself; a plugin loaded from outside gets this view over it, so that
it reads exactly what the built-in plugins read (the same read-only arrays and indexes, the same
by-name accessors) without the cache's mutators within reach: a plugin cannot add a node or assume
a pod, only ask what-if questions the overlay undoes. A plugin copied from an in-tree one runs
unchanged behind it.

Each accessor costs a fraction of a microsecond, so call them freely inside one plugin call, but do
not keep arrays across calls: the table grows by reallocating, and a kept array goes stale.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ksched.cache.cluster import ClusterCache, PodEntry
from ksched.cache.reader import ReaderAccessors
from ksched.model.pod import Pod

if TYPE_CHECKING:
    from ksched.cache.affinity_terms import AffinityTermIndex
    from ksched.cache.labelsets import LabelSetIndex
    from ksched.cache.node_table import NodeTable
    from ksched.cache.selector_owners import SelectorOwnerIndex
    from ksched.cache.sparse import ImageIndex, PortIndex
    from ksched.cache.volume_index import VolumeIndex
    from ksched.cache.volumes import VolumeStore
    from ksched.cache.what_if import WhatIf
    from ksched.model.pdb import PodDisruptionBudget
    from ksched.model.resources import ResourceColumns
    from ksched.model.selectors import LabelSelector


class ClusterView(ReaderAccessors):
    """The read side of one :class:`ClusterCache`."""

    __slots__ = ("_cache",)

    def __init__(self, cache: ClusterCache) -> None:
        self._cache = cache

    # ------------------------------------------------------------------ the indexes
    @property
    def nodes(self) -> NodeTable:  # type: ignore[override]
        return self._cache.nodes

    @property
    def resources(self) -> ResourceColumns:  # type: ignore[override]
        return self._cache.resources

    @property
    def ports(self) -> PortIndex:
        return self._cache.ports

    @property
    def images(self) -> ImageIndex:
        return self._cache.images

    @property
    def labelsets(self) -> LabelSetIndex:
        return self._cache.labelsets

    @property
    def affinity_terms(self) -> AffinityTermIndex:
        return self._cache.affinity_terms

    @property
    def selector_owners(self) -> SelectorOwnerIndex:
        return self._cache.selector_owners

    @property
    def pdbs(self) -> Mapping[str, PodDisruptionBudget]:
        return self._cache.pdbs

    @property
    def volumes(self) -> VolumeStore:
        return self._cache.volumes

    @property
    def volume_index(self) -> VolumeIndex:
        return self._cache.volume_index

    # ------------------------------------------------------------------ pods
    def __contains__(self, uid: object) -> bool:
        return uid in self._cache

    def pod(self, uid: str) -> Pod | None:
        """The record of a pod the cache counts on some node (bound or assumed), by uid."""
        return self._cache.pod(uid)

    def pods_on(self, node_name: str) -> list[Pod]:
        """Pod records bound or assumed on ``node_name`` (a new list)."""
        return self._cache.pods_on(node_name)

    def entries_on(self, node_name: str) -> list[PodEntry]:
        return self._cache.entries_on(node_name)

    def entries_on_nodes(self, node_names: list[str]) -> tuple[list[PodEntry], list[int]]:
        return self._cache.entries_on_nodes(node_names)

    def namespace_labels(self, name: str) -> Mapping[str, str]:
        return self._cache.namespace_labels(name)

    def namespaces_matching(self, selector: LabelSelector | None) -> frozenset[str]:
        return self._cache.namespaces_matching(selector)

    def what_if(self, *, add: Sequence[tuple[Pod, str]] = (), remove: Sequence[str] = ()) -> WhatIf:
        """The cache's what-if overlay (:meth:`ClusterCache.what_if`)."""
        return self._cache.what_if(add=add, remove=remove)

    def __repr__(self) -> str:
        return f"ClusterView({self.num_nodes} nodes, {self.n_rows} rows)"
