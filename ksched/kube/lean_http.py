"""A lean HTTP/1.1 path for :class:`~ksched.kube.client.ApiClient`'s small requests.

Every scheduled pod costs two requests (its binding and its Scheduled event), and aiohttp's
general machinery (URL objects, header multidicts, a stream reader and a response object per
request, tracing hooks) costs the client more CPU than the rest of the pod's scheduling. This
module does only what those requests need: it writes the request bytes the caller built on a
kept-alive connection (``asyncio.Protocol``, TCP or TLS) and parses the answer with ``httptools``
(the llhttp C parser), keeping the status, ``Retry-After`` and the body (``Content-Length``,
chunked, or up to the connection's end).

What it does not do is left to aiohttp (see ``ApiClient._attempt``): proxies, redirects,
compressed answers (no ``Accept-Encoding`` is sent), cookies and streams (watches).

Connections: at most ``limit`` at once, one request at a time each, the most recently used first.
A connection the server closed (idle or after ``Connection: close``) leaves the pool. A request
whose connection ends before the whole answer arrived raises :class:`NoAnswer`; like aiohttp (RFC
9112 section 9.3.1), an idempotent request whose connection ended before the answer's headers is
sent once more, on another connection, before that is final. A request cancelled or timed out
mid-way takes its connection with it, since the connection's state is then unknown.

Deadlines: each request has one (``timeout_s`` from the moment it asks for a connection), and one
timer per pool watches them all rather than one timer per request: it fires at the oldest
request's deadline, fails each request whose deadline has passed with ``TimeoutError`` and closes
its connection, and sets itself for the next oldest. Waiting for a free connection and opening one
count against the same deadline.
"""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass

import httptools

IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"})
"""The methods aiohttp sends again after a lost connection (its ``IDEMPOTENT_METHODS``)."""
CLOSE_WAIT_ROUNDS = 10
"""How many 10 ms rounds :meth:`LeanPool.close` waits for connections to finish closing."""


class NoAnswer(ConnectionError):
    """The connection ended, or the answer was malformed, before a whole answer arrived."""

    def __init__(self, message: str, *, headers_seen: bool = False) -> None:
        super().__init__(message)
        self.headers_seen = headers_seen
        """Whether the answer's status and headers had arrived (aiohttp then sends no repeat)."""


@dataclass(frozen=True, slots=True)
class Answer:
    """One HTTP answer: what ``ApiClient`` looks at."""

    status: int
    retry_after: str | None
    body: bytes


