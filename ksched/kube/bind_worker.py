"""A child process that posts bindings, so that their HTTP work runs beside the scheduler's GIL.

Why a process: the scheduler is one Python process, and everything it does holds one interpreter
lock. A binding's HTTP round trip through aiohttp (building the request, the transport, parsing
the answer, the task around it) holds that lock longer than the scheduling cycle that chose the
node (``py-spy --gil`` on ``ksched bench`` shows the split, see ``docs/profiling.md``). A binding
needs nothing of the scheduler's state but four strings, and its answer is one status, so it moves
to a process of its own: the scheduler keeps a pipe write and a line parse per binding, and the
child does the HTTP on another core.

The child (``python -m ksched.kube.bind_worker``) loads the same API configuration as the scheduler,
opens its own :class:`ApiClient` (its own connection pool and its own ``qps``/``burst`` budget, as
upstream kube-scheduler's event and leader-election clients have theirs) and runs
:func:`ksched.kube.writers.bind` for every request: the same retries, the same uid precondition, the
same reading back after a 409. So a binding is applied at most once wherever it runs.

The wire between the two is a pair of pipes carrying one JSON array per line:

- scheduler → child: ``[id, namespace, name, uid, node]``;
- child → scheduler: ``["ready"]`` once, then ``[id]`` for a binding in place, or
  ``[id, status, reason, message]`` for one that failed (``status`` 0: no HTTP answer); and, ahead of
  the answers of each write, ``["metrics", delta]`` with the child's REST client metrics since the
  last one (:meth:`~ksched.kube.request_metrics.RequestTally.take`), which the scheduler adds to its
  own so that its ``rest_client_*`` metrics count the bindings' requests.

Fencing (:mod:`ksched.kube.fence`): the parent shares its fence's write deadline with the child
through an inherited memory file (``--fence-fd``); the child's client checks it right before each
binding attempt leaves, so a binding handed over but not yet sent when this replica stops leading
(or stops renewing in time) is never sent, with no message needed. The parent also refuses to hand
a binding over once the fence is shut.

End of input (the scheduler closed the pipe, or died) makes the child finish the bindings in flight
and exit. When the child dies instead, :class:`BindWorker` fails the bindings it had in flight
with :class:`ApiConnectionError` (the scheduler requeues those pods; one that was bound after all is
found bound by the informer and the retry answers 409) and starts a new child for the next binding,
at most ``max_starts`` times per ``start_window_s``; past that it binds in-process from then on,
and says so in the log.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import itertools
import logging
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from ksched.errors import ApiError, KschedError
from ksched.kube.client import USER_AGENT, ApiClient, ApiConnectionError, status_error
from ksched.kube.fence import Fence, SharedDeadline, SharedGate
from ksched.kube.request_metrics import RequestTally
from ksched.kube.writers import bind
from ksched.model.paths import pod_path

log = logging.getLogger(__name__)

BindFn = Callable[[str, str, str, str], Awaitable[None]]
"""``bind(namespace, name, uid, node)``: raises the API's error when the binding is not in place."""

READY = b'["ready"]\n'
METRICS = "metrics"
"""The first element of a line that carries request metrics rather than an answer."""


def _lines(buffer: bytearray, data: bytes) -> list[bytes]:
    """Append ``data`` to ``buffer`` and take every complete line out of it."""
    buffer += data
    end = buffer.rfind(b"\n")
    if end < 0:
        return []
    complete = bytes(buffer[: end + 1])
    del buffer[: end + 1]
    return complete.splitlines()


class _LineReader(asyncio.Protocol):
    """A pipe's bytes as complete lines, handed to ``on_lines``; ``on_eof`` when the pipe closes."""

    def __init__(self, on_lines: Callable[[list[bytes]], None], on_eof: Callable[[], None]) -> None:
        self._buffer = bytearray()
        self._on_lines = on_lines
        self._on_eof = on_eof

    def data_received(self, data: bytes) -> None:
        lines = _lines(self._buffer, data)
        if lines:
            self._on_lines(lines)

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._on_eof()


class _BatchedWriter:
    """Lines for a pipe, written together once per turn of the loop: one syscall per burst.
    ``header`` (if any) gives a line to write ahead of each burst (b"": none)."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        transport: asyncio.WriteTransport,
        header: Callable[[], bytes] | None = None,
    ) -> None:
        self._loop = loop
        self._transport = transport
        self._header = header
        self._pending: list[bytes] = []

    def write(self, line: bytes) -> None:
        if not self._pending:
            self._loop.call_soon(self._flush)
        self._pending.append(line)

    def _flush(self) -> None:
        pending, self._pending = self._pending, []
        if pending and not self._transport.is_closing():
            if self._header is not None:
                pending.insert(0, self._header())
            self._transport.write(b"".join(pending))

    def close(self) -> None:
        self._flush()
        self._transport.close()


def error_answer(request_id: int, exc: BaseException) -> list[Any]:
    """The wire form of a failed binding."""
    if isinstance(exc, ApiError):
        return [request_id, exc.status, exc.reason, exc.message]
    return [request_id, 0, type(exc).__name__, str(exc) or repr(exc)]


def error_from_answer(answer: list[Any]) -> ApiError:
    """The exception the scheduler sees for a failed binding's answer (the inverse of the above)."""
    _, status, reason, message = answer
    if not status:
        return ApiConnectionError(str(reason), str(message))
    return status_error(int(status), {"reason": reason, "message": message})


