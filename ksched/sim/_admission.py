"""What kube-apiserver v1.35 does to an object between decoding a write and storing it.

One entry point per write (:func:`admit_create`, :func:`admit_update`), in upstream's order:

1. **decode** (:mod:`ksched.sim._decode_types`): a field of the wrong JSON type, or an integer out
   of its Go type's range, is a 400 BadRequest, as the JSON decoder answers before anything else;
2. **defaulting** (:mod:`ksched.sim._defaults`): the fields kube-apiserver's defaulting functions
   and default admission plugins fill in;
3. **validation**: ObjectMeta (:mod:`ksched.sim._meta_validation`) and the kind's own rules
   (:mod:`ksched.sim._validators_core`, :mod:`ksched.sim._validators_other`, the storage kinds in
   :mod:`ksched.sim._storage_api`, events in :mod:`ksched.sim._events`); every failure is collected
   and answered as one 422 Invalid naming each field;
4. **managedFields** (:mod:`ksched.sim._managed_fields`): the field manager's entry for this write.

``subresource`` tells a main write from a ``status`` or ``binding`` write: upstream validates a
status write with the status rules only, and a binding sets ``spec.nodeName`` without the pod
update rules. ``manager`` is the field manager (``fieldManager`` or the client's user agent);
``None`` for the embedded cluster's own controllers, which then record under their component name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ksched.sim import _decode_types as decode_types
from ksched.sim import _defaults as defaults
from ksched.sim import _events as events_api
from ksched.sim import _managed_fields as managed_fields
from ksched.sim import _meta_validation as meta_validation
from ksched.sim import _status as st
from ksched.sim import _storage_api as storage_api
from ksched.sim._resources import BY_KEY, ResourceType
from ksched.sim._storage_validation import DecodeError, Errors, KindValidator, Validator
from ksched.sim._validators_core import VALIDATORS as CORE_VALIDATORS
from ksched.sim._validators_other import VALIDATORS as OTHER_VALIDATORS

Obj = dict[str, Any]

def _any_subresource(validate: Validator) -> KindValidator:
    """A storage kind's validation, which reads the whole object on every write."""
    return lambda errs, obj, old, _subresource: validate(errs, obj, old)


VALIDATORS: dict[str, KindValidator] = {
    **CORE_VALIDATORS,
    **OTHER_VALIDATORS,
    **{key: _any_subresource(fn) for key, fn in storage_api.VALIDATORS.items()},
}
"""Store key -> the kind's own validation (beyond ObjectMeta); events.k8s.io requests are checked
in :mod:`ksched.sim._events`."""


def admit_create(
    rtype: ResourceType,
    obj: Obj,
    *,
    now: str,
    classes: Callable[[], Iterable[Obj]],
    manager: str | None = None,
) -> None:
    """Decode-check, default, validate and stamp managedFields on a new object, in place.

    ``rtype`` is the resource type the request named; ``obj`` is in the stored shape (the checks of
    :mod:`ksched.sim._events` apply to events.k8s.io requests only, as upstream's); ``now`` is the RFC 3339
    creation time; ``classes`` lists the stored StorageClasses (the DefaultStorageClass admission).
    Raises :class:`~ksched.sim._status.StatusError` 400 or 422.
    """
    stored = BY_KEY[rtype.storage_key]
    decode_types.check(stored, obj)
    defaults.apply(stored, obj, None)
    if rtype.key == events_api.EVENTS_V1:
        events_api.validate_create(obj)
    if stored.key in storage_api.KINDS:
        storage_api.admit_create(stored, obj, now=now, classes=classes)
    _validate(stored, obj, None, "")
    managed_fields.record(stored, obj, None, manager=manager, subresource="", now=now)


def admit_update(
    rtype: ResourceType,
    new: Obj,
    old: Obj,
    *,
    now: str,
    subresource: str = "",
    manager: str | None = None,
) -> None:
    """The same for a write replacing ``old`` by ``new`` (both in the stored shape, ``rtype`` as named)."""
    stored = BY_KEY[rtype.storage_key]
    decode_types.check(stored, new, old)
    defaults.apply(stored, new, old)
    if rtype.key == events_api.EVENTS_V1:
        events_api.validate_update(new, old)
    if stored.key in storage_api.KINDS:
        storage_api.admit_update(stored, new, old, now=now)
    _validate(stored, new, old, subresource)
    managed_fields.record(stored, new, old, manager=manager, subresource=subresource, now=now)


def _validate(rtype: ResourceType, obj: Obj, old: Obj | None, subresource: str) -> None:
    errs = Errors()
    try:
        meta_validation.validate(errs, rtype, obj, old)
        validator = VALIDATORS.get(rtype.key)
        if validator is not None:
            validator(errs, obj, old, subresource)
    except DecodeError as exc:
        raise st.bad_request(
            f'{rtype.kind} in version "{rtype.version}" cannot be handled as a {rtype.kind}: {exc}'
        ) from None
    if errs.causes:
        meta = obj.get("metadata")
        name = str(meta.get("name", "")) if isinstance(meta, dict) else ""
        raise st.invalid_fields(rtype.kind, name, rtype.group, errs.causes)
