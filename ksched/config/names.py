"""Names of the in-tree plugins and of the framework's extension points.

The strings are the ones upstream uses in ``pkg/scheduler/framework/plugins/names/names.go`` and in
the ``plugins:`` section of a KubeSchedulerConfiguration v1; config files refer to plugins by these
names, so they are part of the file format and must never change.
"""

from __future__ import annotations

from typing import Final

SCHEDULING_GATES: Final[str] = "SchedulingGates"
PRIORITY_SORT: Final[str] = "PrioritySort"
NODE_UNSCHEDULABLE: Final[str] = "NodeUnschedulable"
NODE_NAME: Final[str] = "NodeName"
TAINT_TOLERATION: Final[str] = "TaintToleration"
NODE_AFFINITY: Final[str] = "NodeAffinity"
NODE_PORTS: Final[str] = "NodePorts"
NODE_RESOURCES_FIT: Final[str] = "NodeResourcesFit"
VOLUME_RESTRICTIONS: Final[str] = "VolumeRestrictions"
NODE_VOLUME_LIMITS: Final[str] = "NodeVolumeLimits"
VOLUME_BINDING: Final[str] = "VolumeBinding"
VOLUME_ZONE: Final[str] = "VolumeZone"
POD_TOPOLOGY_SPREAD: Final[str] = "PodTopologySpread"
INTER_POD_AFFINITY: Final[str] = "InterPodAffinity"
DYNAMIC_RESOURCES: Final[str] = "DynamicResources"
DEFAULT_PREEMPTION: Final[str] = "DefaultPreemption"
NODE_RESOURCES_BALANCED_ALLOCATION: Final[str] = "NodeResourcesBalancedAllocation"
IMAGE_LOCALITY: Final[str] = "ImageLocality"
DEFAULT_BINDER: Final[str] = "DefaultBinder"

IN_TREE: Final[frozenset[str]] = frozenset(
    {
        SCHEDULING_GATES,
        PRIORITY_SORT,
        NODE_UNSCHEDULABLE,
        NODE_NAME,
        TAINT_TOLERATION,
        NODE_AFFINITY,
        NODE_PORTS,
        NODE_RESOURCES_FIT,
        VOLUME_RESTRICTIONS,
        NODE_VOLUME_LIMITS,
        VOLUME_BINDING,
        VOLUME_ZONE,
        POD_TOPOLOGY_SPREAD,
        INTER_POD_AFFINITY,
        DYNAMIC_RESOURCES,
        DEFAULT_PREEMPTION,
        NODE_RESOURCES_BALANCED_ALLOCATION,
        IMAGE_LOCALITY,
        DEFAULT_BINDER,
    }
)
"""Every plugin ksched ships; the default for ``known_plugins``."""

REMOVED_IN_V1: Final[frozenset[str]] = frozenset(
    {"AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits"}
)
"""Plugins upstream deleted; a v1 config naming them is rejected with a "was invalid" message."""

PRE_ENQUEUE: Final[str] = "preEnqueue"
QUEUE_SORT: Final[str] = "queueSort"
PRE_FILTER: Final[str] = "preFilter"
FILTER: Final[str] = "filter"
POST_FILTER: Final[str] = "postFilter"
PRE_SCORE: Final[str] = "preScore"
SCORE: Final[str] = "score"
RESERVE: Final[str] = "reserve"
PERMIT: Final[str] = "permit"
PRE_BIND: Final[str] = "preBind"
BIND: Final[str] = "bind"
POST_BIND: Final[str] = "postBind"
MULTI_POINT: Final[str] = "multiPoint"

EXTENSION_POINTS: Final[tuple[str, ...]] = (
    PRE_ENQUEUE,
    QUEUE_SORT,
    PRE_FILTER,
    FILTER,
    POST_FILTER,
    PRE_SCORE,
    SCORE,
    RESERVE,
    PERMIT,
    PRE_BIND,
    BIND,
    POST_BIND,
    MULTI_POINT,
)
"""The keys of ``profiles[*].plugins``, in the order of upstream's ``Plugins`` struct."""

SPECIFIC_EXTENSION_POINTS: Final[tuple[str, ...]] = EXTENSION_POINTS[:-1]
"""Every extension point except ``multiPoint``: the keys of ``Profile.plugins``."""
