"""The embedded API server: routing, fault injection, the CRUD verbs and the ``status`` subresource.

Every request goes through :meth:`ApiServer.handle` (aiohttp's low-level server: no router) and,
unless it is one of the ``/admin`` endpoints, :meth:`ApiServer.dispatch`: parse the path into
(resource, namespace, name, subresource), pick the verb, apply injected latency/errors, run the
handler. Handlers raise :class:`~ksched.sim._status.StatusError` for every failure, and any
unexpected exception becomes a 500 InternalError Status (logged), so clients never see a traceback.

A secure cluster (``SimConfig.secure``) runs :meth:`~ksched.sim._access.Access.guard` first;
the review APIs (TokenReview, SubjectAccessReview, ...) go to :mod:`ksched.sim._reviews`.

Partitioned clients (:mod:`ksched.sim._partition`) are cut off before dispatch, and every write's
outcome goes to the write audit (:mod:`ksched.sim.writes`).

The server delegates down and is never imported back: ``/admin`` to :mod:`ksched.sim._admin`,
binding and eviction to :mod:`ksched.sim._subresources`, watches to :mod:`ksched.sim._watch`, each
given the store, faults and audit log it uses; all of them share :mod:`ksched.sim._web`.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from aiohttp import web

from ksched.sim import _decode_types as decode_types
from ksched.sim import _field_validation as fv
from ksched.sim import _managed_fields as managed_fields
from ksched.sim import _status as st
from ksched.sim._access import Access
from ksched.sim._admin import admin_routes
from ksched.sim._convert import field_path
from ksched.sim._discovery import discovery, openapi_v3, version_doc
from ksched.sim._openapi_v2 import response as openapi_v2
from ksched.sim._partition import cut_off
from ksched.sim._patch import apply_patch
from ksched.sim._reviews import REVIEW_KEYS, Reviews
from ksched.sim._selectors import ObjectFilter
from ksched.sim._subresources import Subresources
from ksched.sim._tables import table, wants_table
from ksched.sim._watch import Watches
from ksched.sim._web import (
    MAX_BODY_BYTES,
    Req,
    error_response,
    int_param,
    json_response,
    parse_request,
    read_json,
)
from ksched.sim.config import SimConfig
from ksched.sim.faults import AuditLog, FaultInjector
from ksched.sim.store import Obj, Store, check_preconditions
from ksched.sim.writes import WRITE_METHODS, WriteAudit

log = logging.getLogger(__name__)

AdminHandler = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]


class ApiServer:
    """Owns the aiohttp app; all state lives in the store, faults and audit it is given."""

    def __init__(
        self,
        store: Store,
        faults: FaultInjector,
        audit: AuditLog,
        settings: SimConfig,
        *,
        writes: WriteAudit | None = None,
    ) -> None:
        self.store = store
        self.faults = faults
        self.audit = audit
        self.writes = writes or WriteAudit(store.clock)
        self.settings = settings
        self.watches = Watches(store, faults, settings)
        self.subresources = Subresources(store, faults, audit)
        self.access = Access(store, secure=settings.secure)
        """Tokens and RBAC; consulted on every request only when ``settings.secure``."""
        self.reviews = Reviews(self.access)
        self._guard = self.access.guard if settings.secure else None
        self.address = f"{settings.host}:{settings.port}"
        self._admin: dict[str, dict[str, AdminHandler]] = admin_routes(
            store=store, faults=faults, audit=audit, writes=self.writes, open_watches=self.watches.count
        )

    @property
    def closing(self) -> bool:
        """Whether watch streams are being told to finish (set by :meth:`shutdown`)."""
        return self.watches.closing

    @closing.setter
    def closing(self, value: bool) -> None:
        self.watches.closing = value

    def make_server(self) -> web.Server:
        """aiohttp's low-level server, calling :meth:`handle` for every request.

        Not a ``web.Application``: the only routing needed is the few ``/admin`` paths before
        :meth:`dispatch`, and its router, match info and signals would cost CPU on every request.
        Called on the loop that will serve.
        """
        loop = asyncio.get_running_loop()

        def make_request(
            message: Any, payload: Any, protocol: Any, writer: Any, task: Any
        ) -> web.BaseRequest:
            return web.BaseRequest(
                message, payload, protocol, writer, task, loop, client_max_size=MAX_BODY_BYTES
            )

        return web.Server(
            self.handle, request_factory=make_request, handler_cancellation=True, access_log=None
        )

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        """Route one request: an ``/admin`` endpoint, or the Kubernetes API (:meth:`api`).

        A secure cluster authenticates and authorizes it first (``/admin`` paths are non-resource
        URLs only ``system:masters`` may use); a plain one does nothing more than this check."""
        if self._guard is not None:
            denied = self._guard(request)
            if denied is not None:
                return denied
        expect = request.headers.get("Expect")
        if expect is not None:  # what web.Application's router would do (curl sends it for big bodies)
            if expect.lower() != "100-continue":
                return error_response(st.StatusError(417, f"unknown Expect: {expect}", reason="Expectation"))
            if request.version >= (1, 1):
                await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                request.writer.output_size = 0
        path = request.path
        if path.startswith("/admin/"):
            methods = self._admin.get(path)
            if methods is not None:
                fn = methods.get(request.method)
                if fn is None:
                    msg = f"{request.method} is not allowed on {path}"
                    return error_response(st.StatusError(405, msg, reason="MethodNotAllowed"))
                return await fn(request)
        return await self.api(request)

    async def api(self, request: web.BaseRequest) -> web.StreamResponse:
        """A Kubernetes API request: cut off if its client is partitioned, else :meth:`dispatch`;
        every write is recorded in the write audit with its outcome (see :mod:`ksched.sim.writes`)."""
        write = request.method in WRITE_METHODS
        if not write and not self.faults.active:
            return await self.dispatch(request)
        agent = request.headers.get("User-Agent", "")
        auth = request.headers.get("Authorization", "")
        code, fault = 0, ""
        received = self.writes.now()
        try:
            rule = self.faults.partition(agent, auth) if self.faults.active else None
            if rule is not None:
                fault = f"partition-{rule.mode}"
                resp, code = await cut_off(request, rule, self.faults)
                return resp
            resp = await self.dispatch(request)
            code = resp.status
            return resp
        finally:
            if write:
                self.writes.record(
                    request.method,
                    request.path,
                    agent,
                    auth,
                    code,
                    fault,
                    received=received,
                    raw_path=request.rel_url.raw_path,
                )

    def shutdown(self) -> None:
        """Ask every watch stream to finish (called on the loop thread before the runner stops)."""
        self.watches.shutdown()

    async def dispatch(self, request: web.BaseRequest) -> web.StreamResponse:
        try:
            return await self._dispatch(request)
        except st.StatusError as exc:
            return error_response(exc)
        except (ConnectionError, asyncio.CancelledError):
            raise
        except Exception as exc:
            log.exception("sim: internal error on %s %s", request.method, request.path)
            return error_response(st.StatusError(500, f"Internal error occurred: {exc!r}"))

    async def _dispatch(self, request: web.BaseRequest) -> web.StreamResponse:
        path = request.path
        # Split as kube-apiserver's RequestInfoFactory does: the decoded path, trimmed of its outer
        # slashes. An empty segment inside (``pods//binding``, or a name ending in a decoded ``/``)
        # names nothing: it must not close up and address a neighbour.
        trimmed = path.strip("/")
        parts = trimmed.split("/") if trimmed else []
        q: dict[str, str] = dict(request.query) if request.query_string else {}
        if request.method == "GET":
            if path in ("/healthz", "/readyz", "/livez"):
                return web.Response(text="ok", content_type="text/plain")
            if path == "/version":
                return json_response(version_doc(self.settings.git_version))
            if path == "/openapi/v2":
                return openapi_v2(request.headers.get("Accept", ""))
            doc = discovery(parts, self.address) if parts[:1] != ["openapi"] else openapi_v3(parts)
            if doc is not None:
                return json_response(doc)
        req = parse_request(request.method, parts, q) if "" not in parts else None
        if req is None:
            raise st.StatusError(
                404,
                "the server could not find the requested resource",
                details={"causes": [{"reason": "UnexpectedServerResponse", "message": "404 page not found"}]},
            )
        if self.faults.active:
            agent = request.headers.get("User-Agent", "")
            delay = self.faults.delay_s(req.verb, req.fault_resource, agent)
            if delay > 0:
                await asyncio.sleep(delay)
            rule = self.faults.error(req.verb, req.fault_resource, agent)
            if rule is not None:
                headers = {"Retry-After": str(rule.retry_after_s)} if rule.code in (429, 503) else {}
                msg = {
                    429: "injected: too many requests, please try again later",
                    503: "injected: the server is currently unable to handle the request",
                }.get(rule.code, "injected: Internal error occurred")
                details = {"retryAfterSeconds": rule.retry_after_s} if headers else None
                raise st.StatusError(rule.code, msg, details=details, headers=headers)
        if req.sub == "status":
            return await self._status(request, req)
        if req.sub:
            return await self.subresources.handle(request, req)
        if req.rtype.key in REVIEW_KEYS:
            return await self.reviews.handle(request, req)
        handler = getattr(self, "_" + req.verb)
        return await handler(request, req)

    # -- verbs --------------------------------------------------------------------------------------
    def _filter(self, req: Req) -> ObjectFilter:
        return ObjectFilter.parse(
            req.namespace,
            req.query.get("labelSelector"),
            req.query.get("fieldSelector"),
            field_path(req.rtype),
        )

    async def _list(self, request: web.BaseRequest, req: Req) -> web.Response:
        rtype, q = req.rtype, req.query
        limit = int_param(q, "limit") or 0
        after = None
        list_rv: int | None = None
        if q.get("continue"):
            try:
                token = orjson.loads(base64.urlsafe_b64decode(q["continue"].encode()))
                after = (str(token["k"][0]), str(token["k"][1]))
                list_rv = int(token["rv"])
            except (ValueError, KeyError, TypeError, IndexError, binascii.Error):
                raise st.bad_request("continue key is not valid: illegal base64 data") from None
        rv, entries, last, remaining = self.store.list_entries(rtype, self._filter(req), limit, after)
        if list_rv is not None:
            # Every page of one list reports the first page's resourceVersion, as kube-apiserver does:
            # a client watches from it, so a change made between two pages is replayed, not lost.
            # (Later pages show the current state, which the replay then repeats harmlessly.)
            rv = list_rv
        token = ""
        if last is not None:
            token = base64.urlsafe_b64encode(orjson.dumps({"rv": rv, "k": list(last)})).decode()
        if wants_table(request.headers.get("Accept", "")):
            extra: dict[str, Any] = {"continue": token} if token else {}
            if token and remaining is not None:
                extra["remainingItemCount"] = remaining
            tab = table(rtype, list(entries), rv, self.store.clock.now(), q.get("includeObject", ""), extra)
            if tab is not None:
                return json_response(tab)
        meta = b'{"resourceVersion":"' + str(rv).encode() + b'"'
        if token:
            meta += b',"continue":"' + token.encode() + b'"'
            if remaining is not None:  # left out under a selector, as kube-apiserver does
                meta += b',"remainingItemCount":' + str(remaining).encode()
        head = (
            b'{"kind":"'
            + rtype.list_kind.encode()
            + b'","apiVersion":"'
            + rtype.api_version.encode()
            + b'","metadata":'
            + meta
            + b'},"items":['
        )
        return json_response(head + b",".join([e.raw_as(rtype) for e in entries]) + b"]}")

    async def _watch(self, request: web.BaseRequest, req: Req) -> web.StreamResponse:
        return await self.watches.serve(request, req.rtype, self._filter(req), req.query)

    async def _get(self, request: web.BaseRequest, req: Req) -> web.Response:
        entry = self.store.get_entry(req.rtype, req.namespace or "", req.name)
        if wants_table(request.headers.get("Accept", "")):
            tab = table(
                req.rtype,
                [entry],
                self.store.rv,
                self.store.clock.now(),
                req.query.get("includeObject", ""),
                {},
            )
            if tab is not None:
                return json_response(tab)
        return json_response(entry.raw_as(req.rtype))

    async def _status(self, request: web.BaseRequest, req: Req) -> web.Response:
        """The ``status`` subresource: get, update and patch only ``.status``."""
        if req.verb == "get":
            entry = self.store.get_entry(req.rtype, req.namespace or "", req.name)
            return json_response(entry.raw_as(req.rtype))
        if req.verb == "update":
            return await self._update(request, req, sub="status")
        if req.verb == "patch":
            return await self._patch(request, req, sub="status")
        raise st.StatusError(
            405, f"{req.verb} is not supported on {req.fault_resource}", reason="MethodNotAllowed"
        )

    def _check_body(self, req: Req, body: Any) -> Obj:
        if not isinstance(body, dict):
            raise st.bad_request("the request body must be a JSON object")
        meta = body.get("metadata")
        if meta is not None and not isinstance(meta, dict):
            raise st.bad_request("metadata must be an object")
        meta = meta or {}
        if req.rtype.namespaced and meta.get("namespace") and meta["namespace"] != req.namespace:
            raise st.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        if req.name and meta.get("name") and meta["name"] != req.name:
            raise st.bad_request(
                f"the name of the object ({meta['name']}) does not match the name on the URL ({req.name})"
            )
        kind = body.get("kind")
        if kind and kind != req.rtype.kind:
            raise st.bad_request(
                f"the kind of the object ({kind}) does not match the resource ({req.rtype.kind})"
            )
        return body

    async def _create(self, request: web.BaseRequest, req: Req) -> web.Response:
        body = self._check_body(req, await read_json(request))
        if req.rtype.namespaced and req.namespace is None:
            raise st.StatusError(405, "create must name a namespace in the path", reason="MethodNotAllowed")
        warn = fv.check(req.rtype, body, fv.directive(req.query, "CreateOptions"))
        if (
            isinstance((body.get("metadata") or {}).get("resourceVersion"), str)
            and body["metadata"]["resourceVersion"]
        ):  # etcd3's ErrResourceVersionSetOnCreate (one of another type fails to decode first)
            raise st.StatusError(500, "resourceVersion should not be set on objects to be created", reason="")
        obj = self.store.create(
            req.rtype, body, namespace=req.namespace, copy=False, manager=_manager(request, req)
        )
        return json_response(obj, 201, warn)

    async def _update(self, request: web.BaseRequest, req: Req, sub: str = "") -> web.Response:
        body = self._check_body(req, await read_json(request))
        if body.get("metadata") is None:  # JSON null decodes as an empty ObjectMeta
            body["metadata"] = {}
        body["metadata"]["name"] = req.name
        warn = fv.check(req.rtype, body, fv.directive(req.query, "UpdateOptions"))
        obj = self.store.update(
            req.rtype,
            body,
            namespace=req.namespace or "",
            subresource=sub,
            copy=False,
            manager=_manager(request, req),
        )
        return json_response(obj, headers=warn)

    async def _patch(self, request: web.BaseRequest, req: Req, sub: str = "") -> web.Response:
        patch = await read_json(request)
        ctype = request.headers.get("Content-Type", "")
        rtype = req.rtype
        mode, warn = fv.directive(req.query, "PatchOptions"), {}
        patched: Any = None

        def apply(cur: Obj) -> Obj:
            nonlocal warn, patched
            new = patched = apply_patch(ctype, cur, patch)
            warn = fv.check(rtype, new, mode, fv.patch_refusal(ctype, patch, new))
            if not isinstance(new, dict) or not isinstance(new.get("metadata"), dict):
                raise st.StatusError(422, "the patch produced an object without metadata", reason="Invalid")
            meta = new["metadata"]
            check_preconditions(rtype, cur, meta.get("uid"), meta.get("resourceVersion"))
            if "status" in rtype.subresources:
                decode_types.check_discarded(rtype, new, cur, status_write=sub == "status")
                if sub == "status":
                    return {**cur, "status": new.get("status", {})}
                if "status" in cur:
                    new["status"] = cur["status"]
                else:
                    new.pop("status", None)
            return new

        try:
            obj = self.store.mutate(
                rtype, req.name, req.namespace or "", apply, subresource=sub, manager=_manager(request, req)
            )
        except decode_types.DecodeRefusal as exc:  # upstream reports it on the patch, not the body
            raise fv.patch_refusal(ctype, patch, patched)(exc.decoder_message) from None
        return json_response(obj, headers=warn)

    def _delete_options(self, req: Req, body: Any) -> tuple[int | None, str | None, str | None]:
        grace = int_param(req.query, "gracePeriodSeconds")
        uid = rv = None
        if isinstance(body, dict):
            if grace is None and body.get("gracePeriodSeconds") is not None:
                grace = int(body["gracePeriodSeconds"])
            pre = body.get("preconditions") or {}
            uid, rv = pre.get("uid"), pre.get("resourceVersion")
        return grace, uid, rv

    async def _delete(self, request: web.BaseRequest, req: Req) -> web.Response:
        grace, uid, rv = self._delete_options(req, await read_json(request, required=False))
        obj = self.store.delete(
            req.rtype, req.name, req.namespace or "", grace_period_s=grace, uid=uid, resource_version=rv
        )
        graceful = "deletionTimestamp" in obj["metadata"] and req.rtype.key == "pods"
        still_there = graceful and self.store.get(req.rtype, req.name, req.namespace or "") is not None
        return json_response(obj, 202 if still_there else 200)

    async def _deletecollection(self, request: web.BaseRequest, req: Req) -> web.Response:
        grace, _, _ = self._delete_options(req, await read_json(request, required=False))
        with self.store.lock:
            _, entries, _, _ = self.store.list_entries(req.rtype, self._filter(req))
            for e in entries:
                m = e.obj["metadata"]
                self.store.delete(req.rtype, m["name"], m.get("namespace", ""), grace_period_s=grace)
        return json_response(st.success(200))


def _manager(request: web.BaseRequest, req: Req) -> str:
    """The field manager of a write (``fieldManager`` or the client's user agent)."""
    return managed_fields.field_manager(request.headers.get("User-Agent", ""), req.query)
