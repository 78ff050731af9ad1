"""The stand-ins' HTTP client: one aiohttp session to the API server, JSON in and out, and Events.

Every request carries :data:`USER_AGENT`, so a fault rule can single the stand-ins out. Failures
become :mod:`ksched.errors` exceptions: :class:`~ksched.errors.NotFound`, :class:`WriteConflict`
(409 on an update: the object changed), :class:`AlreadyExists` (409 on a create), and
:class:`~ksched.errors.ApiError` for the rest, ``status`` 0 when no HTTP answer came at all.

Nothing here retries. As in a client-go controller, a sync that fails is put back on its work
queue with a per-key backoff; after a :class:`WriteConflict` the controller re-reads the object
first (:meth:`WriteConflict.path` says which).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from ksched import __version__
from ksched.errors import ApiError, Conflict, Gone, NotFound
from ksched.sim._clock import rfc3339

log = logging.getLogger(__name__)

USER_AGENT = f"ksched-sim-storage-controllers/{__version__}"
JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
REQUEST_TIMEOUT_S = 30.0
MAX_CORRELATED_EVENTS = 10_000
"""Events remembered for aggregating repeats (client-go's correlator keeps a bounded cache too)."""

Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Resource:
    """How one resource is addressed: its API prefix and whether it lives in a namespace."""

    prefix: str
    plural: str
    namespaced: bool


RESOURCES = {
    r.plural: r
    for r in (
        Resource("/api/v1", "persistentvolumes", False),
        Resource("/api/v1", "persistentvolumeclaims", True),
        Resource("/api/v1", "pods", True),
        Resource("/api/v1", "nodes", False),
        Resource("/api/v1", "events", True),
        Resource("/apis/storage.k8s.io/v1", "storageclasses", False),
        Resource("/apis/storage.k8s.io/v1", "csinodes", False),
        Resource("/apis/storage.k8s.io/v1", "csidrivers", False),
        Resource("/apis/storage.k8s.io/v1", "csistoragecapacities", True),
    )
}


def path(plural: str, namespace: str = "", name: str = "", sub: str = "") -> str:
    """``/api/v1/namespaces/NS/persistentvolumeclaims/NAME/status`` and the like."""
    r = RESOURCES[plural]
    out = r.prefix + (f"/namespaces/{namespace}" if r.namespaced and namespace else "") + f"/{plural}"
    if name:
        out += f"/{name}"
    if sub:
        out += f"/{sub}"
    return out


class WriteConflict(Conflict):
    """409 on an update: the stored object is newer than the one written; re-read ``path``."""

    def __init__(self, status: int, reason: str, message: str, path: str) -> None:
        super().__init__(status, reason, message)
        self.path = path

    @property
    def plural(self) -> str:
        """The resource of the object that changed (``.../persistentvolumeclaims/NAME``)."""
        return self.path.rstrip("/").split("/")[-2]


class AlreadyExists(Conflict):
    """409 AlreadyExists on a create."""


def key_of(obj: Obj) -> tuple[str, str]:
    meta = obj["metadata"]
    return (meta.get("namespace", ""), meta["name"])


class Api:
    """JSON requests against one API server over a shared aiohttp session."""

    def __init__(self, session: aiohttp.ClientSession, server: str) -> None:
        self.session = session
        self.server = server.rstrip("/")

    async def request(
        self,
        method: str,
        url_path: str,
        body: Any = None,
        *,
        params: dict[str, str] | None = None,
        content_type: str = JSON,
    ) -> Obj:
        data = orjson.dumps(body) if body is not None else None
        headers = {"Content-Type": content_type} if data is not None else {}
        try:
            async with self.session.request(
                method,
                self.server + url_path,
                data=data,
                params=params,
                headers=headers,
                timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S),
            ) as resp:
                raw = await resp.read()
                status = resp.status
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise ApiError(0, "ConnectionError", f"{method} {url_path}: {exc!r}") from exc
        try:
            answer = orjson.loads(raw) if raw else {}
        except orjson.JSONDecodeError:
            answer = {"message": raw[:300].decode(errors="replace")}
        if status >= 400:
            raise _error(status, answer if isinstance(answer, dict) else {}, method, url_path)
        if not isinstance(answer, dict):
            raise ApiError(status, "BadResponse", f"{method} {url_path}: the answer is not a JSON object")
        return answer

    async def get(self, plural: str, name: str, namespace: str = "") -> Obj:
        return await self.request("GET", path(plural, namespace, name))

    async def get_or_none(self, plural: str, name: str, namespace: str = "") -> Obj | None:
        try:
            return await self.get(plural, name, namespace)
        except NotFound:
            return None

    async def list(self, plural: str, params: dict[str, str] | None = None) -> Obj:
        return await self.request("GET", path(plural), params=params)

    async def create(self, plural: str, obj: Obj, namespace: str = "") -> Obj:
        return await self.request("POST", path(plural, namespace), obj)

    async def update(self, plural: str, obj: Obj, *, status: bool = False) -> Obj:
        """PUT with the object's resourceVersion (optimistic concurrency, like client-go's Update)."""
        ns, name = key_of(obj)
        return await self.request("PUT", path(plural, ns, name, "status" if status else ""), obj)

    async def delete(self, plural: str, name: str, namespace: str = "", *, uid: str = "") -> None:
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": uid}} if uid else None
        with contextlib.suppress(NotFound):  # gone already: what deleting wanted
            await self.request("DELETE", path(plural, namespace, name), body)

    async def patch(self, plural: str, name: str, namespace: str, patch: Obj) -> Obj:
        return await self.request("PATCH", path(plural, namespace, name), patch, content_type=MERGE_PATCH)


