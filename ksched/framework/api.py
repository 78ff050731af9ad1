"""The public plugin API: everything a custom (out-of-tree) plugin may use, and nothing else.

``from ksched.framework import api`` (or the same names from ``ksched.framework``) gives:

- **Extension points**, one Protocol each; a plugin implements any subset, by method name:
  :class:`PreFilterPlugin` ``pre_filter``, :class:`FilterPlugin` ``filter``, :class:`PostFilterPlugin`
  ``post_filter``, :class:`PreScorePlugin` ``pre_score``, :class:`ScorePlugin` ``score`` (plus
  :class:`NormalizeScorePlugin` ``normalize_score``), :class:`ReservePlugin` ``reserve`` /
  ``unreserve``, :class:`PermitPlugin` ``permit``, :class:`PreBindPlugin` ``pre_bind``,
  :class:`PostBindPlugin` ``post_bind``; and :class:`EnqueueExtensions` ``events_to_register``.
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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Protocol, runtime_checkable

from ksched.cache.reader import ClusterReader
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
class PreBindPlugin(Plugin, Protocol):
    """Runs on the scheduling thread just before the binding is posted; a failure unreserves."""

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status: ...


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
    "PermitPlugin",
    "Plugin",
    "Pod",
    "PostBindPlugin",
    "PostFilterPlugin",
    "PostFilterResult",
    "PreBindPlugin",
    "PreFilterPlugin",
    "PreFilterResult",
    "PreScorePlugin",
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
