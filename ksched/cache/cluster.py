"""ClusterCache: nodes, the pods on them, and the assume / confirm / forget state machine.

Pod states (keyed by uid), after upstream's cache (``backend/cache/cache.go``)::

                 assume(pod, node)               add_pod (informer saw the binding)
    (unknown) ───────────────────────▶ ASSUMED ──────────────────────────────────▶ ADDED
        │                                  │ forget (bind failed)                    │
        │ add_pod (already bound)          ▼                                         │ remove_pod
        └──────────────────────────▶ ADDED    (unknown) ◀────────────────────────────┘

- ``assume`` adds the pod's request to its node's row before the bind returns, so the next cycle
  sees the node as it will be.
- ``add_pod`` on an assumed pod *confirms* it: the record is replaced by the real one and, if the
  API placed it on another node, its request moves there.
- ``forget`` exactly reverses ``assume``.
- Assumed pods never expire on a timer (upstream's ``durationToExpireAssumedPod`` is 0): releasing
  the resources of a bind that did succeed would over-commit the node. A relist reconciles.

A pod whose node is not (or no longer) in the table keeps its entry with ``row = -1``; when a node
of that name is added, its pods are attached to the new row. This is upstream's "ghost node" rule
without the ghost.

Beside the resource rows the cache keeps, for inter-pod affinity and topology spread: namespaces
and their labels (:class:`~ksched.cache.namespaces.NamespaceIndex`, ``namespaceSelector``), label
sets with per-node counts (:class:`~ksched.cache.labelsets.LabelSetIndex`; ``PodEntry.label_set``)
and the pods that carry pod (anti-)affinity (:class:`~ksched.cache.affinity_pods.AffinityPodIndex`).
They follow the same attach / detach / row moves as the resource accounting.

What-if questions (preemption's dry run, the nominated-pods pass) change the counts for a while
through one overlay, :meth:`ClusterCache.what_if` (:mod:`ksched.cache.what_if`), which puts them
back exactly; nothing else writes the node table's arrays, which everyone else sees read-only.

Every mutator is called only from the scheduling thread.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ksched.cache.affinity_pods import AffinityPodIndex
from ksched.cache.affinity_terms import AffinityTermIndex
from ksched.cache.labelsets import LabelSetIndex
from ksched.cache.namespaces import NamespaceIndex
from ksched.cache.node_table import NodeTable
from ksched.cache.node_tree import NodeTree, zone_key
from ksched.cache.reader import ReaderAccessors
from ksched.cache.selector_owners import SelectorOwnerIndex
from ksched.cache.sparse import ImageIndex, PortIndex
from ksched.cache.volume_index import VolumeIndex
from ksched.cache.volumes import VolumeStore
from ksched.cache.what_if import WhatIf
from ksched.errors import CacheError
from ksched.model.namespace import Namespace
from ksched.model.node import Node
from ksched.model.pdb import PodDisruptionBudget
from ksched.model.pod import Pod
from ksched.model.resources import ResourceColumns
from ksched.model.selectors import LabelSelector

CHECK_OVERLAY_ENV = "KSCHED_CHECK_OVERLAY"
"""Set to ``1`` to have every what-if overlay check that it restored the cache exactly."""


@dataclass(slots=True)
class PodEntry:
    """A pod the cache counts on a node."""

    pod: Pod
    node_name: str
    row: int
    assumed: bool
    label_set: int = -1
    """The pod's id in :class:`~ksched.cache.labelsets.LabelSetIndex` (set by the cache)."""


