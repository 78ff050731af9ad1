"""ObjectMeta validation for every served kind, as kube-apiserver v1.35's ``ValidateObjectMeta``.

Upstream checks every object's metadata the same way, with one per-kind rule for the name (the
kind's ``NameFunc``): most kinds take a DNS-1123 subdomain, namespaces and StatefulSets a DNS-1123
label, services a DNS-1035 label, RBAC kinds anything that is a safe URL path segment. Core/v1
Events are not checked at all (kept lenient for old clients; events.k8s.io requests are checked in
:mod:`ksched.sim._events`), and the storage kinds check their own names in
:mod:`ksched.sim._storage_api` first, so only the rest of their metadata is checked here.

On update upstream re-checks labels, annotations and ownerReferences (not the name) and refuses a
change of name, namespace, uid, creationTimestamp, deletionTimestamp or deletionGracePeriodSeconds.
The store already carries name, namespace, uid and creationTimestamp over, so those checks are
only a guard here. A part that is the very same dict as the stored one is not re-checked: it was
valid when stored, and the sim's own writers share unchanged parts.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ksched.model.labels import (
    dns1035_label_errors,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    label_value_errors,
    qualified_name_errors,
)
from ksched.sim._resources import ResourceType
from ksched.sim._storage_validation import DecodeError, Errors

Obj = dict[str, Any]
NameFunc = Callable[[str], list[str]]

TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024
"""``TotalAnnotationSizeLimitB``: keys and values together, in bytes."""
STANDARD_FINALIZERS = frozenset({"kubernetes", "orphan", "foregroundDeletion"})
_NOT_QUALIFIED_FINALIZER = "name is neither a standard finalizer name nor is it fully qualified"
_BANNED_OWNERS = {("", "v1", "Event"), ("events.k8s.io", "v1", "Event")}


def _cached(check: NameFunc) -> Callable[[str], tuple[str, ...]]:
    """``check`` with its verdicts cached: label keys, values and namespaces recur on every write."""

    def verdict(value: str) -> tuple[str, ...]:
        return tuple(check(value))

    return functools.lru_cache(maxsize=8192)(verdict)


label_key_errors = _cached(qualified_name_errors)
cached_label_value_errors = _cached(label_value_errors)
cached_dns1123_label_errors = _cached(dns1123_label_errors)


def path_segment_errors(name: str) -> list[str]:
    """apimachinery ``IsValidPathSegmentName`` (RBAC kinds): not ``.`` or ``..``, no ``/`` or ``%``."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{bad}'" for bad in ("/", "%") if bad in name]


def _path_segment_prefix_errors(name: str) -> list[str]:
    return [f"may not contain '{bad}'" for bad in ("/", "%") if bad in name]


_RBAC = "rbac.authorization.k8s.io"
_LABEL_NAMED = frozenset({"namespaces", "statefulsets.apps"})
_UNCHECKED_KINDS = frozenset(
    {
        "events",
        "events.events.k8s.io",
        "tokenreviews.authentication.k8s.io",
        "selfsubjectreviews.authentication.k8s.io",
        "subjectaccessreviews.authorization.k8s.io",
        "selfsubjectaccessreviews.authorization.k8s.io",
    }
)
"""Kinds whose metadata upstream does not run through ``ValidateObjectMeta`` (events, reviews)."""


def name_func(rtype: ResourceType) -> tuple[NameFunc, NameFunc]:
    """The kind's name check and generateName (prefix) check, as upstream's ``NameFunc``."""
    if rtype.group == _RBAC:
        return path_segment_errors, _path_segment_prefix_errors
    if rtype.key in _LABEL_NAMED:
        return dns1123_label_errors, _prefix(dns1123_label_errors)
    if rtype.key == "services":
        return dns1035_label_errors, _prefix(dns1035_label_errors)
    return dns1123_subdomain_errors, _prefix(dns1123_subdomain_errors)


