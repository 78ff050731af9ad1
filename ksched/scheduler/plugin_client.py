"""The API client the framework's Handle lends binding-cycle plugins (Reserve, PreBind, ...).

Requests run on the I/O thread's loop through the scheduler's own :class:`~ksched.kube.client.ApiClient`:
the same connection, credentials, client-side rate limit and retries with backoff as the binder
and the status writer, and only what the client retries safely is retried (reads and idempotent
writes; a POST is sent once). ``request`` returns a future at once, so a plugin never blocks the
scheduling thread on the network; each request is bounded by its ``timeout_s``.

Fencing: while the process's fence (:mod:`ksched.kube.fence`) is shut (a standby, a deposed
leader, a renewal overdue) every write is refused with :class:`NotLeading` before it is handed to
the I/O loop, as the outbox's are; the client asks the same fence again right before sending.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any

from ksched.kube.client import ApiClient
from ksched.kube.fence import Fenced, WriteGate
from ksched.kube.io_thread import IOThread

_IDEMPOTENT = frozenset({"GET", "PUT", "PATCH", "DELETE"})


class NotLeading(Fenced):
    """A plugin asked to write while this replica is not the leader; nothing was sent."""


class PluginApiClient:
    """:class:`ksched.framework.handle.ApiClient` over the scheduler's connection."""

    def __init__(self, io: IOThread, client: ApiClient, *, fence: WriteGate | None) -> None:
        self._io = io
        self._client = client
        self._fence = fence
        """None: no leader election, writes are not fenced."""

    def request(
        self, method: str, path: str, body: Any = None, *, timeout_s: float
    ) -> concurrent.futures.Future[Any]:
        """Send ``method path`` (with ``body`` as JSON); the future holds the decoded answer or the
        error that ended the retries (:class:`~ksched.errors.ApiError`, ``TimeoutError``)."""
        verb = method.upper()
        if verb != "GET" and self._fence is not None and not self._fence.allows():
            failed: concurrent.futures.Future[Any] = concurrent.futures.Future()
            failed.set_exception(NotLeading(f"{verb} {path}: this replica does not lead; nothing was sent"))
            return failed
        call = self._client.request(verb, path, body=body, retry=verb in _IDEMPOTENT, write=verb != "GET")
        return self._io.submit(asyncio.wait_for(call, timeout_s))
