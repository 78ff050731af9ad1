"""``IOThread``: one daemon thread running one asyncio event loop that carries all API traffic.

Why a thread and asyncio (DESIGN.md §1, §5): the scheduling thread does the CPU work; the I/O thread
keeps many bindings, watches and event posts in flight on one HTTP session at a fraction of the CPU a
thread pool costs, and touches nothing of the scheduler's state. The two sides talk through queues:
the scheduling thread hands work in with :meth:`IOThread.submit` (a coroutine, answered through a
``concurrent.futures.Future``), :meth:`IOThread.call_soon` or :meth:`IOThread.call_soon_batched` (the
bulk path: bindings and events); informers hand events out through their sink, called on this thread.

Lifecycle: :meth:`start` (or ``with IOThread() as io:``), then :meth:`stop`, which cancels every task
still running on the loop, awaits the registered closers (``ApiClient.close``, so no "Unclosed client
session" warning), shuts down async generators and the default executor (used for credential
refreshes), stops the loop and joins the thread. Nothing is left running after ``stop`` returns.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable, Coroutine
from types import TracebackType
from typing import Any, TypeVar

from ksched.kube.client import ApiClient
from ksched.kube.connection import Connection

log = logging.getLogger(__name__)

T = TypeVar("T")


class IOThread:
    """A daemon thread with its own event loop; see the module docstring."""

    def __init__(self, name: str = "ksched-io") -> None:
        self.name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._closers: list[Callable[[], Awaitable[None]]] = []
        self._stopping = False
        self._batch: collections.deque[tuple[Callable[..., Any], tuple[Any, ...]]] = collections.deque()
        self._batch_scheduled = False
        """Set when a :meth:`_run_batch` is queued on the loop that will see every item appended now."""

    # -- lifecycle ----------------------------------------------------------------------------------
    def start(self) -> IOThread:
        """Start the thread and its loop; returns once the loop is running."""
        if self._thread is not None:
            raise RuntimeError(f"{self.name}: already started")
        loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.call_soon(ready.set)
            try:
                loop.run_forever()
            finally:
                loop.close()

        self._loop = loop
        self._thread = threading.Thread(target=run, name=self.name, daemon=True)
        self._thread.start()
        ready.wait()
        return self

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            raise RuntimeError(f"{self.name}: not started")
        return self._loop

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and not self._stopping

    def in_thread(self) -> bool:
        """Whether the caller runs on this I/O thread."""
        return self._thread is not None and threading.current_thread() is self._thread

    def add_closer(self, closer: Callable[[], Awaitable[None]]) -> None:
        """Await ``closer()`` on the loop during :meth:`stop`, after tasks are cancelled (LIFO)."""
        self._closers.append(closer)

    def stop(self, timeout: float = 5.0) -> None:
        """Cancel tasks, run closers, stop the loop and join the thread (idempotent)."""
        thread, loop = self._thread, self._loop
        if thread is None or loop is None or self._stopping:
            return
        if self.in_thread():
            raise RuntimeError(f"{self.name}: stop() called from the I/O thread itself")
        self._stopping = True
        try:
            fut = asyncio.run_coroutine_threadsafe(self._shutdown(), loop)
            try:
                fut.result(timeout)
            except (concurrent.futures.TimeoutError, TimeoutError):
                log.warning(
                    "%s: shutdown did not finish in %.1fs; stopping the loop anyway", self.name, timeout
                )
            except Exception:
                log.exception("%s: error during shutdown", self.name)
            with contextlib.suppress(RuntimeError):  # loop already closed
                loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout)
            if thread.is_alive():
                log.warning("%s: thread did not exit within %.1fs", self.name, timeout)
        finally:
            self._thread = None
            self._stopping = False

    async def _shutdown(self) -> None:
        me = asyncio.current_task()
        tasks = [t for t in asyncio.all_tasks() if t is not me]
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        closers, self._closers = self._closers, []
        for closer in reversed(closers):
            try:
                await closer()
            except Exception:
                log.exception("%s: closer %r failed", self.name, closer)
        await asyncio.sleep(0)  # let transports see their close
        loop = asyncio.get_running_loop()
        await loop.shutdown_asyncgens()
        await loop.shutdown_default_executor()

    def __enter__(self) -> IOThread:
        return self.start() if self._thread is None else self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- hand-off -----------------------------------------------------------------------------------
    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the loop from any thread; its result arrives through the future."""
        if not self.running:
            coro.close()
            raise RuntimeError(f"{self.name}: not running")
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """``submit(coro).result(timeout)``: block the calling (non-I/O) thread for the answer."""
        if self.in_thread():
            coro.close()
            raise RuntimeError(f"{self.name}: run() would deadlock on the I/O thread")
        return self.submit(coro).result(timeout)

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        """Call ``fn(*args)`` on the loop as soon as possible (thread-safe, non-blocking)."""
        self.loop.call_soon_threadsafe(fn, *args)

    def call_soon_batched(self, fn: Callable[..., Any], *args: Any) -> None:
        """Like :meth:`call_soon`, but calls handed over in a burst share one wakeup of the loop.

        ``call_soon_threadsafe`` costs a callback handle, a lock and a byte through the loop's self-pipe
        (a ``select`` wakeup and a read) per call: a few microseconds of GIL time for each of the
        thousands of bindings per second the scheduling thread hands over. Here a call is a deque
        append; only the first call after the loop last drained the deque wakes the loop, and
        :meth:`_run_batch` then makes every call queued so far, in order. Calls made through this
        method keep their order among themselves, not relative to :meth:`call_soon` or
        :meth:`submit`. Exceptions go to the loop's exception handler, as with ``call_soon``.
        """
        self._batch.append((fn, args))
        if not self._batch_scheduled:
            # Races are benign under the GIL: _run_batch clears the flag before it counts the deque,
            # so an item appended after that either sees the flag clear and queues another
            # _run_batch, or sees it set by a caller that has queued one; none is left behind.
            self._batch_scheduled = True
            try:
                self.loop.call_soon_threadsafe(self._run_batch)
            except BaseException:
                self._batch_scheduled = False
                raise

    def _run_batch(self) -> None:
        self._batch_scheduled = False
        batch = self._batch
        for _ in range(len(batch)):  # later arrivals have their own _run_batch queued (see above)
            fn, args = batch.popleft()
            try:
                fn(*args)
            except Exception as exc:
                self.loop.call_exception_handler(
                    {"message": f"{self.name}: exception in batched callback {fn!r}", "exception": exc}
                )

    def client(self, connection: Connection, **kwargs: Any) -> ApiClient:
        """An :class:`ApiClient` whose session lives on this loop and is closed by :meth:`stop`."""
        client = ApiClient(connection, **kwargs)
        self.add_closer(client.close)
        return client
