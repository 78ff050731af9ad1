"""Validation of the storage.k8s.io/v1 kinds (``pkg/apis/storage/validation``), the checks that matter.

Built from the field-error helpers of :mod:`ksched.sim._storage_validation`; see there for what is
checked in general and what is not.
"""

from __future__ import annotations

from ksched.model.labels import qualified_name_errors
from ksched.sim._storage_validation import (
    DecodeError,
    Errors,
    Obj,
    check_class_name,
    check_csi_driver_name,
    check_label_selector,
    check_name,
    mapping,
    quantity,
    strings,
    text,
)

_CLASS_RECLAIM = ("Delete", "Retain")
_BINDING_MODES = ("Immediate", "WaitForFirstConsumer")
_FS_GROUP_POLICIES = ("File", "None", "ReadWriteOnceWithFSType")
_LIFECYCLE_MODES = ("Ephemeral", "Persistent")


def validate_storage_class(errs: Errors, sc: Obj, old: Obj | None) -> None:
    check_name(errs, mapping(sc.get("metadata"), "metadata"))
    provisioner = text(sc.get("provisioner"), "provisioner")
    if not provisioner:
        errs.required("provisioner")
    for msg in qualified_name_errors(provisioner.lower()) if provisioner else ():
        errs.invalid("provisioner", provisioner, msg)
    for k, v in mapping(sc.get("parameters"), "parameters").items():
        text(v, f"parameters[{k}]")
    policy = text(sc.get("reclaimPolicy"), "reclaimPolicy")
    if policy not in _CLASS_RECLAIM:
        errs.not_supported("reclaimPolicy", policy, _CLASS_RECLAIM)
    mode = text(sc.get("volumeBindingMode"), "volumeBindingMode")
    if mode not in _BINDING_MODES:
        errs.not_supported("volumeBindingMode", mode, _BINDING_MODES)
    _check_allowed_topologies(errs, sc.get("allowedTopologies"))
    if old is not None:
        if (sc.get("parameters") or {}) != (old.get("parameters") or {}):
            errs.forbidden("parameters", "updates to parameters are forbidden.")
        if provisioner != old.get("provisioner"):
            errs.forbidden("provisioner", "updates to provisioner are forbidden.")
        if policy != old.get("reclaimPolicy"):
            errs.forbidden("reclaimPolicy", "updates to reclaimPolicy are forbidden.")
        errs.immutable("volumeBindingMode", mode, old.get("volumeBindingMode"))


def _check_allowed_topologies(errs: Errors, raw: object) -> None:
    if raw is None:
        return
    if not isinstance(raw, list):
        raise DecodeError("allowedTopologies: expected a list")
    for i, term_raw in enumerate(raw):
        at = f"allowedTopologies[{i}].matchLabelExpressions"
        exprs = mapping(term_raw, f"allowedTopologies[{i}]").get("matchLabelExpressions") or []
        if not isinstance(exprs, list):
            raise DecodeError(f"{at}: expected a list")
        if not exprs:
            errs.required(at, "must have at least one label expression")
        seen: set[str] = set()
        for j, expr_raw in enumerate(exprs):
            expr = mapping(expr_raw, f"{at}[{j}]")
            key = text(expr.get("key"), f"{at}[{j}].key")
            for msg in qualified_name_errors(key):
                errs.invalid(f"{at}[{j}].key", key, msg)
            if key in seen:
                errs.duplicate(f"{at}[{j}].key", key)
            seen.add(key)
            if not strings(expr.get("values"), f"{at}[{j}].values"):
                errs.required(f"{at}[{j}].values", "must specify as least one value")


def validate_csi_node(errs: Errors, node: Obj, old: Obj | None) -> None:
    check_name(errs, mapping(node.get("metadata"), "metadata"))
    drivers = mapping(node.get("spec"), "spec").get("drivers") or []
    if not isinstance(drivers, list):
        raise DecodeError("spec.drivers: expected a list")
    names: set[str] = set()
    for i, raw in enumerate(drivers):
        at = f"spec.drivers[{i}]"
        driver = mapping(raw, at)
        name = text(driver.get("name"), f"{at}.name")
        check_csi_driver_name(errs, f"{at}.name", name)
        if name in names:
            errs.duplicate(f"{at}.name", name)
        names.add(name)
        if not text(driver.get("nodeID"), f"{at}.nodeID"):
            errs.required(f"{at}.nodeID")
        keys = strings(driver.get("topologyKeys"), f"{at}.topologyKeys")
        for key in keys:
            if not key:
                errs.required(f"{at}.topologyKeys", key)
            for msg in qualified_name_errors(key) if key else ():
                errs.invalid(f"{at}.topologyKeys", keys, msg)
        for key in {k for k in keys if keys.count(k) > 1}:
            errs.duplicate(f"{at}.topologyKeys", key)
        count = mapping(driver.get("allocatable"), f"{at}.allocatable").get("count")
        if count is not None and (isinstance(count, bool) or not isinstance(count, int)):
            raise DecodeError(f"{at}.allocatable.count: expected an integer, got {count!r}")
        if count is not None and count < 0:
            errs.invalid(f"{at}.allocatable.count", count, "must be greater than or equal to 0")


