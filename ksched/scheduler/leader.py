"""Leader election on a ``coordination.k8s.io/v1`` Lease, as client-go's leaderelection does it.

Only the leader schedules; replicas stand by with warm caches. The algorithm (reference §11):

- Every ``retry_period`` a candidate reads the Lease. A Lease is held by someone else while its
  ``holderIdentity`` is set and ``observed + leaseDuration > now``, where ``observed`` is the
  *local* time this candidate last saw the record change (clocks of different machines are never
  compared).
- Deviation from client-go, which polls every retryPeriod with up to 1.2x jitter: a standby polls
  every retryPeriod exactly and also wakes at the moment the lease it watches would expire. The
  standby sees the holder's last renewal at most one retryPeriod after it happened, so after the
  holder dies the standby takes over within leaseDuration + retryPeriod (client-go: up to
  leaseDuration + 2.4 retryPeriods). Safety is unchanged: expiry is still judged from the
  standby's own observation, never earlier.
- Otherwise it writes itself in with optimistic concurrency on ``resourceVersion``: a new holder
  sets ``acquireTime`` and increments ``leaseTransitions``; the holder only moves ``renewTime``.
- The leader renews every ``retry_period``; if it cannot within ``renew_deadline`` it has lost the
  lease and scheduling stops at once (the caller exits, as kube-scheduler does). Each attempt is
  bounded by the time left before that deadline (client-go's timeout context), so a request
  black-holed by the network cannot hold the loss back.
- Deviation from client-go, which keeps retrying until renewDeadline: a leader that reads the
  Lease held by someone else stops leading at once.
- On a clean shutdown the leader releases the Lease (empty holder, 1 s duration) so a standby
  takes over without waiting out the lease.

Fencing (:mod:`ksched.kube.fence`): the elector opens the process's :class:`Fence` when it acquires
the Lease, pushes its deadline to ``renew attempt start + renewDeadline`` after every renewal, and
shuts it, synchronously and before telling anyone, when the Lease is lost. The fence's gates are
time-based, so writes stop at the deadline even if this coroutine is stuck.

Runs on the I/O thread's event loop; ``on_started`` / ``on_stopped`` are called there and must
only hand the news to the scheduling thread.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ksched.errors import ApiError, Conflict
from ksched.kube.client import ApiClient
from ksched.kube.fence import Fence, Fenced
from ksched.kube.writers import create_lease, get_lease, micro_time, update_lease
from ksched.model.paths import PathSegmentError

log = logging.getLogger(__name__)


def default_identity() -> str:
    """``<hostname>_<uuid>`` like kube-scheduler."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderElectionSettings:
    namespace: str = "kube-system"
    name: str = "kube-scheduler"
    identity: str = field(default_factory=default_identity)
    lease_duration_s: float = 15.0
    renew_deadline_s: float = 10.0
    retry_period_s: float = 2.0