class _Conn(asyncio.Protocol):
    """One kept-alive connection: a request's bytes out, one parsed answer back."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.lost = False
        """Whether the transport has finished closing (``connection_lost`` ran)."""
        self._parser = httptools.HttpResponseParser(self)
        self._waiter: asyncio.Future[Answer] | None = None
        self._body: list[bytes] = []
        self._retry_after: str | None = None
        self._framed = False
        """Whether the answer has a Content-Length or is chunked (else it ends with the connection)."""
        self._headers_done = False
        self.deadline = 0.0
        """The loop time by which the request in flight must have its answer."""

    # -- asyncio.Protocol ---------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self._waiter is None:  # bytes nobody asked for: the connection cannot be trusted
            self.abort()
            return
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(NoAnswer(f"malformed answer: {exc}", headers_seen=True))
            self.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = self.lost = True
        if self._waiter is None or self._waiter.done():
            return
        if self._headers_done and not self._framed:  # the answer ends with the connection
            self._finish()
            return
        reason = (
            f"connection lost before the answer ended: {exc!r}" if exc else "server closed the connection"
        )
        self._fail(NoAnswer(reason, headers_seen=self._headers_done))

    # -- httptools callbacks ------------------------------------------------------------------------
    def on_header(self, name: bytes, value: bytes) -> None:
        low = name.lower()
        if low == b"retry-after":
            self._retry_after = value.decode("latin-1")
        elif low == b"content-length" or low == b"transfer-encoding":
            self._framed = True

    def on_headers_complete(self) -> None:
        self._headers_done = True

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        if self._waiter is None or self._waiter.done():
            self.abort()  # a second answer in one read: the connection cannot be trusted
            return
        if not self._parser.should_keep_alive():
            self.close()
        self._finish()

    # -- use ----------------------------------------------------------------------------------------
    def send(self, data: bytes, deadline: float) -> asyncio.Future[Answer]:
        """Write one request; the future gets its answer (or :class:`NoAnswer`, or ``TimeoutError``
        from :meth:`time_out`)."""
        assert self.transport is not None and self._waiter is None
        self._waiter = waiter = asyncio.get_running_loop().create_future()
        self.deadline = deadline
        self.transport.write(data)
        return waiter

    def time_out(self) -> None:
        """The request in flight is past its deadline: fail it and drop the connection."""
        self._fail(TimeoutError())
        self.abort()

    @property
    def usable(self) -> bool:
        """Whether another request may be sent on this connection."""
        t = self.transport
        return not self.closed and t is not None and not t.is_closing() and self._waiter is None

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def abort(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    def _finish(self) -> None:
        waiter, self._waiter = self._waiter, None
        answer = Answer(self._parser.get_status_code(), self._retry_after, b"".join(self._body))
        self._body, self._retry_after, self._framed, self._headers_done = [], None, False, False
        if waiter is not None and not waiter.done():
            waiter.set_result(answer)

    def _fail(self, exc: Exception) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)


class LeanPool:
    """Kept-alive connections to one server (see the module docstring); use from one event loop."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        ssl_context: ssl.SSLContext | None,
        server_hostname: str | None,
        limit: int,
        connect_timeout_s: float,
    ) -> None:
        """``ssl_context``: TLS with it (``server_hostname`` the name verified and sent as SNI);
        None: plain TCP."""
        self.host = host
        self.port = port
        self._ssl = ssl_context
        self._server_hostname = server_hostname if ssl_context is not None else None
        self._connect_timeout_s = connect_timeout_s
        self._slots = asyncio.Semaphore(limit) if limit > 0 else None
        """Bounds the connections open at once; None: no bound (``limit <= 0``, as in aiohttp)."""
        self._idle: list[_Conn] = []
        self._busy: dict[_Conn, None] = {}
        """Connections with a request in flight (a dict as an ordered set)."""
        self._sweeper: asyncio.TimerHandle | None = None
        self._closed = False
        self.opened = 0
        """Connections opened so far (for tests and benchmarks)."""

    async def exchange(self, method: str, data: bytes, timeout_s: float) -> Answer:
        """Send one request's bytes and return the answer within ``timeout_s``; :class:`NoAnswer`
        or ``OSError`` (``TimeoutError`` past the deadline) when there is none (see the module
        docstring for the one repeat of an idempotent request)."""
        deadline = asyncio.get_running_loop().time() + timeout_s
        slots = self._slots
        if slots is None:
            return await self._exchange(method, data, deadline)
        if slots.locked():  # every connection busy: the wait is part of the request's time
            async with asyncio.timeout_at(deadline):
                await slots.acquire()
        else:
            await slots.acquire()
        try:
            return await self._exchange(method, data, deadline)
        finally:
            slots.release()

    async def _exchange(self, method: str, data: bytes, deadline: float) -> Answer:
        try:
            return await self._send(await self._take(deadline), data, deadline)
        except NoAnswer as exc:
            if exc.headers_seen or method not in IDEMPOTENT:
                raise
        return await self._send(await self._take(deadline), data, deadline)

    async def close(self) -> None:
        """Close every idle connection; connections in use close when their request ends.

        A TLS connection closes with an exchange of close_notify alerts, so this waits a little for
        the closes to finish and then aborts what is left, leaving no transport to the garbage
        collector (as aiohttp's connector does)."""
        self._closed = True
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
        for _ in range(CLOSE_WAIT_ROUNDS):
            if all(conn.lost for conn in idle):
                return
            await asyncio.sleep(0.01)
        for conn in idle:
            if not conn.lost:
                conn.abort()

    async def _send(self, conn: _Conn, data: bytes, deadline: float) -> Answer:
        busy = self._busy
        busy[conn] = None
        if self._sweeper is None:
            self._sweeper = asyncio.get_running_loop().call_at(deadline, self._sweep)
        try:
            answer = await conn.send(data, deadline)
        except BaseException:
            conn.abort()
            raise
        finally:
            del busy[conn]
        if conn.usable and not self._closed:
            self._idle.append(conn)
        elif not conn.lost:
            conn.abort()  # Connection: close or the client closing: nothing more to say on it
        return answer

    def _sweep(self) -> None:
        """Time out every request past its deadline; set the timer for the oldest one left."""
        self._sweeper = None
        if not self._busy:
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        for conn in [c for c in self._busy if c.deadline <= now]:
            conn.time_out()  # it leaves _busy when its request's coroutine resumes
        waiting = [c.deadline for c in self._busy if c.deadline > now]
        if waiting:
            self._sweeper = loop.call_at(min(waiting), self._sweep)

    async def _take(self, deadline: float) -> _Conn:
        """The most recently used idle connection that is still open, else a new one."""
        if self._closed:
            raise NoAnswer("the client is closed")
        idle = self._idle
        while idle:
            conn = idle.pop()
            if conn.usable:
                return conn
        loop = asyncio.get_running_loop()
        async with asyncio.timeout_at(min(deadline, loop.time() + self._connect_timeout_s)):
            _, conn = await loop.create_connection(
                _Conn, self.host, self.port, ssl=self._ssl, server_hostname=self._server_hostname
            )
        self.opened += 1
        return conn