def validate_csi_driver(errs: Errors, driver: Obj, old: Obj | None) -> None:
    name = text(mapping(driver.get("metadata"), "metadata").get("name"), "metadata.name")
    check_csi_driver_name(errs, "name", name)
    spec = mapping(driver.get("spec"), "spec")
    for flag in ("attachRequired", "podInfoOnMount", "storageCapacity", "requiresRepublish", "seLinuxMount"):
        if spec.get(flag) is not None and not isinstance(spec[flag], bool):
            raise DecodeError(f"spec.{flag}: expected a boolean, got {spec[flag]!r}")
    policy = text(spec.get("fsGroupPolicy"), "spec.fsGroupPolicy")
    if policy and policy not in _FS_GROUP_POLICIES:
        errs.not_supported("spec.fsGroupPolicy", policy, _FS_GROUP_POLICIES)
    for i, mode in enumerate(strings(spec.get("volumeLifecycleModes"), "spec.volumeLifecycleModes")):
        if mode not in _LIFECYCLE_MODES:
            errs.not_supported(f"spec.volumeLifecycleModes[{i}]", mode, _LIFECYCLE_MODES)
    if old is not None:
        old_spec = mapping(old.get("spec"), "spec")
        errs.immutable("spec.attachRequired", spec.get("attachRequired"), old_spec.get("attachRequired"))


def validate_capacity(errs: Errors, cap: Obj, old: Obj | None) -> None:
    check_name(errs, mapping(cap.get("metadata"), "metadata"))
    if cap.get("nodeTopology") is not None:
        check_label_selector(errs, "nodeTopology", cap["nodeTopology"])
    check_class_name(errs, "storageClassName", text(cap.get("storageClassName"), "storageClassName"))
    for field in ("capacity", "maximumVolumeSize"):
        if cap.get(field) is not None and quantity(cap[field]) < 0:
            errs.invalid(field, str(cap[field]), "must be greater than or equal to 0")
    if old is not None:
        errs.immutable("storageClassName", cap.get("storageClassName"), old.get("storageClassName"))
        errs.immutable("nodeTopology", cap.get("nodeTopology"), old.get("nodeTopology"))


def validate_attachment(errs: Errors, va: Obj, old: Obj | None) -> None:
    check_name(errs, mapping(va.get("metadata"), "metadata"))
    spec = mapping(va.get("spec"), "spec")
    check_csi_driver_name(errs, "spec.attacher", text(spec.get("attacher"), "spec.attacher"))
    node = text(spec.get("nodeName"), "spec.nodeName")
    if not node:
        errs.required("spec.nodeName")
    source = mapping(spec.get("source"), "spec.source")
    pv, inline = source.get("persistentVolumeName"), source.get("inlineVolumeSpec")
    if (pv is None) == (inline is None):
        errs.required("spec.source", "must specify exactly one of inlineVolumeSpec and persistentVolumeName")
    elif pv is not None and not text(pv, "spec.source.persistentVolumeName"):
        errs.required("spec.source.persistentVolumeName")
    if old is not None:
        errs.immutable("spec", spec, old.get("spec"))


def validate_attributes_class(errs: Errors, vac: Obj, old: Obj | None) -> None:
    check_name(errs, mapping(vac.get("metadata"), "metadata"))
    check_csi_driver_name(errs, "driverName", text(vac.get("driverName"), "driverName"))
    if old is not None:
        errs.immutable("driverName", vac.get("driverName"), old.get("driverName"))
        if (vac.get("parameters") or {}) != (old.get("parameters") or {}):
            errs.forbidden("parameters", "updates to parameters are forbidden.")