class LeaderElector:
    """Acquire, renew and release one Lease; report leadership changes through callbacks."""

    def __init__(
        self,
        client: ApiClient,
        settings: LeaderElectionSettings,
        *,
        fence: Fence,
        on_started: Callable[[], None],
        on_stopped: Callable[[], None],
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self.settings = settings
        self.fence = fence
        """Opened on acquiring, extended on renewing, shut on losing (see the module docstring)."""
        self._on_started = on_started
        self._on_stopped = on_stopped
        self._clock = clock
        self._wall = wall_clock
        self._observed: dict[str, Any] | None = None
        self._observed_spec: dict[str, Any] | None = None
        self._observed_at = 0.0
        self._superseded = False
        """Set when a renewal read the Lease held by another replica."""
        self.leading = False
        self._stop = asyncio.Event()

    def stop(self) -> None:
        """Stop campaigning or renewing (call on the I/O loop)."""
        self._stop.set()

    async def _sleep(self, seconds: float) -> bool:
        """Sleep unless stopped; True when stopped."""
        try:
            await asyncio.wait_for(self._stop.wait(), timeout=max(0.0, seconds))
        except TimeoutError:
            return False
        return True

    async def run(self) -> None:
        """Campaign until leading, then renew until the lease is lost or :meth:`stop` is called."""
        s = self.settings
        while not self._stop.is_set():
            started = self._clock()
            if await self._attempt(s.renew_deadline_s):
                break
            if await self._sleep(self._campaign_wait()):
                return
        if self._stop.is_set():
            return
        self.leading = True
        self.fence.acquired(started + s.renew_deadline_s)
        log.info("became leader: lease %s/%s as %s", s.namespace, s.name, s.identity)
        self._on_started()
        await self._renew()

    async def _renew(self) -> None:
        """Renew every retryPeriod; each attempt gets only the time left before the fence's deadline."""
        s = self.settings
        while not self._stop.is_set():
            deadline = self.fence.writes.until
            if await self._sleep(min(s.retry_period_s, deadline - self._clock())):
                return
            started = self._clock()
            renewed = started < deadline and await self._attempt(deadline - started)
            if self._stop.is_set():  # a clean shutdown: release() takes it from here
                return
            if renewed and self.fence.renewed(started + s.renew_deadline_s):
                continue
            if self._superseded:
                self._lose(f"the Lease is held by {(self._observed_spec or {}).get('holderIdentity')!r}")
                return
            if renewed or self._clock() >= deadline:
                self._lose(f"not renewed within renewDeadline ({s.renew_deadline_s:g}s)")
                return

    async def _attempt(self, timeout_s: float) -> bool:
        """One :meth:`_try_acquire_or_renew`, given up (False) after ``timeout_s``."""
        try:
            return await asyncio.wait_for(self._try_acquire_or_renew(), timeout_s)
        except TimeoutError:
            log.warning(
                "lease %s/%s: no answer within %.1fs", self.settings.namespace, self.settings.name, timeout_s
            )
            return False

    def _lose(self, why: str) -> None:
        """Shut the fence first, then tell the rest of the process (all synchronous, on the I/O loop)."""
        s = self.settings
        self.fence.deposed(why)
        self.leading = False
        log.error("failed to renew lease %s/%s: %s", s.namespace, s.name, why)
        self._on_stopped()

    def _campaign_wait(self) -> float:
        """Until the next poll: one retryPeriod, or less when the watched lease expires sooner."""
        s = self.settings
        wait = s.retry_period_s
        spec = self._observed_spec or {}
        if spec.get("holderIdentity") and spec.get("holderIdentity") != s.identity:
            duration = float(spec.get("leaseDurationSeconds") or s.lease_duration_s)
            until_expiry = self._observed_at + duration - self._clock()
            if until_expiry > 0:
                wait = min(wait, until_expiry + 0.001)  # just past expiry, not a hair before
        return wait

    async def release(self) -> None:
        """Give the lease up on a clean shutdown, so a standby does not wait out leaseDuration.

        Stops renewing and every write but this one first (:meth:`Fence.step_down`): once the
        release lands a standby may take over within a second, and nothing of ours may follow.
        The fence is deposed after the release whatever its outcome."""
        self.stop()
        self.fence.step_down()
        if not self.leading or self._observed is None:
            self.fence.deposed("shutting down")
            return
        lease = dict(self._observed)
        lease["spec"] = {
            **(lease.get("spec") or {}),
            "holderIdentity": "",
            "leaseDurationSeconds": 1,
            "renewTime": micro_time(dt.datetime.fromtimestamp(self._wall(), tz=dt.UTC)),
        }
        try:
            await update_lease(self.client, lease)
        except (ApiError, Fenced) as exc:
            log.warning("could not release the lease: %s", exc)
        finally:
            self.fence.deposed("released the Lease")
        self.leading = False

    async def _try_acquire_or_renew(self) -> bool:
        s = self.settings
        now_text = micro_time(dt.datetime.fromtimestamp(self._wall(), tz=dt.UTC))
        try:
            lease = await get_lease(self.client, s.namespace, s.name)
            if lease is None:
                spec = {
                    "holderIdentity": s.identity,
                    "leaseDurationSeconds": int(s.lease_duration_s),
                    "acquireTime": now_text,
                    "renewTime": now_text,
                    "leaseTransitions": 0,
                }
                self._remember(await create_lease(self.client, s.namespace, s.name, spec))
                return True
            spec = dict(lease.get("spec") or {})
            if spec != self._observed_spec:
                self._observed_spec = spec
                self._observed_at = self._clock()
            holder = spec.get("holderIdentity") or ""
            duration = float(spec.get("leaseDurationSeconds") or s.lease_duration_s)
            if holder and holder != s.identity and self._observed_at + duration > self._clock():
                self._superseded = self.leading
                return False
            new_spec = {**spec, "holderIdentity": s.identity, "leaseDurationSeconds": int(s.lease_duration_s)}
            new_spec["renewTime"] = now_text
            if holder != s.identity:
                new_spec["acquireTime"] = now_text
                new_spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
            updated = dict(lease)
            updated["spec"] = new_spec
            self._remember(await update_lease(self.client, updated))
            return True
        except Conflict:
            return False
        except (ApiError, Fenced, PathSegmentError) as exc:  # a name no path carries: as client-go, retried
            log.warning("lease %s/%s: %s", s.namespace, s.name, exc)
            return False

    def _remember(self, lease: dict[str, Any]) -> None:
        self._observed = lease
        self._observed_spec = dict(lease.get("spec") or {})
        self._observed_at = self._clock()