# ------------------------------------------------------------------------------------------ the child
def metrics_line(tally: RequestTally) -> bytes:
    """The line carrying what ``tally`` counted since the last one (b"" when nothing)."""
    delta = tally.take()
    return b"" if delta is None else orjson.dumps([METRICS, delta]) + b"\n"


async def serve(client: ApiClient, max_in_flight: int, tally: RequestTally | None = None) -> None:
    """Bind what arrives on stdin, answer on stdout; return once stdin closed and all is answered.
    ``tally``: the client's request metrics, sent ahead of the answers."""
    loop = asyncio.get_running_loop()
    out_transport, _ = await loop.connect_write_pipe(asyncio.Protocol, sys.stdout.buffer)
    header = (lambda: metrics_line(tally)) if tally is not None else None
    out = _BatchedWriter(loop, out_transport, header)
    slots = asyncio.Semaphore(max_in_flight)
    tasks: set[asyncio.Task[None]] = set()
    closed = loop.create_future()

    async def one(request: list[Any]) -> None:
        request_id, namespace, name, uid, node = request
        async with slots:
            try:
                await bind(client, namespace, name, uid, node)
            except Exception as exc:  # every failure is an answer; the scheduler decides
                out.write(orjson.dumps(error_answer(request_id, exc)) + b"\n")
            else:
                out.write(b"[%d]\n" % request_id)

    def on_lines(lines: list[bytes]) -> None:
        for line in lines:
            try:
                request = orjson.loads(line)
                if not (
                    isinstance(request, list)
                    and len(request) == 5
                    and type(request[0]) is int
                    and all(isinstance(field, str) for field in request[1:])
                ):
                    raise ValueError("not a [id, namespace, name, uid, node] array of an int and strings")
            except ValueError as exc:
                log.error("bind worker: ignoring malformed request %r: %s", line[:200], exc)
                continue
            task = loop.create_task(one(request))
            tasks.add(task)
            task.add_done_callback(tasks.discard)

    def on_eof() -> None:
        if not closed.done():
            closed.set_result(None)

    # SIGTERM (a whole process group stopped at once) ends it as end of input does: answer, then exit.
    loop.add_signal_handler(signal.SIGTERM, on_eof)
    await loop.connect_read_pipe(lambda: _LineReader(on_lines, on_eof), sys.stdin.buffer)
    out.write(READY)
    await closed
    while tasks:
        await asyncio.wait(list(tasks))
    out.close()
    while out_transport.get_write_buffer_size():  # the last answers must leave before the loop closes
        await asyncio.sleep(0.01)


def main(argv: list[str] | None = None) -> int:
    """``python -m ksched.kube.bind_worker``: started by :class:`BindWorker`, not by hand."""
    from ksched.kube.connection import load_connection

    parser = argparse.ArgumentParser(prog="ksched-bind-worker")
    parser.add_argument("--kubeconfig", default=None)
    parser.add_argument("--qps", type=float, required=True)
    parser.add_argument("--burst", type=int, required=True)
    parser.add_argument("--max-in-flight", type=int, default=256)
    parser.add_argument("--log-level", default="WARNING")
    parser.add_argument("--user-agent", default=USER_AGENT)
    parser.add_argument("--fence-fd", type=int, default=None, help="the parent's shared write deadline")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s bind-worker %(message)s")
    # The scheduler owns shutdown: a Ctrl-C sent to the whole process group must not cut bindings
    # short here; the scheduler drains and then closes our stdin.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        connection = load_connection(args.kubeconfig)
    except KschedError as exc:
        log.error("bind worker: %s", exc)
        return 2

    gate = SharedGate(SharedDeadline.attach(args.fence_fd)) if args.fence_fd is not None else None

    async def run() -> None:
        tally = RequestTally()
        client = ApiClient(
            connection, qps=args.qps, burst=args.burst, metrics=tally, gate=gate, user_agent=args.user_agent
        )
        try:
            await serve(client, args.max_in_flight, tally)
        finally:
            await client.close()

    asyncio.run(run())
    return 0


