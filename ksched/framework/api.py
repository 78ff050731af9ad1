"""The public plugin API: everything a custom (out-of-tree) plugin may use, and nothing else.

``from ksched.framework import api`` (or the same names from ``ksched.framework``) gives:

- **Extension points**, one Protocol each; a plugin implements any subset, by method name:
  :class:`PreFilterPlugin` ``pre_filter``, :class:`FilterPlugin` ``filter``, :class:`PostFilterPlugin`
  ``post_filter``, :class:`PreScorePlugin` ``pre_score``, :class:`ScorePlugin` ``score`` (plus
  :class:`NormalizeScorePlugin` ``normalize_score``), :class:`ReservePlugin` ``reserve`` /
  ``unreserve``, :class:`PermitPlugin` ``permit``, :class:`PreBindPlugin` ``pre_bind`` (which may return a
  :class:`PendingPreBind` to wait without blocking; :class:`PreBindPreFlightPlugin`
  ``pre_bind_pre_flight`` optionally), :class:`PostBindPlugin` ``post_bind``; and
  :class:`EnqueueExtensions` ``events_to_register`` (with :class:`QueueingHint` functions).
- **What a plugin sees**: the :class:`Pod` record, a :class:`ClusterReader` (read-only node
  columns by name, the indexes the built-in plugins use, a what-if overlay; in-tree plugins get
  the cache, out-of-tree ones a :class:`ClusterView` over it: the same protocol), the cycle's
  :class:`CycleState`, and at construction a :class:`Handle` (profile name, the profile's
  generator, the waiting pods, filters with nominated pods).
- **What it returns**: :class:`Status` (with :class:`Code`; helpers :func:`unschedulable`,
  :func:`error`, :func:`wait`), :class:`FilterResult`, :class:`PreFilterResult`, score arrays.
- **Requeueing**: :func:`cluster_event` builds the events that may make a pod this plugin
  rejected schedulable again; return them from ``events_to_register``.

Vectorized contract (the whole point): ``filter`` answers for every row of the node table at once
with a per-row failure bitset; ``score`` returns one number per row. Arrays are indexed by row,
``0 <= row < cluster.n_rows``; rows without a node are masked by the runtime.

A plugin **must not**: write into the arrays it is given (they are read-only views of the live
cache: every other pod's decision reads them); block or sleep (one thread schedules every pod:
every millisecond a plugin takes is added to every pod's cycle); do I/O in PreFilter, Filter,
PreScore, Score or NormalizeScore (cache what you need when you are built, or refresh it from a
thread of your own and swap a reference); keep arrays across calls (the table is reallocated as it
grows). Exceptions and malformed results are caught, reported on the pod as a ``SchedulerError``
condition naming the plugin, counted in ``ksched_plugin_errors_total``, and never stop the
scheduler. See ``docs/plugins.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, Protocol, runtime_checkable

from ksched.cache.reader import ClusterReader
from ksched.framework.handle import ApiClient
from ksched.framework.interface import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    SKIP,
    SUCCESS,
    Code,
    CycleState,
    FilterPlugin,
    FilterResult,
    NormalizeScorePlugin,
    Plugin,
    PostFilterPlugin,
    PostFilterResult,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueingHint,
    ScorePlugin,
    Scores,
    Status,
    error,
    unschedulable,
)
from ksched.framework.registry import Factory, Handle
from ksched.framework.view import ClusterView
from ksched.framework.waiting import MAX_PERMIT_TIMEOUT_S, WaitingPod
from ksched.model.node import Node
from ksched.model.pod import Pod


def wait() -> Status:
    """Permit's "hold the pod": return ``(wait(), timeout_s)`` from ``permit``."""
    return Status(Code.WAIT)


@runtime_checkable
class ReservePlugin(Plugin, Protocol):
    """Called after the pod was assumed on ``node_name``; ``unreserve`` undoes it on any later failure.

    Unreserve runs on every Reserve plugin, in reverse order, whether or not its ``reserve`` ran or
    succeeded, so it must be idempotent.
    """

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status: ...

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None: ...


@runtime_checkable
class PermitPlugin(Plugin, Protocol):
    """Last word before binding: ``(SUCCESS, 0)``, a rejection, or ``(wait(), timeout_s)``.

    A waiting pod stays assumed on its node while the scheduler goes on with other pods; it is
    bound once every plugin that asked it to wait calls ``handle.get_waiting_pod(uid).allow(name)``,
    and rejected on ``reject(name, message)`` or when ``timeout_s`` (at most 15 minutes) passes.
    """

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status, float]: ...


@runtime_checkable
class PendingPreBind(Protocol):
    """What ``pre_bind`` returns instead of a Status when its work goes on after it returned (API
    writes, waiting for a controller). The pod stays assumed and parked; the scheduler goes on with
    other pods. The binding cycle calls, on the scheduling thread:

    - :meth:`set_waker` once, right after ``pre_bind`` returned. ``wake()`` may be called from any
      thread when something the work waits for may have happened (a request was answered); the
      scheduler then polls at its next step;
    - :meth:`poll` after every inbox drain that carried a wake-up or an informer event, and when
      the scheduler's clock reaches :meth:`next_poll_at`. None means not done yet; a Status is the
      outcome, exactly as if ``pre_bind`` had returned it: SUCCESS runs the next PreBind plugin and
      then posts the binding, anything else fails the binding cycle (Unreserve in reverse order,
      the pod forgotten and requeued with backoff);
    - :meth:`next_poll_at` after every poll: the scheduler's clock time (monotonic seconds) by
      which to poll again at the latest; ``math.inf`` when only a wake-up can move it on.

    ``poll`` must not block and must come to a Status in the end (the work owns its deadline). When
    the pod is deleted meanwhile, the work is still polled: it decides what that means (upstream's
    VolumeBinding fails with "pod does not exist any more"). A replica that stops leading posts no
    binding afterwards, whatever ``poll`` returns.
    """

    def set_waker(self, wake: Callable[[], None]) -> None: ...

    def poll(self, now: float) -> Status | None: ...

    def next_poll_at(self) -> float: ...


