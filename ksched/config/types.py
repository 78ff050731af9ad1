"""The decoded, defaulted and validated KubeSchedulerConfiguration v1.

Everything here is a frozen, slotted, keyword-only dataclass: a ``SchedulerConfiguration`` is built
once by :func:`ksched.config.load_config` (or ``config_from_dict`` / ``default_config``) and then
only read. Durations are floats in seconds and say so in their names (``lease_duration_s``); the
config file spells them as Go durations (``"15s"``, ``"1m30s"``).

Plugin args of in-tree plugins are decoded into the typed ``*Args`` classes below; args of plugins
ksched does not know (out-of-tree plugins, or in-tree args types not modelled yet) stay the raw
mapping read from the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ksched.config.extenders import Extender

from ksched.config.features import DEFAULT_GATES, FeatureGates

_FROZEN = {"frozen": True, "slots": True, "kw_only": True}


@dataclass(**_FROZEN)
class PluginRef:
    """One plugin at one extension point of a profile's effective plugin list."""

    name: str
    """Plugin name, e.g. ``"NodeResourcesFit"``."""
    weight: int
    """Score weight (never 0: an unset or 0 weight becomes 1). Only meaningful at ``score``;
    0 at every other extension point."""


@dataclass(**_FROZEN)
class ResourceSpec:
    """A resource and its weight in a resource-based score."""

    name: str
    """Resource name, e.g. ``"cpu"`` or ``"example.com/gpu"``."""
    weight: int
    """Relative weight, 1..100 for NodeResourcesFit; always 1 for BalancedAllocation."""


@dataclass(**_FROZEN)
class UtilizationShapePoint:
    """One point of the RequestedToCapacityRatio piecewise-linear score function."""

    utilization: int
    """x axis: requested/capacity in percent, 0..100."""
    score: int
    """y axis: score at that utilization, 0..10 (scaled to 0..100 by the plugin)."""


@dataclass(**_FROZEN)
class ScoringStrategy:
    """NodeResourcesFit's scoring strategy."""

    type: str
    """``LeastAllocated``, ``MostAllocated`` or ``RequestedToCapacityRatio``."""
    resources: tuple[ResourceSpec, ...]
    """Resources scored and their weights (default cpu:1, memory:1)."""
    shape: tuple[UtilizationShapePoint, ...] = ()
    """``requestedToCapacityRatio.shape``; empty unless type is RequestedToCapacityRatio."""


@dataclass(**_FROZEN)
class NodeResourcesFitArgs:
    """Args of NodeResourcesFit."""

    ignored_resources: tuple[str, ...] = ()
    """Resource names the Filter ignores (not Score)."""
    ignored_resource_groups: tuple[str, ...] = ()
    """Resource name prefixes (``example.com``) the Filter ignores."""
    scoring_strategy: ScoringStrategy
    """How the Score ranks nodes."""


@dataclass(**_FROZEN)
class NodeResourcesBalancedAllocationArgs:
    """Args of NodeResourcesBalancedAllocation."""

    resources: tuple[ResourceSpec, ...]
    """Resources balanced (default cpu and memory, each weight 1)."""


@dataclass(**_FROZEN)
class NodeAffinityArgs:
    """Args of NodeAffinity."""

    added_affinity: Mapping[str, Any] | None = None
    """A v1 ``NodeAffinity`` object (raw, as in the file) every pod must also satisfy; None = none."""


@dataclass(**_FROZEN)
class InterPodAffinityArgs:
    """Args of InterPodAffinity."""

    hard_pod_affinity_weight: int = 1
    """Score weight of existing pods' required affinity terms matching the incoming pod, 0..100."""
    ignore_preferred_terms_of_existing_pods: bool = False
    """Ignore existing pods' preferred terms unless the incoming pod has inter-pod affinity."""


@dataclass(**_FROZEN)
class PodTopologySpreadArgs:
    """Args of PodTopologySpread."""

    default_constraints: tuple[Mapping[str, Any], ...] = ()
    """Raw v1 TopologySpreadConstraint objects applied to pods that define none (``List`` only)."""
    defaulting_type: str = "System"
    """``System`` (built-in zone/hostname constraints) or ``List`` (``default_constraints``)."""


@dataclass(**_FROZEN)
class DefaultPreemptionArgs:
    """Args of DefaultPreemption."""

    min_candidate_nodes_percentage: int = 10
    """Minimum candidates to dry-run, as a percentage of all nodes, 0..100."""
    min_candidate_nodes_absolute: int = 100
    """Minimum candidates to dry-run, absolute, >= 0 (not both 0)."""


