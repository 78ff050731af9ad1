"""Validation of the storage kinds: the checks of kube-apiserver v1.35 a scheduler would trip over.

Ported in spirit from ``pkg/apis/core/validation`` (PersistentVolume, PersistentVolumeClaim) and
``pkg/apis/storage/validation`` (StorageClass, CSINode, CSIDriver, CSIStorageCapacity,
VolumeAttachment): object names, quantities, access modes, reclaim policies, binding modes, volume
sources, node affinity, CSINode drivers, and the fields upstream makes immutable. Messages are
upstream's field errors (``spec.accessModes: Required value: at least 1 access mode is required``),
collected by :class:`Errors` and answered as one 422 Invalid listing them all.

A field that cannot be decoded at all (a quantity that is not a quantity, a list that is a string)
is a 400 BadRequest, as kube-apiserver's decoder answers before validation runs
(:class:`DecodeError`). Not checked: data sources, secrets references, mount options, the
in-tree volume sources' own fields, and cross-object rules (quota, limit ranges).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import Any

from ksched.errors import QuantityError
from ksched.model.labels import dns1123_subdomain_errors, label_value_errors, qualified_name_errors
from ksched.model.quantity import parse_quantity
from ksched.sim._storage_names import ACCESS_MODES

Obj = dict[str, Any]
Cause = tuple[str, str, str]

QUANTITY_REGEXP_ERROR = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
IMMUTABLE = "field is immutable"
CLAIM_SPEC_IMMUTABLE = (
    "spec is immutable after creation except resources.requests "
    "and volumeAttributesClassName for bound claims"
)
PV_SOURCES = (
    "gcePersistentDisk", "awsElasticBlockStore", "hostPath", "glusterfs", "nfs", "rbd", "iscsi", "cinder",
    "cephfs", "fc", "flocker", "flexVolume", "azureFile", "vsphereVolume", "quobyte", "azureDisk",
    "photonPersistentDisk", "portworxVolume", "scaleIO", "local", "storageos", "csi",
)  # fmt: skip
"""Every ``PersistentVolumeSource`` member; exactly one must be set."""
_SELECTOR_OPS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


class DecodeError(Exception):
    """A field kube-apiserver could not even decode; answered as 400 BadRequest."""


def go_value(value: Any) -> str:
    """A bad value as upstream's ``field.Error`` prints it: strings quoted, numbers and bools plain."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


class Errors:
    """Field errors in the order found; each becomes one cause of the 422."""

    def __init__(self) -> None:
        self.causes: list[Cause] = []

    def _add(self, reason: str, field: str, body: str, detail: str) -> None:
        self.causes.append((reason, field, f"{body}: {detail}" if detail else body))

    def required(self, field: str, detail: str = "") -> None:
        self._add("FieldValueRequired", field, "Required value", detail)

    def invalid(self, field: str, value: Any, detail: str) -> None:
        self._add("FieldValueInvalid", field, f"Invalid value: {go_value(value)}", detail)

    def not_supported(self, field: str, value: Any, supported: Iterable[str]) -> None:
        values = ", ".join(go_value(v) for v in supported)
        self._add(
            "FieldValueNotSupported",
            field,
            f"Unsupported value: {go_value(value)}",
            f"supported values: {values}",
        )

    def duplicate(self, field: str, value: Any) -> None:
        self._add("FieldValueDuplicate", field, f"Duplicate value: {go_value(value)}", "")

    def forbidden(self, field: str, detail: str) -> None:
        self._add("FieldValueForbidden", field, "Forbidden", detail)

    def too_long(self, field: str, limit: int) -> None:
        self._add("FieldValueTooLong", field, "Too long", f"may not be more than {limit} bytes")

    def immutable(self, field: str, new: Any, old: Any) -> None:
        if new != old:
            self.invalid(field, new, IMMUTABLE)


# -- decoding: shapes and quantities ---------------------------------------------------------------


def mapping(obj: Any, field: str) -> Obj:
    if obj is None:
        return {}
    if not isinstance(obj, dict):
        raise DecodeError(f"{field}: expected an object, got {go_value(obj)}")
    return obj


def strings(obj: Any, field: str) -> list[str]:
    if obj is None:
        return []
    if not isinstance(obj, list) or not all(isinstance(v, str) for v in obj):
        raise DecodeError(f"{field}: expected a list of strings, got {go_value(obj)}")
    return obj


