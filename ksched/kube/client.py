"""``ApiClient``: the raw Kubernetes REST verbs over HTTP/1.1 keep-alive, with JSON decoded by orjson.

A list or a watch can be given another JSON decoder (``loads``): the informers of pods and nodes
pass :mod:`ksched.kube.lean_json`'s, which leave managedFields unread.

Every method is a coroutine meant for the I/O thread's loop (:mod:`ksched.kube.io_thread`); the
connections are opened there on first use and closed by :meth:`ApiClient.close`. Requests go by
the lean path of :mod:`ksched.kube.lean_http` (prebuilt request bytes, answers parsed by llhttp),
the same bytes aiohttp would send but for ``Accept-Encoding``; watches, a server behind a proxy
or with user info or a query in its URL, and redirects go by an aiohttp session
(``ClientSettings.lean_http=False`` sends everything that way). Paths are encoded API
paths (``/api/v1/namespaces/default/pods``), built by :mod:`ksched.model.paths` and sent exactly as
given; bodies and results are plain dicts, never generated models.

Errors: a non-2xx answer raises the matching :mod:`ksched.errors` class with the server's
``Status.message`` (409 :class:`Conflict`, 410 :class:`Gone`, 404 :class:`NotFound`, 429
:class:`TooManyRequests` with ``Retry-After``, anything else :class:`ApiError`); a connection failure
or timeout raises :class:`ApiConnectionError` (an ``ApiError`` with status 0).

Retries (:class:`RetrySettings`): 429, 5xx, timeouts and connection errors are retried with
exponential backoff and jitter (never sooner than a ``Retry-After`` header asks, up to
``max_retry_after_s``) for
requests that are safe to repeat:

- GET / LIST: read-only;
- PUT carrying ``metadata.resourceVersion``: if the first attempt was applied, the repeat answers 409;
- PATCH: every patch ksched sends sets fields to absolute values (status conditions, a nominated
  node), so applying it twice gives the same object;
- DELETE with a uid precondition: a repeat answers 404 (already gone) or 409 (a new object of that
  name), never deletes something else.

POST is not repeated unless the caller says so (``retry=True``). The binder does: a binding carries a
``metadata.uid`` precondition and the API server accepts one binding per pod, so if a first attempt
was applied but its answer lost, the repeat answers 409 "already assigned", and
:func:`ksched.kube.writers.bind` then reads the pod and reports success when it is bound to the node
it asked for. Events are repeated too (a duplicate event is harmless).

Rate limit: writes (POST/PUT/PATCH/DELETE, each attempt) take a token from a :class:`TokenBucket`
with ``clientConnection``'s QPS and burst; reads and watches do not.

Metrics: given a :class:`~ksched.kube.request_metrics.RequestRecorder`, the client reports what
client-go's REST client reports (that module says what and when), for the price of two clock reads
and a few dictionary updates per request.
Fencing: a client given a ``gate`` (:mod:`ksched.kube.fence`) asks it right before each write
attempt leaves, after the rate limiter's wait and any backoff, so a retry or a queued write cannot
slip out once this replica stops leading; a refusal raises :class:`~ksched.kube.fence.Fenced` and is
never retried.
"""

from __future__ import annotations

import asyncio
import logging
import random
import re
import ssl
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import orjson
from multidict import CIMultiDict
from yarl import URL

from ksched import __version__
from ksched.errors import ApiError, Conflict, Gone, NotFound, TooManyRequests
from ksched.kube.connection import Connection
from ksched.kube.fence import WriteGate
from ksched.kube.lean_http import LeanPool
from ksched.kube.ratelimit import BackoffSettings, TokenBucket, backoff_delay
from ksched.kube.request_metrics import NO_ANSWER, RequestRecorder

log = logging.getLogger(__name__)

