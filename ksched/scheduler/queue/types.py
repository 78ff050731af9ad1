"""Records and settings of the scheduling queue (see :mod:`ksched.scheduler.queue`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from ksched.errors import KschedError
from ksched.framework.interface import Status
from ksched.model.pod import Pod

DEFAULT_POD_INITIAL_BACKOFF_S = 1.0
DEFAULT_POD_MAX_BACKOFF_S = 10.0
DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_S = 300.0
UNSCHEDULABLE_FLUSH_INTERVAL_S = 30.0
BACKOFF_ORDERING_WINDOW_S = 1.0


class QueueError(KschedError):
    """The queue was asked to do something its state forbids (a pod queued twice)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueSettings:
    """Tunables of the scheduling queue; defaults are upstream's."""

    pod_initial_backoff_s: float = DEFAULT_POD_INITIAL_BACKOFF_S
    """``podInitialBackoffSeconds``: backoff after the first failed attempt."""
    pod_max_backoff_s: float = DEFAULT_POD_MAX_BACKOFF_S
    """``podMaxBackoffSeconds``: the doubling stops here."""
    pod_max_in_unschedulable_pods_s: float = DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_S
    """A parked pod is retried after this long even if no event helped (not in the v1 config API)."""
    unschedulable_flush_interval_s: float = UNSCHEDULABLE_FLUSH_INTERVAL_S
    """How often :meth:`SchedulingQueue.flush` looks for parked pods past their timeout."""
    pop_from_backoff_q: bool = True
    """Feature gate ``SchedulerPopFromBackoffQ`` (beta, on since 1.33): an empty activeQ pops from
    backoffQ, and backoff expirations are aligned to whole-second ordering windows."""


class PreEnqueuePlugin(Protocol):
    """A plugin that may keep a pod out of the active queue (``SchedulingGates``)."""

    name: str

    def pre_enqueue(self, pod: Pod) -> Status: ...


@dataclass(slots=True, eq=False)
class QueuedPodInfo:
    """A pod plus what the queue knows about it; the same object travels through every sub-queue."""

    pod: Pod
    timestamp: float
    """When the pod was (re-)queued; refreshed by ``add_unschedulable_if_not_present``."""
    initial_attempt_timestamp: float | None = None
    """When the pod first entered activeQ (start of the SLI duration); never reset."""
    attempts: int = 0
    """Pops so far; drives the backoff."""
    unschedulable_plugins: set[str] = field(default_factory=set)
    """Plugins that rejected the last attempt (Unschedulable / UnschedulableAndUnresolvable)."""
    pending_plugins: set[str] = field(default_factory=set)
    """Plugins that answered Pending: their events requeue the pod without backoff."""
    gating_plugin: str = ""
    """The PreEnqueue plugin keeping the pod out, empty when not gated."""
    gating_status: Status | None = None
    """What the gating plugin said, for the ``SchedulingGated`` condition."""
    backoff_expiration: float | None = None
    """Cached backoff expiry; cleared at every pop and every requeue after a failure."""
    unschedulable_count: int = 0
    """Failed attempts that a plugin rejected (kept like upstream; backoff uses ``attempts``)."""
    consecutive_errors_count: int = 0
    """Failed attempts in a row that ended in an error rather than a rejection."""

    @property
    def uid(self) -> str:
        return self.pod.uid

    @property
    def gated(self) -> bool:
        return bool(self.gating_plugin)

    @property
    def gating_message(self) -> str:
        return self.gating_status.message if self.gating_status is not None else ""

    @property
    def rejector_plugins(self) -> set[str]:
        return self.unschedulable_plugins | self.pending_plugins