class ClusterCache(ReaderAccessors):
    """The single source of truth for what is on each node; a :class:`~ksched.cache.reader.ClusterReader`
    for the built-in plugins."""

    def __init__(self, *, node_capacity: int = 64, check_overlays: bool | None = None) -> None:
        """``check_overlays``: compare the cache before and after every what-if overlay (costs a
        copy of the node table per overlay); None reads :data:`CHECK_OVERLAY_ENV`."""
        self.resources = ResourceColumns()
        self.nodes = NodeTable(self.resources, node_capacity)
        self.node_tree = NodeTree()
        """Upstream's zone round-robin node order (:meth:`node_order`)."""
        self.ports = PortIndex()
        self.images = ImageIndex()
        self.pods: dict[str, PodEntry] = {}
        self._pods_on: dict[str, set[str]] = {}
        self.namespaces = NamespaceIndex()
        self.labelsets = LabelSetIndex(self.nodes)
        self.affinity_pods = AffinityPodIndex()
        self.affinity_terms = AffinityTermIndex(self.nodes)
        """Existing pods' inter-pod terms grouped by term, with per-row counts (InterPodAffinity)."""
        self.pdbs: dict[str, PodDisruptionBudget] = {}
        """PodDisruptionBudgets by ``namespace/name`` (kept by the informer handlers; preemption reads)."""
        self.selector_owners = SelectorOwnerIndex()
        """Services, RCs, ReplicaSets, StatefulSets: PodTopologySpread's default selector."""
        self.volumes = VolumeStore()
        """PVs, PVCs, StorageClasses, CSI objects and assumed volume bindings (the volume plugins)."""
        self.volume_index = VolumeIndex(self.volumes, self.nodes)
        """Per row: the pods' attachable volumes per CSI driver, their inline disks (volume plugins)."""
        if check_overlays is None:
            check_overlays = os.environ.get(CHECK_OVERLAY_ENV, "") not in ("", "0")
        self.check_overlays = check_overlays
        self._overlays: list[WhatIf] = []
        """The open what-if overlays, innermost last."""

    # ------------------------------------------------------------------ queries
    def __contains__(self, uid: object) -> bool:
        return uid in self.pods

    def pod(self, uid: str) -> Pod | None:
        """The record of a pod the cache counts on some node (bound or assumed), by uid."""
        entry = self.pods.get(uid)
        return entry.pod if entry is not None else None

    def is_assumed(self, uid: str) -> bool:
        entry = self.pods.get(uid)
        return entry is not None and entry.assumed

    @property
    def assumed_count(self) -> int:
        return sum(1 for e in self.pods.values() if e.assumed)

    def pods_on(self, node_name: str) -> list[Pod]:
        return [self.pods[uid].pod for uid in self._pods_on.get(node_name, ())]

    def entries_on(self, node_name: str) -> list[PodEntry]:
        """The entries (pod, row, assumed) of the pods counted on ``node_name``; preemption's dry
        run needs the row and the assumed flag to take a pod out and put it back exactly."""
        pods = self.pods
        return [pods[uid] for uid in self._pods_on.get(node_name, ())]

    def entries_on_nodes(self, node_names: list[str]) -> tuple[list[PodEntry], list[int]]:
        """:meth:`entries_on` for many nodes at once: every node's entries, node after node in
        the order given, and how many each node has.

        Preemption's batched dry run reads hundreds of nodes per call; one flat comprehension
        costs a fraction of a call (and a list) per node. Each node's entries come in the same
        order :meth:`entries_on` gives them.
        """
        pods = self.pods
        on = self._pods_on
        empty: tuple[str, ...] = ()
        groups = [on.get(name, empty) for name in node_names]
        return [pods[uid] for group in groups for uid in group], [len(g) for g in groups]

    def request_vector(self, pod: Pod) -> np.ndarray:
        """The pod's actual request as an int64 vector over resource columns (adds columns if new)."""
        for name in pod.requests:
            if name != "pods":
                self.resources.column(name)
        self.nodes.ensure_columns()
        vec = np.zeros(self.nodes.allocatable.shape[1], dtype=np.int64)
        for name, value in pod.requests.items():
            if name != "pods":
                vec[self.resources.column(name)] = value
        return vec

    # ------------------------------------------------------------------ what if
    def what_if(self, *, add: Sequence[tuple[Pod, str]] = (), remove: Sequence[str] = ()) -> WhatIf:
        """An overlay that counts the pods ``add`` (pod, node name) as assumed there and takes the
        cached pods ``remove`` (uids) out, until it ends; its :meth:`~WhatIf.rows` and
        :meth:`~WhatIf.pods` handles move more by index meanwhile. Use it as ``with
        cache.what_if(...) as w:``; everything is put back exactly at the end
        (:mod:`ksched.cache.what_if`)."""
        return WhatIf(self, self._overlays, add=add, remove=remove, check=self.check_overlays)

    @property
    def overlay_depth(self) -> int:
        """How many what-if overlays are open (0 between cycles)."""
        return len(self._overlays)

    # ------------------------------------------------------------------ namespaces
    def set_namespace(self, ns: Namespace) -> None:
        """Add or update a namespace (its labels feed ``namespaceSelector``)."""
        self.namespaces.set(ns)

    def remove_namespace(self, name: str) -> None:
        self.namespaces.remove(name)

    def namespace_labels(self, name: str) -> Mapping[str, str]:
        """The namespace's labels; a namespace not known has none."""
        return self.namespaces.labels(name)

    def namespaces_matching(self, selector: LabelSelector | None) -> frozenset[str]:
        """Known namespaces whose labels match ``selector`` (nil matches none); memoized."""
        return self.namespaces.matching(selector)

    # ------------------------------------------------------------------ nodes
    def add_node(self, node: Node) -> int:
        """Add or update a node; pods already known for it are attached to its row."""
        existed = node.name in self.nodes.row_of
        row = self.nodes.add(node)
        self.node_tree.add(node.name, zone_key(node.labels))
        self.images.set_row(row, [(img.names, img.size_bytes) for img in node.images])
        if not existed:
            self.volume_index.node_added(node.name, row)
            for uid in self._pods_on.get(node.name, ()):
                entry = self.pods[uid]
                entry.row = row
                self._account(entry.pod, row, +1)
                self.labelsets.move(entry.label_set, -1, row, entry.pod.deleting)
                self.affinity_terms.move(uid, -1, row)
                if entry.pod.volumes:
                    self.volume_index.move(uid, row)
        return row

    update_node = add_node

    def node_order(self) -> np.ndarray:
        """The rows of every node in the order upstream's Filter visits them (the snapshot's
        node list, :mod:`ksched.cache.node_tree`); read-only, shared until the nodes change."""
        return self.node_tree.rows(self.nodes.row_of)

    def remove_node(self, name: str) -> None:
        row = self.nodes.remove(name)
        if row is None:
            return
        self.node_tree.remove(name)
        self.ports.clear_row(row)
        self.images.clear_row(row)
        for uid in self._pods_on.get(name, ()):
            entry = self.pods[uid]
            self.labelsets.move(entry.label_set, entry.row, -1, entry.pod.deleting)
            self.affinity_terms.move(uid, entry.row, -1)
            entry.row = -1
            if entry.pod.volumes:
                self.volume_index.move(uid, -1)
        self.volume_index.node_removed(name, row)

    # ------------------------------------------------------------------ pods
    def _account(self, pod: Pod, row: int, sign: int) -> None:
        if row < 0:
            return
        self.nodes.count_pod(row, pod, sign)
        if pod.host_ports:
            self.ports.add(row, pod.host_ports, sign)

    def _attach(self, pod: Pod, node_name: str, assumed: bool) -> None:
        row = self.nodes.row_of.get(node_name, -1)
        entry = PodEntry(pod, node_name, row, assumed)
        entry.label_set = self.labelsets.attach(pod.namespace, pod.labels, row, pod.deleting)
        self.pods[pod.uid] = entry
        self.affinity_pods.add(entry)
        self.affinity_terms.attach(pod, row)
        self._pods_on.setdefault(node_name, set()).add(pod.uid)
        self._account(pod, row, +1)
        if pod.volumes:
            self.volume_index.attach(pod, row, bool(self._overlays))

    def _detach(self, uid: str) -> PodEntry:
        entry = self.pods.pop(uid)
        self._account(entry.pod, entry.row, -1)
        if entry.pod.volumes:
            self.volume_index.detach(uid, bool(self._overlays))
        self.labelsets.detach(entry.label_set, entry.row, entry.pod.deleting)
        self.affinity_pods.discard(uid)
        self.affinity_terms.detach(uid, entry.row)
        on = self._pods_on.get(entry.node_name)
        if on is not None:
            on.discard(uid)
            if not on:
                del self._pods_on[entry.node_name]
        return entry

    def assume(self, pod: Pod, node_name: str) -> None:
        """Count ``pod`` on ``node_name`` before its binding is confirmed."""
        if pod.uid in self.pods:
            raise CacheError(f"pod {pod.uid}({pod.key}) is in the cache, so can't be assumed")
        self._attach(pod, node_name, assumed=True)

    def forget(self, uid: str) -> Pod:
        """Undo :meth:`assume` after a failed bind; exactly reverses it."""
        entry = self.pods.get(uid)
        if entry is None or not entry.assumed:
            raise CacheError(f"pod {uid} is not assumed, so can't be forgotten")
        return self._detach(uid).pod

    def add_pod(self, pod: Pod) -> None:
        """A bound pod (``spec.nodeName`` set) was seen: confirm an assumed pod or add a new one.

        An update of a known pod replaces it (moving its request if the node changed).
        """
        if not pod.node_name:
            raise CacheError(f"pod {pod.key} has no spec.nodeName; only bound pods are cached")
        entry = self.pods.get(pod.uid)
        if entry is not None:
            if self._counts_the_same(entry, pod):
                entry.pod = pod  # the usual update: a bind confirmed, a status written
                entry.assumed = False
                return
            self._detach(pod.uid)
        self._attach(pod, pod.node_name, assumed=False)

    def _counts_the_same(self, entry: PodEntry, pod: Pod) -> bool:
        """Whether swapping ``entry``'s record for ``pod`` changes nothing the cache counts: same
        node and row, requests, host ports, namespace, labels, deletion state, and no inter-pod
        affinity on either (its index is keyed by the terms). Then detaching and attaching again,
        which costs a dozen index updates, would leave every count as it is."""
        old = entry.pod
        return (
            entry.node_name == pod.node_name
            and entry.row == self.nodes.row_of.get(pod.node_name, -1)
            and not old.affinity
            and not pod.affinity
            and old.requests == pod.requests
            and old.nonzero_cpu == pod.nonzero_cpu
            and old.nonzero_memory == pod.nonzero_memory
            and old.host_ports == pod.host_ports
            and old.namespace == pod.namespace
            and old.deleting == pod.deleting
            and old.labels == pod.labels
            and old.volumes == pod.volumes
        )

    update_pod = add_pod

    def remove_pod(self, uid: str) -> Pod | None:
        """The pod was deleted (or unbound): release what it used."""
        if uid not in self.pods:
            return None
        return self._detach(uid).pod