def text(obj: Any, field: str) -> str:
    if obj is None:
        return ""
    if not isinstance(obj, str):
        raise DecodeError(f"{field}: expected a string, got {go_value(obj)}")
    return obj


def quantity(value: Any) -> Fraction:
    """A quantity as upstream's JSON decoder reads it; anything else is a :class:`DecodeError`."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise DecodeError(QUANTITY_REGEXP_ERROR)
    try:
        return parse_quantity(value)
    except QuantityError:
        raise DecodeError(QUANTITY_REGEXP_ERROR) from None


def quantities(obj: Any, field: str) -> dict[str, Fraction]:
    return {str(k): quantity(v) for k, v in mapping(obj, field).items()}


# -- shared checks ---------------------------------------------------------------------------------


def check_name(errs: Errors, meta: Obj, field: str = "metadata.name") -> None:
    name = meta.get("name", "")
    for msg in dns1123_subdomain_errors(str(name)):
        errs.invalid(field, name, msg)


def check_csi_driver_name(errs: Errors, field: str, name: str) -> None:
    """Upstream's ``ValidateCSIDriverName``: required, at most 63 bytes, a DNS subdomain in lower case."""
    if not name:
        errs.required(field)
        return
    if len(name.encode()) > 63:
        errs.too_long(field, 63)
    for msg in dns1123_subdomain_errors(name.lower()):
        errs.invalid(field, name, msg)


def check_class_name(errs: Errors, field: str, name: str) -> None:
    for msg in dns1123_subdomain_errors(name):
        errs.invalid(field, name, msg)


def check_access_modes(errs: Errors, field: str, modes: list[str], *, required_detail: str) -> None:
    if not modes:
        errs.required(field, required_detail)
    for mode in modes:
        if mode not in ACCESS_MODES:
            errs.not_supported(field, mode, sorted(ACCESS_MODES))
    if "ReadWriteOncePod" in modes and len(modes) > 1:
        errs.forbidden(field, "may not use ReadWriteOncePod with other access modes")


def check_positive_storage(errs: Errors, field: str, value: Any) -> None:
    q = quantity(value)
    if q < 0:
        errs.invalid(field, str(value), "must be greater than or equal to 0")
    if q <= 0:
        errs.invalid(field, str(value), "must be greater than zero")


def check_label_selector(errs: Errors, field: str, selector: Any) -> None:
    """metav1 ``ValidateLabelSelector`` (invalid label values refused, as on every create): matchLabels
    as labels, matchExpressions' operators, keys and values. The one selector check of every kind."""
    sel = mapping(selector, field)
    labels = mapping(sel.get("matchLabels"), f"{field}.matchLabels")
    for k, v in labels.items():
        for msg in qualified_name_errors(str(k)):
            errs.invalid(f"{field}.matchLabels", k, msg)
        value = text(v, f"{field}.matchLabels")
        for msg in label_value_errors(value) if value else ():
            errs.invalid(f"{field}.matchLabels", value, msg)
    exprs = sel.get("matchExpressions") or []
    if not isinstance(exprs, list):
        raise DecodeError(f"{field}.matchExpressions: expected a list")
    for i, raw in enumerate(exprs):
        _check_selector_requirement(errs, f"{field}.matchExpressions[{i}]", raw)


def _check_selector_requirement(errs: Errors, at: str, raw: Any) -> None:
    expr = mapping(raw, at)
    op, values = text(expr.get("operator"), f"{at}.operator"), strings(expr.get("values"), f"{at}.values")
    if op in ("In", "NotIn"):
        if not values:
            errs.required(f"{at}.values", "must be specified when `operator` is 'In' or 'NotIn'")
    elif op in ("Exists", "DoesNotExist"):
        if values:
            errs.forbidden(
                f"{at}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
            )
    else:
        errs.invalid(f"{at}.operator", op, "not a valid selector operator")
    key = text(expr.get("key"), f"{at}.key")
    for msg in qualified_name_errors(key):
        errs.invalid(f"{at}.key", key, msg)
    for j, value in enumerate(values):
        for msg in label_value_errors(value):
            errs.invalid(f"{at}.values[{j}]", value, msg)


