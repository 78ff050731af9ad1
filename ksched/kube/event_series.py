"""Event series: client-go's ``tools/events`` aggregation of isomorphic Events, for the I/O thread.

kube-scheduler writes ``events.k8s.io/v1`` Events through client-go's events broadcaster
(``staging/src/k8s.io/client-go/tools/events/event_broadcaster.go``). It caches every Event it
recorded under ``getKey``: ``type``, ``action``, ``reason``, ``reportingController``,
``reportingInstance``, the whole ``regarding`` reference (kind, namespace, name, uid, apiVersion,
resourceVersion, fieldPath) and the whole ``related`` reference. The note is not in the key: a
repeat with another note joins the series, and the Event keeps its first note. Nor is the event's
own name or time. This module is that cache::

    new key   ──▶ cached singleton ───────────────────────────── POST the Event
    repeat    ──▶ series {count: 2, lastObservedTime: now} ───── PATCH {"series": ...} into it
    repeat    ──▶ count += 1, lastObservedTime = now ─────────── nothing sent
    finish()  ──▶ every 6 min (upstream ``finishSeries``): a series last observed more than 6 min
                  ago gets its final count PATCHed and is forgotten; a singleton whose event is
                  older than 6 min is forgotten
    refresh() ──▶ every 30 min (``refreshExistingEventSeries``): every series' count is PATCHed

So between the second occurrence and the end of the series (or the half-hourly refresh) the API
shows ``count: 2``, and ``kubectl describe`` says ``(x2 over ...)``, exactly as with
kube-scheduler. A repeat after its key was forgotten starts a new Event. A series PATCH answered
404 is sent as a POST of the whole Event with its series instead (upstream ``recordEvent``; see
:func:`ksched.kube.writers.write_event`).

Differences from upstream, none visible in what reaches the API:

- Times are read from the injected clock when the I/O thread sees the event (upstream: when its
  goroutine does); a singleton's age counts from then too, not from its ``eventTime`` text, so
  that nothing is parsed.
- Upstream puts the server's answer to a refresh back into the cache; the answer carries what
  was sent, so this keeps what it sent.
- An Event is kept as its key plus its name, namespace, eventTime and note (the fields of
  client-go's ``makeEvent``) rather than as a whole object; a series' writes rebuild it from
  those, so a field beyond them would not be repeated there (the scheduler sets none).
- A series is forgotten once its final PATCH is handed out; upstream keeps one whose PATCH
  failed in transport for the next round, where the client here has already retried it.

Not guaranteed: what the caller does with an :class:`EventWrite` (the outbox may drop it when its
buffer is full: the series count stays here and a later PATCH carries it).

Threading: an instance belongs to one thread (the I/O loop); nothing here locks.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from ksched.model.limits import truncate_note

FINISH_TIME_S: Final = 360.0
"""Upstream ``finishTime``: how long a series may go unobserved before it ends, and how often
:meth:`EventSeriesCache.finish` runs."""
REFRESH_TIME_S: Final = 1800.0
"""Upstream ``refreshTime``: how often every open series' count is written again."""

Ref = tuple[str, str, str, str, str, str, str]
"""An ObjectReference's fields in a fixed order; absent fields read as "" (Go's zero value)."""
EventKey = tuple[str, str, str, str, str, Ref, Ref]
"""(type, action, reason, reportingController, reportingInstance, regarding, related)."""

_REF_FIELDS: Final = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
_NO_REF: Final[Ref] = ("", "", "", "", "", "", "")


def _ref(raw: Mapping[str, Any] | None) -> Ref:
    if not raw:
        return _NO_REF
    get = raw.get
    return (
        get("kind") or "",
        get("namespace") or "",
        get("name") or "",
        get("uid") or "",
        get("apiVersion") or "",
        get("resourceVersion") or "",
        get("fieldPath") or "",
    )


def event_key(body: Mapping[str, Any]) -> EventKey:
    """Upstream ``getKey``: what makes two Events isomorphic (see the module docstring)."""
    get = body.get
    return (
        get("type") or "",
        get("action") or "",
        get("reason") or "",
        get("reportingController") or "",
        get("reportingInstance") or "",
        _ref(get("regarding")),
        _ref(get("related")),
    )


def _micro_time(ts: float) -> str:
    """``metav1.MicroTime`` text of epoch seconds ``ts``: RFC 3339 with microseconds, UTC."""
    return dt.datetime.fromtimestamp(ts, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True, slots=True)
