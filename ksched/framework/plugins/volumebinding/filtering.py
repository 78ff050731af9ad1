"""VolumeBinding's Filter over every node row at once: :func:`~.binder.find_pod_volumes`' verdict
for each node, computed without asking it node by node.

**Bound claims** are a walk over the claims in order with boolean rows: the first claim whose PV
is missing marks the rows no earlier claim ruled out (``node(s) unavailable due to ...``); a PV
whose node affinity fails marks its rows (``node(s) had volume node affinity conflict``). A PV's
affinity is a mask over the node table (labels only, as ``CheckNodeAffinity``), or, on rows whose
CSINode migrated the PV's in-tree plugin, its CSI translation's mask.

**Unbound claims** (``WaitForFirstConsumer``): a claim already provisioned for one node leaves
every other node with ``node(s) didn't find available persistent volumes to bind``, and that node
is asked alone. Otherwise what a node's answer depends on is a handful of booleans: the affinity
of every PV that could match some claim, each class's ``allowedTopologies``, each (class, size)'s
CSIStorageCapacity. Nodes are grouped by those bits and the plain-Python reference runs once per
group, on one node of it: exact (static matching with the smallest-fit rule, pre-bound PVs and
the exclusion of PVs chosen for earlier claims, then provisioning), and as many calls as there are
distinct groups, not nodes.

PV affinity masks are kept across cycles, keyed on the PV record (immutable: an update is a new
record) and the node table's generation; the rest lives for one Filter call. The rows that hold
no node are computed too (garbage the runtime masks), except that a binder error is raised only
for a row that holds a node.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from ksched.cache.node_selector import RowMatcher
from ksched.framework.api import ClusterReader, Code, FilterResult
from ksched.framework.plugins.volumebinding.binder import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
    BinderError,
    NodeFacts,
    PodVolumeClaims,
    find_unbound,
    pv_missing_reason,
    topology_term_valid,
)
from ksched.framework.plugins.volumebinding.matching import compiled_affinity, passes_static_checks
from ksched.framework.plugins.volumebinding.translation import (
    TranslationError,
    migrating_plugin,
    translated_affinity,
)
from ksched.model.selectors import LabelSelector, NodeSelectorTerm, Requirement
from ksched.model.storage import (
    NO_PROVISIONER,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    value_of,
)

REASONS: Final = (
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
)
"""Upstream's order of the four reasons; bit ``i`` of a row's failure set is ``REASONS[i]``."""
CODES: Final = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE,) * 4
NODE_CONFLICT: Final = np.uint64(1)
BIND_CONFLICT: Final = np.uint64(2)
NOT_ENOUGH_SPACE: Final = np.uint64(4)
PV_MISSING: Final = np.uint64(8)


def terms_mask(matcher: RowMatcher, terms: tuple[NodeSelectorTerm, ...] | None) -> np.ndarray:
    """Rows whose labels satisfy ``terms`` as ``CheckNodeAffinity`` sees them (a node without a
    name: ``matchFields`` hold only for ``In [""]`` / ``NotIn [v != ""]``)."""
    n = matcher.n
    compiled = compiled_affinity(terms)
    if compiled is None:
        return np.ones(n, dtype=np.bool_)
    out = np.zeros(n, dtype=np.bool_)
    for term in compiled:
        if term.error is not None:
            continue
        if not all((r.values[0] == "") == (r.operator == "In") for r in term.match_fields):
            continue
        m = np.ones(n, dtype=np.bool_)
        for req in term.match_expressions:
            m &= matcher.label_requirement(req)
        out |= m
    return out


def selector_mask(matcher: RowMatcher, selector: LabelSelector) -> np.ndarray:
    """Rows whose labels a (valid, parsed) label selector matches."""
    m = np.ones(matcher.n, dtype=np.bool_)
    for key, value in selector.match_labels:
        m &= matcher.label_requirement(Requirement(key, "In", (value,)))
    for req in selector.match_expressions:
        m &= matcher.label_requirement(req)
    return m


class AffinityMasks:
    """PV node-affinity masks over one node table, kept across cycles (scheduling thread only)."""

    def __init__(self) -> None:
        self._memo: dict[tuple[str, bool], tuple[PersistentVolume, object, int, int, np.ndarray]] = {}

    def of(
        self, pv: PersistentVolume, translated: bool, cluster: ClusterReader, matcher: RowMatcher
    ) -> np.ndarray:
        """The rows where ``pv``'s affinity (``translated``: its CSI translation's) holds, read-only.
        Raises :class:`TranslationError` when the translation fails."""
        nodes = cluster.nodes
        key = (pv.name, translated)
        hit = self._memo.get(key)
        if (
            hit is not None
            and hit[0] is pv
            and hit[1] is nodes
            and hit[2] == nodes.generation
            and hit[3] == nodes.n_rows
        ):
            return hit[4]
        terms = translated_affinity(pv) if translated else pv.node_affinity
        mask = terms_mask(matcher, terms)
        mask.flags.writeable = False
        if len(self._memo) > 2 * len(cluster.volumes.pvs) + 64:
            self._memo.clear()  # entries of PVs that are gone
        self._memo[key] = (pv, nodes, nodes.generation, nodes.n_rows, mask)
        return mask


class _Cycle:
    """What one Filter call computes once: the matcher, CSINode migration rows, class masks."""

    def __init__(self, cluster: ClusterReader, masks: AffinityMasks) -> None:
        self.cluster = cluster
        self.store = cluster.volumes
        self.nodes = cluster.nodes
        self.n = self.nodes.n_rows
        self.masks = masks
        self._matcher: RowMatcher | None = None
        self._migrated: dict[str, np.ndarray] = {}

    @property
    def matcher(self) -> RowMatcher:
        if self._matcher is None:
            self._matcher = RowMatcher(self.nodes)
        return self._matcher

    def affinity(self, pv: PersistentVolume, translated: bool = False) -> np.ndarray:
        if pv.node_affinity is None and not translated:
            return np.ones(self.n, dtype=np.bool_)
        return self.masks.of(pv, translated, self.cluster, self.matcher)

    def migrated(self, plugin: str) -> np.ndarray:
        """Rows whose CSINode lists ``plugin`` among its migrated plugins."""
        hit = self._migrated.get(plugin)
        if hit is None:
            hit = np.zeros(self.n, dtype=np.bool_)
            row_of = self.nodes.row_of
            for name, csi in self.store.csi_nodes.items():
                row = row_of.get(name)
                if row is not None and row < self.n and csi.migrated(plugin):
                    hit[row] = True
            self._migrated[plugin] = hit
        return hit

    def topology(self, cls: StorageClass) -> np.ndarray:
        """``MatchTopologySelectorTerms(cls.allowedTopologies, node labels)`` per row."""
        if not cls.allowed_topologies:
            return np.ones(self.n, dtype=np.bool_)
        out = np.zeros(self.n, dtype=np.bool_)
        for term in cls.allowed_topologies:
            if not term.requirements or not topology_term_valid(term):
                continue
            m = np.ones(self.n, dtype=np.bool_)
            for key, values in term.requirements:
                m &= self.matcher.label_requirement(Requirement(key, "In", tuple(sorted(values))))
            out |= m
        return out

    def capacity(self, cls: StorageClass, size: int) -> np.ndarray:
        """Rows that reach a CSIStorageCapacity of ``cls`` big enough for ``size`` bytes."""
        out = np.zeros(self.n, dtype=np.bool_)
        for cap in self.store.capacities.values():
            if cap.storage_class == cls.name and cap.sufficient(size) and cap.node_topology is not None:
                out |= selector_mask(self.matcher, cap.node_topology)
        return out

    def reference(self, claims: PodVolumeClaims, row: int) -> tuple[bool, bool]:
        """The unbound half of FindPodVolumes on the node of ``row``: (satisfied, sufficient)."""
        node = self.nodes.node(row)
        ok, sufficient, _, _ = find_unbound(claims, NodeFacts(node.name, node.labels), self.store)
        return ok, sufficient


def volume_filter(claims: PodVolumeClaims, cluster: ClusterReader, masks: AffinityMasks) -> FilterResult:
    """Every row's FindPodVolumes reasons as a :class:`FilterResult`; raises :class:`BinderError`
    when FindPodVolumes errs on a node."""
    cyc = _Cycle(cluster, masks)
    n = cyc.n
    valid = cyc.nodes.valid[:n]
    failed = np.zeros(n, dtype=np.uint64)
    reasons = list(REASONS)
    if claims.bound:
        conflict, missing, missing_reason = _bound(claims.bound, cyc, valid)
        failed[conflict] |= NODE_CONFLICT
        if missing is not None:
            failed[missing] |= PV_MISSING
            reasons[3] = missing_reason
    if claims.delay:
        unsatisfied, insufficient = _unbound(claims, cyc, valid)
        failed[unsatisfied] |= BIND_CONFLICT
        failed[insufficient] |= NOT_ENOUGH_SPACE
    if not failed.any():
        return FilterResult.all_pass()
    return FilterResult(failed, tuple(reasons), CODES)


def _bound(
    bound: tuple[PersistentVolumeClaim, ...], cyc: _Cycle, valid: np.ndarray
) -> tuple[np.ndarray, np.ndarray | None, str]:
    """``checkBoundClaims`` per row: (affinity conflict rows, PV-missing rows or None, its reason)."""
    decided = np.zeros(cyc.n, dtype=np.bool_)
    conflict = np.zeros(cyc.n, dtype=np.bool_)
    for pvc in bound:
        pv = cyc.store.pvs.get(pvc.volume_name)
        if pv is None:
            return conflict, ~decided, pv_missing_reason(pvc, cyc.store)
        ok = cyc.affinity(pv)
        plugin = migrating_plugin(pv)
        if plugin is not None:
            migrated = cyc.migrated(plugin)
            if migrated.any():
                try:
                    ok = np.where(migrated, cyc.affinity(pv, translated=True), ok)
                except TranslationError as exc:
                    if (migrated & ~decided & valid).any():
                        raise BinderError(str(exc)) from exc
        mismatch = ~ok & ~decided
        conflict |= mismatch
        decided |= mismatch
    return conflict, None, ""


def _unbound(claims: PodVolumeClaims, cyc: _Cycle, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The unbound half per row: (no PV and no provisioning rows, not-enough-storage rows)."""
    n = cyc.n
    selected = {pvc.selected_node for pvc in claims.delay if pvc.selected_node is not None}
    if selected:
        unsatisfied = np.ones(n, dtype=np.bool_)
        insufficient = np.zeros(n, dtype=np.bool_)
        if len(selected) == 1:
            row = cyc.nodes.row_of.get(next(iter(selected)))
            if row is not None and row < n and valid[row]:
                ok, sufficient = cyc.reference(claims, row)
                unsatisfied[row] = not ok
                insufficient[row] = not sufficient
        return unsatisfied, insufficient
    rows = np.flatnonzero(valid)
    if rows.size == 0:
        return np.zeros(n, dtype=np.bool_), np.zeros(n, dtype=np.bool_)
    features = _features(claims, cyc)
    varying = [f[rows] for f in features]
    varying = [f for f in varying if f.any() and not f.all()]
    if not varying:
        ok, sufficient = cyc.reference(claims, int(rows[0]))
        return np.full(n, not ok, dtype=np.bool_), np.full(n, not sufficient, dtype=np.bool_)
    first, inverse = group_rows(np.stack(varying))
    outcomes = [cyc.reference(claims, int(rows[i])) for i in first]
    ok_g = np.array([o[0] for o in outcomes], dtype=np.bool_)
    sufficient_g = np.array([o[1] for o in outcomes], dtype=np.bool_)
    unsatisfied = np.zeros(n, dtype=np.bool_)
    insufficient = np.zeros(n, dtype=np.bool_)
    unsatisfied[rows] = ~ok_g[inverse]
    insufficient[rows] = ~sufficient_g[inverse]
    return unsatisfied, insufficient


