"""Fencing: no API write leaves the process unless this replica holds the leader Lease.

Leader election over a Lease is advisory: the API server accepts a write from a replica that lost
the Lease as readily as one from the holder. So every writer of ksched (the outbox's bindings,
status patches, events and preemptions, the bind worker child, binding-cycle plugins, the Lease
itself) asks one :class:`Fence` immediately before a request leaves, through one of its two gates:

- :attr:`Fence.writes`: everything but the Lease; open only while leading;
- :attr:`Fence.lease_writes`: the Lease; open while campaigning and while leading, so a standby can
  take the Lease over and the leader can renew and release it.

States, moved by the leader elector on the I/O loop (every change is synchronous: nothing runs
between the moment leadership is lost and the moment both gates are shut)::

    unfenced                        no leader election: every write allowed, always
    standby ──acquired(until)──▶ leading(until) ──renewed(until)──▶ leading(later until)
                                    │  ├── the clock reaches ``until`` ──▶ both gates shut by time alone
                                    │  └── deposed(reason) ──▶ deposed: nothing, ever again
                                    └── step_down() ──▶ releasing: the Lease only, until ``until``

``until`` is the moment the last successful renewal *started* plus renewDeadline. Others consider
the Lease expired leaseDuration after they *saw* that renewal land, which is later; the difference
(leaseDuration − renewDeadline, at least) is the margin for a request that passed a gate just
before ``until`` to travel to the API server. The gates are time-based, so a renewal stuck on a
black-holed connection shuts them just as surely as a failed one.

Deadlines are :func:`time.monotonic` seconds. ``CLOCK_MONOTONIC`` is one clock for every process on
the machine, so the bind worker child compares its own clock with the deadline the parent keeps in
a :class:`SharedDeadline` (a memory file the child inherits) and needs no message to stop.

Not guaranteed: a request that passed its gate and then waits longer than the margin inside the
HTTP client (for a pooled connection, say) still goes out late; the outbox keeps requests from
queueing there (see ``ApiOutbox.bind_limit``). A request already sent is not recalled.
"""

from __future__ import annotations

import math
import mmap
import os
import struct
import tempfile
import time
from collections.abc import Callable
from typing import Final, Protocol

from ksched.errors import KschedError

Clock = Callable[[], float]

UNFENCED: Final = "unfenced"
STANDBY: Final = "standby"
LEADING: Final = "leading"
RELEASING: Final = "releasing"
DEPOSED: Final = "deposed"


class Fenced(KschedError):
    """A write was refused before it left the process: this replica does not hold the leader Lease,
    or its hold expired (not renewed within renewDeadline). Nothing was sent; the next leader
    takes the work over."""


class WriteGate(Protocol):
    """What a writer asks right before sending (the HTTP client, the outbox, the plugin client)."""

    def allows(self) -> bool:
        """Whether a write may leave now."""

    def check(self, method: str, path: str) -> None:
        """Return if a write may leave now; else raise :class:`Fenced` naming the request."""


class Gate:
    """One kind of write, allowed while the clock is before :attr:`until`."""

    __slots__ = ("_clock", "_why", "until")

    def __init__(self, clock: Clock, until: float, why: Callable[[], str]) -> None:
        self._clock = clock
        self._why = why
        self.until = until
        """Monotonic seconds; ``inf`` always open, ``-inf`` shut."""

    def allows(self) -> bool:
        return self._clock() < self.until

    def check(self, method: str, path: str) -> None:
        if self._clock() >= self.until:
            raise Fenced(f"{method} {path} not sent: {self._why()}")