def _error(status: int, body: Obj, method: str, url_path: str) -> ApiError:
    reason, message = str(body.get("reason") or ""), str(body.get("message") or "")
    if status == 404:
        return NotFound(status, reason or "NotFound", message)
    if status == 409 and reason == "AlreadyExists":
        return AlreadyExists(status, reason, message)
    if status == 409:
        return WriteConflict(status, reason or "Conflict", message, url_path.removesuffix("/status"))
    if status == 410:
        return Gone(status, reason or "Expired", message)
    return ApiError(status, reason or "Unknown", f"{method} {url_path}: {message}")


INVOLVED_KINDS = {
    "persistentvolumes": "PersistentVolume",
    "persistentvolumeclaims": "PersistentVolumeClaim",
    "pods": "Pod",
}


class EventRecorder:
    """core/v1 Events from one component, aggregated as client-go's correlator does for repeats.

    The same (object, type, reason, message) again bumps ``count`` and ``lastTimestamp`` of the
    Event already written instead of writing a new one. Best effort: a failure is logged, never
    raised, so an Event can never fail a sync.
    """

    def __init__(self, api: Api, component: str, clock: Callable[[], float] = time.time) -> None:
        self._api = api
        self.component = component
        self._clock = clock
        self._seen: dict[tuple[str, str, str, str], tuple[str, str, int]] = {}

    async def event(self, plural: str, obj: Obj, type_: str, reason: str, message: str) -> None:
        meta = obj.get("metadata") or {}
        uid, name = str(meta.get("uid", "")), str(meta.get("name", ""))
        namespace = str(meta.get("namespace") or "default")
        now = rfc3339(self._clock())
        key = (uid, type_, reason, message)
        seen = self._seen.get(key)
        try:
            if seen is not None:
                ev_ns, ev_name, count = seen
                patch = {"count": count + 1, "lastTimestamp": now}
                await self._api.patch("events", ev_name, ev_ns, patch)
                self._seen[key] = (ev_ns, ev_name, count + 1)
                return
            ev_name = f"{name}.{int(self._clock() * 1e9):x}"
            involved = {
                "kind": INVOLVED_KINDS[plural],
                "namespace": meta.get("namespace", ""),
                "name": name,
                "uid": uid,
                "apiVersion": "v1",
                "resourceVersion": meta.get("resourceVersion", ""),
            }
            if not involved["namespace"]:
                del involved["namespace"]
            event = {
                "metadata": {"name": ev_name, "namespace": namespace},
                "involvedObject": involved,
                "reason": reason,
                "message": message,
                "source": {"component": self.component},
                "firstTimestamp": now,
                "lastTimestamp": now,
                "count": 1,
                "type": type_,
                "eventTime": None,
                "reportingComponent": self.component,
                "reportingInstance": "",
            }
            await self._api.create("events", event, namespace)
            if len(self._seen) >= MAX_CORRELATED_EVENTS:
                self._seen.clear()  # bounded memory; a repeat after this starts a new Event
            self._seen[key] = (namespace, ev_name, 1)
        except ApiError as exc:
            if isinstance(exc, NotFound):
                self._seen.pop(key, None)
            log.warning(
                "event %s %s for %s %s/%s not written: %s", type_, reason, plural, namespace, name, exc
            )
