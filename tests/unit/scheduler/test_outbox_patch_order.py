"""Status patches of one pod leave the outbox in the order the loop made them.

The nomination patch after a failed cycle and the one clearing it after the bind both write
``status.nominatedNodeName``; if the first were slow and arrived last, a bound pod would keep a stale
nomination. Patches of different pods still run concurrently.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from ksched.kube import IOThread
from ksched.scheduler import binder
from ksched.scheduler.binder import ApiOutbox
from ksched.scheduler.inbox import Inbox
from tests.builders import pod


def test_patches_of_one_pod_keep_their_order_others_overlap(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[tuple[str, str]] = []
    started: list[str] = []
    lock = threading.Lock()

    async def fake_patch(client: Any, namespace: str, name: str, patch: dict[str, Any], uid: str) -> None:
        tag = patch["tag"]
        with lock:
            started.append(tag)
        await asyncio.sleep(0.2 if tag == "nominate" else 0.0)  # the first patch is the slow one
        with lock:
            sent.append((name, tag))

    monkeypatch.setattr(binder, "patch_pod_status", fake_patch)
    io = IOThread(name="ksched-io-test").start()
    try:
        outbox = ApiOutbox(io, object(), Inbox())  # type: ignore[arg-type]  # patches are faked
        a, b = pod(name="a", uid="a"), pod(name="b", uid="b")
        outbox.patch_status(a, {"tag": "nominate"})
        outbox.patch_status(a, {"tag": "clear"})
        outbox.patch_status(b, {"tag": "other"})
        deadline = time.monotonic() + 5
        while len(sent) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        io.stop()
    assert [t for n, t in sent if n == "a"] == ["nominate", "clear"]
    assert sent[0] == ("b", "other")  # not held behind another pod's slow patch
    assert not outbox._patch_tails  # nothing kept once the patches are done
