"""VolumeBinding: PVs and PVCs decide which nodes can take a pod, and are bound before the pod is.

Upstream ``volume_binding.go`` with v1.35's gates: no Score (``StorageCapacityScoring`` is off, so
the scorer is nil and PreScore skips), no PreFilterResult (upstream dropped the local-PV node
shortcut, which assumed a node's name equals its hostname label), the VolumeAttributesClass check
on, QueueingHints on (Node events are ``Add | UpdateNodeLabel``).

- **PreFilter** checks the pod's claims and splits them (:mod:`.binder`); the state it writes holds
  what the other points need.
- **Filter** answers for every row at once (:mod:`.filtering`), memoized for the cycle.
- **Reserve** recomputes the chosen node's bindings with the one-node reference and assumes them
  in the volume store; **Unreserve** restores them.
- **PreBindPreFlight** says whether PreBind has work; **PreBind** returns a
  :class:`~.prebind.BindingVolumes` that writes and waits without blocking the scheduler.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

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
    PendingPreBind,
    PreFilterResult,
    QueueingHint,
    Scores,
    Status,
    cluster_event,
    error,
)
from ksched.framework.plugins.volumebinding import hints
from ksched.framework.plugins.volumebinding.binder import (
    ERR_UNBOUND_IMMEDIATE,
    BinderError,
    ClaimRejected,
    NodeFacts,
    PodVolumeClaims,
    PodVolumes,
    assume_pod_volumes,
    find_pod_volumes,
    get_pod_volume_claims,
    go_quote,
    pod_has_pvcs,
    revert_assumed_pod_volumes,
)
from ksched.framework.plugins.volumebinding.filtering import AffinityMasks, volume_filter
from ksched.framework.plugins.volumebinding.prebind import BindingVolumes
from ksched.model.pod import Pod

log = logging.getLogger(__name__)
NAME: Final = names.VOLUME_BINDING
STATE_KEY: Final = NAME

STORAGE_CLASS_EVENT: Final = cluster_event("storage.k8s.io/StorageClass", "Add", "Update")
PVC_EVENT: Final = cluster_event("PersistentVolumeClaim", "Add", "Update")
PV_EVENT: Final = cluster_event("PersistentVolume", "Add", "Update")
NODE_EVENT: Final = cluster_event("Node", "Add", "UpdateNodeLabel")
CSI_NODE_EVENT: Final = cluster_event("storage.k8s.io/CSINode", "Add", "Update")
CSI_DRIVER_EVENT: Final = cluster_event("storage.k8s.io/CSIDriver", "Update")
CSI_STORAGE_CAPACITY_EVENT: Final = cluster_event("storage.k8s.io/CSIStorageCapacity", "Add", "Update")
EVENTS: Final[tuple[ClusterEventSpec, ...]] = (
    STORAGE_CLASS_EVENT,
    PVC_EVENT,
    PV_EVENT,
    NODE_EVENT,
    CSI_NODE_EVENT,
    CSI_DRIVER_EVENT,
    CSI_STORAGE_CAPACITY_EVENT,
)
"""Upstream's ``EventsToRegister`` in its order, with QueueingHints on."""

HintFn = Callable[[Pod, Any, Any], QueueingHint]
HINTS: Final[Mapping[ClusterEventSpec, HintFn]] = {
    STORAGE_CLASS_EVENT: hints.after_storage_class_change,
    PVC_EVENT: hints.after_persistent_volume_claim_change,
    CSI_NODE_EVENT: hints.after_csi_node_change,
    CSI_DRIVER_EVENT: hints.after_csi_driver_change,
    CSI_STORAGE_CAPACITY_EVENT: hints.after_csi_storage_capacity_change,
}
"""The events that have a hint function; the others (PersistentVolume, Node) always queue."""


@dataclass(slots=True)
class StateData:
    """The plugin's cycle state (upstream ``stateData``), written by PreFilter."""

    claims: PodVolumeClaims | None = None
    """None: the pod has no claims (PreFilter skipped)."""
    cluster: ClusterReader | None = None
    """The cluster PreFilter read (the cache for in-tree plugins): Reserve and PreBind read it too."""
    filter_key: tuple[int, int, int, int] | None = None
    filter_result: FilterResult | None = None
    node: str = ""
    """The node Reserve assumed the pod's volumes for."""
    pod_volumes: PodVolumes | None = None
    """Upstream ``podVolumesByNode[node]``: what Reserve assumed there."""
    all_bound: bool = False


