"""Upstream's PV/PVC helpers (``component-helpers/storage/volume``: ``pv_helpers.go``, ``helpers.go``)
over ksched's storage records.

- :func:`find_matching_volume` is ``FindMatchingVolume`` on the scheduler's path (a node is given,
  ``delayBinding`` is true, the VolumeAttributesClass gate is on as in v1.35): the smallest PV that
  fits, unless a PV pre-bound to the claim comes first, which then decides alone.
- :func:`node_affinity_matches` is ``CheckNodeAffinity``: the PV's required terms against the
  node's *labels only* (upstream builds a node with nothing but labels, so ``matchFields`` see an
  empty ``metadata.name``).
- :func:`bind_volume_to_claim` is ``GetBindVolumeToClaim`` and :func:`with_selected_node` the
  clone Reserve assumes for a claim to provision; both rewrite the raw object PreBind writes back.

The node-dependent part of matching (node affinity) is passed in as a predicate, so that the same
code serves one node (Reserve, the property test's reference) and groups of nodes (Filter).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from fractions import Fraction
from functools import lru_cache
from typing import Any, Final

from ksched.cache.node_selector import CompiledTerm, compile_required
from ksched.model.selectors import NodeSelectorTerm, requirement_matches
from ksched.model.storage import (
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    ClaimRef,
    PersistentVolume,
    PersistentVolumeClaim,
)

VOLUME_AVAILABLE: Final = "Available"
CLAIM_LOST: Final = "Lost"
ZERO: Final = Fraction(0)


def requested(pvc: PersistentVolumeClaim) -> Fraction:
    """``spec.resources.requests.storage``; a missing request is Go's zero Quantity."""
    return pvc.request if pvc.request is not None else ZERO


def capacity(pv: PersistentVolume) -> Fraction:
    return pv.capacity if pv.capacity is not None else ZERO


def is_volume_bound_to_claim(pv: PersistentVolume, pvc: PersistentVolumeClaim) -> bool:
    """``IsVolumeBoundToClaim``: pre-bound or bound to this claim (name, namespace, and uid if set)."""
    ref = pv.claim_ref
    if ref is None or ref.name != pvc.name or ref.namespace != pvc.namespace:
        return False
    return not ref.uid or ref.uid == pvc.uid


def check_access_modes(pvc: PersistentVolumeClaim, pv: PersistentVolume) -> bool:
    """``CheckAccessModes``: the PV offers every mode the claim asks for."""
    return pvc.access_modes <= pv.access_modes


def passes_static_checks(
    pvc: PersistentVolumeClaim, pv: PersistentVolume, excluded: Mapping[str, object] | None = None
) -> bool:
    """The checks ``FindMatchingVolume`` makes before it looks at the node, in its order: not
    excluded, not claimed by another claim, big enough, same volume mode, same
    VolumeAttributesClass, not being deleted."""
    if excluded and pv.name in excluded:
        return False
    if pv.claim_ref is not None and not is_volume_bound_to_claim(pv, pvc):
        return False
    if capacity(pv) < requested(pvc):
        return False
    if pvc.volume_mode != pv.volume_mode:
        return False
    if (pvc.volume_attributes_class or "") != (pv.volume_attributes_class or ""):
        return False
    return not pv.deleting


def passes_unbound_checks(pvc: PersistentVolumeClaim, pv: PersistentVolume) -> bool:
    """What an unbound (not pre-bound) PV must also satisfy, apart from node affinity: phase
    Available, the claim's selector, the claim's class, and (scheduler path) the access modes."""
    if pv.phase != VOLUME_AVAILABLE:
        return False
    if pvc.selector is not None and not pvc.selector.matches(pv.labels):
        return False
    if pv.storage_class != pvc.storage_class:
        return False
    return check_access_modes(pvc, pv)


def find_matching_volume(
    pvc: PersistentVolumeClaim,
    pvs: Iterable[PersistentVolume],
    affinity_ok: Callable[[PersistentVolume], bool],
    excluded: Mapping[str, object],
) -> PersistentVolume | None:
    """``FindMatchingVolume(claim, volumes, node, excluded, delayBinding=true, vacEnabled=true)``.

    ``affinity_ok(pv)`` says whether the PV's node affinity holds on the node in question. A PV
    pre-bound to the claim ends the search where it is met (the match, or no match when its
    affinity fails); otherwise the smallest fitting PV wins, the first met among equals.
    """
    smallest: PersistentVolume | None = None
    for pv in pvs:
        if not passes_static_checks(pvc, pv, excluded):
            continue
        valid = affinity_ok(pv)
        if is_volume_bound_to_claim(pv, pvc):
            return pv if valid else None
        if not passes_unbound_checks(pvc, pv) or not valid:
            continue
        if smallest is None or capacity(smallest) > capacity(pv):
            smallest = pv
    return smallest


