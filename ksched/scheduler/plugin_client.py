"""The API client the framework's Handle lends binding-cycle plugins (Reserve, PreBind, ...).

Requests run on the I/O thread's loop through the scheduler's own :class:`~ksched.kube.client.ApiClient`:
the same connection, credentials, client-side rate limit and retries with backoff as the binder
and the status writer, and only what the client retries safely is retried (reads and idempotent
writes; a POST is sent once). ``request`` returns a future at once, so a plugin never blocks the
scheduling thread on the network; each request is bounded by its ``timeout_s``.

Fencing: while this replica does not lead, every write is refused with :class:`NotLeading`
before it leaves the process, as the binder's and the reporter's are.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable
from typing import Any

from ksched.errors import KschedError
from ksched.kube.client import ApiClient
from ksched.kube.io_thread import IOThread

_IDEMPOTENT = frozenset({"GET", "PUT", "PATCH", "DELETE"})


class NotLeading(KschedError):
    """A plugin asked to write while this replica is not the leader; nothing was sent."""


class PluginApiClient:
    """:class:`ksched.framework.handle.ApiClient` over the scheduler's connection."""

    def __init__(self, io: IOThread, client: ApiClient, *, leading: Callable[[], bool]) -> None:
        self._io = io
        self._client = client
        self._leading = leading

    def request(
        self, method: str, path: str, body: Any = None, *, timeout_s: float
    ) -> concurrent.futures.Future[Any]:
        """Send ``method path`` (with ``body`` as JSON); the future holds the decoded answer or the
        error that ended the retries (:class:`~ksched.errors.ApiError`, ``TimeoutError``)."""
        verb = method.upper()
        if verb != "GET" and not self._leading():
            failed: concurrent.futures.Future[Any] = concurrent.futures.Future()
            failed.set_exception(NotLeading(f"{verb} {path}: this replica does not lead; nothing was sent"))
            return failed
        call = self._client.request(verb, path, body=body, retry=verb in _IDEMPOTENT, write=verb != "GET")
        return self._io.submit(asyncio.wait_for(call, timeout_s))