class Fence:
    """The two gates of one scheduler process; see the module docstring for the states.

    Mutated only on the I/O loop (the leader elector, and the runner's shutdown through it); read
    from any thread: each gate's deadline is one float, replaced whole.
    """

    def __init__(self, *, leader_election: bool, lease: str = "", clock: Clock = time.monotonic) -> None:
        self._clock = clock
        self.lease = lease
        """``namespace/name`` of the Lease, for messages."""
        self.state = STANDBY if leader_election else UNFENCED
        self.reason = ""
        """Why the fence was deposed (empty otherwise)."""
        self._shared: SharedDeadline | None = None
        closed = -math.inf if leader_election else math.inf
        self.writes = Gate(clock, closed, self._why)
        self.lease_writes = Gate(clock, math.inf, self._why)

    def _why(self) -> str:
        lease = f" {self.lease}" if self.lease else ""
        if self.state == STANDBY:
            return f"this replica is a standby (it does not hold the Lease{lease})"
        if self.state == RELEASING:
            return f"this replica is handing the Lease{lease} back"
        if self.state == DEPOSED:
            return f"this replica lost the Lease{lease}: {self.reason}"
        late = self._clock() - self.writes.until
        return f"the Lease{lease} was not renewed within renewDeadline ({late:.2f}s past the deadline)"

    # -------------------------------------------------------------------------- the elector's moves
    def acquired(self, until: float) -> None:
        """This replica now holds the Lease: writes are allowed until ``until``."""
        if self.state == STANDBY:
            self.state = LEADING
            self._set(until, until)

    def renewed(self, until: float) -> bool:
        """Extend the hold after a successful renewal. False, and deposed, when the hold had
        already expired: writers may have seen the gates shut and dropped their work, and a hold
        that lapsed is not resumed."""
        if self.state != LEADING:
            return False
        if not self.writes.allows():
            self.deposed("the Lease was renewed only after renewDeadline had passed")
            return False
        self._set(until, until)
        return True

    def step_down(self) -> None:
        """Stop every write but the Lease's (a clean shutdown, before the Lease is released)."""
        if self.state == LEADING:
            self.state = RELEASING
            self._set(-math.inf, self.lease_writes.until)

    def deposed(self, reason: str) -> None:
        """Shut both gates for good (the Lease is lost or released); idempotent."""
        if self.state == UNFENCED:
            return
        if self.state != DEPOSED:
            self.state = DEPOSED
            self.reason = reason
        self._set(-math.inf, -math.inf)

    def _set(self, writes_until: float, lease_until: float) -> None:
        self.writes.until = writes_until
        self.lease_writes.until = lease_until
        if self._shared is not None:
            self._shared.set(writes_until)

    # -------------------------------------------------------------------------- the bind worker child
    def share(self) -> int:
        """A file descriptor holding :attr:`writes`' deadline, kept current, for a child to inherit."""
        if self._shared is None:
            self._shared = SharedDeadline.create()
            self._shared.set(self.writes.until)
        return self._shared.fd

    def close(self) -> None:
        """Release the shared deadline's memory (children keep their own mapping)."""
        if self._shared is not None:
            self._shared.close()
            self._shared = None


class SharedDeadline:
    """A deadline in a small memory file shared between a parent and its children.

    Sixteen bytes: the deadline in integer nanoseconds and a check word derived from it. A reader
    that finds them disagreeing (it read in the middle of a write) reads again, and after a few
    tries reports the gate shut: a torn read can only ever refuse a write, never allow one.
    """

    _FORMAT: Final = "<qq"
    _SIZE: Final = 16
    _CHECK: Final = 0x5A5A_5A5A_5A5A_5A5A
    _OPEN: Final = 2**63 - 1
    _SHUT: Final = -(2**63)

    def __init__(self, fd: int, *, writable: bool) -> None:
        self.fd = fd
        access = mmap.ACCESS_WRITE if writable else mmap.ACCESS_READ
        self._map = mmap.mmap(fd, self._SIZE, access=access)

    @classmethod
    def create(cls) -> SharedDeadline:
        """A new shared deadline (shut), in a memfd where there is one, else an unlinked file."""
        if hasattr(os, "memfd_create"):
            fd = os.memfd_create("ksched-fence")  # close-on-exec: only pass_fds hands it on
        else:  # pragma: no cover - every supported Linux has memfd_create
            with tempfile.TemporaryFile() as f:
                fd = os.dup(f.fileno())
        os.ftruncate(fd, cls._SIZE)
        shared = cls(fd, writable=True)
        shared.set(-math.inf)
        return shared

    @classmethod
    def attach(cls, fd: int) -> SharedDeadline:
        """The child's read-only view of a deadline its parent shares (``fd`` inherited)."""
        return cls(fd, writable=False)

    def set(self, until: float) -> None:
        if until == math.inf:
            ns = self._OPEN
        elif until == -math.inf:
            ns = self._SHUT
        else:
            ns = max(self._SHUT + 1, min(self._OPEN - 1, int(until * 1e9)))
        struct.pack_into(self._FORMAT, self._map, 0, ns, ns ^ self._CHECK)

    def get(self) -> float:
        for _ in range(3):
            ns, check = struct.unpack_from(self._FORMAT, self._map, 0)
            if ns ^ self._CHECK == check:
                if ns == self._OPEN:
                    return math.inf
                if ns == self._SHUT:
                    return -math.inf
                return float(ns) / 1e9
        return -math.inf

    def close(self) -> None:
        self._map.close()
        os.close(self.fd)


class SharedGate:
    """The bind worker child's gate: the parent's :attr:`Fence.writes` read through shared memory."""

    __slots__ = ("_clock", "_shared")

    def __init__(self, shared: SharedDeadline, clock: Clock = time.monotonic) -> None:
        self._shared = shared
        self._clock = clock

    def allows(self) -> bool:
        return self._clock() < self._shared.get()

    def check(self, method: str, path: str) -> None:
        if not self.allows():
            raise Fenced(
                f"{method} {path} not sent: the scheduler process does not hold the Lease "
                "(standby, lost, or not renewed within renewDeadline)"
            )