# --------------------------------------------------------------------------- node affinity
def _field_matches_nameless(req: Any) -> bool:
    """A ``matchFields`` entry against a node that has no name (``CheckNodeAffinity``'s node):
    ``In [v]`` holds only for ``v == ""``, ``NotIn [v]`` for every other ``v``."""
    value = req.values[0]
    return value == "" if req.operator == "In" else value != ""


@lru_cache(maxsize=4096)
def compiled_affinity(terms: tuple[NodeSelectorTerm, ...] | None) -> tuple[CompiledTerm, ...] | None:
    """Upstream's parse of required terms (bad ones never match); None: no requirement. Memoized:
    the terms are frozen records, and every node asks about the same few PVs."""
    return None if terms is None else compile_required(terms)


def compiled_terms_match(compiled: tuple[CompiledTerm, ...] | None, labels: Mapping[str, str]) -> bool:
    if compiled is None:
        return True
    for term in compiled:
        if term.error is not None:
            continue
        if all(requirement_matches(r, labels) for r in term.match_expressions) and all(
            _field_matches_nameless(r) for r in term.match_fields
        ):
            return True
    return False


def node_affinity_matches(terms: tuple[NodeSelectorTerm, ...] | None, labels: Mapping[str, str]) -> bool:
    """``CheckNodeAffinity(pv, node.Labels) == nil`` for one node (the plain-Python reference)."""
    return compiled_terms_match(compiled_affinity(terms), labels)


# --------------------------------------------------------------------------- assumed objects
def claim_reference(pvc: PersistentVolumeClaim) -> dict[str, Any]:
    """``reference.GetReference(scheme, claim)`` as JSON: kind, namespace, name, uid, apiVersion,
    resourceVersion (omitted when empty, as the API omits them)."""
    meta = pvc.raw.get("metadata") or {}
    ref: dict[str, Any] = {"kind": "PersistentVolumeClaim", "namespace": pvc.namespace, "name": pvc.name}
    uid = meta.get("uid")
    if uid:
        ref["uid"] = uid
    ref["apiVersion"] = "v1"
    rv = meta.get("resourceVersion")
    if rv:
        ref["resourceVersion"] = rv
    return ref


def bind_volume_to_claim(pv: PersistentVolume, pvc: PersistentVolumeClaim) -> tuple[PersistentVolume, bool]:
    """``GetBindVolumeToClaim``: the PV pre-bound to the claim, and whether anything changed.

    The claimRef is (re)written unless it already names the claim with its uid; the
    ``bound-by-controller`` annotation is added when the PV was not bound to the claim before.
    """
    raw = copy.deepcopy(dict(pv.raw))
    dirty = False
    claim_ref = pv.claim_ref
    annotations = dict(pv.annotations)
    should_mark = not is_volume_bound_to_claim(pv, pvc)
    ref = pv.claim_ref
    if ref is None or ref.name != pvc.name or ref.namespace != pvc.namespace or ref.uid != pvc.uid:
        raw.setdefault("spec", {})["claimRef"] = claim_reference(pvc)
        claim_ref = ClaimRef(pvc.namespace, pvc.name, pvc.uid)
        dirty = True
    if should_mark and ANN_BOUND_BY_CONTROLLER not in annotations:
        annotations[ANN_BOUND_BY_CONTROLLER] = "yes"
        meta = raw.setdefault("metadata", {})
        meta["annotations"] = {**(meta.get("annotations") or {}), ANN_BOUND_BY_CONTROLLER: "yes"}
        dirty = True
    if not dirty:
        return pv, False
    return replace(pv, claim_ref=claim_ref, annotations=annotations, raw=raw), True


def with_selected_node(pvc: PersistentVolumeClaim, node: str) -> PersistentVolumeClaim:
    """The claim with ``volume.kubernetes.io/selected-node: node`` (Reserve's assumed clone)."""
    raw = copy.deepcopy(dict(pvc.raw))
    meta = raw.setdefault("metadata", {})
    meta["annotations"] = {**(meta.get("annotations") or {}), ANN_SELECTED_NODE: node}
    return replace(pvc, annotations={**pvc.annotations, ANN_SELECTED_NODE: node}, raw=raw)
