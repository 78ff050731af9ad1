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

PV affinity masks are kept across cycles, keyed on the affinity terms (PVs with equal terms share
one) and the node table's generation; the rest lives for one Filter call. The rows that hold
no node are computed too (garbage the runtime masks), except that a binder error is raised only
for a row that holds a node.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Final

import numpy as np

from ksched.cache.node_selector import RowMatcher
from ksched.cache.volumes import STORAGE_CLASSES, VolumeStore
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
    go_quote,
    pv_missing_reason,
    sort_by_size,
    topology_term_valid,
)
from ksched.framework.plugins.volumebinding.matching import (
    capacity,
    compiled_affinity,
    is_volume_bound_to_claim,
    passes_static_checks,
    passes_unbound_checks,
)
from ksched.framework.plugins.volumebinding.translation import (
    ZONE_BETA,
    ZONE_GA,
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
    """PV node-affinity masks over one node table, kept across cycles (scheduling thread only).

    PVs with equal affinity terms (every local PV of a node, every PV of a zone) share one mask and
    one :meth:`terms_id`; a CSI translation's mask is the PV's own."""

    def __init__(self) -> None:
        self._ids: dict[str, tuple[PersistentVolume, int]] = {}
        self._interned: dict[tuple[NodeSelectorTerm, ...], int] = {}
        self._memo: dict[tuple[object, ...], tuple[object, object, int, int, np.ndarray]] = {}

    def begin(self, n_pvs: int) -> None:
        """At the start of a Filter call (never during one: ids must stay put), forget what PVs
        that are gone left behind once it outgrows the ``n_pvs`` PVs there are."""
        bound = 2 * n_pvs + 64
        if len(self._ids) > bound or len(self._interned) > bound or len(self._memo) > bound:
            self._ids.clear()
            self._interned.clear()
            self._memo.clear()

    def terms_id(self, pv: PersistentVolume) -> int:
        """A small int naming ``pv``'s (present) affinity terms: equal terms, equal ids."""
        hit = self._ids.get(pv.name)
        if hit is not None and hit[0] is pv:
            return hit[1]
        terms = pv.node_affinity
        assert terms is not None
        i = self._interned.setdefault(terms, len(self._interned))
        self._ids[pv.name] = (pv, i)
        return i

    def of(
        self, pv: PersistentVolume, translated: bool, cluster: ClusterReader, matcher: RowMatcher
    ) -> np.ndarray:
        """The rows where ``pv``'s affinity (``translated``: its CSI translation's) holds, read-only.
        Raises :class:`TranslationError` when the translation fails."""
        nodes = cluster.nodes
        key: tuple[object, ...]
        owner: object
        if translated:
            key, owner = ("translated", pv.name), pv
        else:
            key, owner = ("terms", self.terms_id(pv)), None
        hit = self._memo.get(key)
        if (
            hit is not None
            and hit[0] is owner
            and hit[1] is nodes
            and hit[2] == nodes.generation
            and hit[3] == nodes.n_rows
        ):
            return hit[4]
        terms = translated_affinity(pv) if translated else pv.node_affinity
        mask = terms_mask(matcher, terms)
        mask.flags.writeable = False
        self._memo[key] = (owner, nodes, nodes.generation, nodes.n_rows, mask)
        return mask


class _Cycle:
    """What one Filter call computes once: the matcher, CSINode migration rows, class masks."""

    def __init__(self, cluster: ClusterReader, masks: AffinityMasks) -> None:
        self.cluster = cluster
        self.store = cluster.volumes
        self.nodes = cluster.nodes
        self.n = self.nodes.n_rows
        self.masks = masks
        masks.begin(len(self.store.pvs))
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
    if not claims.delay and _unconstrained(claims.bound, cluster.volumes):
        return FilterResult.all_pass()
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


def _unconstrained(bound: tuple[PersistentVolumeClaim, ...], store: VolumeStore) -> bool:
    """Every bound claim's PV exists and has no node affinity, and none would gain one from its CSI
    translation (csi-translation-lib adds topology only from zone labels): no node can fail
    ``checkBoundClaims``, decided without a per-row array (the common case)."""
    for pvc in bound:
        pv = store.pvs.get(pvc.volume_name)
        if pv is None or pv.node_affinity is not None:
            return False
        if migrating_plugin(pv) is not None and (ZONE_GA in pv.labels or ZONE_BETA in pv.labels):
            return False
    return True


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
    ev = _UnboundEval(claims, cyc)
    features = ev.features if rows.size == n else ev.features[:, rows]
    varying = features[features.any(axis=1) & ~features.all(axis=1)]
    if varying.shape[0] == 0:
        first, inverse = np.zeros(1, dtype=np.intp), np.zeros(rows.size, dtype=np.intp)
    else:
        first, inverse = group_rows(varying)
    ok_g, sufficient_g = ev.outcome(features[:, first])
    unsatisfied = np.zeros(n, dtype=np.bool_)
    insufficient = np.zeros(n, dtype=np.bool_)
    unsatisfied[rows] = ~ok_g[inverse]
    insufficient[rows] = ~sufficient_g[inverse]
    return unsatisfied, insufficient


class _Claim:
    """One unbound claim as the grouped evaluation reads it: what does not depend on the node
    (its candidate PVs, which are pre-bound to it, which pass the unbound checks, how it would be
    provisioned), and for each candidate the feature row holding its affinity (the last row, all
    true, for a PV without one)."""

    __slots__ = (
        "cap_feature",
        "error",
        "features",
        "prebound",
        "provisionable",
        "smallest_first",
        "topo_feature",
        "volumes",
    )

    def __init__(
        self, pvc: PersistentVolumeClaim, pvs: tuple[PersistentVolume, ...], cyc: _Cycle, index: _FeatureIndex
    ) -> None:
        candidates = [pv for pv in pvs if passes_static_checks(pvc, pv)]
        self.volumes = np.array([index.volume(pv.name) for pv in candidates], dtype=np.intp)
        self.features = np.array([index.affinity(pv, cyc) for pv in candidates], dtype=np.intp)
        prebound = [i for i, pv in enumerate(candidates) if is_volume_bound_to_claim(pv, pvc)]
        self.prebound = np.array(prebound, dtype=np.intp)
        # The PVs a smallest-fit search may pick, smallest first; among equal sizes the earlier
        # (FindMatchingVolume replaces its pick only by a strictly smaller one).
        eligible = [
            i for i, pv in enumerate(candidates) if i not in prebound and passes_unbound_checks(pvc, pv)
        ]
        eligible.sort(key=lambda i: _size_key(candidates[i]))
        self.smallest_first = np.array(eligible, dtype=np.intp)
        self.error: str | None = None
        self.provisionable = False
        self.topo_feature = self.cap_feature = ALWAYS
        name = pvc.storage_class
        cls = cyc.store.classes.get(name) if name else None
        if not name:
            self.error = f"no class for claim {go_quote(pvc.key)}"
        elif cls is None:
            missing = f"failed to find storage class {go_quote(name)}"
            self.error = cyc.store.problem(STORAGE_CLASSES, name) or missing
        elif cls.provisioner and cls.provisioner != NO_PROVISIONER:
            self.provisionable = True
            if cls.allowed_topologies:
                self.topo_feature = index.of(("topology", cls.name), lambda: cyc.topology(cls))
            driver = cyc.store.csi_drivers.get(cls.provisioner)
            if pvc.request is not None and driver is not None and driver.storage_capacity:
                size = value_of(pvc.request)
                self.cap_feature = index.of(("capacity", cls.name, size), lambda: cyc.capacity(cls, size))

    def match(self, bits: np.ndarray, excluded: np.ndarray) -> np.ndarray:
        """``FindMatchingVolume`` in each group: the candidate chosen (-1: none), given each
        group's feature values ``bits`` (features+1 x groups, the last row true) and the PVs
        already chosen for earlier claims (``excluded``, volumes x groups)."""
        g = bits.shape[1]
        chosen = np.full(g, -1, dtype=np.intp)
        if self.volumes.size == 0:
            return chosen
        valid = bits[self.features]
        free = ~excluded[self.volumes]
        cols = np.arange(g)
        decided = np.zeros(g, dtype=np.bool_)
        if self.prebound.size:  # the first pre-bound PV not chosen yet answers, if its affinity holds
            avail = free[self.prebound]
            decided = avail.any(axis=0)
            pick = self.prebound[avail.argmax(axis=0)]
            chosen = np.where(decided & valid[pick, cols], pick, -1)
        if self.smallest_first.size:
            fits = valid[self.smallest_first] & free[self.smallest_first]
            found = fits.any(axis=0) & ~decided
            chosen = np.where(found, self.smallest_first[fits.argmax(axis=0)], chosen)
        return chosen


def _size_key(pv: PersistentVolume) -> int | Fraction:
    size = capacity(pv)
    return size.numerator if size.denominator == 1 else size  # ints compare much faster


ALWAYS: Final = -1
"""The feature row that is true everywhere (the last one of :attr:`_UnboundEval.features`)."""


class _FeatureIndex:
    """The distinct node-dependent rows the unbound half reads, each computed once, and the PVs
    the claims may pick."""

    def __init__(self) -> None:
        self.rows: list[np.ndarray] = []
        self._at: dict[tuple[object, ...], int] = {}
        self._volumes: dict[str, int] = {}

    def of(self, key: tuple[object, ...], make: Callable[[], np.ndarray]) -> int:
        i = self._at.get(key)
        if i is None:
            i = self._at[key] = len(self.rows)
            self.rows.append(make())
        return i

    def affinity(self, pv: PersistentVolume, cyc: _Cycle) -> int:
        """The row of ``pv``'s node affinity (PVs with equal terms share one)."""
        if pv.node_affinity is None:
            return ALWAYS
        return self.of(("affinity", cyc.masks.terms_id(pv)), lambda: cyc.affinity(pv))

    def volume(self, name: str) -> int:
        return self._volumes.setdefault(name, len(self._volumes))

    @property
    def n_volumes(self) -> int:
        return len(self._volumes)


class _UnboundEval:
    """The unbound half of FindPodVolumes for groups of nodes, from precomputed rows: the outcome
    of :func:`~.binder.find_unbound` (claims matched in size order, each excluding the PVs chosen
    for the earlier ones, then provisioned) without reading labels node by node. ``features``
    (features x rows) are the booleans it depends on."""

    def __init__(self, claims: PodVolumeClaims, cyc: _Cycle) -> None:
        index = _FeatureIndex()
        by_class = claims.pvs_by_class
        self.claims = [
            _Claim(c, by_class.get(c.storage_class, ()), cyc, index) for c in sort_by_size(list(claims.delay))
        ]
        self.n_volumes = index.n_volumes
        self.features = np.stack(index.rows) if index.rows else np.zeros((0, cyc.n), dtype=np.bool_)

    def outcome(self, bits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(unbound claims satisfied, storage sufficient) for groups whose feature values are the
        columns of ``bits``; raises :class:`BinderError` when a group's provisioning check errs
        (the first group's error, in column order)."""
        g = bits.shape[1]
        bits = np.vstack([bits, np.ones((1, g), dtype=np.bool_)])  # ALWAYS
        excluded = np.zeros((self.n_volumes, g), dtype=np.bool_)
        cols = np.arange(g)
        unmatched = []
        for c in self.claims:
            chosen = c.match(bits, excluded)
            hit = chosen >= 0
            excluded[c.volumes[chosen[hit]], cols[hit]] = True
            unmatched.append(~hit)
        ok = np.ones(g, dtype=np.bool_)
        sufficient = np.ones(g, dtype=np.bool_)
        decided = np.zeros(g, dtype=np.bool_)
        errors: list[tuple[int, str]] = []
        for c, miss in zip(self.claims, unmatched, strict=True):  # checkVolumeProvisions, in order
            reach = miss & ~decided
            if not reach.any():
                continue
            if c.error is not None:
                errors.append((int(reach.argmax()), c.error))
                decided |= reach
                continue
            cannot = reach if not c.provisionable else reach & ~bits[c.topo_feature]
            ok &= ~cannot
            short = reach & ~cannot & ~bits[c.cap_feature]
            sufficient &= ~short
            decided |= cannot | short
        if errors:
            raise BinderError(min(errors)[1])
        return ok, sufficient


def group_rows(features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Group the columns of a (features x rows) boolean matrix by their bits: (one column of each
    group, each column's group). Columns with no bit set (often most of them: local PVs hold on
    one node each) make one group without being sorted."""
    n = features.shape[1]
    some = np.flatnonzero(features.any(axis=0))
    packed = np.packbits(np.ascontiguousarray(features[:, some].T), axis=1)
    width = -(-packed.shape[1] // 8) * 8
    keys = np.zeros((some.size, width), dtype=np.uint8)
    keys[:, : packed.shape[1]] = packed
    words = keys.view(np.uint64)  # (columns with a bit, words)
    order = np.lexsort(words.T[::-1])  # stable: each group's first column comes first
    ordered = words[order]
    starts = np.ones(some.size, dtype=np.bool_)
    starts[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    sub_inverse = np.empty(some.size, dtype=np.intp)
    sub_inverse[order] = np.cumsum(starts) - 1
    sub_first = order[starts]
    inverse = np.zeros(n, dtype=np.intp)
    if some.size == n:
        inverse[:] = sub_inverse
        return some[sub_first], inverse
    inverse[some] = sub_inverse + 1
    gaps = np.flatnonzero(some != np.arange(some.size))  # ``some`` is sorted
    first_empty = int(gaps[0]) if gaps.size else some.size
    return np.concatenate(([first_empty], some[sub_first])), inverse
