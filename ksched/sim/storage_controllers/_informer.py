"""List+watch caches and the per-key work queue: the two halves of a client-go controller, reduced.

:class:`Informer` lists a resource, then watches from the list's resourceVersion (with bookmarks),
keeps the objects by (namespace, name) and calls its handlers for every change. A watch that ends
is resumed from the last resourceVersion seen; a 410 Gone (or an ERROR frame) relists, and the
handlers see the difference as ADDED/MODIFIED/DELETED; any other failure backs off exponentially
with jitter. A malformed object (no metadata or name) is logged and skipped, never fatal.
Handlers run on the event loop and only queue work; they must not await.

:class:`WorkQueue` holds keys to sync: a key is queued at most once, a key added while it is being
synced is synced again afterwards, and :meth:`WorkQueue.retry` re-adds a failed key after a
backoff that doubles per failure until :meth:`WorkQueue.forget`. One worker drains each queue, so
syncs of one controller never overlap.

Not guaranteed: handlers see each change at most once, but a MODIFIED may stand for several
writes (the cache holds only the latest object), as with client-go.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import random
import re
from collections.abc import Awaitable, Callable, Hashable, Mapping
from typing import Any, Generic, TypeVar

import aiohttp
import orjson

from ksched.errors import ApiError, Gone
from ksched.sim.storage_controllers._api import Api, Obj, WriteConflict, path

log = logging.getLogger(__name__)

Key = tuple[str, str]
Handler = Callable[[str, Obj | None, Obj | None], None]
"""(event type, new object or None on DELETED, old object or None on ADDED)."""
K = TypeVar("K", bound=Hashable)

_RV = re.compile(rb'"resourceVersion":"([0-9]+)"')
WATCH_TIMEOUT_S = (240, 300)
"""A watch asks the server to end it after a random time in this range, as client-go's reflector does."""


def _rv(obj: Obj) -> int:
    try:
        return int(obj["metadata"].get("resourceVersion") or 0)
    except (TypeError, ValueError):
        return 0


def _control_frame(line: bytes) -> bool:
    """A BOOKMARK or ERROR frame (never filtered out: they move the cursor or demand a relist)."""
    head = line[:24]
    return b'"BOOKMARK"' in head or b'"ERROR"' in head


def _valid(obj: Any, resource: str) -> bool:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if isinstance(meta, dict) and isinstance(meta.get("name"), str) and meta["name"]:
        return True
    log.warning("skipping a malformed %s: metadata.name is missing (%.200r)", resource, obj)
    return False


