"""The fence: which writes each state allows, its time-based expiry, and the deadline a child shares."""

from __future__ import annotations

import math
import subprocess
import sys
import time

import pytest

from ksched.kube.fence import (
    DEPOSED,
    LEADING,
    RELEASING,
    STANDBY,
    UNFENCED,
    Fence,
    Fenced,
    SharedDeadline,
    SharedGate,
)


class Clock:
    def __init__(self, t: float = 100.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def _fence(clock: Clock) -> Fence:
    return Fence(leader_election=True, lease="kube-system/kube-scheduler", clock=clock)


def _allowed(fence: Fence) -> tuple[bool, bool]:
    return fence.writes.allows(), fence.lease_writes.allows()


def test_without_leader_election_every_write_is_allowed_forever() -> None:
    clock = Clock()
    fence = Fence(leader_election=False, clock=clock)
    clock.t = 1e12
    fence.deposed("ignored")
    assert fence.state == UNFENCED and _allowed(fence) == (True, True)


def test_a_standby_writes_only_the_lease() -> None:
    fence = _fence(Clock())
    assert fence.state == STANDBY and _allowed(fence) == (False, True)
    with pytest.raises(
        Fenced, match=r"POST /x not sent: this replica is a standby .*kube-system/kube-scheduler"
    ):
        fence.writes.check("POST", "/x")


def test_the_leader_writes_until_the_deadline_and_not_a_moment_after() -> None:
    clock = Clock()
    fence = _fence(clock)
    fence.acquired(until=102.0)
    assert fence.state == LEADING and _allowed(fence) == (True, True)
    clock.t = 101.999
    assert _allowed(fence) == (True, True)
    clock.t = 102.0  # the deadline itself is already too late: nothing is renewed by then
    assert _allowed(fence) == (False, False)
    with pytest.raises(Fenced, match="not renewed within renewDeadline"):
        fence.writes.check("PATCH", "/y")


def test_a_renewal_moves_the_deadline() -> None:
    clock = Clock()
    fence = _fence(clock)
    fence.acquired(until=102.0)
    clock.t = 101.5
    assert fence.renewed(until=103.5)
    clock.t = 103.0
    assert _allowed(fence) == (True, True)


def test_a_renewal_that_lands_after_the_deadline_deposes() -> None:
    """Writers may have seen the gate shut and dropped their work: the hold is not resumed."""
    clock = Clock()
    fence = _fence(clock)
    fence.acquired(until=102.0)
    clock.t = 102.5
    assert not fence.renewed(until=104.0)
    assert fence.state == DEPOSED and _allowed(fence) == (False, False)


def test_deposed_is_for_good_and_keeps_the_first_reason() -> None:
    clock = Clock()
    fence = _fence(clock)
    fence.acquired(until=200.0)
    fence.deposed("not renewed within renewDeadline (2s)")
    fence.deposed("later")
    fence.acquired(until=300.0)
    assert not fence.renewed(until=300.0)
    assert fence.state == DEPOSED and _allowed(fence) == (False, False)
    with pytest.raises(Fenced, match=r"lost the Lease kube-system/kube-scheduler: not renewed within"):
        fence.lease_writes.check("PUT", "/lease")


def test_stepping_down_leaves_the_lease_release_and_nothing_else() -> None:
    clock = Clock()
    fence = _fence(clock)
    fence.acquired(until=102.0)
    fence.step_down()
    assert fence.state == RELEASING and _allowed(fence) == (False, True)
    clock.t = 102.0
    assert _allowed(fence) == (False, False)


def test_the_shared_deadline_follows_every_move() -> None:
    clock = Clock()
    fence = _fence(clock)
    child = SharedGate(SharedDeadline.attach(fence.share()), clock)
    assert not child.allows()
    fence.acquired(until=102.0)
    assert child.allows()
    clock.t = 102.0
    assert not child.allows()
    clock.t = 101.0
    fence.deposed("lost")
    assert not child.allows()
    with pytest.raises(Fenced, match="does not hold the Lease"):
        child.check("POST", "/b")
    fence.close()


@pytest.mark.parametrize("until", [math.inf, -math.inf, 0.0, 12345.678901234])
def test_the_shared_deadline_round_trips(until: float) -> None:
    shared = SharedDeadline.create()
    shared.set(until)
    assert shared.get() == pytest.approx(until, abs=1e-9) if math.isfinite(until) else shared.get() == until
    shared.close()


def test_a_torn_shared_deadline_reads_as_shut() -> None:
    shared = SharedDeadline.create()
    shared.set(math.inf)
    shared._map[8:16] = b"\x00" * 8  # the check word no longer matches the deadline
    assert shared.get() == -math.inf
    shared.close()


def test_a_child_process_reads_the_parents_deadline() -> None:
    """Through an inherited descriptor, on the machine-wide monotonic clock."""
    fence = Fence(leader_election=True)
    fd = fence.share()
    program = (
        "import sys; from ksched.kube.fence import SharedDeadline, SharedGate; "
        "gate = SharedGate(SharedDeadline.attach(int(sys.argv[1]))); print(gate.allows())"
    )

    def child_allows() -> str:
        out = subprocess.run(
            [sys.executable, "-c", program, str(fd)],
            pass_fds=(fd,),
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout.strip()

    assert child_allows() == "False"
    fence.acquired(until=time.monotonic() + 60)
    assert child_allows() == "True"
    fence.deposed("lost")
    assert child_allows() == "False"
    fence.close()
