"""``Informer``: list, then watch, one resource; decoded records out through a sink on the I/O thread.

The loop, as client-go's reflector runs it::

    list (paginated) ──▶ Upserted per object, page by page, then Synced   (first time)
         │               Relisted(all objects)                            (after 410 Gone)
         ▼
    watch from the list's resourceVersion, bookmarks on ──▶ Upserted / Deleted / Invalid
         │  stream ended (server timeout, dropped connection): watch again from the last
         │      resourceVersion seen (events and bookmarks advance it), so nothing is lost or repeated
         │  410 Gone (HTTP status or an ERROR event with code 410): list again
         │  other errors: back off (0.8 s doubling to 30 s, jittered; reset after 2 healthy
         │      minutes), honouring Retry-After on 429, then watch again (or list, if not listed yet)

A watch stream that ends within a second without sending anything counts as an error, so a server
that closes watches at once is not hammered.

Decoding: ``decode(raw) -> record`` raises :class:`~ksched.errors.ObjectError` for a malformed object;
the informer then emits :class:`~ksched.kube.events.Invalid` (with the raw ``spec.nodeName`` and
``spec.schedulerName`` when they are strings) and carries on. Any other exception from ``decode`` is a
decoder bug; it is logged with its traceback and reported the same way.

JSON: with ``skip_managed_fields`` (pods and nodes) list pages and watch events are parsed by
:mod:`ksched.kube.lean_json`, which leaves ``metadata.managedFields`` unread, as kube-scheduler's
informers drop them; every other informer parses with orjson.

Threading: the informer runs as a task on the I/O loop; ``sink(event)`` is called there, in order, and
must not block (the scheduler's sink puts the event on a thread-safe queue). :meth:`stop` and
:attr:`synced` may be used from any thread.

Guarantees and non-guarantees: events for one resource arrive in the server's order; an object missed
while the informer could not watch is reconciled by the next :class:`~ksched.kube.events.Relisted`,
not replayed; a list cut by an error is retried whole.

The first list emits each page's objects as the page is decoded, so the consumer applies them while
the server prepares the next page (a start-up over a large cluster is CPU-bound, and this fills the
waits). Nothing depends on the order within the list: the consumer acts only after Synced. A first
list cut after some pages were emitted is retried whole and delivered as one Relisted (then Synced),
so an object deleted between the two attempts does not linger; any later list is one Relisted.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from ksched.errors import ApiError, Gone, ObjectError, TooManyRequests, describe_object
from ksched.kube.client import ApiClient, status_error
from ksched.kube.events import Deleted, InformerEvent, Invalid, Relisted, Synced, Upserted
from ksched.kube.lean_json import loads_event, loads_list
from ksched.kube.ratelimit import Backoff, BackoffSettings, Clock

if TYPE_CHECKING:
    from ksched.kube.io_thread import IOThread

log = logging.getLogger(__name__)

KINDS = {
    "nodes": "Node",
    "pods": "Pod",
    "namespaces": "Namespace",
    "poddisruptionbudgets": "PodDisruptionBudget",
    "services": "Service",
    "replicationcontrollers": "ReplicationController",
    "replicasets": "ReplicaSet",
    "statefulsets": "StatefulSet",
    "persistentvolumes": "PersistentVolume",
    "persistentvolumeclaims": "PersistentVolumeClaim",
    "storageclasses": "StorageClass",
    "csinodes": "CSINode",
    "csidrivers": "CSIDriver",
    "csistoragecapacities": "CSIStorageCapacity",
    "volumeattachments": "VolumeAttachment",
}
_SHORT_WATCH_S = 1.0


@dataclass(frozen=True, slots=True, kw_only=True)
class InformerSettings:
    """Timing of one informer; the defaults are client-go's reflector's."""

    page_size: int = 500
    """Items per list page (``limit``); 0 lists in one answer."""
    watch_timeout_s: float = 300.0
    """Each watch asks the server to end it after ``[1, 2) * watch_timeout_s`` (random), then resumes."""
    backoff: BackoffSettings = field(default_factory=BackoffSettings)
    """Delay between attempts after errors."""


class Informer:
    """Keeps one resource's view current; see the module docstring."""

    def __init__(
        self,
        client: ApiClient,
        resource: str,
        path: str,
        decode: Callable[[Any], Any],
        sink: Callable[[InformerEvent], None],
        *,
        field_selector: str | None = None,
        label_selector: str | None = None,
        skip_managed_fields: bool = False,
        page_size: int | None = None,
        settings: InformerSettings | None = None,
        rng: random.Random | None = None,
        clock: Clock = time.monotonic,
    ) -> None:
        self.client = client
        self.resource = resource
        self.path = path
        self.decode = decode
        self.sink = sink
        self._listed_newer: dict[str, int] = {}
        """Objects a later list page delivered newer than the list's resourceVersion (see _note_newer)."""
        self.field_selector = field_selector
        self.label_selector = label_selector
        self._loads_list = loads_list if skip_managed_fields else orjson.loads
        self._loads_event = loads_event if skip_managed_fields else orjson.loads
        self.settings = settings or InformerSettings()
        self.page_size = self.settings.page_size if page_size is None else page_size
        self._rng = rng or random.Random()
        self._clock = clock
        self._backoff = Backoff(self.settings.backoff, rng=self._rng, clock=clock)
        self._kind = KINDS.get(resource, resource)
        self.resource_version = ""
        """The last resourceVersion seen (list, event or bookmark); the next watch starts there."""
        self.synced = threading.Event()
        """Set once the first list has been delivered."""
        self._emitted_unsynced = False
        """Some pages of a first list that did not complete were emitted (see the module docstring)."""
        self.stats: dict[str, int] = {
            "lists": 0,
            "relists": 0,
            "watches": 0,
            "events": 0,
            "invalid": 0,
            "errors": 0,
        }
        self._stopped = False
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- control ------------------------------------------------------------------------------------
    def start(self, io: IOThread) -> concurrent.futures.Future[None]:
        """Run on ``io``'s loop; returns at once (:attr:`synced` tells when the first list is in).

        The returned future completes (cancelled) when the informer stops.
        """
        future = io.submit(self.run())
        return future

    def stop(self) -> None:
        """Stop watching (from any thread); the sink gets nothing after the task has ended."""
        self._stopped = True
        loop, task = self._loop, self._task
        if loop is None or task is None or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            task.cancel()
        else:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(task.cancel)

    @property
    def has_synced(self) -> bool:
        return self.synced.is_set()

    # -- the loop -----------------------------------------------------------------------------------
    async def run(self) -> None:
        """List and watch until stopped or cancelled."""
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        listed = False
        while not self._stopped:
            delay = 0.0
            try:
                if not listed:
                    await self._list()
                    listed = True
                started = self._clock()
                received = await self._watch()
                if received == 0 and self._clock() - started < _SHORT_WATCH_S:
                    delay = self._backoff.next_delay()
                    log.debug(
                        "%s: watch ended at once without events; retrying in %.2fs", self.resource, delay
                    )
            except asyncio.CancelledError:
                raise
            except Gone as exc:
                self.stats["errors"] += 1
                if listed:
                    log.info(
                        "%s: resourceVersion %s is gone (%s); relisting",
                        self.resource,
                        self.resource_version,
                        exc.message,
                    )
                    listed = False  # relist at once the first time; a list that is itself Gone backs off
                else:
                    delay = self._backoff.next_delay()
                    log.info(
                        "%s: list answered 410 (%s); retrying in %.2fs", self.resource, exc.message, delay
                    )
            except TooManyRequests as exc:
                self.stats["errors"] += 1
                delay = max(exc.retry_after_s, self._backoff.next_delay())
                log.info("%s: throttled by the server; retrying in %.2fs", self.resource, delay)
            except ApiError as exc:
                self.stats["errors"] += 1
                delay = self._backoff.next_delay()
                log.warning("%s: %s; retrying in %.2fs", self.resource, exc, delay)
            except Exception:
                self.stats["errors"] += 1
                delay = self._backoff.next_delay()
                log.exception("%s: unexpected error in the informer; retrying in %.2fs", self.resource, delay)
            if delay > 0 and not self._stopped:
                await asyncio.sleep(delay)

    async def _list(self) -> None:
        """List every page and decode it: Upserted per object page by page and Synced the first time
        (see the module docstring), one Relisted after that."""
        initial = not self.synced.is_set()
        streaming = initial and not self._emitted_unsynced
        objs: list[Any] = []
        invalid: list[Invalid] = []
        rv = ""
        newer: dict[str, int] = {}
        started, pages = time.monotonic(), 0
        async for page, page_rv in self.client.list_pages(
            self.path,
            limit=self.page_size,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            loads=self._loads_list,
        ):
            if not rv:
                rv = page_rv  # every page of a list answers as of the first page; watch from there
            else:
                _note_newer(page, rv, newer)
            pages += 1
            first = len(objs)
            for raw in page:
                rec = self._decode(raw, "LIST")
                if type(rec) is Invalid:
                    invalid.append(rec)
                else:
                    objs.append(rec)
            if streaming and len(objs) > first:
                self._emitted_unsynced = True
                self._emit_added(objs, first)
        self.resource_version = rv
        self._listed_newer = newer
        log.debug(
            "%s: listed %d objects in %d pages (%.3fs)",
            self.resource,
            len(objs),
            pages,
            time.monotonic() - started,
        )
        self.stats["invalid"] += len(invalid)
        if not initial:
            self.stats["relists"] += 1
            self.sink(Relisted(self.resource, tuple(objs), tuple(invalid), rv))
            return
        self.stats["lists"] += 1
        if streaming:
            for bad in invalid:
                self.sink(bad)
        else:  # a first list retried after some of its pages went out: replace what they brought
            self.sink(Relisted(self.resource, tuple(objs), tuple(invalid), rv))
        self.synced.set()
        self.sink(Synced(self.resource))

    def _emit_added(self, objs: list[Any], start: int) -> None:
        emit, resource = self.sink, self.resource
        for i in range(start, len(objs)):
            emit(Upserted(resource, objs[i], "ADDED"))

    async def _watch(self) -> int:
        """One watch stream, from :attr:`resource_version`; returns how many frames it carried."""
        timeout = self.settings.watch_timeout_s * (1.0 + self._rng.random())
        self.stats["watches"] += 1
        received = 0
        resource, emit = self.resource, self.sink
        stream = self.client.watch(
            self.path,
            resource_version=self.resource_version,
            timeout_s=timeout,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            loads=self._loads_event,
        )
        async with contextlib.aclosing(stream):
            async for etype, raw in stream:
                received += 1
                if etype == "ERROR":
                    code = raw.get("code") if isinstance(raw, dict) else None
                    raise status_error(code if isinstance(code, int) else 500, raw)
                meta = raw.get("metadata") if isinstance(raw, dict) else None
                rv = meta.get("resourceVersion") if isinstance(meta, dict) else None
                if etype == "BOOKMARK":
                    if isinstance(rv, str) and rv:
                        self.resource_version = rv
                    continue
                if self._listed_newer and _stale_replay(self._listed_newer, etype, meta, rv):
                    continue
                rec = self._decode(raw, etype)
                if isinstance(rv, str) and rv:
                    self.resource_version = rv
                self.stats["events"] += 1
                if type(rec) is Invalid:
                    self.stats["invalid"] += 1
                    emit(rec)
                elif etype == "DELETED":
                    emit(Deleted(resource, rec))
                elif etype in ("ADDED", "MODIFIED"):
                    emit(Upserted(resource, rec, etype))
                else:
                    log.debug("%s: ignoring watch event of type %r", resource, etype)
        return received

    def _decode(self, raw: Any, event_type: str) -> Any:
        try:
            return self.decode(raw)
        except ObjectError as exc:
            return self._invalid(raw, exc, event_type)
        except Exception as exc:
            log.exception("%s: decoder failed on an object", self.resource)
            err = ObjectError(self._describe(raw), "", f"cannot be decoded: {exc!r}")
            err.__cause__ = exc
            return self._invalid(raw, err, event_type)

    def _describe(self, raw: Any) -> str:
        meta = raw.get("metadata") if isinstance(raw, dict) else None
        meta = meta if isinstance(meta, dict) else {}
        ns, name = meta.get("namespace"), meta.get("name")
        return describe_object(
            self._kind, ns if isinstance(ns, str) else None, name if isinstance(name, str) else None
        )

    def _invalid(self, raw: Any, err: ObjectError, event_type: str) -> Invalid:
        top = raw if isinstance(raw, dict) else {}
        meta = top.get("metadata")
        meta = meta if isinstance(meta, dict) else {}
        spec = top.get("spec")
        spec = spec if isinstance(spec, dict) else {}

        def s(v: Any) -> str:
            return v if isinstance(v, str) else ""

        log.debug("%s: invalid object: %s", self.resource, err)
        return Invalid(
            kind=self.resource,
            namespace=s(meta.get("namespace")),
            name=s(meta.get("name")),
            uid=s(meta.get("uid")),
            error=err,
            raw_node_name=s(spec.get("nodeName")) if self.resource == "pods" else "",
            raw_scheduler_name=s(spec.get("schedulerName")) if self.resource == "pods" else "",
            event_type=event_type,
        )