def _prefix(check: NameFunc) -> NameFunc:
    """Upstream's ``maskTrailingDash``: a generateName may end in ``-``, the suffix follows it."""

    def prefixed(name: str) -> list[str]:
        if len(name) > 1 and name.endswith("-"):
            name = name[:-2] + "a"
        return check(name)

    return prefixed


def validate(errs: Errors, rtype: ResourceType, obj: Obj, old: Obj | None) -> None:
    """Add ``obj.metadata``'s errors (and, on update, immutable-field errors against ``old``)."""
    if rtype.key in _UNCHECKED_KINDS:
        return
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        raise DecodeError(f"metadata: expected an object, got {type(meta).__name__}")
    if old is None:
        _validate_create(errs, rtype, meta)
        return
    old_meta = old.get("metadata") or {}
    if meta is old_meta:
        return
    _validate_update(errs, meta, old_meta)


def _validate_create(errs: Errors, rtype: ResourceType, meta: Obj) -> None:
    check, check_prefix = name_func(rtype)
    own_name_check = rtype.storage_key.endswith("storage.k8s.io") or rtype.key in (
        "persistentvolumes",
        "persistentvolumeclaims",
    )
    generate = _text(meta.get("generateName"), "metadata.generateName")
    if generate:
        for msg in check_prefix(generate):
            errs.invalid("metadata.generateName", generate, msg)
    name = _text(meta.get("name"), "metadata.name")
    if not name:
        errs.required("metadata.name", "name or generateName is required")
    elif not own_name_check:
        for msg in check(name):
            errs.invalid("metadata.name", name, msg)
    if rtype.namespaced:
        namespace = _text(meta.get("namespace"), "metadata.namespace")
        if not namespace:
            errs.required("metadata.namespace")
        else:
            for msg in cached_dns1123_label_errors(namespace):
                errs.invalid("metadata.namespace", namespace, msg)
    elif meta.get("namespace"):
        errs.forbidden("metadata.namespace", "not allowed on this type")
    generation = meta.get("generation")
    if isinstance(generation, int) and generation < 0:
        errs.invalid("metadata.generation", generation, "must be greater than or equal to 0")
    _validate_common(errs, meta, None)


def _validate_update(errs: Errors, meta: Obj, old: Obj) -> None:
    """``ValidateObjectMetaUpdate``: the mutable parts re-checked, the rest must not change."""
    if old.get("deletionTimestamp") and meta.get("finalizers") is not old.get("finalizers"):
        added = [f for f in meta.get("finalizers") or () if f not in (old.get("finalizers") or ())]
        if added:
            errs.forbidden(
                "metadata.finalizers",
                "no new finalizers can be added if the object is being deleted, "
                f"found new finalizers {_go_strings(added)}",
            )
    for key in ("name", "namespace", "uid", "creationTimestamp", "deletionTimestamp"):
        errs.immutable(f"metadata.{key}", meta.get(key), old.get(key))
    errs.immutable(
        "metadata.deletionGracePeriodSeconds",
        meta.get("deletionGracePeriodSeconds"),
        old.get("deletionGracePeriodSeconds"),
    )
    _validate_common(errs, meta, old)