class Informer:
    """One resource's objects, kept current by list+watch; see the module docstring."""

    def __init__(
        self,
        api: Api,
        resource: str,
        *,
        keep: Callable[[bytes], bool] | None = None,
        backoff_s: tuple[float, float] = (0.05, 5.0),
        rng: random.Random | None = None,
    ) -> None:
        """``keep``, when given, is asked about every watch frame's raw bytes before it is decoded:
        frames it refuses only move the resourceVersion on (objects nobody here needs, e.g. pods
        without volumes, cost no decoding); listed objects it refuses are not kept either."""
        self._api = api
        self.resource = resource
        self._keep = keep
        self.items: dict[Key, Obj] = {}
        self.synced = asyncio.Event()
        self._handlers: list[Handler] = []
        self._rv = 0
        self._backoff_s = backoff_s
        self._rng = rng or random.Random()

    def add_handler(self, fn: Handler) -> None:
        self._handlers.append(fn)

    def get(self, namespace: str, name: str) -> Obj | None:
        return self.items.get((namespace, name))

    def store(self, obj: Obj) -> None:
        """Keep an object this process just wrote, unless the cache already has a newer one; no
        handler runs (the watch event that follows calls them)."""
        if not _valid(obj, self.resource):
            return
        key = (obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
        cur = self.items.get(key)
        if cur is None or _rv(obj) > _rv(cur):
            self.items[key] = obj

    def _notify(self, type_: str, new: Obj | None, old: Obj | None) -> None:
        for fn in self._handlers:
            try:
                fn(type_, new, old)
            except Exception:
                log.exception("handler for %s %s failed", self.resource, type_)

    async def run(self) -> None:
        """List and watch until cancelled."""
        failures = 0
        need_list = True
        while True:
            try:
                if need_list:
                    await self._relist()
                    need_list = False
                await self._watch()
                failures = 0
            except Gone:
                need_list = True
            except (TimeoutError, ApiError, aiohttp.ClientError, ValueError) as exc:
                failures += 1
                delay = min(self._backoff_s[1], self._backoff_s[0] * 2 ** min(failures, 20))
                log.info("%s list/watch failed (%s); again in %.2fs", self.resource, exc, delay)
                await asyncio.sleep(delay * (0.5 + self._rng.random()))

    async def _relist(self) -> None:
        items: dict[Key, Obj] = {}
        params = {"limit": "500"}
        while True:
            page = await self._api.list(self.resource, params)
            for obj in page.get("items") or ():
                if self._keep is not None and not self._keep(orjson.dumps(obj)):
                    continue
                if _valid(obj, self.resource):
                    items[(obj["metadata"].get("namespace", ""), obj["metadata"]["name"])] = obj
            meta = page.get("metadata") or {}
            if not meta.get("continue"):
                break
            params = {"limit": "500", "continue": str(meta["continue"])}
        self._rv = int(meta.get("resourceVersion") or 0)
        old, self.items = self.items, items
        for key, obj in items.items():
            prev = old.get(key)
            if prev is None:
                self._notify("ADDED", obj, None)
            elif _rv(prev) != _rv(obj):
                self._notify("MODIFIED", obj, prev)
        for key, prev in old.items():
            if key not in items:
                self._notify("DELETED", None, prev)
        self.synced.set()

    async def _watch(self) -> None:
        params = {
            "watch": "true",
            "resourceVersion": str(self._rv),
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(self._rng.randint(*WATCH_TIMEOUT_S)),
        }
        url = self._api.server + path(self.resource)
        async with self._api.session.get(
            url, params=params, timeout=aiohttp.ClientTimeout(sock_connect=10)
        ) as resp:
            if resp.status == 410:
                raise Gone(410, "Expired", "watch: too old resource version")
            if resp.status >= 400:
                raise ApiError(resp.status, "WatchFailed", (await resp.read())[:300].decode(errors="replace"))
            buf = b""
            async for chunk in resp.content.iter_any():
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    if not line.strip():
                        continue
                    if self._keep is not None and not _control_frame(line) and not self._keep(line):
                        m = _RV.search(line)
                        if m is not None:
                            self._rv = max(self._rv, int(m.group(1)))
                        continue
                    self._frame(orjson.loads(line))

    def _frame(self, frame: Any) -> None:
        type_ = frame.get("type") if isinstance(frame, dict) else None
        obj = frame.get("object") if isinstance(frame, dict) else None
        if type_ == "ERROR":
            code = obj.get("code") if isinstance(obj, dict) else None
            if code == 410:
                raise Gone(410, "Expired", str(obj.get("message", "")) if isinstance(obj, dict) else "")
            raise ApiError(int(code or 500), "WatchError", str(obj)[:300])
        if not isinstance(obj, dict):
            log.warning("skipping a malformed %s watch frame: %.200r", self.resource, frame)
            return
        if type_ == "BOOKMARK":
            self._rv = max(self._rv, _rv(obj))
            return
        if not _valid(obj, self.resource):
            return
        self._rv = max(self._rv, _rv(obj))
        key = (obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
        prev = self.items.get(key)
        if type_ == "DELETED":
            self.items.pop(key, None)
            self._notify("DELETED", None, prev or obj)
        elif type_ in ("ADDED", "MODIFIED"):
            if prev is not None and _rv(prev) > _rv(obj):
                return  # we wrote a newer version already (store); its own event follows
            self.items[key] = obj
            self._notify("ADDED" if prev is None else "MODIFIED", obj, prev)


class WorkQueue(Generic[K]):
    """Keys to sync, each at most once in the queue; see the module docstring."""

    def __init__(self, *, base_s: float = 0.05, max_s: float = 10.0) -> None:
        self._queue: collections.deque[K] = collections.deque()
        self._queued: set[K] = set()
        self._processing: set[K] = set()
        self._dirty: set[K] = set()
        self._failures: dict[K, int] = {}
        self._wake = asyncio.Event()
        self._base_s = base_s
        self._max_s = max_s

    def __len__(self) -> int:
        return len(self._queue)

    def add(self, key: K) -> None:
        if key in self._processing:
            self._dirty.add(key)
        elif key not in self._queued:
            self._queued.add(key)
            self._queue.append(key)
            self._wake.set()

    def add_after(self, key: K, delay_s: float) -> None:
        asyncio.get_running_loop().call_later(max(0.0, delay_s), self.add, key)

    def retry(self, key: K) -> float:
        """Re-add a key whose sync failed, after its backoff; returns the delay."""
        n = self._failures.get(key, 0)
        self._failures[key] = n + 1
        delay = min(self._max_s, self._base_s * 2**n)
        self.add_after(key, delay)
        return delay

    def forget(self, key: K) -> None:
        self._failures.pop(key, None)

    async def get(self) -> K:
        while not self._queue:
            self._wake.clear()
            await self._wake.wait()
        key = self._queue.popleft()
        self._queued.discard(key)
        self._processing.add(key)
        return key

    def done(self, key: K) -> None:
        self._processing.discard(key)
        if key in self._dirty:
            self._dirty.discard(key)
            self.add(key)


class RetryLater(Exception):
    """Raised by a sync that did what it could for now (and said why, e.g. in an Event): retried
    with the key's backoff, logged without a traceback."""


async def run_worker(
    name: str,
    queue: WorkQueue[K],
    sync: Callable[[K], Awaitable[None]],
    api: Api,
    informers: Mapping[str, Informer],
) -> None:
    """Sync keys from ``queue`` one at a time until cancelled.

    A sync that raises is retried with the key's backoff: after a 409 on an update, once the
    object that changed has been read again into its informer (so the retry writes on top of the
    latest version); after any other error as it is. Nothing a sync raises stops the worker.
    """
    while True:
        key = await queue.get()
        try:
            await sync(key)
            queue.forget(key)
        except WriteConflict as exc:
            log.info("%s: %r: conflict writing %s; re-reading it", name, key, exc.path)
            informer = informers.get(exc.plural)
            try:
                fresh = await api.request("GET", exc.path)
                if informer is not None:
                    informer.store(fresh)
            except ApiError as again:
                log.info("%s: re-reading %s failed: %s", name, exc.path, again)
            queue.retry(key)
        except (ApiError, RetryLater) as exc:
            delay = queue.retry(key)
            log.info("%s: %r: %s; retrying in %.2fs", name, key, exc, delay)
        except Exception:
            delay = queue.retry(key)
            log.exception("%s: syncing %r failed; retrying in %.2fs", name, key, delay)
        finally:
            queue.done(key)
