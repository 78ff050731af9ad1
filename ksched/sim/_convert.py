"""Conversion between API versions that share one stored resource: core/v1 and events.k8s.io/v1 Events.

kube-apiserver serves Events as one resource through two API versions; objects are stored in the core
shape and converted on the way in and out (``pkg/apis/events/v1/conversion.go``). The mapping is a set
of top-level renames; every other field (``action``, ``reason``, ``type``, ``eventTime``, ``series``,
``related``, ``reportingInstance``, ``metadata``) has the same name and meaning in both versions:

==========================  ===================
events.k8s.io/v1            core/v1
==========================  ===================
regarding                   involvedObject
note                        message
reportingController         reportingComponent
deprecatedSource            source
deprecatedFirstTimestamp    firstTimestamp
deprecatedLastTimestamp     lastTimestamp
deprecatedCount             count
==========================  ===================

A field spelled the other version's way is unknown to the version it was sent to and is dropped, as
upstream's decoder drops unknown fields. Like upstream, ``source`` is not derived from
``reportingController``/``reportingInstance``: a core reader of an events.k8s.io Event sees
``reportingComponent`` and ``reportingInstance`` (kubectl's describe and table printers fall back to
them when ``source`` is empty).

Field selectors are always evaluated on the stored (core) shape; :func:`field_path` maps a path given
to one served version to the stored one (``regarding.name`` -> ``involvedObject.name``, ``source`` ->
``source.component``), as upstream's field label conversion functions do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ksched.sim._resources import ResourceType

Obj = dict[str, Any]

EVENT_RENAMES: tuple[tuple[str, str], ...] = (
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
)
_EV_TO_CORE = dict(EVENT_RENAMES)
_CORE_TO_EV = {c: e for e, c in EVENT_RENAMES}


def _rename(obj: Obj, renames: dict[str, str], foreign: dict[str, str], api_version: str) -> Obj:
    out: Obj = {}
    for k, v in obj.items():
        if k in renames:
            out[renames[k]] = v
        elif k not in foreign:
            out[k] = v
    out["apiVersion"] = api_version
    out["kind"] = "Event"
    return out


def events_v1_to_core(obj: Obj) -> Obj:
    """An events.k8s.io/v1 Event in the stored core/v1 shape (a new top-level dict)."""
    return _rename(obj, _EV_TO_CORE, _CORE_TO_EV, "v1")


def core_to_events_v1(obj: Obj) -> Obj:
    """A stored core/v1 Event as events.k8s.io/v1 serves it (a new top-level dict)."""
    return _rename(obj, _CORE_TO_EV, _EV_TO_CORE, "events.k8s.io/v1")


def core_event_in(obj: Obj) -> Obj:
    """A core/v1 Event as written: drop fields only events.k8s.io/v1 has (unknown to core/v1)."""
    if not any(k in _EV_TO_CORE for k in obj):
        return obj
    return {k: v for k, v in obj.items() if k not in _EV_TO_CORE}


_TO_STORAGE: dict[str, Callable[[Obj], Obj]] = {
    "events": core_event_in,
    "events.events.k8s.io": events_v1_to_core,
}
_FROM_STORAGE: dict[str, Callable[[Obj], Obj]] = {
    "events.events.k8s.io": core_to_events_v1,
}


def to_storage(rtype: ResourceType, obj: Obj) -> Obj:
    """``obj`` as sent to ``rtype``'s endpoint, in the shape its table stores."""
    fn = _TO_STORAGE.get(rtype.key)
    return fn(obj) if fn is not None else obj


def from_storage(rtype: ResourceType, obj: Obj) -> Obj:
    """A stored object as ``rtype``'s endpoint serves it (the stored dict itself when no conversion)."""
    fn = _FROM_STORAGE.get(rtype.key)
    return fn(obj) if fn is not None else obj


def _core_event_path(path: str) -> str:
    return "source.component" if path == "source" else path


def _events_v1_path(path: str) -> str:
    head, dot, rest = path.partition(".")
    if head in _EV_TO_CORE:
        return _EV_TO_CORE[head] + dot + rest
    return _core_event_path(path)


_FIELD_PATHS: dict[str, Callable[[str], str]] = {
    "events": _core_event_path,
    "events.events.k8s.io": _events_v1_path,
}


def field_path(rtype: ResourceType) -> Callable[[str], str] | None:
    """How a field selector path for ``rtype`` reads the stored object, or ``None`` (unchanged)."""
    return _FIELD_PATHS.get(rtype.key)
