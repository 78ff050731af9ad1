"""The outbox asks the fence before it hands anything to the I/O loop.

A standby's handlers still report (an invalid pod's FailedScheduling, a gated pod's condition, a
cleared nomination), and a deposed leader's loop may still be mid-cycle: none of it may be handed
over. The I/O thread here is never started, so anything handed over would raise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ksched.kube import IOThread
from ksched.kube.fence import Fence, Fenced
from ksched.scheduler.binder import ApiOutbox
from ksched.scheduler.inbox import BindDone, Inbox, PreemptionDone
from ksched.scheduler.preemption import PreemptionJob
from tests.builders import pod

EVENT = {"metadata": {"namespace": "default"}, "type": "Warning", "reason": "FailedScheduling"}


def _outbox(fence: Fence) -> tuple[ApiOutbox, Inbox]:
    inbox = Inbox()
    return ApiOutbox(IOThread(name="never-started"), object(), inbox, fence=fence.writes), inbox  # type: ignore[arg-type]


def _deposed() -> Fence:
    fence = Fence(leader_election=True)
    fence.acquired(until=float("inf"))
    fence.deposed("not renewed within renewDeadline (10s)")
    return fence


@pytest.mark.parametrize(
    "fence",
    [
        pytest.param(Fence(leader_election=True), id="a standby"),
        pytest.param(_deposed(), id="a deposed leader"),
    ],
)
@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda box: box.patch_status(pod(name="p"), {"status": {}}), id="status patch"),
        pytest.param(lambda box: box.event(dict(EVENT)), id="event"),
    ],
)
def test_patches_and_events_are_dropped(fence: Fence, call: Callable[[ApiOutbox], Any]) -> None:
    box, inbox = _outbox(fence)
    call(box)
    assert box.fenced_writes == 1
    assert inbox.drain() == []


def test_a_binding_comes_back_failed_and_the_pod_stays_pending() -> None:
    box, inbox = _outbox(_deposed())
    p = pod(name="p", uid="u")
    box.bind(p, "n1")
    [done] = inbox.drain()
    assert isinstance(done, BindDone) and done.pod is p and done.node == "n1"
    assert isinstance(done.error, Fenced)
    assert "pods/p/binding not sent: this replica lost the Lease" in str(done.error)


def test_a_preemption_comes_back_failed_and_evicts_no_one() -> None:
    box, inbox = _outbox(Fence(leader_election=True))
    box.preempt(PreemptionJob(pod(name="high", uid="h"), "n1", ()))
    [done] = inbox.drain()
    assert isinstance(done, PreemptionDone) and isinstance(done.error, Fenced)


def test_without_leader_election_nothing_is_fenced() -> None:
    fence = Fence(leader_election=False)
    assert fence.writes.allows()
    box, _ = _outbox(fence)
    with pytest.raises(RuntimeError, match="not started"):  # handed to the (unstarted) I/O loop
        box.event(dict(EVENT))