class VolumeBinding:
    """PreFilter, Filter, Reserve/Unreserve, PreBindPreFlight and PreBind for pods with claims."""

    name = NAME
    skips_pods_without = "volume_claims"
    """Pods without claims: PreFilter skips, Reserve, PreBind and Unreserve do nothing."""
    row_local = True
    """The verdict on a node reads its labels and the storage objects, never the pods on it."""

    def __init__(self, *, bind_timeout_s: float, handle: Handle | None = None) -> None:
        self.bind_timeout_s = bind_timeout_s
        self._handle = handle
        self._masks = AffinityMasks()

    # ------------------------------------------------------------------ events
    def events_to_register(self) -> Sequence[ClusterEventSpec]:
        return EVENTS

    def queueing_hints(self) -> dict[ClusterEventSpec, HintFn]:
        """The hint function of each registered event that has one (see :mod:`.hints`)."""
        return dict(HINTS)

    # ------------------------------------------------------------------ scheduling cycle
    def pre_filter(
        self, state: CycleState, pod: Pod, cluster: ClusterReader
    ) -> tuple[PreFilterResult | None, Status]:
        store = cluster.volumes
        try:
            if not pod_has_pvcs(pod, store):
                state.write(STATE_KEY, StateData())
                return None, SKIP
            claims = get_pod_volume_claims(pod, store)
        except ClaimRejected as exc:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (str(exc),))
        except BinderError as exc:
            return None, error(str(exc))
        if claims.immediate:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_UNBOUND_IMMEDIATE,))
        state.write(STATE_KEY, StateData(claims=claims, cluster=cluster))
        return None, SUCCESS

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterReader) -> FilterResult:
        s = state.read(STATE_KEY)
        if s is None or s.claims is None:
            return FilterResult.all_pass()
        nodes = cluster.nodes
        key = (id(nodes), nodes.generation, nodes.n_rows, cluster.volumes.generation)
        if s.filter_key != key or s.filter_result is None:
            s.filter_result = volume_filter(s.claims, cluster, self._masks)
            s.filter_key = key
        return s.filter_result  # type: ignore[no-any-return]

    def pre_score(self, state: CycleState, pod: Pod, cluster: ClusterReader, feasible: Any) -> Status:
        return SKIP  # no scorer under v1.35's gates

    def score(self, state: CycleState, pod: Pod, cluster: ClusterReader, feasible: Any) -> Scores:
        return 0

    # ------------------------------------------------------------------ binding cycle
    def binding_work(self, state: CycleState, pod: Pod) -> bool:
        """Whether Reserve and PreBind have anything to do: not when PreFilter found every claim
        fully bound (Reserve would find them all bound, as upstream's arePodVolumesBound does, and
        PreBind would return at once)."""
        s = state.read(STATE_KEY)
        return s is not None and s.claims is not None and bool(s.claims.delay)

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        s = _state(state, pod)
        if isinstance(s, Status):
            return s
        if s.claims is None or s.cluster is None:
            s.all_bound = True
            return SUCCESS
        cluster = s.cluster
        store = cluster.volumes
        row = cluster.nodes.row_of.get(node_name)
        if row is None:
            s.all_bound = True  # upstream: no volumes recorded for a node Filter never passed
            return SUCCESS
        node = cluster.nodes.node(row)
        try:
            pod_volumes, reasons = find_pod_volumes(
                s.claims, NodeFacts(node.name, node.labels, store.csi_nodes.get(node.name)), store
            )
            if reasons:
                log.warning("pod %s: node %s no longer fits its volumes: %s", pod.key, node_name, reasons)
                s.all_bound = True
                return SUCCESS
            s.node, s.pod_volumes = node_name, pod_volumes
            s.all_bound = assume_pod_volumes(pod, node_name, pod_volumes, store)
        except BinderError as exc:
            return error(str(exc))
        return SUCCESS

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        s = state.read(STATE_KEY)
        if s is None or s.pod_volumes is None or s.node != node_name or s.cluster is None:
            return
        revert_assumed_pod_volumes(s.pod_volumes, s.cluster.volumes)

    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        s = _state(state, pod)
        if isinstance(s, Status):
            return s
        if s.all_bound or s.claims is None:
            return SKIP
        if s.pod_volumes is None or s.node != node_name:
            return error(f"no pod volumes found for node {go_quote(node_name)}")
        return SUCCESS

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | PendingPreBind:
        s = _state(state, pod)
        if isinstance(s, Status):
            return s
        if s.all_bound or s.claims is None:
            return SUCCESS
        if s.pod_volumes is None or s.node != node_name or s.cluster is None:
            return error(f"no pod volumes found for node {go_quote(node_name)}")
        client = self._handle.client if self._handle is not None else None
        if client is None:
            return error("binding volumes: no API client to write with (the profile runs on no scheduler)")
        return BindingVolumes(
            client=client,
            cluster=s.cluster,
            pod=pod,
            pod_volumes=s.pod_volumes,
            bind_timeout_s=self.bind_timeout_s,
        )


def _state(state: CycleState, pod: Pod) -> StateData | Status:
    """The cycle's state; a pod without claims may have none (its PreFilter was left out)."""
    s = state.read(STATE_KEY)
    if s is not None:
        return s  # type: ignore[no-any-return]
    if not pod.volume_claims:
        s = StateData()
        state.write(STATE_KEY, s)
        return s
    return error("not found")  # upstream getStateData: the state was never written


def new(args: Any, handle: Handle) -> VolumeBinding:
    timeout = getattr(args, "bind_timeout_seconds", 600)
    return VolumeBinding(bind_timeout_s=float(timeout), handle=handle)
