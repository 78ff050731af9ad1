"""Upstream's ``SchedulerVolumeBinder`` (``volumebinding/binder.go``) on ksched's volume store, one
node at a time.

- :func:`pod_has_pvcs` and :func:`get_pod_volume_claims` are PreFilter's ``podHasPVCs`` and
  ``GetPodVolumeClaims``: the claim checks that fail the pod outright, then the split into bound,
  unbound ``WaitForFirstConsumer`` and unbound immediate claims, with the PVs of each delayed
  claim's class.
- :func:`find_pod_volumes` is ``FindPodVolumes`` for one node, written straight from upstream:
  Reserve recomputes the chosen node's bindings with it, and it is the reference the vectorized
  Filter (:mod:`.filtering`) is tested against.
- :func:`assume_pod_volumes` / :func:`revert_assumed_pod_volumes` are ``AssumePodVolumes`` and
  ``RevertAssumedPodVolumes`` over :class:`~ksched.cache.volumes.VolumeStore`'s assume tables.

Reads go where upstream's go: the PVC *lister* (the informer's version, ``get_api``) for the
existence checks, the assume cache (``get``, an assumed version if any) for everything else.
Errors are :class:`BinderError` with upstream's message; a claim, PV or class that is missing
because the informer got a malformed object is reported with that object's problem instead.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from ksched.cache.volumes import (
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    STORAGE_CLASSES,
    AssumeConflict,
    VolumeStore,
)
from ksched.framework.plugins.volumebinding.matching import (
    CLAIM_LOST,
    bind_volume_to_claim,
    find_matching_volume,
    node_affinity_matches,
    requested,
    with_selected_node,
)
from ksched.framework.plugins.volumebinding.translation import TranslationError, effective_affinity
from ksched.model.labels import label_value_errors, qualified_name_errors
from ksched.model.pod import Pod
from ksched.model.storage import (
    NO_PROVISIONER,
    WAIT_FOR_FIRST_CONSUMER,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    TopologyTerm,
    value_of,
)

ERR_REASON_NODE_CONFLICT: Final = "node(s) had volume node affinity conflict"
ERR_REASON_BIND_CONFLICT: Final = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NOT_ENOUGH_SPACE: Final = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST: Final = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
ERR_UNBOUND_IMMEDIATE: Final = "pod has unbound immediate PersistentVolumeClaims"


def go_quote(s: str) -> str:
    """Go's ``%q`` for the strings in these messages."""
    return json.dumps(s, ensure_ascii=False)


class BinderError(Exception):
    """Something upstream's binder returns as an error (an ``Error`` status); the message is its text."""


class ClaimRejected(Exception):
    """A claim check that makes the pod ``UnschedulableAndUnresolvable`` at PreFilter."""


@dataclass(slots=True)
class Binding:
    """``BindingInfo``: a claim and the PV it is to be bound to (``pv`` becomes the API's answer)."""

    pvc: PersistentVolumeClaim
    pv: PersistentVolume


@dataclass(slots=True)
class Provision:
    """``DynamicProvision``: a claim to provision, and the capacity object that admitted it."""

    pvc: PersistentVolumeClaim
    capacity: CSIStorageCapacity | None = None


@dataclass(slots=True)
class PodVolumes:
    """What one node needs done for the pod's unbound claims (upstream ``PodVolumes``)."""

    static_bindings: list[Binding] | None = None
    dynamic_provisions: list[Provision] | None = None


@dataclass(frozen=True, slots=True)
class PodVolumeClaims:
    """``PodVolumeClaims``: the pod's claims by state, in ``spec.volumes`` order."""

    bound: tuple[PersistentVolumeClaim, ...] = ()
    delay: tuple[PersistentVolumeClaim, ...] = ()
    """Unbound, in a ``WaitForFirstConsumer`` class, no volume named: the scheduler binds them."""
    immediate: tuple[PersistentVolumeClaim, ...] = ()
    pvs_by_class: Mapping[str, tuple[PersistentVolume, ...]] = field(default_factory=dict)
    """``unboundVolumesDelayBinding``: the PVs (latest, assumed ones included) of each delayed
    claim's class, in name order."""


def claim_key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


