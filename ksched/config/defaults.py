"""Upstream's defaults for KubeSchedulerConfiguration v1, with the v1.35 default feature gates.

Sources: ``pkg/scheduler/apis/config/v1/defaults.go`` (scalar and args defaults),
``default_plugins.go`` (the MultiPoint list) and each plugin's interface assertions (which
extension points it implements). Gate decisions baked in here:

- ``DynamicResourceAllocation`` is GA, so ``DynamicResources`` sits just before
  ``DefaultPreemption`` in the MultiPoint list.
- ``SchedulerAsyncPreemption`` is on, so ``DefaultPreemption`` also runs at PreEnqueue.
- ``VolumeCapacityPriority``/``StorageCapacityScoring`` are off, so VolumeBinding's PreScore and
  Score are no-ops upstream (its scorer is nil and PreScore returns Skip). ksched leaves them out
  of the MultiPoint expansion instead (see ``GATED_OFF``), so the default Score list has no
  VolumeBinding; enabling it explicitly at ``score`` is still accepted, as upstream.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from ksched.config import names as n
from ksched.config.types import (
    DefaultPreemptionArgs,
    InterPodAffinityArgs,
    NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    PodTopologySpreadArgs,
    ResourceSpec,
    ScoringStrategy,
    VolumeBindingArgs,
)

API_VERSION: Final[str] = "kubescheduler.config.k8s.io/v1"
KIND: Final[str] = "KubeSchedulerConfiguration"

DEFAULT_SCHEDULER_NAME: Final[str] = "default-scheduler"
DEFAULT_PARALLELISM: Final[int] = 16
DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE: Final[int] = 0
"""Upstream's default (adaptive). ksched leaves the field None when absent: it scores every node."""
"""0 means adaptive (upstream ``config.DefaultPercentageOfNodesToScore``)."""
DEFAULT_POD_INITIAL_BACKOFF_S: Final[int] = 1
DEFAULT_POD_MAX_BACKOFF_S: Final[int] = 10

MAX_NODE_SCORE: Final[int] = 100
"""Upstream ``framework.MaxNodeScore``: the top of a normalized plugin score."""
MAX_TOTAL_SCORE: Final[int] = 2**63 - 1
"""Upstream ``framework.MaxTotalScore`` (math.MaxInt64): the weighted sum must not overflow it."""
MAX_CUSTOM_PRIORITY_SCORE: Final[int] = 10
"""Top of a RequestedToCapacityRatio / VolumeBinding shape score."""
LEADER_ELECTION_JITTER_FACTOR: Final[float] = 1.2
"""client-go ``leaderelection.JitterFactor``: renewDeadline must exceed retryPeriod times this."""

DEFAULT_MULTI_POINT: Final[tuple[tuple[str, int | None], ...]] = (
    (n.SCHEDULING_GATES, None),
    (n.PRIORITY_SORT, None),
    (n.NODE_UNSCHEDULABLE, None),
    (n.NODE_NAME, None),
    (n.TAINT_TOLERATION, 3),
    (n.NODE_AFFINITY, 2),
    (n.NODE_PORTS, None),
    (n.NODE_RESOURCES_FIT, 1),
    (n.VOLUME_RESTRICTIONS, None),
    (n.NODE_VOLUME_LIMITS, None),
    (n.VOLUME_BINDING, None),
    (n.VOLUME_ZONE, None),
    (n.POD_TOPOLOGY_SPREAD, 2),
    (n.INTER_POD_AFFINITY, 2),
    (n.DYNAMIC_RESOURCES, None),
    (n.DEFAULT_PREEMPTION, None),
    (n.NODE_RESOURCES_BALANCED_ALLOCATION, 1),
    (n.IMAGE_LOCALITY, 1),
    (n.DEFAULT_BINDER, None),
)
"""The default ``multiPoint.enabled`` list: (name, weight or None), in upstream order."""