def check_node_selector(errs: Errors, field: str, selector: Any) -> None:
    """Upstream's ``ValidateNodeSelector`` for a volume's required node affinity."""
    terms = mapping(selector, field).get("nodeSelectorTerms") or []
    if not isinstance(terms, list):
        raise DecodeError(f"{field}.nodeSelectorTerms: expected a list")
    if not terms:
        errs.required(f"{field}.nodeSelectorTerms", "must have at least one node selector term")
    for i, raw in enumerate(terms):
        term = mapping(raw, f"{field}.nodeSelectorTerms[{i}]")
        for part in ("matchExpressions", "matchFields"):
            reqs = term.get(part) or []
            if not isinstance(reqs, list):
                raise DecodeError(f"{field}.nodeSelectorTerms[{i}].{part}: expected a list")
            for j, req in enumerate(reqs):
                _check_node_requirement(errs, f"{field}.nodeSelectorTerms[{i}].{part}[{j}]", req)


def _check_node_requirement(errs: Errors, at: str, raw: Any) -> None:
    req = mapping(raw, at)
    op, values = text(req.get("operator"), f"{at}.operator"), strings(req.get("values"), f"{at}.values")
    if op in ("In", "NotIn") and not values:
        errs.required(f"{at}.values", "must be specified when `operator` is 'In' or 'NotIn'")
    elif op in ("Exists", "DoesNotExist") and values:
        errs.forbidden(f"{at}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
    elif op in ("Gt", "Lt") and len(values) != 1:
        errs.required(f"{at}.values", "must be specified single value when `operator` is 'Lt' or 'Gt'")
    elif op not in _SELECTOR_OPS:
        errs.invalid(f"{at}.operator", op, "not a valid selector operator")
    for msg in qualified_name_errors(text(req.get("key"), f"{at}.key")):
        errs.invalid(f"{at}.key", req.get("key"), msg)


Validator = Callable[[Errors, Obj, Obj | None], None]
KindValidator = Callable[[Errors, Obj, Obj | None, str], None]
"""A kind's validation in :mod:`ksched.sim._admission`: (errors, new, old or None, subresource)."""
"""(errors, new object, old object on update or ``None`` on create)."""


# -- core/v1 ---------------------------------------------------------------------------------------

_PV_RECLAIM = ("Delete", "Recycle", "Retain")
_VOLUME_MODES = ("Block", "Filesystem")


def validate_pv(errs: Errors, pv: Obj, old: Obj | None) -> None:
    """``ValidatePersistentVolume`` (+ ``ValidatePersistentVolumeUpdate``), the checks that matter here."""
    check_name(errs, mapping(pv.get("metadata"), "metadata"))
    spec = mapping(pv.get("spec"), "spec")
    check_access_modes(
        errs, "spec.accessModes", strings(spec.get("accessModes"), "spec.accessModes"), required_detail=""
    )
    capacity = mapping(spec.get("capacity"), "spec.capacity")
    if not capacity:
        errs.required("spec.capacity")
    if "storage" not in capacity or len(capacity) > 1:
        errs.not_supported("spec.capacity", capacity, ["storage"])
    for key, value in capacity.items():
        check_positive_storage(errs, f"spec.capacity[{key}]", value)
    class_name = text(spec.get("storageClassName"), "spec.storageClassName")
    if class_name:
        check_class_name(errs, "spec.storageClassName", class_name)
    policy = text(spec.get("persistentVolumeReclaimPolicy"), "spec.persistentVolumeReclaimPolicy")
    if policy and policy not in _PV_RECLAIM:
        errs.not_supported("spec.persistentVolumeReclaimPolicy", policy, _PV_RECLAIM)
    mode = text(spec.get("volumeMode"), "spec.volumeMode")
    if mode and mode not in _VOLUME_MODES:
        errs.not_supported("spec.volumeMode", mode, _VOLUME_MODES)
    affinity = mapping(spec.get("nodeAffinity"), "spec.nodeAffinity")
    if spec.get("nodeAffinity") is not None:
        if affinity.get("required") is None:
            errs.required("spec.nodeAffinity.required", "must specify required node constraints")
        else:
            check_node_selector(errs, "spec.nodeAffinity.required", affinity["required"])
    _check_pv_source(errs, spec)
    if old is not None:
        old_spec = mapping(old.get("spec"), "spec")
        if {k: spec.get(k) for k in PV_SOURCES} != {k: old_spec.get(k) for k in PV_SOURCES}:
            errs.forbidden(
                "spec.persistentvolumesource", "spec.persistentvolumesource is immutable after creation"
            )
        errs.immutable("spec.volumeMode", spec.get("volumeMode"), old_spec.get("volumeMode"))
        if old_spec.get("nodeAffinity") is not None:
            errs.immutable("spec.nodeAffinity", spec.get("nodeAffinity"), old_spec.get("nodeAffinity"))


def _check_pv_source(errs: Errors, spec: Obj) -> None:
    sources = [k for k in PV_SOURCES if spec.get(k) is not None]
    if not sources:
        errs.required("spec", "must specify a volume type")
    for extra in sources[1:]:
        errs.forbidden(f"spec.{extra}", "may not specify more than 1 volume type")
    if "csi" in sources:
        csi = mapping(spec["csi"], "spec.csi")
        check_csi_driver_name(errs, "spec.csi.driver", text(csi.get("driver"), "spec.csi.driver"))
        if not text(csi.get("volumeHandle"), "spec.csi.volumeHandle"):
            errs.required("spec.csi.volumeHandle")
    for kind in ("hostPath", "local"):
        if kind in sources and not text(mapping(spec[kind], f"spec.{kind}").get("path"), f"spec.{kind}.path"):
            errs.required(f"spec.{kind}.path")
    if "local" in sources and spec.get("nodeAffinity") is None:
        errs.required("spec.nodeAffinity", "Local volume requires node affinity")


def validate_pvc(errs: Errors, pvc: Obj, old: Obj | None) -> None:
    """``ValidatePersistentVolumeClaim`` (+ the immutability of ``ValidatePersistentVolumeClaimUpdate``)."""
    check_name(errs, mapping(pvc.get("metadata"), "metadata"))
    spec = mapping(pvc.get("spec"), "spec")
    check_claim_spec(errs, "spec", spec)
    status = mapping(pvc.get("status"), "status")
    quantities(status.get("capacity"), "status.capacity")
    if old is not None:
        _check_claim_update(errs, spec, mapping(old.get("spec"), "spec"), status)


def check_claim_spec(errs: Errors, at: str, spec: Obj) -> None:
    """``ValidatePersistentVolumeClaimSpec``: also what an ephemeral volume's template must satisfy."""
    modes = strings(spec.get("accessModes"), f"{at}.accessModes")
    check_access_modes(errs, f"{at}.accessModes", modes, required_detail="at least 1 access mode is required")
    if spec.get("selector") is not None:
        check_label_selector(errs, f"{at}.selector", spec["selector"])
    resources = mapping(spec.get("resources"), f"{at}.resources")
    requests = mapping(resources.get("requests"), f"{at}.resources.requests")
    quantities(requests, f"{at}.resources.requests")
    quantities(resources.get("limits"), f"{at}.resources.limits")
    if "storage" not in requests:
        errs.required(f"{at}.resources[storage]")
    else:
        check_positive_storage(errs, f"{at}.resources[storage]", requests["storage"])
    class_name = text(spec.get("storageClassName"), f"{at}.storageClassName")
    if class_name:
        check_class_name(errs, f"{at}.storageClassName", class_name)
    mode = text(spec.get("volumeMode"), f"{at}.volumeMode")
    if mode and mode not in _VOLUME_MODES:
        errs.not_supported(f"{at}.volumeMode", mode, _VOLUME_MODES)
    text(spec.get("volumeName"), f"{at}.volumeName")


def _check_claim_update(errs: Errors, spec: Obj, old: Obj, status: Obj) -> None:
    """The spec is immutable, except: ``volumeName`` may be set once, ``storageClassName`` may be set
    when it was unset (the retroactive default class), and a bound claim's ``resources.requests``
    may change (expansion); ``volumeAttributesClassName`` may change."""
    new_cmp, old_cmp = dict(spec), dict(old)
    for key in ("volumeAttributesClassName",):
        new_cmp.pop(key, None)
        old_cmp.pop(key, None)
    if not old.get("volumeName"):
        old_cmp["volumeName"] = new_cmp.get("volumeName")
    if old.get("storageClassName") is None:
        old_cmp["storageClassName"] = new_cmp.get("storageClassName")
    if status.get("phase") == "Bound":
        old_cmp["resources"] = new_cmp.get("resources")
    if {k: v for k, v in new_cmp.items() if v is not None} != {
        k: v for k, v in old_cmp.items() if v is not None
    }:
        errs.forbidden("spec", CLAIM_SPEC_IMMUTABLE)