# --------------------------------------------------------------------------- PreFilter
def pod_has_pvcs(pod: Pod, store: VolumeStore) -> bool:
    """``podHasPVCs``: whether the pod uses claims; raises :class:`ClaimRejected` with upstream's
    reason for a claim that is missing, lost, being deleted or (ephemeral) not the pod's."""
    has = False
    for vol in pod.volumes:
        if not vol.uses_claim:
            continue
        has = True
        key = claim_key(pod.namespace, vol.claim)
        pvc = store.pvcs.get_api(key)
        if pvc is None:
            problem = store.problem(PERSISTENT_VOLUME_CLAIMS, key)
            if problem is not None:
                raise ClaimRejected(problem)
            if vol.ephemeral:
                raise ClaimRejected(
                    "waiting for ephemeral volume controller to create the persistentvolumeclaim "
                    + go_quote(vol.claim)
                )
            raise ClaimRejected(f"persistentvolumeclaim {go_quote(vol.claim)} not found")
        if pvc.phase == CLAIM_LOST:
            raise ClaimRejected(
                f"persistentvolumeclaim {go_quote(pvc.name)} bound to non-existent persistentvolume "
                + go_quote(pvc.volume_name)
            )
        if pvc.deleting:
            raise ClaimRejected(f"persistentvolumeclaim {go_quote(pvc.name)} is being deleted")
        if vol.ephemeral and not owned_by(pvc, pod):
            raise ClaimRejected(not_owner_message(pvc, pod))
    return has


def owned_by(pvc: PersistentVolumeClaim, pod: Pod) -> bool:
    """``ephemeral.VolumeIsForPod``: same namespace, and the pod is the claim's controller."""
    return pvc.namespace == pod.namespace and pvc.controller_uid == pod.uid


def not_owner_message(pvc: PersistentVolumeClaim, pod: Pod) -> str:
    pvc_name, pod_name = f"{pvc.namespace}/{pvc.name}", f"{pod.namespace}/{pod.name}"
    return f"PVC {pvc_name} was not created for pod {pod_name} (pod is not owner)"


def _is_delay_binding(pvc: PersistentVolumeClaim, store: VolumeStore) -> bool:
    """``IsDelayBindingMode``: a class that is unset or missing means immediate binding."""
    name = pvc.storage_class
    if not name:
        return False
    cls = store.classes.get(name)
    if cls is None:
        problem = store.problem(STORAGE_CLASSES, name)
        if problem is not None:
            raise ClaimRejected(problem)
        return False
    if cls.binding_mode is None:
        raise BinderError(f"VolumeBindingMode not set for StorageClass {go_quote(name)}")
    return cls.binding_mode == WAIT_FOR_FIRST_CONSUMER


def get_pod_volume_claims(pod: Pod, store: VolumeStore) -> PodVolumeClaims:
    """``GetPodVolumeClaims``; raises :class:`BinderError` (an Error status)."""
    bound: list[PersistentVolumeClaim] = []
    delay: list[PersistentVolumeClaim] = []
    immediate: list[PersistentVolumeClaim] = []
    for vol in pod.volumes:
        if not vol.uses_claim:
            continue
        key = claim_key(pod.namespace, vol.claim)
        pvc = store.pvcs.get(key)
        if pvc is None:
            raise BinderError(
                f"error getting PVC {go_quote(key)}: could not find v1.PersistentVolumeClaim {go_quote(key)}"
            )
        if vol.ephemeral and not owned_by(pvc, pod):
            raise BinderError(not_owner_message(pvc, pod))
        if pvc.fully_bound:
            bound.append(pvc)
        elif _is_delay_binding(pvc, store) and not pvc.volume_name:
            delay.append(pvc)
        else:
            immediate.append(pvc)
    by_class = {pvc.storage_class: tuple(store.pvs_of_class(pvc.storage_class)) for pvc in delay}
    return PodVolumeClaims(tuple(bound), tuple(delay), tuple(immediate), by_class)


# --------------------------------------------------------------------------- FindPodVolumes
def topology_term_valid(term: TopologyTerm) -> bool:
    """``TopologySelectorRequirementsAsSelector`` succeeds: keys and values valid, values present."""
    return all(
        not qualified_name_errors(key) and values and all(not label_value_errors(v) for v in values)
        for key, values in term.requirements
    )


def topology_matches(terms: tuple[TopologyTerm, ...], labels: Mapping[str, str]) -> bool:
    """``MatchTopologySelectorTerms``: no terms match all; an empty or unparsable term matches none."""
    if not terms:
        return True
    for term in terms:
        if not term.requirements or not topology_term_valid(term):
            continue
        if all(labels.get(key) in values for key, values in term.requirements):
            return True
    return False


def node_has_access(capacity: CSIStorageCapacity, labels: Mapping[str, str]) -> bool:
    """``nodeHasAccess``: a nil ``nodeTopology`` is reachable from no node."""
    return capacity.node_topology is not None and capacity.node_topology.matches(labels)