_PF, _F, _PS, _S = n.PRE_FILTER, n.FILTER, n.PRE_SCORE, n.SCORE
IN_TREE_EXTENSION_POINTS: Final[Mapping[str, frozenset[str]]] = {
    n.SCHEDULING_GATES: frozenset({n.PRE_ENQUEUE}),
    n.PRIORITY_SORT: frozenset({n.QUEUE_SORT}),
    n.NODE_UNSCHEDULABLE: frozenset({_F}),
    n.NODE_NAME: frozenset({_F}),
    n.TAINT_TOLERATION: frozenset({_F, _PS, _S}),
    n.NODE_AFFINITY: frozenset({_PF, _F, _PS, _S}),
    n.NODE_PORTS: frozenset({_PF, _F}),
    n.NODE_RESOURCES_FIT: frozenset({_PF, _F, _PS, _S}),
    n.VOLUME_RESTRICTIONS: frozenset({_PF, _F}),
    n.NODE_VOLUME_LIMITS: frozenset({_PF, _F}),
    n.VOLUME_BINDING: frozenset({_PF, _F, n.RESERVE, n.PRE_BIND, _PS, _S}),
    n.VOLUME_ZONE: frozenset({_PF, _F}),
    n.POD_TOPOLOGY_SPREAD: frozenset({_PF, _F, _PS, _S}),
    n.INTER_POD_AFFINITY: frozenset({_PF, _F, _PS, _S}),
    n.DYNAMIC_RESOURCES: frozenset({n.PRE_ENQUEUE, _PF, _F, n.POST_FILTER, n.RESERVE, n.PRE_BIND}),
    n.DEFAULT_PREEMPTION: frozenset({n.PRE_ENQUEUE, n.POST_FILTER}),
    n.NODE_RESOURCES_BALANCED_ALLOCATION: frozenset({_PS, _S}),
    n.IMAGE_LOCALITY: frozenset({_S}),
    n.DEFAULT_BINDER: frozenset({n.BIND}),
}
"""Which extension points each in-tree plugin type implements (its Go interface assertions)."""

GATED_OFF: Final[frozenset[tuple[str, str]]] = frozenset({(n.VOLUME_BINDING, _PS), (n.VOLUME_BINDING, _S)})
"""(plugin, extension point) pairs that are no-ops under the default gates: MultiPoint does not
expand into them. An explicit ``score.enabled`` entry still puts the plugin there."""

ARGS_KIND: Final[Mapping[str, str]] = {
    n.NODE_RESOURCES_FIT: "NodeResourcesFitArgs",
    n.NODE_RESOURCES_BALANCED_ALLOCATION: "NodeResourcesBalancedAllocationArgs",
    n.NODE_AFFINITY: "NodeAffinityArgs",
    n.INTER_POD_AFFINITY: "InterPodAffinityArgs",
    n.POD_TOPOLOGY_SPREAD: "PodTopologySpreadArgs",
    n.DEFAULT_PREEMPTION: "DefaultPreemptionArgs",
    n.VOLUME_BINDING: "VolumeBindingArgs",
    n.DYNAMIC_RESOURCES: "DynamicResourcesArgs",
}
"""In-tree plugins with a typed args object, and the ``kind`` of that object."""

DEFAULT_RESOURCES: Final[tuple[ResourceSpec, ...]] = (
    ResourceSpec(name="cpu", weight=1),
    ResourceSpec(name="memory", weight=1),
)
LEAST_ALLOCATED: Final[str] = "LeastAllocated"
MOST_ALLOCATED: Final[str] = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO: Final[str] = "RequestedToCapacityRatio"
SCORING_STRATEGY_TYPES: Final[tuple[str, ...]] = (
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
)


def default_plugin_args(name: str) -> object | None:
    """The args object upstream adds for an enabled in-tree plugin without a pluginConfig entry."""
    if name == n.NODE_RESOURCES_FIT:
        strategy = ScoringStrategy(type=LEAST_ALLOCATED, resources=DEFAULT_RESOURCES)
        return NodeResourcesFitArgs(scoring_strategy=strategy)
    if name == n.NODE_RESOURCES_BALANCED_ALLOCATION:
        return NodeResourcesBalancedAllocationArgs(resources=DEFAULT_RESOURCES)
    if name == n.NODE_AFFINITY:
        return NodeAffinityArgs()
    if name == n.INTER_POD_AFFINITY:
        return InterPodAffinityArgs()
    if name == n.POD_TOPOLOGY_SPREAD:
        return PodTopologySpreadArgs()
    if name == n.DEFAULT_PREEMPTION:
        return DefaultPreemptionArgs()
    if name == n.VOLUME_BINDING:
        return VolumeBindingArgs()
    return None
