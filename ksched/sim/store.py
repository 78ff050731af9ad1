"""The versioned in-memory object store behind the embedded API server.

Design:

* Objects are plain dicts, never mutated after they are stored: every write builds a new dict (shallow
  copies of the parts that change) and stores it in a new :class:`Entry`. So an entry's serialised
  bytes can be cached (``Entry.raw``) and shared by every list response and watch stream; and a
  reader holding an old dict sees a consistent old version.
* One ``resourceVersion`` counter for the whole cluster, as with etcd; it is a decimal string on the
  wire and strictly increases with every write to any resource.
* Each resource type keeps a bounded history of its last ``history_window`` events. A watch from a
  resourceVersion still covered by the window replays from there; an older one is answered with
  410 Expired (:class:`~ksched.sim._status.StatusError`), as kube-apiserver's watch cache does.
* A resource served through several API versions (core/v1 and events.k8s.io/v1 Events) has one
  table, in the stored version's shape; the other version's views and their bytes are converted on
  demand and cached per entry (``Entry.view``/``Entry.raw_as``), so both share one history and one
  resourceVersion sequence, and a watch on either path sees writes made through the other.
* A single ``threading.RLock`` guards all state, so tests may read and write from their own thread
  while the server's loop thread serves HTTP. Listeners (watch streams, the kubelet stand-in) are
  called synchronously under the lock and must only *schedule* work, never write to the store.

Not guaranteed: paginated lists are served from the current state, not from a snapshot at the first
page's resourceVersion; finalizers are stored but do not block deletion.
"""

from __future__ import annotations

import bisect
import random
import threading
from collections.abc import Callable, Iterable
from typing import Any

import orjson

from ksched.sim import _admission as admission
from ksched.sim import _decode_types as decode_types
from ksched.sim import _status as st
from ksched.sim import _storage_api as storage_api
from ksched.sim._clock import Clock, SystemClock, rfc3339
from ksched.sim._convert import field_path, from_storage, to_storage
from ksched.sim._resources import BY_KEY, RESOURCES, ResourceType, resolve
from ksched.sim._selectors import ObjectFilter

Obj = dict[str, Any]
Key = tuple[str, str]
Listener = Callable[["WatchEvent"], None]

_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"


class Entry:
    """One stored version of an object, with its JSON bytes computed at most once.

    ``obj`` is in the stored shape; :meth:`view` and :meth:`raw_as` give it as another served API
    version of the same resource shows it (converted once per entry and version, then cached).
    """

    __slots__ = ("_raw", "_views", "obj")

    def __init__(self, obj: Obj) -> None:
        self.obj = obj
        self._raw: bytes | None = None
        self._views: dict[str, tuple[Obj, bytes | None]] | None = None

    def raw(self) -> bytes:
        raw = self._raw
        if raw is None:
            raw = self._raw = orjson.dumps(self.obj)
        return raw

    def view(self, rtype: ResourceType) -> Obj:
        """The object as ``rtype``'s endpoint serves it (``obj`` itself for the stored version)."""
        if not rtype.storage:
            return self.obj
        views = self._views
        if views is None:
            views = self._views = {}
        got = views.get(rtype.key)
        if got is None:
            got = views[rtype.key] = (from_storage(rtype, self.obj), None)
        return got[0]

    def raw_as(self, rtype: ResourceType) -> bytes:
        """JSON bytes of :meth:`view`."""
        if not rtype.storage:
            return self.raw()
        obj = self.view(rtype)
        assert self._views is not None
        raw = self._views[rtype.key][1]
        if raw is None:
            raw = orjson.dumps(obj)
            self._views[rtype.key] = (obj, raw)
        return raw


class WatchEvent:
    """A change to one object; ``prev`` is the version before (for selector transitions)."""

    __slots__ = ("_line", "_lines", "entry", "prev", "rv", "type")

    def __init__(self, type_: str, rv: int, entry: Entry, prev: Obj | None) -> None:
        self.type = type_
        self.rv = rv
        self.entry = entry
        self.prev = prev
        self._line: bytes | None = None
        self._lines: dict[str, bytes] | None = None

    def line(self, rtype: ResourceType | None = None) -> bytes:
        """The newline-terminated watch frame, shared by every watcher that sends it unchanged.

        ``rtype`` names the served API version when it is not the stored one (events.k8s.io/v1).
        """
        if rtype is not None and rtype.storage:
            lines = self._lines
            if lines is None:
                lines = self._lines = {}
            got = lines.get(rtype.key)
            if got is None:
                got = lines[rtype.key] = frame(self.type, self.entry.raw_as(rtype))
            return got
        line = self._line
        if line is None:
            line = self._line = frame(self.type, self.entry.raw())
        return line