USER_AGENT = f"ksched/{__version__}"
JSON = "application/json"
PATCH_TYPES = {
    "strategic": "application/strategic-merge-patch+json",
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
}
_RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
_ENCODED_PATH = re.compile(r"/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*").fullmatch
"""The characters of an encoded path (RFC 3986 ``pchar`` and ``/``); see ``_url``."""
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})").search
_NO_BODY_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})
"""Methods aiohttp sends without a ``Content-Length: 0`` when there is no body (its ``GET_METHODS``)."""
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
"""Methods aiohttp gives an ``application/octet-stream`` Content-Type when none is set (``POST_METHODS``)."""
_BAD_HEADER_VALUE = re.compile(r"[\r\n\x00]").search


class ApiConnectionError(ApiError):
    """The request did not get an HTTP answer: connection refused or reset, TLS failure, timeout."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(0, reason, message)


@dataclass(frozen=True, slots=True, kw_only=True)
class RetrySettings:
    """How requests that are safe to repeat are repeated."""

    max_retries: int = 5
    """Retries after the first attempt; 0 turns retrying off."""
    backoff: BackoffSettings = field(default_factory=lambda: BackoffSettings(initial_s=0.1, max_s=5.0))
    """Delay between attempts; a ``Retry-After`` from the server makes it at least that long."""
    max_retry_after_s: float = 30.0
    """A longer ``Retry-After`` is cut to this."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientSettings:
    """The HTTP session's limits and timeouts."""

    qps: float = 50.0
    """Writes per second (``clientConnection.qps``); ``<= 0`` means no client-side limit."""
    burst: int = 100
    """Writes allowed back to back (``clientConnection.burst``)."""
    request_timeout_s: float = 30.0
    """Whole-request timeout for everything but watches."""
    connect_timeout_s: float = 10.0
    """Opening one connection (TCP and TLS). For requests, waiting for a free connection in the pool
    counts against ``request_timeout_s`` only, which spares every request that waits an extra timer;
    for watches (no overall timeout) it counts against this too."""
    max_connections: int = 100
    """Concurrent HTTP/1.1 connections (keep-alive) in the pool (each of the two pools: the lean one
    of :mod:`ksched.kube.lean_http` and aiohttp's)."""
    lean_http: bool = True
    """Send what :mod:`ksched.kube.lean_http` can carry that way; False sends everything through
    aiohttp (for A/B measurement of the client's CPU; not a user-facing setting)."""
    retry: RetrySettings = field(default_factory=RetrySettings)


def status_error(code: int, body: Any, retry_after_s: float | None = None) -> ApiError:
    """The :mod:`ksched.errors` exception for an HTTP status and a (decoded) ``Status`` body."""
    message, reason = "", ""
    if isinstance(body, dict):
        message = str(body.get("message") or "")
        reason = str(body.get("reason") or "")
        details = body.get("details")
        if retry_after_s is None and isinstance(details, dict) and details.get("retryAfterSeconds"):
            retry_after_s = float(details["retryAfterSeconds"])
    elif isinstance(body, bytes | str):
        message = (body.decode(errors="replace") if isinstance(body, bytes) else body)[:500]
    if code == 409:
        return Conflict(code, reason or "Conflict", message)
    if code == 410:
        return Gone(code, reason or "Expired", message)
    if code == 404:
        return NotFound(code, reason or "NotFound", message)
    if code == 429:
        return TooManyRequests(code, reason or "TooManyRequests", message, retry_after_s or 1.0)
    return ApiError(code, reason or "Unknown", message)


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # an HTTP date: rare from kube-apiserver; fall back to backoff


def _loads(data: bytes) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return data


@dataclass(frozen=True, slots=True)
class _Attempt:
    """The outcome of one HTTP exchange (see :meth:`ApiClient._attempt`): the decoded answer of a
    2xx, or the error the answer maps to (``code`` 0: no answer at all)."""

    code: int
    raw: bytes
    value: Any
    error: ApiError | None = None
    retry_after: float | None = None


