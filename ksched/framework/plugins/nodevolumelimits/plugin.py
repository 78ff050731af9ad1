"""NodeVolumeLimits: the CSI volumes attached to a node must stay within its CSINode's limits.

Upstream: ``CSILimits.Filter``. For a node with a CSINode, each driver's ``allocatable.count`` is
compared with the distinct volumes of that driver the node already has (its pods' and its
VolumeAttachments', :class:`~ksched.cache.volume_index.VolumeIndex` keeps them per row) plus the
new pod's volumes that none of the node's pods already uses (a VolumeAttachment alone does not
excuse a volume: upstream only removes the pods' volumes from the new ones). A node without a
CSINode has no limits and passes. The new pod's volumes depend on the node only through whether it
has a CSINode (in-tree volumes migrate exactly there), so they are worked out twice per cycle, not
per node; the rest is a few array operations per driver the pod uses.

Statuses: too many volumes is Unschedulable ("node(s) exceed max volume count"); a claim the pod
needs that is not in the cache is UnschedulableAndUnresolvable (``looking up PVC ns/name:
persistentvolumeclaim "name" not found``, or what is wrong with the object when the informer got
it malformed); an ephemeral claim the pod does not own, an inline volume the translator refuses, or
a pod on a limited node whose volumes cannot be counted is an error of the cycle, as upstream.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import numpy as np

from ksched.cache.attachable import Attachable, VolumeKey, attachable, is_counted, needs_count
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
from ksched.framework.plugins.nodevolumelimits import hints
from ksched.model.pod import Pod

NAME: Final = names.NODE_VOLUME_LIMITS
ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED: Final = "node(s) exceed max volume count"


class VolumeCountError(Exception):
    """A volume the Filter cannot count (upstream returns it as the Filter's error status)."""


def by_driver(volumes: tuple[VolumeKey, ...]) -> dict[str, list[VolumeKey]]:
    out: dict[str, list[VolumeKey]] = {}
    for key in volumes:
        out.setdefault(key[0], []).append(key)
    return out


def present_rows(cluster: ClusterReader, keys: list[VolumeKey], n: int) -> dict[int, int]:
    """Row -> how many of ``keys`` (one driver's new volumes) pods there already use (rows below ``n``)."""
    rows_of = cluster.volume_index.rows_of
    out: dict[int, int] = {}
    for key in keys:
        for row in rows_of.get(key, ()):
            if row < n:
                out[row] = out.get(row, 0) + 1
    return out


class NodeVolumeLimits:
    """PreFilter skips pods without countable volumes; Filter fails rows over a driver's limit."""

    name = NAME
    skips_pods_without = "volumes"
    """A pod without volumes has nothing to count: PreFilter says Skip (``PodGatedPlugin``)."""

    def pre_filter(
        self, state: CycleState, pod: Pod, cluster: ClusterReader
    ) -> tuple[PreFilterResult | None, Status]:
        return None, (SUCCESS if needs_count(pod) else SKIP)

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterReader) -> FilterResult:
        if not pod.volumes:
            return FilterResult.all_pass()
        store = cluster.volumes
        n = cluster.n_rows
        _counts, limits, rooms, csi = cluster.volume_index.arrays(n)
        with_csi = attachable(pod, store, csi_node=True, new_pod=True)
        without = attachable(pod, store, csi_node=False, new_pod=True)
        valid = cluster.valid
        reasons: list[str] = []
        codes: list[Code] = []
        bits: np.ndarray | None = None
        for found, on_csi_nodes in ((with_csi, True), (without, False)):
            if not found.error:
                continue
            rows = csi if on_csi_nodes else ~csi
            if not found.not_found:
                if (rows & valid).any():
                    raise VolumeCountError(found.error)
                continue
            if found.error not in reasons:
                reasons.append(found.error)
                codes.append(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
            if bits is None:
                bits = np.zeros(n, dtype=np.uint64)
            bits[rows] |= np.uint64(1 << reasons.index(found.error))
        if not with_csi.error and with_csi.volumes:
            over = self._over_limits(cluster, with_csi, limits, rooms, csi, valid)
            if over is not None:
                if bits is None:  # the usual case: this is the only reason
                    return FilterResult.from_mask(
                        over, ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED, Code.UNSCHEDULABLE
                    )
                reasons.append(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
                codes.append(Code.UNSCHEDULABLE)
                bits[over] |= np.uint64(1 << (len(reasons) - 1))
        if bits is None:
            return FilterResult.all_pass()
        return FilterResult(bits, tuple(reasons), tuple(codes))

    def _over_limits(
        self,
        cluster: ClusterReader,
        found: Attachable,
        limits: np.ndarray,
        rooms: np.ndarray,
        csi: np.ndarray,
        valid: np.ndarray,
    ) -> np.ndarray | None:
        """The rows (with a CSINode) where a driver of the new volumes would go over its limit."""
        index = cluster.volume_index
        n = csi.shape[0]
        if index.errors:
            self._check_pods(cluster, limits, csi, valid)
        over: np.ndarray | None = None
        for driver, keys in by_driver(found.volumes).items():
            col = index.column(driver)
            if col is None:
                continue  # no CSINode names the driver: no node limits it
            room = rooms[col]
            fails = room < len(keys)  # limit - attached < new (no limit: room is NO_LIMIT)
            for row, shared in present_rows(cluster, keys, n).items():
                # A driver all of whose new volumes the row's pods already use is not checked at
                # all (upstream loops over the drivers of the volumes left), even over the limit.
                extra = len(keys) - shared
                fails[row] = extra > 0 and room[row] < extra
            over = fails if over is None else over | fails
        if over is None or not over.any():
            return None
        return over

    def _check_pods(
        self, cluster: ClusterReader, limits: np.ndarray, csi: np.ndarray, valid: np.ndarray
    ) -> None:
        """Upstream returns an error on a limited node where a pod's volumes cannot be counted."""
        n = csi.shape[0]
        for row, problems in sorted(cluster.volume_index.errors.items()):
            if row < n and valid[row] and csi[row] and limits.shape[0] and (limits[:, row] >= 0).any():
                raise VolumeCountError(next(iter(problems.values())))

    def relevance(self, pod: Pod, cluster: ClusterReader) -> Callable[[Pod], bool] | None:
        """Pods with volumes that can be counted change the counts of their row."""
        if not needs_count(pod):
            return None
        return lambda other: any(is_counted(v) for v in other.volumes)

    def explain_row(self, pod: Pod, cluster: ClusterReader, row: int) -> str | None:
        """Which driver goes over its limit, with the numbers."""
        index = cluster.volume_index
        n = cluster.n_rows
        counts, limits, _rooms, csi = index.arrays(n)
        found = attachable(pod, cluster.volumes, csi_node=True, new_pod=True)
        if found.error or not csi[row]:
            return None
        for driver, keys in by_driver(found.volumes).items():
            col = index.column(driver)
            if col is None or limits[col, row] < 0:
                continue
            extra = len(keys) - present_rows(cluster, keys, n).get(row, 0)
            have, limit = int(counts[col, row]), int(limits[col, row])
            if extra > 0 and have + extra > limit:
                return f"{driver}: {have} attached, {extra} more wanted, limit {limit}"
        return None

    def events_to_register(self) -> list[ClusterEventSpec]:
        return list(self.queueing_hints())

    def queueing_hints(self) -> dict[ClusterEventSpec, HintFn | None]:
        """Upstream ``EventsToRegister``."""
        return {
            cluster_event("storage.k8s.io/CSINode", "Add"): None,
            cluster_event("storage.k8s.io/CSINode", "Update"): hints.after_csi_node_updated,
            cluster_event("Pod", "Delete"): hints.after_pod_deleted,
            cluster_event("PersistentVolumeClaim", "Add"): hints.after_claim_added,
            cluster_event("storage.k8s.io/VolumeAttachment", "Delete"): hints.after_attachment_deleted,
        }


def new(args: Any, handle: Handle) -> NodeVolumeLimits:
    return NodeVolumeLimits()
