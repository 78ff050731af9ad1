"""What kube-apiserver checks on Events written through ``events.k8s.io/v1``.

Upstream: ``pkg/apis/core/validation/events.go`` (``ValidateEventCreate``, ``ValidateEventUpdate``,
``validateV1EventSeries``, ``legacyValidateEvent``), run on the internal (core-shaped) object, so
the checks here read the stored shape (``involvedObject``, ``message``, ``reportingComponent``).
They apply to requests made through ``events.k8s.io/v1`` only; upstream keeps core/v1 writes to
the lenient legacy rules for backwards compatibility, and those are not modelled here.

Writers of event series need them: a series must have ``count >= 2`` and a ``lastObservedTime``;
everything but the series (and metadata) is immutable on update; the deprecated core fields
(``deprecatedCount`` and friends) must be unset on create.
"""

from __future__ import annotations

from typing import Any, Final

from ksched.model.labels import dns1123_subdomain_errors, qualified_name_errors
from ksched.sim import _status as st
from ksched.sim._storage_validation import IMMUTABLE, go_value

Obj = dict[str, Any]
Cause = tuple[str, str, str]

EVENTS_V1: Final = "events.events.k8s.io"
"""The store key of Events served through ``events.k8s.io/v1``: the requests checked here."""
REPORTING_INSTANCE_LENGTH_LIMIT: Final = 128
ACTION_LENGTH_LIMIT: Final = 128
REASON_LENGTH_LIMIT: Final = 128
NOTE_LENGTH_LIMIT: Final = 1024
_IMMUTABLE_FIELDS: Final = (
    # (stored key, upstream's field path)
    ("involvedObject", "involvedObject"),
    ("reason", "reason"),
    ("message", "message"),
    ("source", "source"),
    ("firstTimestamp", "firstTimestamp"),
    ("lastTimestamp", "lastTimestamp"),
    ("count", "count"),
    ("type", "type"),
    ("eventTime", "eventTime"),
    ("action", "action"),
    ("related", "related"),
    ("reportingComponent", "reportingController"),
    ("reportingInstance", "reportingInstance"),
)


def _set(value: Any) -> bool:
    """Whether a field holds something other than Go's zero value."""
    return value not in (None, "", 0, {})


def _required(path: str) -> Cause:
    return ("FieldValueRequired", path, "Required value")


def _invalid(path: str, value: Any, detail: str) -> Cause:
    return ("FieldValueInvalid", path, f"Invalid value: {go_value(value)}: {detail}")


def _legacy(event: Obj, namespace: str) -> list[Cause]:
    """``legacyValidateEvent`` for an Event with ``eventTime`` set, in ``namespace``."""
    causes: list[Cause] = []
    involved = event.get("involvedObject") or {}
    if not involved.get("namespace") and namespace not in ("default", "kube-system"):
        causes.append(_invalid("involvedObject.namespace", "", "does not match event.namespace"))
    controller = event.get("reportingComponent") or ""
    if not controller:
        causes.append(_required("reportingController"))
    causes += [_invalid("reportingController", controller, msg) for msg in qualified_name_errors(controller)]
    limits = (
        ("reportingInstance", "reportingInstance", REPORTING_INSTANCE_LENGTH_LIMIT),
        ("action", "action", ACTION_LENGTH_LIMIT),
        ("reason", "reason", REASON_LENGTH_LIMIT),
    )
    for key, path, limit in limits:
        value = event.get(key) or ""
        if not value:
            causes.append(_required(path))
        elif len(value.encode()) > limit:
            causes.append(_invalid(path, "", f"can have at most {limit} characters"))
    if len((event.get("message") or "").encode()) > NOTE_LENGTH_LIMIT:
        causes.append(_invalid("message", "", f"can have at most {NOTE_LENGTH_LIMIT} characters"))
    causes += [_invalid("namespace", namespace, msg) for msg in dns1123_subdomain_errors(namespace)]
    return causes


def _series(event: Obj) -> list[Cause]:
    """``validateV1EventSeries``."""
    series = event.get("series")
    if series is None:
        return []
    causes: list[Cause] = []
    if (series.get("count") or 0) < 2:
        causes.append(_invalid("series.count", "", "should be at least 2"))
    if not series.get("lastObservedTime"):
        causes.append(_required("series.lastObservedTime"))
    return causes


def _raise(event: Obj, causes: list[Cause]) -> None:
    if causes:
        raise st.invalid_fields("Event", event["metadata"].get("name", ""), "events.k8s.io", causes)


def validate_create(event: Obj) -> None:
    """``ValidateEventCreate`` for an events.k8s.io/v1 request; raises StatusError 422."""
    if not event.get("eventTime"):
        _raise(event, [_required("eventTime")])
    causes = _legacy(event, event["metadata"].get("namespace", ""))
    name = event["metadata"].get("name", "")
    causes += [_invalid("metadata.name", name, msg) for msg in dns1123_subdomain_errors(name)]
    causes += _series(event)
    if event.get("type") not in ("Normal", "Warning"):
        causes.append(_invalid("type", "", f"has invalid value: {event.get('type') or ''}"))
    for key in ("firstTimestamp", "lastTimestamp", "count", "source"):
        if _set(event.get(key)):
            causes.append(_invalid(key, "", "needs to be unset"))
    _raise(event, causes)


def validate_update(new: Obj, old: Obj) -> None:
    """``ValidateEventUpdate`` for an events.k8s.io/v1 request; raises StatusError 422."""
    causes = _legacy(new, old["metadata"].get("namespace", "")) if new.get("eventTime") else []
    if new.get("series") != old.get("series"):
        causes += _series(new)
    for key, path in _IMMUTABLE_FIELDS:
        a, b = new.get(key), old.get(key)
        if a != b and (_set(a) or _set(b)):
            causes.append(_invalid(path, a, IMMUTABLE))
    _raise(new, causes)