@dataclass(frozen=True, slots=True)
class _Exchange:
    """One request as each of its attempts sends it, whichever path carries it, and how an
    answer (or its absence) becomes an :class:`_Attempt`."""

    method: str
    url: URL | str
    path: str
    params: Mapping[str, str] | None
    data: bytes | None
    ctype: str | None
    decode: bool
    loads: Callable[[bytes], Any] = orjson.loads

    def answered(self, code: int, raw: bytes, retry_after_header: str | None) -> _Attempt:
        """The decoded body of a 2xx (None when not decoding), else the error ``code`` maps to,
        with the server's Retry-After on a 429 or 503."""
        if code < 300:
            return _Attempt(code, raw, self.loads(raw) if raw and self.decode else None)
        retry_after = _retry_after(retry_after_header) if code in (429, 503) else None
        return _Attempt(code, raw, None, status_error(code, _loads(raw), retry_after), retry_after)

    def unanswered(self, exc: BaseException, raw: bytes = b"") -> _Attempt:
        """No answer: a timeout or a connection failure, as :class:`ApiConnectionError` (code 0)."""
        kind = "Timeout" if isinstance(exc, TimeoutError) else "ConnectionError"
        err = ApiConnectionError(kind, f"{self.method} {self.path}: {exc!r}")
        err.__cause__ = exc
        return _Attempt(0, raw, None, err)


