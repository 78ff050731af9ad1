"""``HTTPExtender``: upstream's HTTP extender (``pkg/scheduler/extender.go``) on the I/O thread.

Every call is a ``POST <urlPrefix>/<verb>`` with a JSON body (orjson) on one aiohttp session per
extender, kept alive across calls, on the I/O thread's loop. Filter and preempt run on the
scheduling thread, which waits for the answer up to ``httpTimeout``; prioritize starts its request
and hands back a future, so a cycle's prioritizers are in flight together; bind is a coroutine
the binding runs on the I/O loop (:mod:`.binding`), off the scheduling thread.

Failures are :class:`~ksched.errors.ExtenderError` with upstream's texts where upstream has one:
``Post "<url>": <cause>`` for transport failures and timeouts, ``failed <verb> with extender at
URL <url>, code <status>`` for a status other than 200, the extender's own ``Error`` field. A reply
over :data:`MAX_REPLY_BYTES` or that is not JSON of the expected shape names the extender and verb.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any

import aiohttp
import orjson

from ksched.cache.reader import ClusterReader
from ksched.config.extenders import Extender as ExtenderConfig
from ksched.errors import ExtenderError
from ksched.framework.extender import FilterVerdict, PendingScores, Victims, interested_in
from ksched.kube.io_thread import IOThread
from ksched.model.node import Node
from ksched.model.pod import Pod
from ksched.scheduler.extenders import wire
from ksched.scheduler.extenders.tls import ssl_context

log = logging.getLogger(__name__)

MAX_REPLY_BYTES = 16 * 1024 * 1024
"""The largest reply read from an extender (16 MiB): a filter reply for 5,000 full Node objects
is a few MiB; anything bigger is refused rather than buffered."""
_MARGIN_S = 1.0
"""How much longer than ``httpTimeout`` the scheduling thread waits for the I/O loop's answer
(aiohttp enforces the timeout itself; this only guards against a stalled loop)."""


class HTTPExtender:
    """One configured extender (the :class:`~ksched.framework.extender.Extender` Protocol)."""

    def __init__(
        self,
        config: ExtenderConfig,
        io: IOThread,
        observe: Any = None,
        raw_nodes: wire.RawSource | None = None,
    ) -> None:
        """``observe``: the ``ksched_extender_request_duration_seconds`` histogram (or None);
        ``raw_nodes``: the nodes' JSON as the API server sent it (:mod:`.nodes`), for an extender
        that is not node-cache-capable."""
        self.config = config
        self.io = io
        self._observe = observe
        self._objects = wire.NodeObjects(raw_nodes)
        """Encoded nodes for a non-node-cache-capable extender (built on the scheduling thread)."""
        self._managed = frozenset(r.name for r in config.managed_resources)
        self._ssl = ssl_context(config)
        self._session: aiohttp.ClientSession | None = None
        self._timeout = aiohttp.ClientTimeout(total=config.http_timeout_s)
        self._server_name = (
            config.tls.server_name if config.tls is not None and config.tls.server_name else None
        )

    # ------------------------------------------------------------------ Protocol
    @property
    def name(self) -> str:
        return self.config.url_prefix

    @property
    def weight(self) -> int:
        return self.config.weight

    def is_interested(self, pod: Pod) -> bool:
        return interested_in(self._managed, pod)

    def is_filter(self) -> bool:
        return bool(self.config.filter_verb)

    def is_prioritizer(self) -> bool:
        return bool(self.config.prioritize_verb)

    def is_binder(self) -> bool:
        return bool(self.config.bind_verb)

    def supports_preemption(self) -> bool:
        return bool(self.config.preempt_verb)

    def is_ignorable(self) -> bool:
        return self.config.ignorable

    def filter(self, pod: Pod, nodes: Sequence[Node]) -> FilterVerdict:
        cfg = self.config
        args = wire.extender_args(
            pod, nodes, node_cache_capable=cfg.node_cache_capable, objects=self._objects
        )
        sent = [n.name for n in nodes]
        reply = wire.Reply(self.name, "filter")

        def parse(data: Any) -> FilterVerdict:
            return wire.filter_verdict(reply, data, sent, node_cache_capable=cfg.node_cache_capable)

        return self.wait_for(
            "filter", self._submit("filter", self.send("filter", cfg.filter_verb, args, parse))
        )

    def prioritize(self, pod: Pod, nodes: Sequence[Node]) -> PendingScores:
        cfg = self.config
        args = wire.extender_args(
            pod, nodes, node_cache_capable=cfg.node_cache_capable, objects=self._objects
        )
        reply = wire.Reply(self.name, "prioritize")

        def parse(data: Any) -> list[tuple[str, int]]:
            return wire.host_priorities(reply, data)

        return _Pending(
            self, self._submit("prioritize", self.send("prioritize", cfg.prioritize_verb, args, parse))
        )

    def bind(self, pod: Pod, node: str) -> None:
        self.wait_for("bind", self._submit("bind", self.bind_async(pod, node)))

    async def bind_async(self, pod: Pod, node: str) -> None:
        """Upstream ``HTTPExtender.Bind``, on the I/O loop."""
        reply = wire.Reply(self.name, "bind")
        args = wire.binding_args(pod, node)
        error = await self.send(
            "bind", self.config.bind_verb, args, lambda data: wire.binding_error(reply, data)
        )
        if error:
            raise ExtenderError(self.name, "bind", error)

    def process_preemption(
        self, pod: Pod, victims: Mapping[str, Victims], cluster: ClusterReader
    ) -> dict[str, Victims]:
        cfg = self.config
        args = wire.preemption_args(pod, victims, node_cache_capable=cfg.node_cache_capable)
        data = self.wait_for("preempt", self._submit("preempt", self.send("preempt", cfg.preempt_verb, args)))
        return wire.meta_victims(wire.Reply(self.name, "preempt"), data, cluster)

    # ------------------------------------------------------------------ HTTP
    def url(self, verb: str) -> str:
        return self.config.url_prefix.rstrip("/") + "/" + verb

    def wait_for(self, verb: str, future: concurrent.futures.Future[Any]) -> Any:
        """The answer of a call started on the I/O loop, waited for on the calling thread."""
        try:
            return future.result(self.config.http_timeout_s + _MARGIN_S)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise ExtenderError(
                self.name, verb, f'Post "{self.url(verb)}": the I/O loop did not answer'
            ) from None
        except concurrent.futures.CancelledError:
            raise ExtenderError(self.name, verb, f'Post "{self.url(verb)}": the I/O loop stopped') from None

    def _submit(self, verb: str, coro: Coroutine[Any, Any, Any]) -> concurrent.futures.Future[Any]:
        try:
            return self.io.submit(coro)
        except RuntimeError as exc:  # the I/O thread is gone (shutting down)
            raise ExtenderError(self.name, verb, f'Post "{self.url(verb)}": {exc}') from None

    async def send(
        self,
        verb: str,
        path_verb: str,
        args: Mapping[str, Any] | bytes,
        parse: Callable[[Any], Any] | None = None,
    ) -> Any:
        """POST ``args`` to ``<urlPrefix>/<path_verb>``; the decoded reply, read by ``parse`` (on the
        I/O loop: it must not touch the cache) when given. ``verb`` names the call; the metric's
        result is ``error`` when any of it failed."""
        url = self.url(path_verb)
        started = time.perf_counter()
        result = "error"
        try:
            body = await self._post(url, args if isinstance(args, bytes) else orjson.dumps(args))
            try:
                data = orjson.loads(body)
            except orjson.JSONDecodeError as exc:
                # orjson refuses nesting past 1,024 levels (ksched.bounded.MAX_DEPTH) with "depth limit
                # exceeded": the reply's depth is bounded as its size is, without a second pass.
                raise wire.Reply(self.name, verb).error(f"not valid JSON ({exc})") from None
            out = parse(data) if parse is not None else data
            result = "success"
            return out
        except TimeoutError:
            raise ExtenderError(
                self.name,
                verb,
                f'Post "{url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)',
            ) from None
        except aiohttp.ClientError as exc:
            raise ExtenderError(self.name, verb, f'Post "{url}": {_cause(exc)}') from None
        finally:
            if self._observe is not None:
                self._observe.labels(extender=self.name, verb=verb, result=result).observe(
                    time.perf_counter() - started
                )

    async def _post(self, url: str, body: bytes) -> bytes:
        session = self._get_session()
        headers = {"Content-Type": "application/json"}
        async with session.post(url, data=body, headers=headers, server_hostname=self._server_name) as resp:
            if resp.status != 200:
                verb = url.rsplit("/", 1)[-1]
                raise ExtenderError(
                    self.name, verb, f"failed {verb} with extender at URL {url}, code {resp.status}"
                )
            return await _read_bounded(resp, self.name, url)

    def _get_session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(ssl=self._ssl if self._ssl is not None else False)
            self._session = aiohttp.ClientSession(connector=connector, timeout=self._timeout)
            self.io.add_closer(self.close)
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            with contextlib.suppress(Exception):
                await self._session.close()
            self._session = None


async def _read_bounded(resp: aiohttp.ClientResponse, name: str, url: str) -> bytes:
    """The body, refused once it grows past :data:`MAX_REPLY_BYTES`."""
    verb = url.rsplit("/", 1)[-1]
    too_big = ExtenderError(
        name, verb, f'extender "{name}": {verb} reply is larger than {MAX_REPLY_BYTES} bytes'
    )
    if resp.content_length is not None and resp.content_length > MAX_REPLY_BYTES:
        raise too_big
    chunks: list[bytes] = []
    size = 0
    async for chunk in resp.content.iter_chunked(1 << 16):
        size += len(chunk)
        if size > MAX_REPLY_BYTES:
            raise too_big
        chunks.append(chunk)
    return b"".join(chunks)


def _cause(exc: aiohttp.ClientError) -> str:
    """The transport failure in Go's words where they are well known."""
    if isinstance(exc, aiohttp.ClientConnectorError) and isinstance(exc.os_error, ConnectionRefusedError):
        return f"dial tcp {exc.host}:{exc.port}: connect: connection refused"
    return str(exc) or type(exc).__name__


class _Pending:
    """A prioritize request in flight (:class:`~ksched.framework.extender.PendingScores`)."""

    def __init__(self, ext: HTTPExtender, future: concurrent.futures.Future[Any]) -> None:
        self._ext = ext
        self._future = future

    def result(self) -> list[tuple[str, int]]:
        return self._ext.wait_for("prioritize", self._future)