def has_enough_capacity(
    provisioner: str,
    pvc: PersistentVolumeClaim,
    cls: StorageClass,
    labels: Mapping[str, str],
    store: VolumeStore,
) -> tuple[bool, CSIStorageCapacity | None]:
    """``hasEnoughCapacity``: only CSI drivers that opt in (``spec.storageCapacity``) are checked."""
    if pvc.request is None:
        return True, None
    driver = store.csi_drivers.get(provisioner)
    if driver is None or not driver.storage_capacity:
        return True, None
    size = value_of(pvc.request)
    for cap in store.capacities.values():
        if cap.storage_class == cls.name and cap.sufficient(size) and node_has_access(cap, labels):
            return True, cap
    return False, None


def _check_bound_claims(
    claims: tuple[PersistentVolumeClaim, ...],
    labels: Mapping[str, str],
    csi_node: CSINode | None,
    store: VolumeStore,
) -> tuple[bool, PersistentVolumeClaim | None]:
    """``checkBoundClaims``: (affinity satisfied, the first claim whose PV does not exist)."""
    for pvc in claims:
        pv = store.pvs.get(pvc.volume_name)
        if pv is None:
            return True, pvc
        try:
            terms = effective_affinity(pv, csi_node)
        except TranslationError as exc:
            raise BinderError(str(exc)) from exc
        if not node_affinity_matches(terms, labels):
            return False, None
    return True, None


def sort_by_size(claims: list[PersistentVolumeClaim]) -> list[PersistentVolumeClaim]:
    """``sort.Sort(byPVCSize(...))``: Go's sort is an insertion sort (stable) below 13 items."""
    return sorted(claims, key=requested)


def find_matching_volumes(
    claims: list[PersistentVolumeClaim],
    pvs_by_class: Mapping[str, tuple[PersistentVolume, ...]],
    labels: Mapping[str, str],
) -> tuple[bool, list[Binding], list[PersistentVolumeClaim]]:
    """``findMatchingVolumes``: (all matched, bindings, claims left to provision)."""
    chosen: dict[str, PersistentVolume] = {}
    bindings: list[Binding] = []
    unmatched: list[PersistentVolumeClaim] = []
    found = True

    def affinity_ok(pv: PersistentVolume) -> bool:
        return node_affinity_matches(pv.node_affinity, labels)

    for pvc in sort_by_size(claims):
        pv = find_matching_volume(pvc, pvs_by_class.get(pvc.storage_class, ()), affinity_ok, chosen)
        if pv is None:
            unmatched.append(pvc)
            found = False
            continue
        chosen[pv.name] = pv
        bindings.append(Binding(pvc, pv))
    return found, bindings, unmatched


def check_volume_provisions(
    claims: list[PersistentVolumeClaim], labels: Mapping[str, str], store: VolumeStore
) -> tuple[bool, bool, list[Provision] | None]:
    """``checkVolumeProvisions``: (provisioning possible, storage sufficient, provisions); the
    first claim that cannot be provisioned on the node decides."""
    provisions: list[Provision] = []
    for pvc in claims:
        name = pvc.storage_class
        if not name:
            raise BinderError(f"no class for claim {go_quote(pvc.key)}")
        cls = store.classes.get(name)
        if cls is None:
            raise BinderError(
                store.problem(STORAGE_CLASSES, name) or f"failed to find storage class {go_quote(name)}"
            )
        if not cls.provisioner or cls.provisioner == NO_PROVISIONER:
            return False, True, None
        if not topology_matches(cls.allowed_topologies, labels):
            return False, True, None
        sufficient, cap = has_enough_capacity(cls.provisioner, pvc, cls, labels, store)
        if not sufficient:
            return True, False, None
        provisions.append(Provision(pvc, cap))
    return True, True, provisions


@dataclass(frozen=True, slots=True)
class NodeFacts:
    """What ``FindPodVolumes`` reads of a node: its name, its labels, its CSINode."""

    name: str
    labels: Mapping[str, str]
    csi_node: CSINode | None = None


def find_pod_volumes(
    claims: PodVolumeClaims, node: NodeFacts, store: VolumeStore
) -> tuple[PodVolumes, list[str]]:
    """``FindPodVolumes`` for one node: what it would need, and why it cannot take the pod (reasons
    in upstream's order; empty when it can). Raises :class:`BinderError`."""
    bound_ok = unbound_ok = sufficient = True
    missing: PersistentVolumeClaim | None = None
    bindings: list[Binding] = []
    provisions: list[Provision] = []
    if claims.bound:
        bound_ok, missing = _check_bound_claims(claims.bound, node.labels, node.csi_node, store)
    if claims.delay:
        unbound_ok, sufficient, bindings, provisions = find_unbound(claims, node, store)
    reasons: list[str] = []
    if not bound_ok:
        reasons.append(ERR_REASON_NODE_CONFLICT)
    if not unbound_ok:
        reasons.append(ERR_REASON_BIND_CONFLICT)
    if not sufficient:
        reasons.append(ERR_REASON_NOT_ENOUGH_SPACE)
    if missing is not None:
        reasons.append(pv_missing_reason(missing, store))
    return PodVolumes(bindings or None, provisions or None), reasons