class ApiClient:
    """REST verbs against one API server; use from one event loop (see the module docstring)."""

    def __init__(
        self,
        connection: Connection,
        *,
        qps: float | None = None,
        burst: int | None = None,
        settings: ClientSettings | None = None,
        rng: random.Random | None = None,
        metrics: RequestRecorder | None = None,
        gate: WriteGate | None = None,
        user_agent: str = USER_AGENT,
    ) -> None:
        """``metrics``: where requests are reported (see the module docstring); None: nowhere."""
        s = settings or ClientSettings()
        self.connection = connection
        self.metrics = metrics
        self.host = urlsplit(connection.server).netloc.rpartition("@")[2]
        """The server's ``host[:port]``: the ``host`` label of the request metrics."""
        self.gate = gate
        """Asked before every write attempt (see the module docstring); None: writes are not fenced."""
        self.user_agent = user_agent
        """Sent with every request; ``ksched run`` adds its identity so each replica can be told apart."""
        self.settings = s
        self.limiter = TokenBucket(s.qps if qps is None else qps, s.burst if burst is None else burst)
        self._rng = rng or random.Random()
        self._session: aiohttp.ClientSession | None = None
        self._closed = False
        self._ssl: Any = connection.ssl if connection.ssl is not None else True
        self._extra: dict[str, Any] = {}
        if connection.tls_server_name:
            self._extra["server_hostname"] = connection.tls_server_name
        if connection.proxy:
            self._extra["proxy"] = connection.proxy
        # sock_connect, not connect: aiohttp arms a ``connect`` timer (an asyncio Timeout and a loop
        # TimerHandle) for every request that has to wait for a pooled connection, which is most
        # bindings under load; ``sock_connect`` bounds only the opening of a new connection.
        self._timeout = aiohttp.ClientTimeout(total=s.request_timeout_s, sock_connect=s.connect_timeout_s)
        self._base = URL(connection.server)
        self._base_path = self._base.raw_path.rstrip("/")
        self._fast_urls = not (self._base.raw_query_string or self._base.raw_fragment)
        self._header_cache: dict[tuple[str | None, str | None], CIMultiDict[str] | None] = {}
        self._pool: LeanPool | None = None
        self._lean = s.lean_http and self._lean_capable()
        """Whether requests go by :mod:`ksched.kube.lean_http` (see :meth:`_attempt`)."""
        self._head_cache: dict[tuple[str | None, str | None], bytes] = {}
        self._auth_lock: asyncio.Lock | None = None
        self.stats: dict[str, int] = {"requests": 0, "retries": 0, "errors": 0}
        """Counters: attempts sent, retries made, errors raised to callers."""

    # -- session ------------------------------------------------------------------------------------
    def _get_session(self) -> aiohttp.ClientSession:
        if self._session is None:
            if self._closed:
                raise RuntimeError("ApiClient is closed")
            connector = aiohttp.TCPConnector(limit=self.settings.max_connections, ssl=self._ssl)
            # No skip_auto_headers: any value makes aiohttp copy the headers and build a sorted
            # CIMultiDict per request; a Content-Type is always set explicitly with a body anyway
            # (see _headers), and aiohttp only adds one for a body.
            self._session = aiohttp.ClientSession(
                connector=connector, headers={"User-Agent": self.user_agent, "Accept": JSON}
            )
        return self._session

    def _lean_capable(self) -> bool:
        """Whether this server can be reached by the lean path: plain http(s) to a host, without a
        proxy, user info or a query in the server URL (those need aiohttp's handling)."""
        base = self._base
        return (
            base.scheme in ("http", "https")
            and bool(base.raw_host)
            and base.port is not None
            and base.raw_user is None
            and base.raw_password is None
            and self._fast_urls
            and not self.connection.proxy
        )

    def _get_pool(self) -> LeanPool:
        """The lean path's connections, created on first use on the loop that uses them."""
        if self._pool is None:
            if self._closed:
                raise RuntimeError("ApiClient is closed")
            base, ctx = self._base, None
            if base.scheme == "https":
                ctx = self.connection.ssl if self.connection.ssl is not None else ssl.create_default_context()
            host = base.host or ""
            assert base.port is not None
            self._pool = LeanPool(
                host,
                base.port,
                ssl_context=ctx,
                server_hostname=(self.connection.tls_server_name or host).rstrip("."),
                limit=self.settings.max_connections,
                connect_timeout_s=self.settings.connect_timeout_s,
            )
        return self._pool

    async def close(self) -> None:
        """Close the session and its connections (idempotent)."""
        self._closed = True
        session, self._session = self._session, None
        if session is not None:
            await session.close()
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    def _headers(self, content_type: str | None) -> CIMultiDict[str] | None:
        """The per-request headers, built once per (credential, content type) and then shared.

        aiohttp copies what it is given into each request and never changes it, and a CIMultiDict is
        taken as is where a dict would be converted first. A credential refresh changes the key; the
        cache is cleared when it grows past a handful of entries (old tokens).
        """
        auth = self.connection.credentials.header
        key = (auth, content_type)
        try:
            return self._header_cache[key]
        except KeyError:
            pass
        h: CIMultiDict[str] | None = None
        if auth is not None or content_type is not None:
            h = CIMultiDict()
            if auth is not None:
                h["Authorization"] = auth
            if content_type is not None:
                h["Content-Type"] = content_type
        if len(self._header_cache) >= 8:
            self._header_cache.clear()
        self._header_cache[key] = h
        return h

    def _lean_head(self, method: str, content_type: str | None) -> bytes:
        """The header lines the lean path sends (all but the request line and Content-Length):
        those aiohttp sends, but for ``Accept-Encoding`` (the lean path does not decompress).

        Built once per (credential, content type), like :meth:`_headers`. A header value holding
        CR, LF or NUL raises ``ValueError`` rather than split the request.
        """
        if content_type is None and method in _BODY_METHODS:
            content_type = "application/octet-stream"  # what aiohttp adds to a bodiless POST/PUT/PATCH
        auth = self.connection.credentials.header
        key = (auth, content_type)
        head = self._head_cache.get(key)
        if head is not None:
            return head
        fields = [("Host", self._base.host_port_subcomponent or ""), ("User-Agent", self.user_agent)]
        fields.append(("Accept", JSON))
        if auth is not None:
            fields.append(("Authorization", auth))
        if content_type is not None:
            fields.append(("Content-Type", content_type))
        for name, value in fields:
            if _BAD_HEADER_VALUE(value) is not None:
                raise ValueError(f"header {name} holds a newline or NUL character")
        head = "".join(f"{name}: {value}\r\n" for name, value in fields).encode()
        if len(self._head_cache) >= 8:
            self._head_cache.clear()
        self._head_cache[key] = head
        return head

    def _url(self, path: str) -> URL | str:
        """The request URL for an *encoded* path, sent exactly as given.

        Paths come from :mod:`ksched.model.paths`, which percent-encodes every namespace and name,
        so the client must neither encode again (``%2F`` would become ``%252F``) nor decode (a
        ``%3F`` would become a ``?`` that starts a query); query parameters go in ``params``. So the
        path is joined to the server's parsed URL as encoded, which also spares ``yarl`` parsing
        the whole URL on every request (each binding has its own path). A path that is not
        encoded (a raw space, ``?``, ``#``, control character or non-ASCII letter, a ``%`` not
        followed by two hex digits, a ``.`` or ``..`` segment a normaliser would remove) is a bug
        in its caller: it raises ``ValueError`` rather than reach some other URL.
        """
        if not self._fast_urls:  # a server URL with a query or fragment: left to yarl, as ever
            return self.connection.server + path
        if _ENCODED_PATH(path) is None or ("%" in path and _BAD_ESCAPE(path) is not None):
            raise ValueError(f"request path {path[:200]!r} is not percent-encoded (see ksched.model.paths)")
        if "/." in path and any(seg in (".", "..") for seg in path.split("/")):
            raise ValueError(f"request path {path[:200]!r} has a dot segment (see ksched.model.paths)")
        return self._base.with_path(self._base_path + path, encoded=True)

    async def _refresh_credentials(self, *, reload: bool) -> bool:
        """Refresh (or, after a 401, reload) credentials in an executor; ``True`` if reloaded."""
        if self._auth_lock is None:
            self._auth_lock = asyncio.Lock()
        creds = self.connection.credentials
        async with self._auth_lock:
            loop = asyncio.get_running_loop()
            if reload:
                return bool(await loop.run_in_executor(None, creds.reload))
            if creds.due():
                await loop.run_in_executor(None, creds.refresh)
        return False

    # -- the one request path -----------------------------------------------------------------------
    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = JSON,
        retry: bool = False,
        write: bool = False,
        decode: bool = True,
        loads: Callable[[bytes], Any] = orjson.loads,
    ) -> Any:
        """Send one request (with retries when ``retry``); return the JSON answer ``loads`` decodes.

        ``decode=False`` returns ``None`` for a 2xx answer without parsing its body (bindings: only
        the status matters); errors are decoded either way (by orjson), for their ``Status`` message.
        """
        data = None if body is None else (body if isinstance(body, bytes) else orjson.dumps(body))
        ctype = content_type if data is not None else None
        exchange = _Exchange(method, self._url(path), path, params, data, ctype, decode, loads)
        max_retries = self.settings.retry.max_retries if retry else 0
        creds = self.connection.credentials
        attempt = 0
        reloaded = False
        started = time.perf_counter() if self.metrics is not None else 0.0
        while True:
            await self._ready_to_send(method, path, write)
            self.stats["requests"] += 1
            sent = await self._attempt(exchange)
            code, err = sent.code, sent.error
            if err is None:
                if self.metrics is not None:
                    self._record(method, code, data, sent.raw, started)
                return sent.value
            if code == 401 and not reloaded and creds.reloadable:
                reloaded = True
                if await self._refresh_credentials(reload=True):
                    self._count_retry(method, data, "401")
                    continue
            if attempt >= max_retries or not (code == 0 or code in _RETRY_STATUS):
                self.stats["errors"] += 1
                if self.metrics is not None:
                    self._record(method, code, data, sent.raw, started)
                raise err
            self._count_retry(method, data, str(code) if code else NO_ANSWER)
            delay = self._retry_delay(attempt, sent.retry_after)
            attempt += 1
            self.stats["retries"] += 1
            log.debug("retrying %s %s in %.3fs after %s (attempt %d)", method, path, delay, err, attempt)
            await asyncio.sleep(delay)

    async def _ready_to_send(self, method: str, path: str, write: bool) -> None:
        """What each attempt waits for, in order: a write's rate-limit token, fresh credentials,
        and last the fence, the moment before the request leaves."""
        if write and not self.limiter.unlimited:
            waited = await self.limiter.acquire()
            if self.metrics is not None:
                self.metrics.throttled(method, self.host, waited)
        creds = self.connection.credentials
        if creds.refreshable and creds.due():
            await self._refresh_credentials(reload=False)
        if write and self.gate is not None:
            self.gate.check(method, path)

    async def _attempt(self, ex: _Exchange) -> _Attempt:
        """One HTTP exchange: the decoded answer of a 2xx, else the error it maps to (code 0: no
        answer at all), with the server's Retry-After on a 429 or 503.

        By the lean path when it can carry the request (see :mod:`ksched.kube.lean_http`), else by
        aiohttp; a redirect answer (never sent by kube-apiserver for API requests) is sent again by
        aiohttp, which follows it as it always has.
        """
        if self._lean and ex.method != "HEAD" and isinstance(ex.url, URL):
            sent = await self._attempt_lean(ex, ex.url)
            if not 300 <= sent.code < 400:
                return sent
        return await self._attempt_aiohttp(ex)

    def _lean_request(self, ex: _Exchange, url: URL) -> bytes:
        """The request's bytes, with the target aiohttp sends: the encoded path as given, and the
        parameters encoded by yarl's ``extend_query`` (as aiohttp does)."""
        method, data = ex.method, ex.data
        target = url.extend_query(ex.params).raw_path_qs if ex.params else self._base_path + ex.path
        head = self._lean_head(method, ex.ctype)
        if data is None:
            tail = b"\r\n" if method in _NO_BODY_METHODS else b"Content-Length: 0\r\n\r\n"
            return f"{method} {target} HTTP/1.1\r\n".encode() + head + tail
        length = b"Content-Length: %d\r\n\r\n" % len(data)
        return b"".join((f"{method} {target} HTTP/1.1\r\n".encode(), head, length, data))

    async def _attempt_lean(self, ex: _Exchange, url: URL) -> _Attempt:
        """:meth:`_attempt` by :mod:`ksched.kube.lean_http`, within the same whole-request timeout."""
        request = self._lean_request(ex, url)
        try:
            answer = await self._get_pool().exchange(ex.method, request, self.settings.request_timeout_s)
        except OSError as exc:  # NoAnswer, refused, reset, TLS failures and TimeoutError alike
            return ex.unanswered(exc)
        return ex.answered(answer.status, answer.body, answer.retry_after)

    async def _attempt_aiohttp(self, ex: _Exchange) -> _Attempt:
        """:meth:`_attempt` by aiohttp."""
        raw = b""
        try:
            async with self._get_session().request(
                ex.method,
                ex.url,
                params=ex.params,
                data=ex.data,
                headers=self._headers(ex.ctype),
                timeout=self._timeout,
                **self._extra,
            ) as resp:
                raw = await resp.read()  # also when not decoding: the connection goes back to the pool
                return ex.answered(resp.status, raw, resp.headers.get("Retry-After"))
        except (aiohttp.ClientError, TimeoutError) as exc:
            return ex.unanswered(exc, raw)

    def _retry_delay(self, attempt: int, retry_after: float | None) -> float:
        """Exponential backoff with jitter, and at least what the server asked for (capped)."""
        rs = self.settings.retry
        delay = backoff_delay(
            attempt,
            initial_s=rs.backoff.initial_s,
            max_s=rs.backoff.max_s,
            factor=rs.backoff.factor,
            jitter=rs.backoff.jitter,
            u=self._rng.random(),
        )
        if retry_after is not None:
            delay = max(delay, min(retry_after, rs.max_retry_after_s))
        return delay

    def _count_retry(self, method: str, data: bytes | None, answer: str) -> None:
        """An attempt that is tried again, in the request metrics (``answer``: its code)."""
        rec = self.metrics
        if rec is not None:
            rec.attempt(method, self.host, len(data) if data else 0)
            rec.retried(method, self.host, answer)

    def _record(self, method: str, code: int, data: bytes | None, raw: bytes, started: float) -> None:
        """The last attempt of a request and its outcome (``code`` 0: no answer)."""
        rec, host = self.metrics, self.host
        assert rec is not None
        rec.attempt(method, host, len(data) if data else 0)
        answer = str(code) if code else NO_ANSWER
        rec.done(method, host, answer, time.perf_counter() - started, len(raw) if code else None)

    # -- verbs --------------------------------------------------------------------------------------
    async def get(self, path: str, *, params: Mapping[str, str] | None = None) -> Any:
        """GET one object (or any JSON document)."""
        return await self.request("GET", path, params=params, retry=True)

    async def list_page(
        self,
        path: str,
        *,
        limit: int = 500,
        continue_token: str = "",
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
        loads: Callable[[bytes], Any] = orjson.loads,
    ) -> dict[str, Any]:
        """One page of a list: the raw ``...List`` document (``metadata.continue`` names the next)."""
        params: dict[str, str] = {}
        if limit > 0:
            params["limit"] = str(limit)
        if continue_token:
            params["continue"] = continue_token
        elif resource_version is not None:
            params["resourceVersion"] = resource_version
        if label_selector:
            params["labelSelector"] = label_selector
        if field_selector:
            params["fieldSelector"] = field_selector
        doc = await self.request("GET", path, params=params, retry=True, loads=loads)
        if not isinstance(doc, dict):
            raise ApiError(
                200, "BadResponse", f"GET {path}: expected a list object, got {type(doc).__name__}"
            )
        return doc

    async def list_pages(
        self,
        path: str,
        *,
        limit: int = 500,
        label_selector: str | None = None,
        field_selector: str | None = None,
        loads: Callable[[bytes], Any] = orjson.loads,
    ) -> AsyncIterator[tuple[list[dict[str, Any]], str]]:
        """Yield ``(items, resourceVersion)`` page by page, following ``continue`` tokens.

        Every page of one list carries the first page's resourceVersion on kube-apiserver; watch from
        that one (see :meth:`list`). A continue token that expired mid-list raises :class:`Gone`;
        the caller starts over. The next page is requested before a page is yielded, so the server
        prepares it while the caller decodes this one; it is cancelled if the caller stops early.
        """

        def fetch(token: str) -> asyncio.Task[dict[str, Any]]:
            page = self.list_page(
                path,
                limit=limit,
                continue_token=token,
                label_selector=label_selector,
                field_selector=field_selector,
                loads=loads,
            )
            return asyncio.ensure_future(page)

        upcoming = fetch("")
        try:
            while True:
                doc = await upcoming
                meta = doc.get("metadata") or {}
                token = str(meta.get("continue") or "")
                if token:
                    upcoming = fetch(token)
                yield list(doc.get("items") or ()), str(meta.get("resourceVersion") or "")
                if not token:
                    return
        finally:
            if not upcoming.done():
                upcoming.cancel()
            elif not upcoming.cancelled():
                upcoming.exception()  # retrieved, so an unused page's error is not logged as lost

    async def list(
        self,
        path: str,
        *,
        limit: int = 500,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> tuple[list[dict[str, Any]], str]:
        """Every item of a (paginated) list and the list's resourceVersion."""
        items: list[dict[str, Any]] = []
        rv = ""
        async for page, page_rv in self.list_pages(
            path, limit=limit, label_selector=label_selector, field_selector=field_selector
        ):
            items.extend(page)
            rv = rv or page_rv  # the first page's: a change between pages is then replayed, not lost
        return items, rv

    async def post(self, path: str, body: Any, *, retry: bool = False, decode: bool = True) -> Any:
        """Create (or POST to a subresource such as ``pods/NAME/binding``); see ``retry`` above.

        ``decode=False``: return ``None`` instead of the parsed answer (see :meth:`request`).
        """
        return await self.request("POST", path, body=body, retry=retry, write=True, decode=decode)

    async def put(self, path: str, body: Mapping[str, Any], *, retry: bool | None = None) -> Any:
        """Replace; retried by default only when the body carries ``metadata.resourceVersion``."""
        if retry is None:
            meta = body.get("metadata")
            retry = isinstance(meta, dict) and bool(meta.get("resourceVersion"))
        return await self.request("PUT", path, body=body, retry=retry, write=True)

    async def patch(self, path: str, patch: Any, *, patch_type: str = "strategic", retry: bool = True) -> Any:
        """Patch with ``patch_type`` ``strategic`` (default), ``merge`` or ``json``."""
        try:
            ctype = PATCH_TYPES[patch_type]
        except KeyError:
            raise ValueError(f"patch_type must be one of {sorted(PATCH_TYPES)}, got {patch_type!r}") from None
        return await self.request("PATCH", path, body=patch, content_type=ctype, retry=retry, write=True)

    async def delete(
        self,
        path: str,
        *,
        uid: str | None = None,
        resource_version: str | None = None,
        grace_period_s: int | None = None,
        propagation: str | None = None,
        retry: bool | None = None,
    ) -> Any:
        """Delete with optional preconditions; retried by default only with a uid precondition."""
        opts: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        pre = {}
        if uid:
            pre["uid"] = uid
        if resource_version:
            pre["resourceVersion"] = resource_version
        if pre:
            opts["preconditions"] = pre
        if grace_period_s is not None:
            opts["gracePeriodSeconds"] = grace_period_s
        if propagation:
            opts["propagationPolicy"] = propagation
        return await self.request(
            "DELETE", path, body=opts, retry=bool(uid) if retry is None else retry, write=True
        )

    async def watch(
        self,
        path: str,
        *,
        resource_version: str = "",
        timeout_s: float = 300.0,
        label_selector: str | None = None,
        field_selector: str | None = None,
        bookmarks: bool = True,
        loads: Callable[[bytes], Any] = orjson.loads,
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """Yield ``(type, object)`` from one watch stream until the server ends it.

        ``type`` is ``ADDED``, ``MODIFIED``, ``DELETED``, ``BOOKMARK`` or ``ERROR`` (its object a
        ``Status``; see :func:`status_error`). A refused watch raises like any request (410 Gone when
        ``resource_version`` is too old); a stream cut mid-way raises :class:`ApiConnectionError`.
        Not retried: the informer decides. Use with ``contextlib.aclosing`` when stopping early.
        """
        params = {"watch": "true", "timeoutSeconds": str(max(1, round(timeout_s)))}
        if resource_version:
            params["resourceVersion"] = resource_version
        if bookmarks:
            params["allowWatchBookmarks"] = "true"
        if label_selector:
            params["labelSelector"] = label_selector
        if field_selector:
            params["fieldSelector"] = field_selector
        creds = self.connection.credentials
        if creds.refreshable and creds.due():
            await self._refresh_credentials(reload=False)
        session = self._get_session()
        timeout = aiohttp.ClientTimeout(
            total=None, connect=self.settings.connect_timeout_s, sock_read=timeout_s + 30.0
        )
        self.stats["requests"] += 1
        answered = False
        try:
            async with session.get(
                self._url(path),
                params=params,
                headers=self._headers(None),
                timeout=timeout,
                **self._extra,
            ) as resp:
                answered = True
                if self.metrics is not None:  # a watch counts its answer, not its duration (client-go)
                    self.metrics.done("GET", self.host, str(resp.status), None, None)
                if resp.status >= 300:
                    raw = await resp.read()
                    if resp.status == 401 and creds.reloadable:
                        await self._refresh_credentials(reload=True)
                    ra = _retry_after(resp.headers.get("Retry-After")) if resp.status in (429, 503) else None
                    raise status_error(resp.status, _loads(raw), ra)
                buf = bytearray()
                async for chunk in resp.content.iter_any():
                    buf += chunk
                    end = buf.rfind(b"\n")
                    if end < 0:
                        continue
                    lines = bytes(buf[:end]).split(b"\n")
                    del buf[: end + 1]
                    for line in lines:
                        if not line.strip():
                            continue
                        ev = loads(line)
                        yield ev.get("type", ""), ev.get("object") or {}
        except (aiohttp.ClientError, TimeoutError) as exc:
            if not answered and self.metrics is not None:
                self.metrics.done("GET", self.host, NO_ANSWER, None, None)
            raise ApiConnectionError(
                "Timeout" if isinstance(exc, TimeoutError) else "ConnectionError", f"watch {path}: {exc!r}"
            ) from exc
        except orjson.JSONDecodeError as exc:
            raise ApiError(200, "BadResponse", f"watch {path}: undecodable frame: {exc}") from exc
