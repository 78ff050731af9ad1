"""VolumeZone: a pod's bound PersistentVolumes must be in the node's zone and region, every node at once.

PreFilter reads the topology labels of the PVs the pod's claims are bound to (upstream
``getPVbyPod``: the informer's objects, never assumed ones); a pod with none skips the plugin.
Filter compares them with the four topology label columns of the node table: a node that has none
of the four labels passes (a cluster without zones); otherwise each PV label must find the node's
value (under the same key, or the GA key a beta one translates to) among its ``__``-separated
values.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np

from ksched.cache.attachable import claim_missing
from ksched.cache.volumes import PERSISTENT_VOLUMES, STORAGE_CLASSES, VolumeStore
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
from ksched.framework.plugins.volumezone import hints
from ksched.framework.plugins.volumezone.topology import (
    GA_LABEL,
    TOPOLOGY_LABELS,
    PVTopology,
    pv_topologies,
)
from ksched.model.pod import Pod
from ksched.model.storage import WAIT_FOR_FIRST_CONSUMER
from ksched.model.volumes import PVC

NAME: Final = names.VOLUME_ZONE
ERR_REASON_CONFLICT: Final = "node(s) had no available volume zone"
ERR_NO_CLAIM_NAME: Final = "PersistentVolumeClaim had no name"
ERR_NO_PV_NAME_AND_CLASS: Final = "PersistentVolumeClaim had no pv name and storageClass name"
ERR_NO_PV_NAME: Final = "PersistentVolume had no name"
STATE_KEY: Final = f"{NAME}/topologies"


def _unresolvable(message: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (message,))


def pod_topologies(pod: Pod, store: VolumeStore) -> tuple[list[PVTopology], Status | None]:
    """Upstream ``getPVbyPod``: the topologies of the PVs bound to the pod's claims, or the status
    that rejects the pod (a claim, class or PV missing, an unbound claim that cannot wait)."""
    out: list[PVTopology] = []
    for v in pod.volumes:
        if v.kind != PVC:
            continue
        if not v.claim:
            return [], _unresolvable(ERR_NO_CLAIM_NAME)
        key = f"{pod.namespace}/{v.claim}"
        pvc = store.pvcs.get_api(key)
        if pvc is None:
            return [], _unresolvable(claim_missing(store, key, v.claim))
        pv_name = pvc.volume_name
        if not pv_name:
            class_name = pvc.storage_class
            if not class_name:
                return [], _unresolvable(ERR_NO_PV_NAME_AND_CLASS)
            sc = store.classes.get(class_name)
            if sc is None:
                problem = store.problem(STORAGE_CLASSES, class_name)
                return [], _unresolvable(problem or f'storageclass.storage.k8s.io "{class_name}" not found')
            if sc.binding_mode is None:
                return [], _unresolvable(f'VolumeBindingMode not set for StorageClass "{class_name}"')
            if sc.binding_mode == WAIT_FOR_FIRST_CONSUMER:
                continue  # VolumeBinding picks a zone for it
            return [], _unresolvable(ERR_NO_PV_NAME)
        pv = store.pvs.get_api(pv_name)
        if pv is None:
            problem = store.problem(PERSISTENT_VOLUMES, pv_name)
            return [], _unresolvable(problem or f'persistentvolume "{pv_name}" not found')
        out.extend(pv_topologies(pv))
    return out, None


class VolumeZone:
    """PreFilter reads the PVs' topology; Filter fails (UnschedulableAndUnresolvable) nodes outside it."""

    name = NAME
    skips_pods_without = "volumes"
    """A pod without volumes has no claims: PreFilter says Skip (``PodGatedPlugin``)."""
    row_local = True
    """A node's verdict reads only its labels (``RowLocal``)."""

    def __init__(self) -> None:
        self._zoned_memo: tuple[int, int, np.ndarray] | None = None

    def _zoned(self, cluster: ClusterReader) -> np.ndarray:
        """Rows with at least one of the topology labels, remembered while no node changes."""
        key = (cluster.nodes.generation, cluster.n_rows)
        memo = self._zoned_memo
        if memo is not None and memo[:2] == key:
            return memo[2]
        zoned = np.zeros(cluster.n_rows, dtype=np.bool_)
        for label in TOPOLOGY_LABELS:
            zoned |= cluster.label(label) >= 0
        self._zoned_memo = (*key, zoned)
        return zoned

    def pre_filter(
        self, state: CycleState, pod: Pod, cluster: ClusterReader
    ) -> tuple[PreFilterResult | None, Status]:
        topologies, status = pod_topologies(pod, cluster.volumes)
        if status is not None:
            return None, status
        if not topologies:
            return None, SKIP
        state.write(STATE_KEY, topologies)
        return None, SUCCESS

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterReader) -> FilterResult:
        if not pod.volumes:
            return FilterResult.all_pass()
        topologies = state.read(STATE_KEY)
        if topologies is None:  # PreFilter did not run: work it out here, as upstream falls back
            topologies, status = pod_topologies(pod, cluster.volumes)
            if status is not None:
                fails = cluster.valid.copy()
                return FilterResult.from_mask(fails, status.message, status.code)
        if not topologies:
            return FilterResult.all_pass()
        fails: np.ndarray | None = None
        for t in topologies:
            miss = ~_matches(cluster, t)
            fails = miss if fails is None else fails | miss
        assert fails is not None
        fails &= self._zoned(cluster)
        if not fails.any():
            return FilterResult.all_pass()
        return FilterResult.from_mask(fails, ERR_REASON_CONFLICT, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    def explain_row(self, pod: Pod, cluster: ClusterReader, row: int) -> str | None:
        """The PV label the node's labels do not match."""
        topologies, status = pod_topologies(pod, cluster.volumes)
        if status is not None:
            return None
        node_labels = cluster.node(row).labels
        for t in topologies:
            value = node_labels.get(t.key, node_labels.get(GA_LABEL[t.key]))
            if value is None or value not in t.values:
                want = ", ".join(sorted(t.values))
                return f"PersistentVolume {t.pv_name} has {t.key} in [{want}], the node has {value!r}"
        return None

    def events_to_register(self) -> list[ClusterEventSpec]:
        return list(self.queueing_hints())

    def queueing_hints(self) -> dict[ClusterEventSpec, HintFn | None]:
        """Upstream ``EventsToRegister`` (QueueingHints on: no UpdateNodeTaint workaround)."""
        return {
            cluster_event("storage.k8s.io/StorageClass", "Add"): hints.after_storage_class_added,
            cluster_event("Node", "Add", "UpdateNodeLabel"): None,
            cluster_event("PersistentVolumeClaim", "Add", "Update"): hints.after_claim_change,
            cluster_event("PersistentVolume", "Add", "Update"): hints.after_volume_change,
        }


def _matches(cluster: ClusterReader, t: PVTopology) -> np.ndarray:
    """Rows whose value of ``t.key`` (or of its GA key, when the node lacks it) is one of ``t.values``."""
    col = cluster.label(t.key)
    ga = GA_LABEL[t.key]
    if ga != t.key:
        col = np.where(col >= 0, col, cluster.label(ga))
    ids = [i for i in (cluster.label_id(v) for v in t.values) if i >= 0]
    if not ids:
        return np.zeros(col.shape[0], dtype=np.bool_)
    if len(ids) == 1:
        return col == ids[0]
    return np.isin(col, ids)


def new(args: Any, handle: Handle) -> VolumeZone:
    return VolumeZone()