def pv_missing_reason(pvc: PersistentVolumeClaim, store: VolumeStore) -> str:
    """The reason for a bound claim whose PV is absent: its problem when it is malformed."""
    return store.problem(PERSISTENT_VOLUMES, pvc.volume_name) or ERR_REASON_PV_NOT_EXIST


def find_unbound(
    claims: PodVolumeClaims, node: NodeFacts, store: VolumeStore
) -> tuple[bool, bool, list[Binding], list[Provision]]:
    """The unbound-claim half of ``FindPodVolumes``: (unbound satisfied, storage sufficient,
    static bindings, dynamic provisions)."""
    to_match: list[PersistentVolumeClaim] = []
    to_provision: list[PersistentVolumeClaim] = []
    for pvc in claims.delay:
        selected = pvc.selected_node
        if selected is None:
            to_match.append(pvc)
        elif selected != node.name:
            return False, True, [], []  # the fast path: provisioning already picked another node
        else:
            to_provision.append(pvc)
    unbound_ok, sufficient = True, True
    bindings: list[Binding] = []
    provisions: list[Provision] = []
    if to_match:
        unbound_ok, bindings, unmatched = find_matching_volumes(to_match, claims.pvs_by_class, node.labels)
        to_provision.extend(unmatched)
    if to_provision:
        unbound_ok, sufficient, provided = check_volume_provisions(to_provision, node.labels, store)
        provisions = provided or []
    return unbound_ok, sufficient, bindings, provisions


# --------------------------------------------------------------------------- Reserve / Unreserve
def are_pod_volumes_bound(pod: Pod, store: VolumeStore) -> bool:
    """``arePodVolumesBound``: every claim (latest version) fully bound, ephemeral ones the pod's."""
    for vol in pod.volumes:
        if not vol.uses_claim:
            continue
        pvc = store.pvcs.get(claim_key(pod.namespace, vol.claim))
        if pvc is None or not pvc.fully_bound or (vol.ephemeral and not owned_by(pvc, pod)):
            return False
    return True


def assume_pod_volumes(pod: Pod, node: str, pod_volumes: PodVolumes, store: VolumeStore) -> bool:
    """``AssumePodVolumes``: assume each PV pre-bound to its claim and each claim to provision with
    the selected node; returns whether everything was bound already. On a failure, what was
    assumed here is restored and :class:`BinderError` raised."""
    if are_pod_volumes_bound(pod, store):
        return True
    new_bindings: list[Binding] = []
    for b in pod_volumes.static_bindings or ():
        new_pv, dirty = bind_volume_to_claim(b.pv, b.pvc)
        if dirty:
            try:
                store.assume_pv(new_pv)
            except AssumeConflict as exc:
                revert_bindings(new_bindings, store)
                raise BinderError(str(exc)) from exc
        new_bindings.append(Binding(b.pvc, new_pv))
    new_provisions: list[Provision] = []
    for p in pod_volumes.dynamic_provisions or ():
        clone = with_selected_node(p.pvc, node)
        try:
            store.assume_pvc(clone)
        except AssumeConflict as exc:
            revert_bindings(new_bindings, store)
            revert_provisions(new_provisions, store)
            raise BinderError(str(exc)) from exc
        new_provisions.append(Provision(clone, p.capacity))
    pod_volumes.static_bindings = new_bindings
    pod_volumes.dynamic_provisions = new_provisions
    return False


def revert_bindings(bindings: list[Binding], store: VolumeStore) -> None:
    for b in bindings:
        store.restore_pv(b.pv.name)


def revert_provisions(provisions: list[Provision], store: VolumeStore) -> None:
    for p in provisions:
        store.restore_pvc(p.pvc.key)


def revert_assumed_pod_volumes(pod_volumes: PodVolumes, store: VolumeStore) -> None:
    """``RevertAssumedPodVolumes``: the informer's versions are the latest again."""
    revert_bindings(pod_volumes.static_bindings or [], store)
    revert_provisions(pod_volumes.dynamic_provisions or [], store)
