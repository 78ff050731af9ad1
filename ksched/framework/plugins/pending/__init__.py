"""Plugins of the default profile whose vectorized versions have not landed yet.

PodTopologySpread and InterPodAffinity (the inter-pod issue) and DefaultPreemption (the
preemption issue) are part of upstream's default profile, so a default config names them. Until
they land, these stand-ins do exactly what upstream does for pods that use none of their features
(PreFilter and PreScore return Skip, so they add nothing), and refuse with an explicit error
for a pod that does, instead of silently deciding without them. Known gap: existing pods' required
anti-affinity is not checked against incoming pods yet.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ksched.cache.cluster import ClusterCache
from ksched.framework import names
from ksched.framework.interface import (
    SKIP,
    SUCCESS,
    Code,
    CycleState,
    FilterResult,
    NominatedPods,
    PostFilterResult,
    PreFilterResult,
    Scores,
    Status,
)
from ksched.framework.registry import Handle
from ksched.framework.result import CycleResult
from ksched.model.pod import Pod


class PendingPlugin:
    """Skip for pods without the feature; an error naming the gap for pods with it."""

    def __init__(self, name: str, feature: str) -> None:
        self.name = name
        self.skips_pods_without = feature
        """The Pod attribute that, when empty, makes PreFilter and PreScore Skip (``PodGatedPlugin``):
        the runtime then does not call them at all."""

    def _status(self, pod: Pod) -> Status:
        if not getattr(pod, self.skips_pods_without):
            return SKIP
        return Status(Code.ERROR, (f"{self.name} is not implemented in ksched yet and this pod needs it",))

    def pre_filter(
        self, state: CycleState, pod: Pod, cluster: ClusterCache
    ) -> tuple[PreFilterResult | None, Status]:
        return None, self._status(pod)

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterCache) -> FilterResult:
        return FilterResult.all_pass()

    def pre_score(self, state: CycleState, pod: Pod, cluster: ClusterCache, feasible: np.ndarray) -> Status:
        return self._status(pod)

    def score(self, state: CycleState, pod: Pod, cluster: ClusterCache, feasible: np.ndarray) -> Scores:
        return 0


class PendingPostFilter:
    """DefaultPreemption: a PostFilter, which ``ksched explain`` does not run."""

    name = names.DEFAULT_PREEMPTION

    def pre_enqueue(self, pod: Pod) -> Status:
        """Upstream holds back a pod whose asynchronous preemption is in flight; none is, yet."""
        return SUCCESS

    def post_filter(
        self,
        state: CycleState,
        pod: Pod,
        cluster: ClusterCache,
        result: CycleResult,
        nominated: NominatedPods | None,
    ) -> PostFilterResult:
        return PostFilterResult(status=Status(Code.UNSCHEDULABLE))


def new_pod_topology_spread(args: Any, handle: Handle) -> PendingPlugin:
    return PendingPlugin(names.POD_TOPOLOGY_SPREAD, "topology_spread_constraints")


def new_inter_pod_affinity(args: Any, handle: Handle) -> PendingPlugin:
    return PendingPlugin(names.INTER_POD_AFFINITY, "affinity")


def new_default_preemption(args: Any, handle: Handle) -> PendingPostFilter:
    return PendingPostFilter()