class EventWrite:
    """One request to send: POST ``body`` when ``patch`` is None; else PATCH ``patch`` (a
    strategic merge patch setting ``series``) into the Event ``body`` names, and POST ``body``
    (which then carries the series) if that Event is gone."""

    body: dict[str, Any]
    patch: dict[str, Any] | None = None

    @property
    def warning(self) -> bool:
        """A Warning (FailedScheduling): the outbox keeps these over Normal ones when full."""
        return bool(self.body.get("type") == "Warning")

    @property
    def reason(self) -> str:
        return str(self.body.get("reason") or "")


class _Cached:
    """One recorded Event, kept as what its key does not hold, and its series once it repeats.

    Most Events never repeat (one Scheduled per pod) and each is kept for 6 to 12 minutes, so the
    body is not: the key has every other field client-go's recorder sets (``makeEvent``).
    """

    __slots__ = ("count", "event_time", "last_observed", "name", "namespace", "note", "seen")

    def __init__(self, body: Mapping[str, Any], seen: float) -> None:
        meta = body.get("metadata") or {}
        self.name: str = meta.get("name") or ""
        self.namespace: str = meta.get("namespace") or ""
        self.event_time: str = body.get("eventTime") or ""
        self.note: str = truncate_note(body.get("note") or "")  # a series' writes stay valid too
        self.count = 1
        """1 while a singleton; the series count from the first repeat on."""
        self.last_observed = seen
        self.seen = seen
        """When it was first seen: a singleton ends ``finish_s`` after this."""

    def write(self, key: EventKey) -> EventWrite:
        """The PATCH carrying this series' count (upstream ``createPatchBytesForSeries``: the
        two-way merge patch from the Event without its series to the Event with it), with the
        whole Event for the POST that replaces a PATCH answered 404."""
        event_type, action, reason, controller, instance, regarding, related = key
        series = {"count": self.count, "lastObservedTime": _micro_time(self.last_observed)}
        body: dict[str, Any] = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "eventTime": self.event_time,
            "series": series,
            "reportingController": controller,
            "reportingInstance": instance,
            "action": action,
            "reason": reason,
            "regarding": _ref_dict(regarding),
            "note": self.note,
            "type": event_type,
        }
        if related != _NO_REF:
            body["related"] = _ref_dict(related)
        return EventWrite(body, {"series": series})


def _ref_dict(ref: Ref) -> dict[str, str]:
    """An ObjectReference from its fields, without the empty ones (``omitempty``, as Go writes it)."""
    return {k: v for k, v in zip(_REF_FIELDS, ref, strict=True) if v}


class EventSeriesCache:
    """The isomorphic-event cache of client-go's events broadcaster (see the module docstring)."""

    def __init__(self, *, clock: Callable[[], float], finish_s: float = FINISH_TIME_S) -> None:
        self.clock = clock
        """Epoch seconds (a wall clock): series times are written to the API."""
        self.finish_s = finish_s
        self._cache: dict[EventKey, _Cached] = {}

    def __len__(self) -> int:
        return len(self._cache)

    def __contains__(self, key: object) -> bool:
        return key in self._cache

    def observe(self, body: dict[str, Any], key: EventKey | None = None) -> EventWrite | None:
        """Record one Event (upstream ``recordToSink``): the write it needs, or None when it only
        added one to an open series. ``key`` is :func:`event_key` of ``body`` when the caller has
        it already."""
        if key is None:
            key = event_key(body)
        now = self.clock()
        cached = self._cache.get(key)
        if cached is None:
            self._cache[key] = _Cached(body, now)
            return EventWrite(body)
        cached.count += 1
        cached.last_observed = now
        if cached.count == 2:
            return cached.write(key)
        return None

    def count(self, key: EventKey) -> int:
        """How many times the Event of ``key`` was seen in its current series (0: not cached)."""
        cached = self._cache.get(key)
        return cached.count if cached is not None else 0

    def finish(self) -> list[EventWrite]:
        """Upstream ``finishSeries``: the final PATCH of each series not observed for
        ``finish_s``, which is then forgotten, as are singletons older than ``finish_s``."""
        horizon = self.clock() - self.finish_s
        writes = []
        ended = []
        for key, cached in self._cache.items():
            if cached.count > 1:
                if cached.last_observed < horizon:
                    writes.append(cached.write(key))
                    ended.append(key)
            elif cached.seen < horizon:
                ended.append(key)
        for key in ended:
            del self._cache[key]
        return writes

    def refresh(self) -> list[EventWrite]:
        """Upstream ``refreshExistingEventSeries``: a PATCH with the current count of every open
        series (they stay cached)."""
        return [cached.write(key) for key, cached in self._cache.items() if cached.count > 1]


__all__ = [
    "FINISH_TIME_S",
    "REFRESH_TIME_S",
    "EventKey",
    "EventSeriesCache",
    "EventWrite",
    "event_key",
]