@dataclass(**_FROZEN)
class VolumeBindingArgs:
    """Args of VolumeBinding."""

    bind_timeout_seconds: int = 600
    """Seconds PreBind waits, after its API writes, for the volumes to be bound. 0 fails every pod
    whose volumes still need binding, as upstream's poll does when its deadline has already passed
    at the first tick."""
    shape: tuple[UtilizationShapePoint, ...] = ()
    """Storage-capacity score shape; only allowed with the StorageCapacityScoring gate (off)."""


@dataclass(**_FROZEN)
class DynamicResourcesArgs:
    """Args of DynamicResources."""

    filter_timeout_s: float = 10.0
    """Upstream bounds the Filter by this; ksched's Filter does not run long enough to be stopped,
    so only upstream's default (10s) and 0s (no bound) are accepted."""


@dataclass(**_FROZEN)
class Profile:
    """One scheduling profile: what a pod with ``spec.schedulerName == scheduler_name`` runs through."""

    scheduler_name: str
    """Pods select the profile with this name."""
    percentage_of_nodes_to_score: int | None
    """Overrides the global value when not None; 0 = adaptive."""
    plugins: Mapping[str, tuple[PluginRef, ...]]
    """Effective ordered plugins per extension point (every point but ``multiPoint``), after
    defaults, merging and MultiPoint expansion."""
    plugin_args: Mapping[str, object]
    """Args per enabled plugin name: a typed ``*Args`` for in-tree args types, else the raw mapping."""
    score_weights: Mapping[str, int]
    """Weight per plugin in ``plugins["score"]`` (same values as the PluginRef weights)."""


@dataclass(**_FROZEN)
class LeaderElection:
    """``leaderElection``: the Lease-based leader election client."""

    leader_elect: bool = True
    """Run leader election; False = schedule immediately (single replica)."""
    lease_duration_s: float = 15.0
    """How long non-leaders wait after the last observed renewal before taking over."""
    renew_deadline_s: float = 10.0
    """How long the leader keeps retrying a renewal before giving up leadership."""
    retry_period_s: float = 2.0
    """Interval between acquire/renew attempts (jittered by 1.2)."""
    resource_lock: str = "leases"
    """Lock object type; only ``leases`` is accepted."""
    resource_name: str = "kube-scheduler"
    """Name of the Lease object."""
    resource_namespace: str = "kube-system"
    """Namespace of the Lease object."""


@dataclass(**_FROZEN)
class ClientConnection:
    """``clientConnection``: how ksched talks to the API server."""

    qps: float = 50.0
    """Client-side rate limit, requests per second."""
    burst: int = 100
    """Client-side burst allowance, requests."""
    content_type: str = "application/vnd.kubernetes.protobuf"
    """Upstream's request content type. ksched speaks JSON: ``application/json`` is used as is,
    protobuf (the default) is accepted and logged once at start-up; anything else is refused."""
    accept_content_types: str = ""
    """Accept header override: only "" or JSON/protobuf types (ksched accepts JSON responses)."""
    kubeconfig: str = ""
    """Path of a kubeconfig file; empty = in-cluster config."""


@dataclass(**_FROZEN)
class SchedulerConfiguration:
    """A whole KubeSchedulerConfiguration v1 after defaulting and validation."""

    parallelism: int
    """Upstream's goroutines for Filter/Score. ksched evaluates all nodes in one vectorized pass,
    so only the default (16) is accepted."""
    percentage_of_nodes_to_score: int | None
    """Global percentage of feasible nodes to find before scoring; 0 = adaptive (5..50%) as upstream;
    None (the field is absent) = every feasible node, ksched's default."""
    pod_initial_backoff_s: float
    """Backoff of an unschedulable pod after its first failed attempt."""
    pod_max_backoff_s: float
    """Cap of the exponential backoff."""
    profiles: tuple[Profile, ...]
    """At least one; scheduler names are unique."""
    leader_election: LeaderElection
    """Leader election settings."""
    client_connection: ClientConnection
    """API client settings."""
    enable_profiling: bool
    """Serve /debug/pprof-style profiling endpoints."""
    enable_contention_profiling: bool
    """Also profile lock contention (upstream: block profiling)."""
    delay_cache_until_active: bool
    """Fill informer caches only after winning leader election."""
    pod_max_in_unschedulable_pods_s: float = 300.0
    """How long a pod may stay unschedulable before the queue retries it. Not a v1 field: set by
    kube-scheduler's ``--pod-max-in-unschedulable-pods-duration`` only, as upstream."""
    feature_gates: FeatureGates = DEFAULT_GATES
    """The process's effective feature gates (v1.35 defaults, then ``--feature-gates``)."""
    extenders: tuple[Extender, ...] = field(default=())
    """HTTP extenders, in config order (:mod:`ksched.config.extenders`); shared by every profile."""

    def profile(self, scheduler_name: str) -> Profile | None:
        """The profile pods with ``spec.schedulerName == scheduler_name`` use, or None."""
        for prof in self.profiles:
            if prof.scheduler_name == scheduler_name:
                return prof
        return None
