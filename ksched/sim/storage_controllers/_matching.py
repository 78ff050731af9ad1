"""Which volume a claim gets: upstream's matching rules as pure functions over API objects.

Ported from ``k8s.io/component-helpers/storage/volume`` (``FindMatchingVolume``,
``IsVolumeBoundToClaim``, ``CheckVolumeModeMismatches``, ``CheckAccessModes``) and the PV
controller's ``index.go`` (volumes grouped by access modes, the group with the fewest modes that
contains the claim's tried first) and ``checkVolumeSatisfyClaim``. Objects are the JSON dicts the
informers hold. A volume whose capacity cannot be read never matches (it is logged); a claim whose
request cannot be read raises :class:`Unreadable`, which names the object and the field, for the
caller to log.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from ksched.errors import QuantityError
from ksched.model.quantity import parse_bytes
from ksched.sim._selectors import match_label_selector
from ksched.sim._storage_names import storage_class_of

log = logging.getLogger(__name__)

Obj = dict[str, Any]


class Unreadable(Exception):
    """A field of an object cannot be read; the message names the object and the field."""


def spec_of(obj: Obj) -> Obj:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def status_of(obj: Obj) -> Obj:
    status = obj.get("status")
    return status if isinstance(status, dict) else {}


def describe(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    kind = obj.get("kind") or "object"
    ns = meta.get("namespace")
    return f"{kind} {ns}/{meta.get('name')}" if ns else f"{kind} {meta.get('name')}"


def _storage_bytes(obj: Obj, resources: Any, field: str) -> int:
    value = resources.get("storage") if isinstance(resources, dict) else None
    if value is None:
        return 0
    try:
        return parse_bytes(value)
    except QuantityError as exc:
        raise Unreadable(f"{describe(obj)}: {field}: {exc.problem}") from None


def request_bytes(claim: Obj) -> int:
    """The claim's ``spec.resources.requests.storage`` in bytes (0 when absent)."""
    resources = spec_of(claim).get("resources")
    requests = resources.get("requests") if isinstance(resources, dict) else None
    return _storage_bytes(claim, requests, "spec.resources.requests.storage")


def capacity_bytes(volume: Obj) -> int:
    """The volume's ``spec.capacity.storage`` in bytes (0 when absent)."""
    return _storage_bytes(volume, spec_of(volume).get("capacity"), "spec.capacity.storage")


def access_modes(obj: Obj) -> frozenset[str]:
    modes = spec_of(obj).get("accessModes")
    return frozenset(m for m in modes if isinstance(m, str)) if isinstance(modes, list) else frozenset()


def claim_ref(volume: Obj) -> Obj | None:
    ref = spec_of(volume).get("claimRef")
    return ref if isinstance(ref, dict) else None


def is_bound_to(volume: Obj, claim: Obj) -> bool:
    """``IsVolumeBoundToClaim``: the volume's claimRef names the claim (and its uid, when it has one)."""
    ref = claim_ref(volume)
    meta = claim["metadata"]
    if ref is None or ref.get("name") != meta["name"] or ref.get("namespace") != meta.get("namespace"):
        return False
    return not ref.get("uid") or ref.get("uid") == meta.get("uid")


def volume_mode_mismatch(claim: Obj, volume: Obj) -> bool:
    """``CheckVolumeModeMismatches``: an unset mode reads as Filesystem on either side."""
    want = spec_of(claim).get("volumeMode") or "Filesystem"
    return want != (spec_of(volume).get("volumeMode") or "Filesystem")


def _attributes_class(obj: Obj) -> str:
    return str(spec_of(obj).get("volumeAttributesClassName") or "")


def _selector_matches(claim: Obj, volume: Obj) -> bool:
    selector = spec_of(claim).get("selector")
    if selector is None:
        return True
    labels = (volume.get("metadata") or {}).get("labels") or {}
    return isinstance(selector, dict) and match_label_selector(selector, labels)


def find_matching_volume(claim: Obj, volumes: Iterable[Obj], *, delay_binding: bool) -> Obj | None:
    """``FindMatchingVolume`` without a node (the PV controller's path).

    A volume pre-bound to the claim wins at once (also for a WaitForFirstConsumer claim); otherwise
    the smallest Available volume of the claim's class, mode and attributes class whose labels match
    the claim's selector, unless binding is delayed (the scheduler then picks).
    """
    requested = request_bytes(claim)
    wanted_class = storage_class_of(claim)
    smallest: Obj | None = None
    smallest_size = 0
    for volume in volumes:
        if claim_ref(volume) is not None and not is_bound_to(volume, claim):
            continue
        try:
            size = capacity_bytes(volume)
        except Unreadable as exc:
            log.warning("not matching %s: %s", describe(volume), exc)
            continue
        if size < requested or volume_mode_mismatch(claim, volume):
            continue
        if (volume.get("metadata") or {}).get("deletionTimestamp"):
            continue
        if is_bound_to(volume, claim):
            return volume
        if delay_binding:
            continue
        if status_of(volume).get("phase") != "Available" or not _selector_matches(claim, volume):
            continue
        if storage_class_of(volume) != wanted_class or _attributes_class(volume) != _attributes_class(claim):
            continue
        if smallest is None or smallest_size > size:
            smallest, smallest_size = volume, size
    return smallest


def find_best_match(claim: Obj, volumes: Iterable[Obj], *, delay_binding: bool) -> Obj | None:
    """The PV controller's ``findBestMatchForClaim``: volumes are grouped by their access modes and
    the groups that contain every mode the claim asks for are tried, fewest modes first."""
    wanted = access_modes(claim)
    groups: dict[frozenset[str], list[Obj]] = {}
    for volume in sorted(volumes, key=lambda v: v["metadata"]["name"]):
        groups.setdefault(access_modes(volume), []).append(volume)
    for modes in sorted((m for m in groups if wanted <= m), key=lambda m: (len(m), sorted(m))):
        best = find_matching_volume(claim, groups[modes], delay_binding=delay_binding)
        if best is not None:
            return best
    return None


def mismatch(volume: Obj, claim: Obj) -> str:
    """``checkVolumeSatisfyClaim``: why a volume the claim names cannot serve it ("" when it can)."""
    if (volume.get("metadata") or {}).get("deletionTimestamp"):
        return f'the volume is marked for deletion "{volume["metadata"]["name"]}"'
    try:
        if capacity_bytes(volume) < request_bytes(claim):
            return "requested PV is too small"
    except Unreadable as exc:
        return str(exc)
    if storage_class_of(volume) != storage_class_of(claim):
        return "storageClassName does not match"
    if _attributes_class(volume) != _attributes_class(claim):
        return "volumeAttributesClassName does not match"
    if volume_mode_mismatch(claim, volume):
        return "incompatible volumeMode"
    if not access_modes(claim) <= access_modes(volume):
        return "incompatible accessMode"
    return ""