def _go_strings(values: list[str]) -> str:
    """A Go ``%#v`` of a ``[]string``."""
    inner = ", ".join('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values)
    return "[]string{" + inner + "}"


def _validate_common(errs: Errors, meta: Obj, old: Obj | None) -> None:
    """Labels, annotations, ownerReferences and finalizers; parts identical to ``old``'s are skipped."""
    labels = meta.get("labels")
    if labels and (old is None or labels is not old.get("labels")):
        validate_labels(errs, labels, "metadata.labels")
    annotations = meta.get("annotations")
    if annotations and (old is None or annotations is not old.get("annotations")):
        validate_annotations(errs, annotations, "metadata.annotations")
    refs = meta.get("ownerReferences")
    if refs and (old is None or refs is not old.get("ownerReferences")):
        _validate_owner_references(errs, refs)
    finalizers = meta.get("finalizers")
    if finalizers and old is None:
        _validate_finalizers(errs, finalizers)


def validate_labels(errs: Errors, labels: Any, field: str) -> None:
    """``ValidateLabels``: qualified-name keys, label values (both reported at ``field``)."""
    if not isinstance(labels, dict):
        raise DecodeError(f"{field}: expected an object")
    for key, value in labels.items():
        if not isinstance(key, str):
            raise DecodeError(f"{field}: expected string keys")
        for msg in label_key_errors(key):
            errs.invalid(field, key, msg)
        if value is not None and not isinstance(value, str):  # null decodes to ""
            raise DecodeError(f"{field}: expected a string value")
        if value:
            for msg in cached_label_value_errors(value):
                errs.invalid(field, value, msg)


def validate_annotations(errs: Errors, annotations: Any, field: str) -> None:
    """``ValidateAnnotations``: qualified-name keys (compared in lower case) and 256 KiB in total."""
    if not isinstance(annotations, dict):
        raise DecodeError(f"{field}: expected an object")
    total = 0
    for key, value in annotations.items():
        for msg in label_key_errors(key.lower()):
            errs.invalid(field, key, msg)
        if value is None:  # null decodes to ""
            value = ""
        if not isinstance(value, str):
            raise DecodeError(f"{field}: expected a string value")
        total += len(key.encode("utf-8", "surrogatepass")) + len(value.encode("utf-8", "surrogatepass"))
    if total > TOTAL_ANNOTATION_SIZE_LIMIT:
        errs.too_long(field, TOTAL_ANNOTATION_SIZE_LIMIT)


def _validate_owner_references(errs: Errors, refs: Any) -> None:
    """``ValidateOwnerReferences``: apiVersion, kind, name and uid set; at most one controller."""
    field = "metadata.ownerReferences"
    if not isinstance(refs, list):
        raise DecodeError(f"{field}: expected a list")
    first_controller = ""
    for ref in refs:
        if not isinstance(ref, dict):
            raise DecodeError(f"{field}: expected an object")
        api_version = _text(ref.get("apiVersion"), f"{field}.apiVersion")
        group, _, version = api_version.rpartition("/")
        kind = _text(ref.get("kind"), f"{field}.kind")
        if not version:
            errs.invalid(f"{field}.apiVersion", api_version, "version must not be empty")
        if not kind:
            errs.invalid(f"{field}.kind", kind, "must not be empty")
        for key in ("name", "uid"):
            if not _text(ref.get(key), f"{field}.{key}"):
                errs.invalid(f"{field}.{key}", ref.get(key) or "", "must not be empty")
        if (group, version, kind) in _BANNED_OWNERS:
            gvk = f"{group}/{version}, Kind={kind}"
            errs.invalid(field, ref, f"{gvk} is disallowed from being an owner")
        if ref.get("controller") is True:
            current = f"{kind}/{ref.get('name', '')}"
            if first_controller:
                errs.invalid(
                    field,
                    refs,
                    "Only one reference can have Controller set to true. "
                    f'Found "true" in references for {first_controller} and {current}',
                )
            else:
                first_controller = current


def _validate_finalizers(errs: Errors, finalizers: Any) -> None:
    """``ValidateFinalizers`` plus core's standard-name rule for a name without a ``/``."""
    field = "metadata.finalizers"
    if not isinstance(finalizers, list) or not all(isinstance(f, str) for f in finalizers):
        raise DecodeError(f"{field}: expected a list of strings")
    for i, name in enumerate(finalizers):
        for msg in qualified_name_errors(name):
            errs.invalid(field, name, msg)
        if "/" not in name and name not in STANDARD_FINALIZERS:
            errs.invalid(f"{field}[{i}]", name, _NOT_QUALIFIED_FINALIZER)
    if "orphan" in finalizers and "foregroundDeletion" in finalizers:
        errs.invalid(field, finalizers, "finalizer orphan and foregroundDeletion cannot be both set")


def _text(value: Any, field: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise DecodeError(f"{field}: expected a string")
    return value
