"""Binding through an extender (upstream ``extendersBinding``), in the binding, off the scheduling thread.

:class:`ExtenderOutbox` stands in front of the scheduler's outbox. A pod some binder extender is
interested in is bound by it: the call runs on the I/O loop and its outcome comes back through the
inbox as a :class:`~ksched.scheduler.inbox.BindDone`, exactly like a posted binding's, so the loop
confirms, or forgets and requeues, as for any binding. As upstream: an ignorable binder that fails
hands the pod to the next interested binder, then to the ordinary binding; a non-ignorable one's
error is the binding's error. Every other pod, and every other write, goes to the outbox unchanged.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from ksched.errors import ExtenderError
from ksched.framework.extender import Extender, binder_for
from ksched.kube.fence import Fenced
from ksched.kube.io_thread import IOThread
from ksched.model.pod import Pod
from ksched.scheduler.binder import Outbox
from ksched.scheduler.inbox import BindDone, Inbox
from ksched.scheduler.preemption import PreemptionJob

log = logging.getLogger(__name__)


class ExtenderOutbox:
    """An :class:`~ksched.scheduler.binder.Outbox` whose bindings go to a binder extender first."""

    def __init__(self, outbox: Outbox, extenders: Sequence[Extender], io: IOThread, inbox: Inbox) -> None:
        self.outbox = outbox
        self.extenders = tuple(extenders)
        self.io = io
        self.inbox = inbox
        self._tasks: set[asyncio.Task[None]] = set()

    def bind(self, pod: Pod, node: str) -> None:
        binders = binder_for(self.extenders, pod)
        if not binders:
            self.outbox.bind(pod, node)
            return
        fence = getattr(self.outbox, "fence", None)
        if fence is not None and not fence.allows():
            self.inbox.put(
                BindDone(pod, node, Fenced(f"bind of {pod.key} by extender not sent: not leading"))
            )
            return
        self.io.call_soon(self._start, pod, node, binders)

    def patch_status(self, pod: Pod, patch: dict[str, Any]) -> None:
        self.outbox.patch_status(pod, patch)

    def event(self, body: dict[str, Any]) -> None:
        self.outbox.event(body)

    def preempt(self, job: PreemptionJob) -> None:
        self.outbox.preempt(job)

    def __getattr__(self, name: str) -> Any:
        # The rest of the outbox's surface (would_drop, fence, counters) is the outbox's own.
        return getattr(self.outbox, name)

    def _start(self, pod: Pod, node: str, binders: list[Extender]) -> None:
        task = asyncio.get_running_loop().create_task(self._bind(pod, node, binders))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _bind(self, pod: Pod, node: str, binders: list[Extender]) -> None:
        for ext in binders:
            try:
                await _call_bind(ext, pod, node)
            except ExtenderError as exc:
                if ext.is_ignorable():
                    log.info(
                        "skipping extender %s in bind as it returned error and has ignorable flag set: %s",
                        ext.name,
                        exc,
                    )
                    continue
                self.inbox.put(BindDone(pod, node, exc))
                return
            except Exception as exc:  # an extender's bug must come back as the binding's failure
                log.exception("extender %s failed to bind %s", ext.name, pod.key)
                self.inbox.put(BindDone(pod, node, exc))
                return
            self.inbox.put(BindDone(pod, node))
            return
        self.outbox.bind(pod, node)


async def _call_bind(ext: Extender, pod: Pod, node: str) -> None:
    """The extender's bind on the loop: its coroutine when it has one, else in a worker thread."""
    bind_async = getattr(ext, "bind_async", None)
    if bind_async is not None:
        await bind_async(pod, node)
        return
    await asyncio.get_running_loop().run_in_executor(None, ext.bind, pod, node)