def _rv_int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _key(meta: Any) -> str:
    if not isinstance(meta, dict):
        return ""
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"


def _note_newer(page: list[Any], list_rv: str, newer: dict[str, int]) -> None:
    """Remember objects a later page showed in a state newer than the list's resourceVersion.

    The watch starts from the first page's resourceVersion, so it replays the changes those objects
    went through; :func:`_stale_replay` drops the replayed states older than what was delivered, so
    the consumer never sees an object step back in time (a bound pod reappearing as pending).
    """
    base = _rv_int(list_rv)
    if base is None:
        return
    for raw in page:
        meta = raw.get("metadata") if isinstance(raw, dict) else None
        obj_rv = _rv_int(meta.get("resourceVersion")) if isinstance(meta, dict) else None
        if obj_rv is not None and obj_rv > base:
            newer[_key(meta)] = obj_rv


def _stale_replay(newer: dict[str, int], etype: str, meta: Any, rv: Any) -> bool:
    """True for a replayed ADDED/MODIFIED older than the state the list already delivered."""
    event_rv = _rv_int(rv)
    if event_rv is None:
        newer.clear()  # opaque resourceVersions: cannot compare, deliver everything
        return False
    if event_rv >= max(newer.values()):
        newer.clear()  # the replay window is over
    key = _key(meta)
    delivered = newer.get(key)
    if delivered is None or etype == "DELETED":
        return False
    if event_rv <= delivered:
        return True
    del newer[key]
    return False