# ----------------------------------------------------------------------------------------- the parent
class BindWorker:
    """The scheduler's side: :meth:`bind` is a drop-in for :func:`ksched.kube.writers.bind`.

    Lives on the I/O thread's loop. ``fallback`` binds in-process (the scheduler's own client) once
    the child has failed too often to keep restarting it. With a ``fence`` the child shares its
    write deadline and no binding is handed over while it is shut (see the module docstring).
    """

    def __init__(
        self,
        fallback: BindFn,
        *,
        kubeconfig: str | None,
        qps: float,
        burst: int,
        max_in_flight: int = 256,
        max_starts: int = 3,
        start_window_s: float = 60.0,
        start_timeout_s: float = 30.0,
        answer_timeout_s: float = 300.0,
        command: list[str] | None = None,
        request_metrics: RequestTally | None = None,
        fence: Fence | None = None,
        user_agent: str | None = None,
    ) -> None:
        """``request_metrics``: the scheduler's tally, where the child's request metrics are added."""
        self._fallback = fallback
        self._request_metrics = request_metrics
        self._fence = fence
        argv = ["--qps", repr(qps), "--burst", str(burst), "--max-in-flight", str(max_in_flight)]
        argv += ["--log-level", logging.getLevelName(max(logging.getLogger().level, logging.INFO))]
        if kubeconfig:
            argv += ["--kubeconfig", kubeconfig]
        if user_agent:
            argv += ["--user-agent", user_agent]
        self._command = (command or [sys.executable, "-m", "ksched.kube.bind_worker"]) + argv
        self._max_starts = max_starts
        self._start_window_s = start_window_s
        self._start_timeout_s = start_timeout_s
        self._answer_timeout_s = answer_timeout_s
        self._sent: collections.deque[tuple[int, float]] = collections.deque()
        """(id, time sent) of every request, oldest first; answered ones are dropped by the watchdog."""
        self._watchdog: asyncio.TimerHandle | None = None
        self._starts: list[float] = []
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[None]] = {}
        self._proc: subprocess.Popen[bytes] | None = None
        self._writer: _BatchedWriter | None = None
        self._ready: asyncio.Future[None] | None = None
        self._starting: asyncio.Task[bool] | None = None
        self.gave_up = False
        """Set once the child failed ``max_starts`` times in a window: bindings go in-process."""
        self.unexpected_exits = 0
        """Exits this side did not ask for (crashes, kills): each one's bindings in flight failed."""
        self._closing = False
        self._unreaped: set[subprocess.Popen[bytes]] = set()
        """Children whose output closed before their exit could be collected (no zombies left)."""

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    async def start(self) -> bool:
        """Start the child and wait for its ``ready``; False (and in-process binding) if it fails."""
        if self._writer is not None:
            return True
        if self._starting is None:
            self._starting = asyncio.get_running_loop().create_task(self._start())
        starting = self._starting
        try:
            return await asyncio.shield(starting)
        finally:
            if starting.done() and self._starting is starting:
                self._starting = None

    async def _start(self) -> bool:
        """Up to ``max_starts`` tries in a row (0.2 s, 0.4 s, ... apart); giving up is for good."""
        for attempt in range(self._max_starts):
            now = time.monotonic()
            self._starts = [t for t in self._starts if now - t < self._start_window_s] + [now]
            if len(self._starts) > self._max_starts:  # dying as fast as it is started
                break
            if await self._spawn():
                return True
            await asyncio.sleep(0.2 * 2**attempt)
        log.error(
            "bind worker failed %d times within %.0fs; binding in the scheduler process from now on",
            len(self._starts),
            self._start_window_s,
        )
        self.gave_up = True
        return False

    async def _spawn(self) -> bool:
        loop = asyncio.get_running_loop()
        command: list[str] = self._command
        keep: tuple[int, ...] = ()
        if self._fence is not None:
            fd = self._fence.share()
            command, keep = [*command, "--fence-fd", str(fd)], (fd,)
        try:
            proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, pass_fds=keep)
        except OSError as exc:
            log.error("bind worker: cannot start %s: %s", self._command[0], exc)
            return False
        assert proc.stdin is not None and proc.stdout is not None
        self._proc = proc
        self._ready = loop.create_future()
        transport, _ = await loop.connect_write_pipe(asyncio.Protocol, proc.stdin)
        await loop.connect_read_pipe(
            lambda: _LineReader(self._on_answers, lambda: self._on_exit(proc)), proc.stdout
        )
        try:
            await asyncio.wait_for(asyncio.shield(self._ready), self._start_timeout_s)
        except (TimeoutError, ApiError) as exc:
            log.error("bind worker (pid %d) did not start: %s", proc.pid, exc or "timed out")
            transport.close()
            _kill(proc)
            return False
        except asyncio.CancelledError:  # stopping while it starts: its end of input lets it exit
            transport.close()
            raise
        self._writer = _BatchedWriter(loop, transport)
        log.info("bind worker started (pid %d)", proc.pid)
        if self._watchdog is None:
            self._watchdog = loop.call_later(self._answer_timeout_s / 4, self._check_answers)
        return True

    def _check_answers(self) -> None:
        """Kill a child that has sat on a request for ``answer_timeout_s``: its client gives up on a
        request long before that (timeouts and retries), so it is stuck, and only a new one helps."""
        loop = asyncio.get_running_loop()
        sent, pending = self._sent, self._pending
        while sent and sent[0][0] not in pending:
            sent.popleft()
        proc = self._proc
        if sent and loop.time() - sent[0][1] > self._answer_timeout_s and proc is not None:
            log.error(
                "bind worker (pid %d) has not answered a binding in %.0fs; killing it",
                proc.pid,
                self._answer_timeout_s,
            )
            with contextlib.suppress(ProcessLookupError):
                proc.kill()  # its output closes: _on_exit fails what it held
        self._watchdog = loop.call_later(self._answer_timeout_s / 4, self._check_answers)

    async def bind(self, namespace: str, name: str, uid: str, node: str) -> None:
        path = pod_path(namespace, name, "binding")  # a name no path can carry: refused here
        if self._fence is not None:  # raises Fenced: nothing handed over, nothing sent
            self._fence.writes.check("POST", path)
        if self._writer is None and not self.gave_up:
            await self.start()
        writer = self._writer
        if writer is None:  # gave up: bind here
            await self._fallback(namespace, name, uid, node)
            return
        request_id = next(self._ids)
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._pending[request_id] = future
        self._sent.append((request_id, loop.time()))
        writer.write(orjson.dumps([request_id, namespace, name, uid, node]) + b"\n")
        await future

    def _on_answers(self, lines: list[bytes]) -> None:
        pending = self._pending
        for line in lines:
            try:
                answer = orjson.loads(line)
                if answer[0] == METRICS:
                    if self._request_metrics is not None:
                        self._request_metrics.merge(answer[1])
                    continue
                future = pending.pop(answer[0], None) if answer != ["ready"] else None
            except (ValueError, TypeError, IndexError, KeyError):
                log.error("bind worker: ignoring malformed answer %r", line[:200])
                continue
            if answer == ["ready"]:
                if self._ready is not None and not self._ready.done():
                    self._ready.set_result(None)
                continue
            if future is None or future.done():
                continue
            if len(answer) == 1:
                future.set_result(None)
            else:
                future.set_exception(error_from_answer(answer))

    def _on_exit(self, proc: subprocess.Popen[bytes]) -> None:
        """The child's output closed: it exited (or is about to). Fail what it had in flight."""
        code: int | str | None = proc.poll()
        if code is None:  # output closed a moment before the exit: collect it soon, leave no zombie
            self._unreaped.add(proc)
            asyncio.get_running_loop().call_later(0.05, self._reap, proc, 0.05)
            code = "unknown yet"
        unexpected = self._proc is proc and not self._closing
        if self._proc is proc:
            self._proc = None
            if self._writer is not None:
                self._writer.close()
            self._writer = None
        if self._ready is not None and not self._ready.done():
            self._ready.set_exception(ApiConnectionError("BindWorkerExited", f"it exited (code {code})"))
            unexpected = False  # a failed start: _start reports it
        pending, self._pending = self._pending, {}
        if unexpected:
            self.unexpected_exits += 1
            log.error(
                "bind worker (pid %d) exited with code %s and %d bindings in flight (their pods go back "
                "to the queue); a new one starts with the next binding",
                proc.pid,
                code,
                len(pending),
            )
        for future in pending.values():
            if not future.done():
                future.set_exception(
                    ApiConnectionError(
                        "BindWorkerExited",
                        f"the bind worker exited (code {code}) before answering; the binding may or "
                        "may not have been applied",
                    )
                )

    def _reap(self, proc: subprocess.Popen[bytes], delay_s: float) -> None:
        if proc.poll() is not None:
            self._unreaped.discard(proc)
        elif proc in self._unreaped:
            asyncio.get_running_loop().call_later(delay_s, self._reap, proc, min(2 * delay_s, 5.0))

    async def close(self, timeout_s: float = 10.0) -> None:
        """Close the child's input, let it answer what is in flight, and reap it."""
        proc, writer = self._proc, self._writer
        self._writer = None
        self._closing = True
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        if writer is not None:
            writer.close()
        for old in list(self._unreaped):  # earlier children whose exit was not collected yet
            _kill(old)
        self._unreaped.clear()
        if proc is None:
            return
        deadline = time.monotonic() + timeout_s
        while proc.poll() is None and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        if proc.poll() is None:
            log.warning("bind worker (pid %d) did not exit within %.0fs; killing it", proc.pid, timeout_s)
            _kill(proc)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=1.0)


if __name__ == "__main__":
    sys.exit(main())
