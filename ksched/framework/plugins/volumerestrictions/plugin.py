"""VolumeRestrictions: inline disk conflicts on the node, and ReadWriteOncePod claims cluster-wide.

**Disks.** The incoming pod's inline GCE PD, AWS EBS, iSCSI and RBD disks are looked up in the
cache's per-row disk index (:class:`~ksched.cache.disks.DiskIndex`): the rows where a pod mounts
one of them in a conflicting way fail, Unschedulable, with upstream's "node(s) had no available
disk".

**ReadWriteOncePod.** PreFilter looks up the pod's claims (a missing one rejects the pod,
UnschedulableAndUnresolvable) and counts those with the ReadWriteOncePod access mode that some pod
on a node already uses (upstream ``IsPVCUsedByPods``, as the cache is outside any what-if overlay).
Upstream then adjusts that count per node with AddPod / RemovePod for the pods its preemption dry
run and nominated-pods pass add and take away, matching them by claim *name*. Here those pods go
through the cache's what-if overlay, which tells the volume index how the claim references moved,
by name, while it is open: Filter adds that to the count. A positive count fails every node,
Unschedulable, so that preemption may evict the holder: in the dry run on the holder's node the
holder is taken away, the count drops to zero there, and the node passes.

A pod with no such disk and no claim in use is skipped at PreFilter, as upstream does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from ksched.cache.attachable import claim_missing
from ksched.cache.disks import CONFLICT_PLUGINS, conflicts, disk_sources
from ksched.framework import names
from ksched.framework.api import (
    SKIP,
    SUCCESS,
    ClusterEventSpec,
    ClusterReader,
    Code,
    CycleState,
    FilterResult,
    Handle,
    PreFilterResult,
    Status,
    cluster_event,
)
from ksched.framework.interface import HintFn
from ksched.framework.plugins.volumerestrictions import hints
from ksched.model.pod import Pod
from ksched.model.volumes import IN_TREE, PVC, InTreeSource

NAME: Final = names.VOLUME_RESTRICTIONS
ERR_REASON_DISK_CONFLICT: Final = "node(s) had no available disk"
ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT: Final = (
    "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
)
READ_WRITE_ONCE_POD: Final = "ReadWriteOncePod"
STATE_KEY: Final = f"PreFilter{NAME}"

_DISK, _RWOP = 1, 2


@dataclass(frozen=True, slots=True)
class PreFilterState:
    """Upstream ``preFilterState``: the pod's inline disks, the names of its ReadWriteOncePod
    claims, and how many of those a pod on a node uses (as the cache is outside overlays)."""

    disks: tuple[InTreeSource, ...]
    rwop_claims: frozenset[str]
    conflicting: int


def rwop_claims(pod: Pod, cluster: ClusterReader) -> tuple[frozenset[str], Status | None]:
    """Upstream ``readWriteOncePodPVCsForPod``: the names of the pod's claims with the
    ReadWriteOncePod access mode, or the status for the first claim that is missing."""
    store = cluster.volumes
    out = set()
    for v in pod.volumes:
        if v.kind != PVC:
            continue
        key = f"{pod.namespace}/{v.claim}"
        pvc = store.pvcs.get_api(key)
        if pvc is None:
            return frozenset(), Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (claim_missing(store, key, v.claim),)
            )
        if READ_WRITE_ONCE_POD in pvc.access_modes:
            out.add(pvc.name)
    return frozenset(out), None


class VolumeRestrictions:
    """PreFilter counts ReadWriteOncePod claims in use; Filter fails rows with disk conflicts, then
    every row while such a claim is in use (Unschedulable: preemption may help)."""

    name = NAME
    skips_pods_without = "volumes"
    """A pod without volumes has neither disks nor claims: PreFilter says Skip (``PodGatedPlugin``)."""

    def pre_filter(
        self, state: CycleState, pod: Pod, cluster: ClusterReader
    ) -> tuple[PreFilterResult | None, Status]:
        st, status = self._state(pod, cluster)
        if status is not None:
            return None, status
        assert st is not None
        if not st.disks and st.conflicting == 0:
            return None, SKIP
        state.write(STATE_KEY, st)
        return None, SUCCESS

    def _state(self, pod: Pod, cluster: ClusterReader) -> tuple[PreFilterState | None, Status | None]:
        claims, status = rwop_claims(pod, cluster)
        if status is not None:
            return None, status
        index = cluster.volume_index
        used = sum(1 for c in claims if index.claim_used(f"{pod.namespace}/{c}"))
        return PreFilterState(tuple(disk_sources(pod)), claims, used), None

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterReader) -> FilterResult:
        st = state.read(STATE_KEY)
        if st is None:
            st, status = self._state(pod, cluster)
            if status is not None:
                return FilterResult.from_mask(cluster.valid.copy(), status.message, status.code)
            assert st is not None
        n = cluster.n_rows
        index = cluster.volume_index
        bits: np.ndarray | None = None
        if st.disks and index.disks:
            rows = {r for src in st.disks for r in index.disks.conflicting_rows(src) if r < n}
            if rows:
                bits = np.zeros(n, dtype=np.uint64)
                bits[list(rows)] = _DISK
        moved = index.overlay_claim_names
        count = st.conflicting + sum(moved[c] for c in st.rwop_claims) if moved else st.conflicting
        if count > 0:
            if bits is None:
                bits = np.full(n, _RWOP, dtype=np.uint64)
            else:
                bits[bits == 0] = _RWOP
        if bits is None:
            return FilterResult.all_pass()
        return FilterResult(
            bits,
            (ERR_REASON_DISK_CONFLICT, ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT),
            (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE),
        )

    def relevance(self, pod: Pod, cluster: ClusterReader) -> Callable[[Pod], bool] | None:
        """The pods whose going or coming changes the verdict: those with a disk that conflicts
        with one of the pod's, and those naming one of its claims (by name, in any namespace, as
        upstream's AddPod / RemovePod count them; all of its claims when one is missing)."""
        disks = disk_sources(pod)
        claims, status = rwop_claims(pod, cluster)
        if status is not None:
            claims = frozenset(v.claim for v in pod.volumes if v.kind == PVC)
        if not disks and not claims:
            return None

        def relevant(other: Pod) -> bool:
            for v in other.volumes:
                if v.kind == PVC and v.claim in claims:
                    return True
                src = v.in_tree
                if (
                    v.kind == IN_TREE
                    and src is not None
                    and src.plugin in CONFLICT_PLUGINS
                    and any(conflicts(d, src) for d in disks)
                ):
                    return True
            return False

        return relevant

    def explain_row(self, pod: Pod, cluster: ClusterReader, row: int) -> str | None:
        """The disk that conflicts on the node, or the ReadWriteOncePod claims in use."""
        for src in disk_sources(pod):
            if row in cluster.volume_index.disks.conflicting_rows(src):
                return f"{src.plugin} disk {src.disk!r} is in use on the node"
        claims, status = rwop_claims(pod, cluster)
        used = sorted(c for c in claims if cluster.volume_index.claim_used(f"{pod.namespace}/{c}"))
        if status is None and used:
            return f"ReadWriteOncePod claim(s) {', '.join(used)} already in use by a pod"
        return None

    def events_to_register(self) -> list[ClusterEventSpec]:
        return list(self.queueing_hints())

    def queueing_hints(self) -> dict[ClusterEventSpec, HintFn | None]:
        """Upstream ``EventsToRegister`` (QueueingHints on: Node Add alone)."""
        return {
            cluster_event("Pod", "Delete"): hints.after_pod_deleted,
            cluster_event("Node", "Add"): None,
            cluster_event("PersistentVolumeClaim", "Add"): hints.after_claim_added,
        }


def new(args: Any, handle: Handle) -> VolumeRestrictions:
    return VolumeRestrictions()