def frame(type_: str, raw_obj: bytes) -> bytes:
    return b'{"type":"' + type_.encode() + b'","object":' + raw_obj + b"}\n"


class History:
    """The last ``window`` events of one resource, in resourceVersion order.

    ``floor`` is the resourceVersion of the newest evicted event: a watch may start from any
    resourceVersion >= floor, because every later event is still here.
    """

    __slots__ = ("events", "floor", "start", "window")

    def __init__(self, window: int) -> None:
        self.window = max(1, window)
        self.events: list[WatchEvent] = []
        self.start = 0
        self.floor = 0

    def append(self, ev: WatchEvent) -> None:
        self.events.append(ev)
        if len(self.events) - self.start > self.window:
            self.floor = self.events[self.start].rv
            self.start += 1
            if self.start > 4096 and self.start * 2 > len(self.events):
                del self.events[: self.start]
                self.start = 0

    def since(self, rv: int, limit: int) -> list[WatchEvent] | None:
        """Events with resourceVersion > rv (at most ``limit``), or ``None`` if rv is too old."""
        if rv < self.floor:
            return None
        i = bisect.bisect_right(self.events, rv, lo=self.start, key=_ev_rv)
        return self.events[i : i + limit]


def _ev_rv(ev: WatchEvent) -> int:
    return ev.rv


class Table:
    """All objects of one resource type, its history and its listeners."""

    __slots__ = ("_keys", "history", "listeners", "objects", "rtype")

    def __init__(self, rtype: ResourceType, window: int) -> None:
        self.rtype = rtype
        self.objects: dict[Key, Entry] = {}
        self.history = History(window)
        self.listeners: list[Listener] = []
        self._keys: list[Key] | None = None

    def sorted_keys(self) -> list[Key]:
        """The objects' keys in list order, sorted once per change of the key set (updates keep
        it), so each page of a paginated list costs its own length, not the table's."""
        keys = self._keys
        if keys is None:
            keys = self._keys = sorted(self.objects)
        return keys

    def put(self, key: Key, entry: Entry | None) -> None:
        """Store ``entry`` under ``key``, or remove ``key`` (``None``)."""
        objects = self.objects
        if entry is None:
            if objects.pop(key, None) is not None:
                self._keys = None
        else:
            if key not in objects:
                self._keys = None
            objects[key] = entry


