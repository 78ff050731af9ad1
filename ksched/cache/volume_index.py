"""Per node row: the volumes the pods there attach, per CSI driver, and their inline disks.

What the volume plugins read instead of walking a node's pods, kept exact as pods come and go:

- **Attached volumes** (NodeVolumeLimits). Each pod on a row counts its attachable volumes
  (:func:`~ksched.cache.attachable.attachable`), unique by ``(driver, handle)``: ``refs[row][key]``
  is how many pods there use the volume, ``rows_of[key][row]`` the same, by volume. Each
  VolumeAttachment on the row's node counts ``(attacher, its PV's CSI handle)`` the same way in
  ``va_refs``. ``counts[driver, row]`` is how many distinct volumes of a driver the row has,
  pods' and attachments' together: the number upstream's Filter compares with the limit before
  adding the new pod's volumes. ``limits[driver, row]`` is the CSINode's ``allocatable.count``
  (-1: none) and ``csi_node[row]`` whether the node has a CSINode at all (migration of in-tree
  volumes is on exactly there). ``room[driver, row]`` is ``limit - count`` where there is a
  limit and :data:`NO_LIMIT` elsewhere, so "would k more volumes exceed it" is one comparison per
  driver. One contiguous array over the rows per driver (the first axis), added when a driver is
  first seen.
- **Inline disks** (VolumeRestrictions): :class:`~ksched.cache.disks.DiskIndex`.
- **Claim references** (VolumeRestrictions' ReadWriteOncePod count): how many volume entries of the
  pods on rows name each ``namespace/claim``, and how those counts (also by claim name alone, as
  upstream's AddPod/RemovePod match them) moved inside the what-if overlays that are open.

What changes what:

=====================================  ====================================================
event                                  recounted
=====================================  ====================================================
pod attached / detached (the cache,    that pod on its row (also inside what-if overlays,
including what-if overlays)            which go through the cache's assume / remove_pod)
node added / removed                   the row's limits and attachments, its pods moved
claim / PV / class changed             exactly the pods that looked it up (found or not),
                                       and the attachments naming the PV
CSINode changed                        the row's limits; its pods if it gained or lost one
VolumeAttachment added / removed       that attachment
=====================================  ====================================================

Called only from the scheduling thread, by the cache and the volume store.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from ksched.cache.attachable import Attachable, Lookups, VolumeKey, attachable
from ksched.cache.disks import DiskIndex, disk_sources
from ksched.cache.node_table import NodeTable
from ksched.cache.volumes import VolumeStore
from ksched.model.pod import Pod
from ksched.model.storage import VolumeAttachment
from ksched.model.volumes import PVC


@dataclass(slots=True)
class _Counted:
    """What the index counts for one cached pod."""

    pod: Pod
    row: int
    found: Attachable
    lookups: Lookups


NO_LIMIT = 2**62
""":attr:`VolumeIndex.room` where a driver has no limit: more than any count."""


class VolumeIndex:
    """See the module docstring."""

    def __init__(self, store: VolumeStore, nodes: NodeTable) -> None:
        self._store = store
        self._nodes = nodes
        self.drivers: list[str] = []
        """Driver name per column (first index) of :attr:`counts`, :attr:`limits` and :attr:`room`."""
        self._column: dict[str, int] = {}
        cap = nodes.capacity
        self._counts = np.zeros((0, cap), dtype=np.int64)
        self._limits = np.full((0, cap), -1, dtype=np.int64)
        self._room = np.full((0, cap), NO_LIMIT, dtype=np.int64)
        self._csi_node = np.zeros(cap, dtype=np.bool_)
        self._pods: dict[str, _Counted] = {}
        self._refs: dict[int, dict[VolumeKey, int]] = {}
        self.rows_of: dict[VolumeKey, dict[int, int]] = {}
        """Volume -> row -> pods there that use it (the new pod's volumes are matched here)."""
        self._va_refs: dict[int, dict[VolumeKey, int]] = {}
        self._vas: dict[str, tuple[VolumeAttachment, int, VolumeKey | None]] = {}
        self._vas_on: dict[str, set[str]] = {}
        self._va_by_pv: dict[str, set[str]] = {}
        self._by_claim: dict[str, set[str]] = {}
        self._by_volume: dict[str, set[str]] = {}
        self._by_class: dict[str, set[str]] = {}
        self.errors: dict[int, dict[str, str]] = {}
        """Row -> uid -> why that pod's volumes could not be counted (upstream's Filter errors there)."""
        self.disks = DiskIndex()
        self.claim_refs: Counter[str] = Counter()
        """``namespace/claim`` -> volume entries naming it, of the pods on node rows."""
        self.overlay_claims: Counter[str] = Counter()
        """``namespace/claim`` -> how :attr:`claim_refs` moved inside the open what-if overlays."""
        self.overlay_claim_names: Counter[str] = Counter()
        """Claim name (any namespace) -> the same, by name."""
        store.listen(self)

    # ------------------------------------------------------------------ reads
    @property
    def counts(self) -> np.ndarray:
        """int64[drivers, capacity]: distinct volumes per driver and row (read-only)."""
        return _read_only(self._counts)

    @property
    def limits(self) -> np.ndarray:
        """int64[drivers, capacity]: the CSINode's ``allocatable.count``, -1 for none (read-only)."""
        return _read_only(self._limits)

    @property
    def room(self) -> np.ndarray:
        """int64[drivers, capacity]: ``limit - count``, :data:`NO_LIMIT` without a limit (read-only)."""
        return _read_only(self._room)

    @property
    def csi_node(self) -> np.ndarray:
        """bool[capacity]: the row's node has a CSINode object (read-only)."""
        return _read_only(self._csi_node)

    def column(self, driver: str) -> int | None:
        return self._column.get(driver)

    def arrays(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(counts, limits, room, csi_node) for rows ``[0, n)``, read-only views (driver-major)."""
        self._fit_rows(n - 1)
        return (
            _read_only(self._counts[:, :n]),
            _read_only(self._limits[:, :n]),
            _read_only(self._room[:, :n]),
            _read_only(self._csi_node[:n]),
        )

    def counted(self, uid: str) -> Attachable | None:
        """What the index counts for the cached pod ``uid`` (None: nothing, or not counted)."""
        c = self._pods.get(uid)
        return None if c is None else c.found

    def attachments_on(self, row: int) -> dict[VolumeKey, int]:
        return self._va_refs.get(row, {})

    def volumes_on(self, row: int) -> dict[VolumeKey, int]:
        return self._refs.get(row, {})

    def claim_used(self, key: str) -> bool:
        """Whether a pod on a node uses claim ``key``, as the cache was outside every what-if overlay
        (upstream's snapshot ``IsPVCUsedByPods``, taken when the cycle began)."""
        return self.claim_refs[key] - self.overlay_claims[key] > 0

    # ------------------------------------------------------------------ pods (from the cache)
    def attach(self, pod: Pod, row: int, in_overlay: bool) -> None:
        if row >= 0:
            self._claims(pod, +1, in_overlay)
            self.disks.count(row, disk_sources(pod), +1)
        self._count(pod, row)

    def detach(self, uid: str, in_overlay: bool) -> None:
        c = self._pods.get(uid)
        if c is None:
            return
        if c.row >= 0:
            self._claims(c.pod, -1, in_overlay)
            self.disks.count(c.row, disk_sources(c.pod), -1)
        self._uncount(uid)

    def move(self, uid: str, row: int) -> None:
        """The pod's node was added (``row``) or removed (-1)."""
        c = self._pods.get(uid)
        if c is None:
            return
        pod = c.pod
        self.detach(uid, False)
        self.attach(pod, row, False)

    def _claims(self, pod: Pod, sign: int, in_overlay: bool) -> None:
        for v in pod.volumes:
            if v.kind != PVC:
                continue
            key = f"{pod.namespace}/{v.claim}"
            _bump(self.claim_refs, key, sign)
            if in_overlay:
                _bump(self.overlay_claims, key, sign)
                _bump(self.overlay_claim_names, v.claim, sign)

    def _count(self, pod: Pod, row: int) -> None:
        lookups = Lookups.empty()
        if row >= 0:
            self._fit_rows(row)
        csi = row >= 0 and bool(self._csi_node[row])
        found = attachable(pod, self._store, csi_node=csi, new_pod=False, lookups=lookups)
        uid = pod.uid
        self._pods[uid] = _Counted(pod, row, found, lookups)
        for key in lookups.claims:
            self._by_claim.setdefault(key, set()).add(uid)
        for name in lookups.volumes:
            self._by_volume.setdefault(name, set()).add(uid)
        for name in lookups.classes:
            self._by_class.setdefault(name, set()).add(uid)
        if row < 0:
            return
        if found.error:
            self.errors.setdefault(row, {})[uid] = found.error
            return
        for key in found.volumes:
            self._ref(row, key, +1, pod_side=True)

    def _uncount(self, uid: str) -> None:
        c = self._pods.pop(uid)
        for key in c.lookups.claims:
            _discard(self._by_claim, key, uid)
        for name in c.lookups.volumes:
            _discard(self._by_volume, name, uid)
        for name in c.lookups.classes:
            _discard(self._by_class, name, uid)
        if c.row < 0:
            return
        if c.found.error:
            on = self.errors[c.row]
            del on[uid]
            if not on:
                del self.errors[c.row]
            return
        for key in c.found.volumes:
            self._ref(c.row, key, -1, pod_side=True)

    def _recount(self, uids: set[str] | None) -> None:
        for uid in list(uids or ()):
            c = self._pods.get(uid)
            if c is not None:
                self._uncount(uid)
                self._count(c.pod, c.row)

    # ------------------------------------------------------------------ the counts
    def _ref(self, row: int, key: VolumeKey, sign: int, *, pod_side: bool) -> None:
        refs, other = (self._refs, self._va_refs) if pod_side else (self._va_refs, self._refs)
        on = refs.setdefault(row, {})
        n = on.get(key, 0) + sign
        if n > 0:
            on[key] = n
        else:
            del on[key]
            if not on:
                del refs[row]
        if pod_side:
            by_row = self.rows_of.setdefault(key, {})
            if n > 0:
                by_row[row] = n
            else:
                del by_row[row]
                if not by_row:
                    del self.rows_of[key]
        if (n > 0) != (n - sign > 0) and key not in other.get(row, ()):
            col = self._driver(key[0])  # may widen the arrays: before indexing them
            self._fit_rows(row)
            self._counts[col, row] += sign
            if self._limits[col, row] >= 0:
                self._room[col, row] -= sign

    def _driver(self, name: str) -> int:
        col = self._column.get(name)
        if col is None:
            col = self._column[name] = len(self.drivers)
            self.drivers.append(name)
            rows = self._counts.shape[1]
            self._counts = np.concatenate((self._counts, np.zeros((1, rows), dtype=np.int64)))
            self._limits = np.concatenate((self._limits, np.full((1, rows), -1, dtype=np.int64)))
            self._room = np.concatenate((self._room, np.full((1, rows), NO_LIMIT, dtype=np.int64)))
        return col

    def _fit_rows(self, row: int) -> None:
        have = self._csi_node.shape[0]
        if row < have:
            return
        size = max(self._nodes.capacity, row + 1, 2 * have)
        extra = size - have
        d = len(self.drivers)
        self._counts = np.concatenate((self._counts, np.zeros((d, extra), dtype=np.int64)), axis=1)
        self._limits = np.concatenate((self._limits, np.full((d, extra), -1, dtype=np.int64)), axis=1)
        self._room = np.concatenate((self._room, np.full((d, extra), NO_LIMIT, dtype=np.int64)), axis=1)
        self._csi_node = np.concatenate((self._csi_node, np.zeros(extra, dtype=np.bool_)))

    # ------------------------------------------------------------------ nodes (from the cache)
    def node_added(self, name: str, row: int) -> None:
        """A node took ``row``: its CSINode limits and attachments (before its pods move in)."""
        self._fit_rows(row)
        self._set_limits(row, name)
        for va_name in list(self._vas_on.get(name, ())):
            self._va_recount(va_name)

    def node_removed(self, name: str, row: int) -> None:
        """The node left ``row`` (after its pods moved out)."""
        for va_name in list(self._vas_on.get(name, ())):
            self._va_recount(va_name)
        self._fit_rows(row)
        self._limits[:, row] = -1
        self._room[:, row] = NO_LIMIT
        self._csi_node[row] = False
        self.disks.clear_row(row)

    def _set_limits(self, row: int, node_name: str) -> bool:
        """The row's limits from its CSINode; whether it gained or lost a CSINode."""
        csi = self._store.csi_nodes.get(node_name)
        self._limits[:, row] = -1
        if csi is not None:
            for driver, count in csi.limits().items():
                col = self._driver(driver)
                self._limits[col, row] = count
        limits = self._limits[:, row]
        self._room[:, row] = np.where(limits >= 0, limits - self._counts[:, row], NO_LIMIT)
        had = bool(self._csi_node[row])
        self._csi_node[row] = csi is not None
        return had != (csi is not None)

    # ------------------------------------------------------------------ storage (the store's listener)
    def claim_changed(self, key: str) -> None:
        self._recount(self._by_claim.get(key))

    def volume_changed(self, name: str) -> None:
        self._recount(self._by_volume.get(name))
        for va_name in list(self._va_by_pv.get(name, ())):
            self._va_recount(va_name)

    def class_changed(self, name: str) -> None:
        self._recount(self._by_class.get(name))

    def csi_node_changed(self, name: str) -> None:
        row = self._nodes.row_of.get(name)
        if row is None:
            return
        self._fit_rows(row)
        if self._set_limits(row, name):
            self._recount({uid for uid, c in self._pods.items() if c.row == row})

    def attachment_changed(self, old: VolumeAttachment | None, new: VolumeAttachment | None) -> None:
        if old is not None:
            self._va_remove(old.name)
        if new is not None:
            self._va_add(new)

    def _va_add(self, va: VolumeAttachment) -> None:
        row = self._nodes.row_of.get(va.node_name, -1)
        key = self._va_key(va) if row >= 0 else None
        self._vas[va.name] = (va, row, key)
        self._vas_on.setdefault(va.node_name, set()).add(va.name)
        if va.pv_name:
            self._va_by_pv.setdefault(va.pv_name, set()).add(va.name)
        if key is not None:
            self._ref(row, key, +1, pod_side=False)

    def _va_remove(self, name: str) -> VolumeAttachment | None:
        got = self._vas.pop(name, None)
        if got is None:
            return None
        va, row, key = got
        _discard(self._vas_on, va.node_name, name)
        if va.pv_name:
            _discard(self._va_by_pv, va.pv_name, name)
        if key is not None:
            self._ref(row, key, -1, pod_side=False)
        return va

    def _va_recount(self, name: str) -> None:
        va = self._va_remove(name)
        if va is not None:
            self._va_add(va)

    def _va_key(self, va: VolumeAttachment) -> VolumeKey | None:
        """Upstream ``getNodeVolumeAttachmentInfo``: ``(attacher, PV's CSI handle)``, when the
        attachment names an attacher and a PV the cache has with a CSI source."""
        if not va.attacher or not va.pv_name:
            return None
        pv = self._store.pvs.get_api(va.pv_name)
        if pv is None or pv.csi is None:
            return None
        return (va.attacher, pv.csi.volume_handle)

    # ------------------------------------------------------------------ checks
    def state(self) -> dict[str, object]:
        """Everything the index derives, to compare with a fresh index's (property tests)."""
        n = self._nodes.n_rows
        self._fit_rows(n - 1)
        by_driver = {
            d: (self._counts[c, :n].tolist(), self._limits[c, :n].tolist()) for d, c in self._column.items()
        }
        return {
            "drivers": {d: v for d, v in by_driver.items() if any(v[0]) or any(x >= 0 for x in v[1])},
            "csi_node": self._csi_node[:n].tolist(),
            "refs": {r: dict(on) for r, on in self._refs.items()},
            "va_refs": {r: dict(on) for r, on in self._va_refs.items()},
            "errors": {r: dict(on) for r, on in self.errors.items()},
            "disks": self.disks.state(),
            "claims": +self.claim_refs,
        }


def _read_only(a: np.ndarray) -> np.ndarray:
    view = a.view()
    view.flags.writeable = False
    return view


def _bump(counter: Counter[str], key: str, sign: int) -> None:
    n = counter[key] + sign
    if n:
        counter[key] = n
    else:
        del counter[key]


def _discard(index: dict[str, set[str]], key: str, item: str) -> None:
    items = index.get(key)
    if items is not None:
        items.discard(item)
        if not items:
            del index[key]


__all__ = ["NO_LIMIT", "VolumeIndex"]