def _features(claims: PodVolumeClaims, cyc: _Cycle) -> list[np.ndarray]:
    """Every node-dependent boolean the unbound half can read: the affinity of each PV some claim
    could take, each provisioning class's topology, each (class, size)'s capacity."""
    out: list[np.ndarray] = []
    seen: set[str] = set()
    store = cyc.store
    for pvc in claims.delay:
        for pv in claims.pvs_by_class.get(pvc.storage_class, ()):
            if pv.name in seen or pv.node_affinity is None or not passes_static_checks(pvc, pv):
                continue
            seen.add(pv.name)
            out.append(cyc.affinity(pv))
    topologies: set[str] = set()
    capacities: set[tuple[str, int]] = set()
    for pvc in claims.delay:
        cls = store.classes.get(pvc.storage_class)
        if cls is None or not cls.provisioner or cls.provisioner == NO_PROVISIONER:
            continue
        if cls.allowed_topologies and cls.name not in topologies:
            topologies.add(cls.name)
            out.append(cyc.topology(cls))
        driver = store.csi_drivers.get(cls.provisioner)
        if pvc.request is not None and driver is not None and driver.storage_capacity:
            key = (cls.name, value_of(pvc.request))
            if key not in capacities:
                capacities.add(key)
                out.append(cyc.capacity(cls, key[1]))
    return out


def group_rows(features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Group the columns of a (features x rows) boolean matrix by their bits: (the first column of
    each group, each column's group)."""
    k = features.shape[0]
    if k <= 63:
        weights = np.left_shift(np.uint64(1), np.arange(k, dtype=np.uint64))
        codes = (features.T.astype(np.uint64) * weights).sum(axis=1, dtype=np.uint64)
        _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
        return first, inverse
    packed = np.ascontiguousarray(np.packbits(features, axis=0).T)
    keys = packed.view(np.dtype((np.void, packed.shape[1]))).ravel()
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    return first, inverse