class Store:
    """Versioned objects for every served resource; see the module docstring for the invariants."""

    def __init__(self, *, clock: Clock | None = None, history_window: int = 10_000, seed: int = 0) -> None:
        self.clock: Clock = clock or SystemClock()
        self.lock = threading.RLock()
        self.rv = 0
        self._rng = random.Random(seed)
        self.tables: dict[str, Table] = {r.key: Table(r, history_window) for r in RESOURCES if not r.storage}

    # -- lookup -------------------------------------------------------------------------------------
    def table(self, resource: str | ResourceType) -> Table:
        """The table holding ``resource``'s objects (shared by all API versions of one resource)."""
        return self.tables[_rtype(resource).storage_key]

    def get(self, resource: str | ResourceType, name: str, namespace: str = "") -> Obj | None:
        """The current object as ``resource``'s API version serves it (read-only) or ``None``."""
        rtype = _rtype(resource)
        e = self.tables[rtype.storage_key].objects.get((namespace if rtype.namespaced else "", name))
        return e.view(rtype) if e is not None else None

    def get_entry(self, rtype: ResourceType, namespace: str, name: str) -> Entry:
        e = self.tables[rtype.storage_key].objects.get((namespace, name))
        if e is None:
            raise st.not_found(rtype.plural, rtype.group, name)
        return e

    def list(
        self,
        resource: str | ResourceType,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> list[Obj]:
        """Matching objects (read-only dicts, in ``resource``'s API version) in namespace/name order."""
        rtype = _rtype(resource)
        flt = ObjectFilter.parse(namespace, label_selector, field_selector, field_path(rtype))
        _, entries, _, _ = self.list_entries(rtype, flt)
        return [e.view(rtype) for e in entries]

    def count(self, resource: str | ResourceType) -> int:
        return len(self.table(resource).objects)

    def list_entries(
        self, rtype: ResourceType, flt: ObjectFilter, limit: int = 0, after: Key | None = None
    ) -> tuple[int, list[Entry], Key | None, int | None]:
        """(resourceVersion, entries, last key if more remain, remaining count) for a list request.

        The remaining count is None under a label or field selector: kube-apiserver leaves
        ``remainingItemCount`` out then rather than count objects the selector may not match.

        ``flt`` is evaluated on the stored shape (see :func:`~ksched.sim._convert.field_path`).
        """
        t = self.tables[rtype.storage_key]
        with self.lock:
            rv = self.rv
            keys, objects = t.sorted_keys(), t.objects
            if limit <= 0 and after is None:
                if flt.selects_all:
                    return rv, [objects[k] for k in keys], None, 0
                return rv, [e for k in keys if flt.matches((e := objects[k]).obj)], None, 0
            start = bisect.bisect_right(keys, after) if after is not None else 0
            out: list[Entry] = []
            for i in range(start, len(keys)):
                e = objects[keys[i]]
                if flt.selects_all or flt.matches(e.obj):
                    if limit and len(out) == limit:
                        remaining: int | None = None
                        if flt.selects_all:
                            remaining = len(keys) - i
                        elif not flt.has_selectors:
                            remaining = sum(1 for k in keys[i:] if flt.matches(objects[k].obj))
                        return rv, out, _entry_key(out[-1]), remaining
                    out.append(e)
            return rv, out, None, 0

    # -- writes -------------------------------------------------------------------------------------
    def _commit(self, t: Table, type_: str, obj: Obj, prev: Obj | None, *, own_meta: bool = False) -> Entry:
        """Stamp a new resourceVersion, store (or drop) the object and notify listeners.

        ``own_meta``: ``obj["metadata"]`` is a fresh dict no other object shares, so it is stamped in
        place instead of copied.
        """
        rv = self.rv = self.rv + 1
        if own_meta:
            meta = obj["metadata"]
            meta["resourceVersion"] = str(rv)
        else:
            meta = obj["metadata"] = {**obj["metadata"], "resourceVersion": str(rv)}
        key = (meta.get("namespace", ""), meta["name"])
        entry = Entry(obj)
        t.put(key, None if type_ == "DELETED" else entry)
        ev = WatchEvent(type_, rv, entry, prev)
        t.history.append(ev)
        for fn in t.listeners:
            fn(ev)
        return entry

    def _storage_classes(self) -> list[Obj]:
        return [e.obj for e in self.tables[storage_api.STORAGE_CLASSES].objects.values()]

    def _new_uid(self) -> str:
        h = f"{self._rng.getrandbits(128):032x}"
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"

    def create(
        self,
        resource: str | ResourceType,
        obj: Obj,
        *,
        namespace: str | None = None,
        copy: bool = True,
        manager: str | None = None,
    ) -> Obj:
        """Store a new object; fills uid, creationTimestamp, resourceVersion and generateName.

        ``obj`` is in ``resource``'s API version, and so is the returned object.
        Raises StatusError 422 without a name, 409 AlreadyExists on a duplicate.
        """
        rtype = _rtype(resource)
        t = self.tables[rtype.storage_key]
        if copy:
            obj = orjson.loads(orjson.dumps(obj))
        if not isinstance(obj, dict):
            raise st.bad_request("the object must be a JSON object")
        obj = to_storage(rtype, obj)
        meta = obj.get("metadata")
        if not isinstance(meta, dict):
            meta = {}
        meta = dict(meta)
        obj["metadata"] = meta
        obj.setdefault("apiVersion", t.rtype.api_version)
        obj.setdefault("kind", t.rtype.kind)
        if rtype.namespaced:
            meta["namespace"] = namespace or meta.get("namespace") or "default"
        else:
            meta.pop("namespace", None)
        if not isinstance(meta.get("name", ""), str | None) or not isinstance(
            meta.get("generateName", ""), str | None
        ):
            decode_types.check(BY_KEY[rtype.storage_key], obj)  # the decoder refuses these before naming
        with self.lock:
            if not meta.get("name"):
                prefix = meta.get("generateName")
                if not prefix:
                    raise st.invalid(
                        rtype.kind,
                        "",
                        rtype.group,
                        "metadata.name",
                        "FieldValueRequired",
                        "name or generateName is required",
                    )
                meta["name"] = prefix + "".join(self._rng.choice(_NAME_CHARS) for _ in range(5))
            key = (meta.get("namespace", ""), meta["name"])
            if key in t.objects:
                raise st.already_exists(rtype.plural, rtype.group, meta["name"])
            meta["uid"] = self._new_uid()
            meta["creationTimestamp"] = rfc3339(self.clock.now())
            meta.pop("deletionTimestamp", None)
            admission.admit_create(
                rtype, obj, now=meta["creationTimestamp"], classes=self._storage_classes, manager=manager
            )
            return self._commit(t, "ADDED", obj, None, own_meta=True).view(rtype)

    def mutate(
        self,
        resource: str | ResourceType,
        name: str,
        namespace: str,
        fn: Callable[[Obj], Obj | None],
        *,
        subresource: str = "",
        manager: str | None = None,
    ) -> Obj:
        """Replace an object by ``fn(current)`` atomically; ``fn`` returns a new dict or ``None``.

        ``fn`` sees and returns the object in ``resource``'s API version (converted to and from the
        stored shape around it). It may raise StatusError (e.g. Conflict). ``None`` or an unchanged
        object means no write.
        """
        rtype = _rtype(resource)
        t = self.tables[rtype.storage_key]
        ns = namespace if rtype.namespaced else ""
        with self.lock:
            entry = self.get_entry(rtype, ns, name)
            cur, view = entry.obj, entry.view(rtype)
            new = fn(view)
            if new is None or new is view:
                return view
            new = to_storage(rtype, new)
            if new is cur:
                return view
            meta = new["metadata"] = dict(new["metadata"])
            cm = cur["metadata"]
            for k in ("uid", "creationTimestamp", "name"):
                meta[k] = cm[k]
            if rtype.namespaced:
                meta["namespace"] = cm["namespace"]
            admission.admit_update(
                rtype, new, cur, now=rfc3339(self.clock.now()), subresource=subresource, manager=manager
            )
            if _same(new, cur):
                return view
            return self._commit(t, "MODIFIED", new, cur, own_meta=True).view(rtype)

    def update(
        self,
        resource: str | ResourceType,
        obj: Obj,
        *,
        namespace: str = "",
        subresource: str = "",
        copy: bool = True,
        manager: str | None = None,
    ) -> Obj:
        """PUT semantics: optimistic concurrency on ``metadata.resourceVersion`` (409 if stale).

        For types with a status subresource, a main update keeps the stored status and a status
        update changes only the status, as upstream does.
        """
        rtype = _rtype(resource)
        if copy:
            obj = orjson.loads(orjson.dumps(obj))
        meta = obj.get("metadata") or {}
        name = meta.get("name", "")
        ns = (namespace or meta.get("namespace") or "default") if rtype.namespaced else ""

        def replace(cur: Obj) -> Obj:
            check_preconditions(rtype, cur, meta.get("uid"), meta.get("resourceVersion"))
            cm = cur["metadata"]
            if "status" in rtype.subresources:
                decode_types.check_discarded(rtype, obj, cur, status_write=subresource == "status")
            if subresource == "status":
                return {**cur, "status": obj.get("status", {})}
            new = dict(obj)
            new["metadata"] = {**meta}
            for k in ("deletionTimestamp", "deletionGracePeriodSeconds"):
                if k in cm:
                    new["metadata"][k] = cm[k]
            new.setdefault("apiVersion", rtype.api_version)
            new.setdefault("kind", rtype.kind)
            if "status" in rtype.subresources and "status" in cur:
                new["status"] = cur["status"]
            return new

        return self.mutate(rtype, name, ns, replace, subresource=subresource, manager=manager)

    def delete(
        self,
        resource: str | ResourceType,
        name: str,
        namespace: str = "",
        *,
        grace_period_s: int | None = None,
        uid: str | None = None,
        resource_version: str | None = None,
    ) -> Obj:
        """Delete with kube-apiserver's pod semantics.

        A bound, non-terminal pod with a grace period > 0 only gets ``deletionTimestamp`` (the kubelet
        stand-in removes it after the grace period); everything else is removed at once. Deleting a
        namespace removes every object in it.
        """
        rtype = _rtype(resource)
        t = self.tables[rtype.storage_key]
        ns = namespace if rtype.namespaced else ""
        with self.lock:
            entry = self.get_entry(rtype, ns, name)
            cur = entry.obj
            check_preconditions(rtype, cur, uid, resource_version)
            if rtype.key == "pods":
                spec, meta = cur.get("spec") or {}, cur["metadata"]
                grace = grace_period_s
                if grace is None:
                    grace = spec.get("terminationGracePeriodSeconds", 30)
                phase = (cur.get("status") or {}).get("phase")
                if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
                    grace = 0
                if grace > 0:
                    old = meta.get("deletionGracePeriodSeconds")
                    if old is not None and old <= grace:
                        return entry.view(rtype)
                    new_meta = {
                        **meta,
                        "deletionGracePeriodSeconds": grace,
                        "deletionTimestamp": rfc3339(self.clock.now() + grace),
                    }
                    return self._commit(t, "MODIFIED", {**cur, "metadata": new_meta}, cur).view(rtype)
            if rtype.key == "namespaces":
                for other in self.tables.values():
                    if other.rtype.namespaced:
                        for key in [k for k in other.objects if k[0] == name]:
                            gone = other.objects[key].obj
                            self._commit(other, "DELETED", dict(gone), gone)
            return self._commit(t, "DELETED", dict(cur), cur).view(rtype)

    # -- watch support ------------------------------------------------------------------------------
    def add_listener(self, resource: str | ResourceType, fn: Listener) -> None:
        with self.lock:
            self.table(resource).listeners.append(fn)

    def remove_listener(self, resource: str | ResourceType, fn: Listener) -> None:
        with self.lock:
            listeners = self.table(resource).listeners
            if fn in listeners:
                listeners.remove(fn)

    def events_since(self, rtype: ResourceType, rv: int, limit: int = 1000) -> list[WatchEvent]:
        """Events after ``rv``; raises 410 Expired when ``rv`` fell out of the history window."""
        h = self.tables[rtype.storage_key].history
        with self.lock:
            evs = h.since(rv, limit)
            if evs is None:
                raise st.expired(f"too old resource version: {rv} ({h.floor})")
            return evs

    def snapshot(self, rtype: ResourceType, flt: ObjectFilter) -> tuple[int, list[Entry]]:
        rv, entries, _, _ = self.list_entries(rtype, flt)
        return rv, entries

    def bulk_create(
        self,
        resource: str | ResourceType,
        objs: Iterable[Obj],
        namespace: str | None = None,
    ) -> int:
        """Create many objects under one lock acquisition (generators' fast path)."""
        n = 0
        with self.lock:
            for obj in objs:
                self.create(resource, obj, namespace=namespace, copy=False)
                n += 1
        return n


def _rtype(resource: str | ResourceType) -> ResourceType:
    return resource if isinstance(resource, ResourceType) else resolve(resource)


def _entry_key(e: Entry) -> Key:
    m = e.obj["metadata"]
    return (m.get("namespace", ""), m["name"])


def _same(a: Obj, b: Obj) -> bool:
    """Equal ignoring resourceVersion (a no-op write does not bump the version, as upstream).

    Runs on every write, which usually shares most parts with the current object and changes one:
    so shared parts are skipped by identity, metadata (the largest part, never the only change of a
    binding or status write) is compared last, and without building copies.
    """
    if len(a) != len(b):
        return False
    for k, v in a.items():
        if k not in b:
            return False
        w = b[k]
        if v is w or k == "metadata":
            continue
        if v != w:
            return False
    ma, mb = a.get("metadata"), b.get("metadata")
    if ma is mb:
        return True
    if not isinstance(ma, dict) or not isinstance(mb, dict):
        return bool(ma == mb)
    rv = "resourceVersion"
    if len(ma) - (rv in ma) != len(mb) - (rv in mb):
        return False
    for k, v in ma.items():
        if k == rv:
            continue
        if k not in mb:
            return False
        w = mb[k]
        if v is not w and v != w:
            return False
    return True


def check_preconditions(rtype: ResourceType, cur: Obj, uid: str | None, rv: str | None) -> None:
    """409 Conflict when a uid or resourceVersion precondition does not hold."""
    meta = cur["metadata"]
    if uid and uid != meta.get("uid"):
        raise st.conflict(
            rtype.plural,
            rtype.group,
            meta["name"],
            f"Precondition failed: UID in precondition: {uid}, UID in object meta: {meta['uid']}",
        )
    if rv and rv != meta.get("resourceVersion"):
        raise st.conflict(rtype.plural, rtype.group, meta["name"], st.STALE)
