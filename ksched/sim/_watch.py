"""Watch streams: newline-delimited JSON frames fanned out from each resource's shared history.

Watchers do not get their own queue. Each one keeps a cursor (the last resourceVersion it sent) and
reads the resource's :class:`~ksched.sim.store.History` from there, so a write costs one append plus
one wake-up per watcher, and the serialised frame of an event is built once and shared. Frames are
rewritten only when a selector turns a MODIFIED into an ADDED or DELETED (as kube-apiserver does when an
object starts or stops matching).

A slow watcher cannot stall others: writes never block the store. The per-connection buffer is the
transport's (aiohttp drains above 64 KiB); if one write stays blocked longer than
``slow_watcher_timeout_s``, or the watcher's cursor falls out of the history window, the stream is
closed, and the client must resume from its last resourceVersion (or relist after 410 Expired).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

import orjson
from aiohttp import web

from ksched.sim import _status as st
from ksched.sim._partition import hold
from ksched.sim._resources import ResourceType
from ksched.sim._selectors import ObjectFilter
from ksched.sim.config import SimConfig
from ksched.sim.faults import FaultInjector, PartitionRule
from ksched.sim.store import Store, WatchEvent, frame

_BATCH = 2000


class Waker:
    """Store listener that wakes one watch coroutine, from any thread, at most once per wake-up."""

    __slots__ = ("event", "loop", "pending", "tid")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.tid = threading.get_ident()
        self.event = asyncio.Event()
        self.pending = False

    def __call__(self, _ev: WatchEvent | None = None) -> None:
        if self.pending:
            return
        self.pending = True
        if threading.get_ident() == self.tid:
            self.event.set()
        else:
            # a closed loop means the stream is going away anyway
            with contextlib.suppress(RuntimeError):
                self.loop.call_soon_threadsafe(self.event.set)


def _bookmark(rtype: ResourceType, rv: int, initial_end: bool = False) -> bytes:
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if initial_end:
        meta["annotations"] = {"k8s.io/initial-events-end": "true"}
    obj = {"kind": rtype.kind, "apiVersion": rtype.api_version, "metadata": meta}
    return orjson.dumps({"type": "BOOKMARK", "object": obj}) + b"\n"


def _filtered(ev: WatchEvent, flt: ObjectFilter, rtype: ResourceType) -> bytes | None:
    """The frame this watcher (of API version ``rtype``) should see for ``ev``, or ``None``.

    Selectors match the stored shape (paths already mapped); the frame carries ``rtype``'s shape.
    """
    if flt.selects_all:
        return ev.line(rtype)
    now = flt.matches(ev.entry.obj)
    if ev.type != "MODIFIED":
        return ev.line(rtype) if now else None
    before = ev.prev is not None and flt.matches(ev.prev)
    if now and before:
        return ev.line(rtype)
    if now:
        return frame("ADDED", ev.entry.raw_as(rtype))
    if before:
        return frame("DELETED", ev.entry.raw_as(rtype))
    return None


def _start_cursor(q: dict[str, str]) -> int:
    """The resourceVersion to resume after; -1 (``""`` or ``"0"``) starts with the current state."""
    rv_param = q.get("resourceVersion", "")
    try:
        return int(rv_param) if rv_param not in ("", "0") else -1
    except ValueError:
        raise st.bad_request(f"resourceVersion: Invalid value: {rv_param!r}: must be an integer") from None


async def cut_watch(faults: FaultInjector, rule: PartitionRule) -> None:
    """End a partitioned client's stream as the network would: a ``blackhole`` goes silent while
    the rule is in force; then (or at once, for the other modes) the connection drops."""
    faults.count(f"partition-{rule.mode}-watch")
    if rule.mode == "blackhole":
        await hold(faults, rule)
    raise ConnectionResetError(f"watch cut off by a partition ({rule.mode})")


class Watches:
    """The open watch streams of one API server: serves them and tells them all to finish."""

    def __init__(self, store: Store, faults: FaultInjector, settings: SimConfig) -> None:
        self._store = store
        self._faults = faults
        self._settings = settings
        self._wakers: set[Waker] = set()
        self.closing = False
        """Set by :meth:`shutdown`: every stream ends at its next wake-up (cleared to serve again)."""

    def count(self) -> int:
        """Watch streams open now."""
        return len(self._wakers)

    def shutdown(self) -> None:
        """Ask every watch stream to finish (called on the loop thread before the runner stops)."""
        self.closing = True
        for w in list(self._wakers):
            w.event.set()

    async def serve(
        self, request: web.BaseRequest, rtype: ResourceType, flt: ObjectFilter, q: dict[str, str]
    ) -> web.StreamResponse:
        """Run one watch request until timeout, client disconnect, server stop, an injected drop or
        a partition of its client (cut at the stream's next wake-up; ``blackhole``: silent first)."""
        store, settings, loop = self._store, self._settings, asyncio.get_running_loop()
        cursor = _start_cursor(q)
        bookmarks = q.get("allowWatchBookmarks") in ("true", "1")
        send_initial = q.get("sendInitialEvents") in ("true", "1")
        timeout = q.get("timeoutSeconds")
        deadline = loop.time() + float(timeout) if timeout else None

        resp = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        resp.enable_chunked_encoding()
        waker = Waker(loop)
        store.add_listener(rtype, waker)
        self._wakers.add(waker)
        sent = 0
        try:
            await resp.prepare(request)
            out: list[bytes] = []
            if cursor < 0 or send_initial:
                snap_rv, entries = store.snapshot(rtype, flt)
                out = [frame("ADDED", e.raw_as(rtype)) for e in entries]
                if send_initial and bookmarks:
                    out.append(_bookmark(rtype, snap_rv, initial_end=True))
                cursor = max(cursor, snap_rv)
                sent += len(entries)
                await self._write(resp, out)
            next_bookmark = loop.time() + settings.bookmark_interval_s
            while not self.closing:
                if self._faults.active:
                    await self._cut_if_partitioned(request)
                waker.pending = False
                waker.event.clear()
                try:
                    evs = store.events_since(rtype, cursor, _BATCH)
                except st.StatusError as exc:
                    if sent == 0:  # asked for a version we no longer have: tell the client to relist
                        await self._write(
                            resp, [orjson.dumps({"type": "ERROR", "object": exc.status()}) + b"\n"]
                        )
                    break  # otherwise we fell behind the window: a slow watcher is closed
                if evs:
                    cursor, sent, dropped = await self._forward(resp, evs, flt, rtype, sent)
                    if dropped:
                        break
                    continue
                now = loop.time()
                if deadline is not None and now >= deadline:
                    break
                if bookmarks and now >= next_bookmark:
                    with store.lock:
                        pending = store.events_since(rtype, cursor, 1)
                        mark = store.rv
                    if not pending:
                        await self._write(resp, [_bookmark(rtype, mark)])
                        cursor = max(cursor, mark)
                    next_bookmark = now + settings.bookmark_interval_s
                    continue
                wait = settings.bookmark_interval_s if bookmarks else 3600.0
                wait = min(wait, next_bookmark - now) if bookmarks else wait
                if deadline is not None:
                    wait = min(wait, deadline - now)
                try:
                    async with asyncio.timeout(max(wait, 0.0)):
                        await waker.event.wait()
                except TimeoutError:
                    pass
            await resp.write_eof()
        except (ConnectionError, TimeoutError, asyncio.CancelledError):
            if request.transport is not None:
                request.transport.abort()  # slow or gone client: drop the connection, keep the loop quiet
            if asyncio.current_task() is not None and asyncio.current_task().cancelling():  # type: ignore[union-attr]
                raise
        finally:
            store.remove_listener(rtype, waker)
            self._wakers.discard(waker)
        return resp

    async def _cut_if_partitioned(self, request: web.BaseRequest) -> None:
        """Raise (cutting the stream) if the watching client is behind a partition now."""
        headers = request.headers
        rule = self._faults.partition(headers.get("User-Agent", ""), headers.get("Authorization", ""))
        if rule is not None:
            await cut_watch(self._faults, rule)

    async def _forward(
        self,
        resp: web.StreamResponse,
        evs: list[WatchEvent],
        flt: ObjectFilter,
        rtype: ResourceType,
        sent: int,
    ) -> tuple[int, int, bool]:
        """Send this watcher's frames of ``evs``; returns (cursor, frames sent so far, dropped by a fault)."""
        faults = self._faults
        out: list[bytes] = []
        cursor = -1
        dropped = False
        for ev in evs:
            cursor = ev.rv
            line = _filtered(ev, flt, rtype)
            if line is not None:
                out.append(line)
                sent += 1
                if faults.active and faults.drop_watch(sent):
                    dropped = True
                    break
        await self._write(resp, out)
        return cursor, sent, dropped

    async def _write(self, resp: web.StreamResponse, frames: list[bytes]) -> None:
        if not frames:
            return
        async with asyncio.timeout(self._settings.slow_watcher_timeout_s):
            await resp.write(b"".join(frames))
