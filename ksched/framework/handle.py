"""The Handle: what a plugin may use of the framework it runs in (upstream ``framework.Handle``).

A plugin's factory receives it (``factory(args, handle)``) before the profile's framework exists;
the framework binds itself to the handle when it is built, so the runners below work from the first
cycle on and raise :class:`HandleNotReady` if a factory calls them during construction.

- **Filters with nominated pods**: :meth:`Handle.run_filter_plugins_with_nominated_pods` runs the
  profile's PreFilter and Filter over every row with upstream's two-pass rule, on the cluster as
  it is now (a preemption dry run changes it through the cache's what-if overlay first). What
  DefaultPreemption and the nominated-pods pass need to know about the profile's filters (which
  are row-local, their order) comes from here too, and nothing else of the framework.
- **The profile's random generator** (:attr:`Handle.rng`): upstream draws preemption's start
  offset and the tie-break from one source; sharing it keeps seeded runs reproducible.
- **Waiting pods** (Permit), **the event recorder**, **the API client** for binding-cycle
  plugins and **a read-only snapshot** of the scheduler's cache (:class:`HandleServices`; None
  where nothing may be written or no scheduler runs, as in ``ksched explain``).
- ``shared``: objects the plugins of one package share within a profile (one fused resource pass).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ksched.errors import HandleNotReady
from ksched.framework.waiting import WaitingPod, WaitingPods

if TYPE_CHECKING:
    from ksched.cache.cluster import ClusterCache
    from ksched.cache.reader import ClusterReader
    from ksched.framework.extender import Extender
    from ksched.framework.interface import FilterPlugin, NominatedPods
    from ksched.framework.result import CycleResult
    from ksched.model.pod import Pod


class EventRecorder(Protocol):
    """Where Events go (the scheduler's reporter: rate limited, best effort, never blocking);
    ``controller`` is the profile's scheduler name, as on the scheduler's own events."""

    def event(
        self, pod: Pod, controller: str, event_type: str, reason: str, action: str, note: str
    ) -> None: ...


class ApiClient(Protocol):
    """Requests to the API server for binding-cycle plugins, with the binder's retries and limits.

    ``request`` returns at once; the future resolves, off the scheduling thread, with the decoded
    answer or the :class:`~ksched.errors.ApiError` that ended the retries.
    """

    def request(self, method: str, path: str, body: Any = None, *, timeout_s: float) -> Any: ...


@dataclass(frozen=True, slots=True)
class HandleServices:
    """What the scheduler process lends every profile's plugins (None: not available here)."""

    events: EventRecorder | None = None
    client: ApiClient | None = None
    snapshot: ClusterReader | None = None
    """The scheduler's cache, read-only (a :class:`~ksched.framework.view.ClusterView`)."""
    extenders: tuple[Extender, ...] = ()
    """The configured HTTP extenders, shared by every profile (upstream ``Handle.Extenders``)."""


class FilterRunner(Protocol):
    """The part of a framework the handle delegates to (:class:`ksched.framework.runtime.Framework`)."""

    filter_plugins: Sequence[FilterPlugin]

    def run_filter_plugins_with_nominated_pods(
        self,
        pod: Pod,
        cluster: ClusterCache,
        nominated: NominatedPods | None = None,
        *,
        skipped: frozenset[str] | set[str] = frozenset(),
    ) -> CycleResult: ...

    def dry_run_filters(
        self, pod: Pod, cluster: ClusterCache, nominated: NominatedPods | None
    ) -> tuple[CycleResult, bool]: ...

    def batch_guard(self, pod: Pod, cluster: ClusterCache) -> Callable[[Pod], bool] | None: ...

    def is_row_local(self, plugin: str) -> bool: ...

    def not_row_local_filters(self, pod: Pod) -> list[FilterPlugin]: ...

    def filter_position(self, plugin: str) -> int: ...


class Handle:
    """One profile's handle; see the module docstring."""

    @property
    def extenders(self) -> tuple[Extender, ...]:
        return self.services.extenders

    def __init__(
        self,
        profile: str,
        *,
        rng: np.random.Generator | None = None,
        services: HandleServices | None = None,
        waiting_pods: WaitingPods | None = None,
    ) -> None:
        self.profile = profile
        self.rng = rng if rng is not None else np.random.default_rng()
        self.services = services if services is not None else HandleServices()
        self.waiting_pods = waiting_pods if waiting_pods is not None else WaitingPods()
        self.shared: dict[str, Any] = {}
        self._runner: FilterRunner | None = None

    def bind_framework(self, runner: FilterRunner) -> None:
        """Called once, by the framework this handle belongs to, when it is built."""
        if self._runner is not None and self._runner is not runner:
            raise ValueError(f"the handle of profile {self.profile!r} belongs to another framework")
        self._runner = runner

    @property
    def framework(self) -> FilterRunner:
        runner = self._runner
        if runner is None:
            raise HandleNotReady(
                f"profile {self.profile!r}: the framework is not built yet; "
                "use the handle's runners from extension points, not from a plugin's factory"
            )
        return runner

    # ------------------------------------------------------------------ filters
    def run_filter_plugins_with_nominated_pods(
        self,
        pod: Pod,
        cluster: ClusterCache,
        nominated: NominatedPods | None = None,
        *,
        skipped: frozenset[str] | set[str] = frozenset(),
    ) -> CycleResult:
        """PreFilter and Filter over every row (``result.feasible``), with the nominated pods'
        two-pass rule when ``nominated`` is given; ``skipped`` plugins stay skipped."""
        return self.framework.run_filter_plugins_with_nominated_pods(pod, cluster, nominated, skipped=skipped)

    def dry_run_filters(
        self, pod: Pod, cluster: ClusterCache, nominated: NominatedPods | None
    ) -> tuple[CycleResult, bool]:
        """The filters for a preemption dry run, and whether nodes may share one filter pass."""
        return self.framework.dry_run_filters(pod, cluster, nominated)

    def batch_guard(self, pod: Pod, cluster: ClusterCache) -> Callable[[Pod], bool] | None:
        """Which pods a batched dry run may not move in the row accounting only (None: any)."""
        return self.framework.batch_guard(pod, cluster)

    @property
    def filter_plugins(self) -> Sequence[FilterPlugin]:
        return self.framework.filter_plugins

    def is_row_local(self, plugin: str) -> bool:
        return self.framework.is_row_local(plugin)

    def not_row_local_filters(self, pod: Pod) -> list[FilterPlugin]:
        return self.framework.not_row_local_filters(pod)

    def filter_position(self, plugin: str) -> int:
        return self.framework.filter_position(plugin)

    # ------------------------------------------------------------------ services
    def record_event(self, pod: Pod, event_type: str, reason: str, action: str, note: str) -> None:
        """An Event about ``pod`` from this profile (upstream ``EventRecorder().Eventf``); dropped
        where nothing may be written (``ksched explain``, tests without a scheduler)."""
        events = self.services.events
        if events is not None:
            events.event(pod, self.profile, event_type, reason, action, note)

    @property
    def snapshot(self) -> ClusterReader | None:
        """The cluster as the scheduling thread sees it, read-only (upstream
        ``SnapshotSharedLister``), for points that are not handed the cluster (Reserve, Permit,
        PreBind, PostBind, queueing hints). None where the profile runs on no scheduler."""
        return self.services.snapshot

    @property
    def client(self) -> ApiClient | None:
        """The API client for binding-cycle plugins (None where nothing may be written)."""
        return self.services.client

    # ------------------------------------------------------------------ waiting pods
    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        return self.waiting_pods.get(uid)

    def iterate_waiting_pods(self) -> list[WaitingPod]:
        return list(self.waiting_pods)

    def reject_waiting_pod(self, uid: str, plugin: str = "", message: str = "removed") -> bool:
        return self.waiting_pods.reject(uid, plugin, message)