@runtime_checkable
class PreBindPlugin(Plugin, Protocol):
    """Runs on the scheduling thread before the binding is posted; a failure unreserves. It returns
    a Status, or a :class:`PendingPreBind` when it must wait without blocking the scheduler."""

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | PendingPreBind: ...


@runtime_checkable
class PreBindPreFlightPlugin(Plugin, Protocol):
    """Optional on a PreBind plugin (upstream ``PreBindPreFlight``, v1.34+): whether its PreBind will
    do anything for the pod on ``node_name``: SUCCESS (it will), SKIP (it will not: its PreBind is
    then not called), or an error. When some plugin says SUCCESS, or the pod waits on Permit, the
    scheduler records the chosen node as the pod's ``status.nominatedNodeName`` before PreBind
    runs (``NominatedNodeNameForExpectation``, on in v1.35). A PreBind plugin without this method
    counts as one that will act."""

    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status: ...


@runtime_checkable
class PostBindPlugin(Plugin, Protocol):
    """Informational, after the binding succeeded (cleanup of Reserve state, counters)."""

    def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None: ...


# ---------------------------------------------------------------------------------------- events
NODE: Final = "Node"
POD: Final = "Pod"
WILDCARD: Final = "*"
RESOURCES: Final[tuple[str, ...]] = (
    NODE,
    POD,
    "PersistentVolume",
    "PersistentVolumeClaim",
    "storage.k8s.io/CSINode",
    "storage.k8s.io/CSIDriver",
    "storage.k8s.io/VolumeAttachment",
    "storage.k8s.io/CSIStorageCapacity",
    "storage.k8s.io/StorageClass",
    "resource.k8s.io/ResourceClaim",
    "resource.k8s.io/ResourceSlice",
    "resource.k8s.io/DeviceClass",
    WILDCARD,
)
"""Event resources a plugin may register (upstream ``EventResource``)."""
ACTIONS: Final[tuple[str, ...]] = (
    "Add",
    "Delete",
    "Update",
    "All",
    "UpdateNodeAllocatable",
    "UpdateNodeLabel",
    "UpdateNodeTaint",
    "UpdateNodeCondition",
    "UpdateNodeAnnotation",
    "UpdateNodeDeclaredFeature",
    "UpdatePodLabel",
    "UpdatePodScaleDown",
    "UpdatePodToleration",
    "UpdatePodSchedulingGatesEliminated",
    "UpdatePodGeneratedResourceClaim",
)
"""Action names (upstream ``ActionType.String()``)."""


@dataclass(frozen=True, slots=True)
class ClusterEventSpec:
    """A cluster event a plugin registers: a resource and one or more actions (by upstream name)."""

    resource: str
    actions: tuple[str, ...]


def cluster_event(resource: str, *actions: str) -> ClusterEventSpec:
    """``cluster_event("Node", "Add", "UpdateNodeLabel")``: an event that may help a rejected pod.

    Raises ValueError naming the bad resource or action, so a typo fails when the profile is built.
    A plugin that registers nothing is asked about every event (the pod is retried on any change).
    """
    if resource not in RESOURCES:
        raise ValueError(f"unknown event resource {resource!r}; known: {', '.join(RESOURCES)}")
    if not actions:
        raise ValueError(f"cluster_event({resource!r}) needs at least one action, e.g. 'Add'")
    for action in actions:
        if action not in ACTIONS:
            raise ValueError(f"unknown event action {action!r}; known: {', '.join(ACTIONS)}")
    return ClusterEventSpec(resource, tuple(actions))


@runtime_checkable
class EnqueueExtensions(Plugin, Protocol):
    """Which cluster events may make a pod this plugin rejected schedulable (queueing hints)."""

    def events_to_register(self) -> Sequence[ClusterEventSpec]: ...


__all__ = [
    "ACTIONS",
    "MAX_NODE_SCORE",
    "MAX_PERMIT_TIMEOUT_S",
    "MIN_NODE_SCORE",
    "NODE",
    "POD",
    "RESOURCES",
    "SKIP",
    "SUCCESS",
    "WILDCARD",
    "ApiClient",
    "ClusterEventSpec",
    "ClusterReader",
    "ClusterView",
    "Code",
    "CycleState",
    "EnqueueExtensions",
    "Factory",
    "FilterPlugin",
    "FilterResult",
    "Handle",
    "Node",
    "NormalizeScorePlugin",
    "PendingPreBind",
    "PermitPlugin",
    "Plugin",
    "Pod",
    "PostBindPlugin",
    "PostFilterPlugin",
    "PostFilterResult",
    "PreBindPlugin",
    "PreBindPreFlightPlugin",
    "PreFilterPlugin",
    "PreFilterResult",
    "PreScorePlugin",
    "QueueingHint",
    "ReservePlugin",
    "ScorePlugin",
    "Scores",
    "Status",
    "WaitingPod",
    "cluster_event",
    "error",
    "unschedulable",
    "wait",
]
