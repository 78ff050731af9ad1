"""SystemReserve: keep a share of every node's cpu and memory free for system pods.

A pod outside the exempt namespaces fits a node only if, after it lands, the node's requests stay
within ``1 - fraction`` of its allocatable, for every listed resource. Pods in the exempt namespaces
(``kube-system`` by default) are not checked at all: PreFilter answers Skip for them, so Filter is
not even called. The check is a few vectorized integer operations over every node at once.

Config::

    pluginConfig:
    - name: SystemReserve
      args: {fraction: 0.1, resources: [cpu, memory], exemptNamespaces: [kube-system]}
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ksched.framework import api

PERMILLE = 1000


class SystemReserve:
    name = "SystemReserve"

    def __init__(self, args: dict[str, Any], handle: api.Handle) -> None:
        args = dict(args)
        fraction = args.pop("fraction", 0.1)
        if not isinstance(fraction, int | float) or not 0 <= fraction < 1:
            raise ValueError(f"fraction: must be a number in [0, 1), got {fraction!r}")
        resources = args.pop("resources", ["cpu", "memory"])
        if not isinstance(resources, list) or not resources or not all(isinstance(r, str) for r in resources):
            raise ValueError(f"resources: must be a non-empty list of resource names, got {resources!r}")
        if len(resources) > 64:
            raise ValueError("resources: at most 64 (one failure bit each)")
        exempt = args.pop("exemptNamespaces", ["kube-system"])
        if not isinstance(exempt, list) or not all(isinstance(n, str) for n in exempt):
            raise ValueError(f"exemptNamespaces: must be a list of namespace names, got {exempt!r}")
        if args:
            raise ValueError(f"unknown field(s) {sorted(args)}; known: fraction, resources, exemptNamespaces")
        self.keep_permille = PERMILLE - round(fraction * PERMILLE)
        self.resources: tuple[str, ...] = tuple(resources)
        self.exempt = frozenset(exempt)
        pct = f"{fraction * 100:g}%"
        self.reasons = tuple(f"node(s) would use the {pct} of {r} kept for system pods" for r in resources)

    def pre_filter(
        self, state: api.CycleState, pod: api.Pod, cluster: api.ClusterView
    ) -> tuple[api.PreFilterResult | None, api.Status]:
        if pod.namespace in self.exempt:
            return None, api.SKIP
        return None, api.SUCCESS

    def filter(self, state: api.CycleState, pod: api.Pod, cluster: api.ClusterView) -> api.FilterResult:
        failed: np.ndarray | None = None
        for bit, resource in enumerate(self.resources):
            want = pod.requests.get(resource, 0)
            if not want:
                continue
            # requested + want > allocatable * keep / 1000, without a division
            over = (cluster.requested(resource) + want) * PERMILLE > cluster.allocatable(
                resource
            ) * self.keep_permille
            if over.any():
                bits = over.astype(np.uint64) << np.uint64(bit)
                failed = bits if failed is None else failed | bits
        if failed is None:
            return api.FilterResult.all_pass()
        return api.FilterResult(failed, self.reasons)

    def events_to_register(self) -> Sequence[api.ClusterEventSpec]:
        # Room appears when a pod goes away or a node is added or grows.
        return [api.cluster_event("Pod", "Delete"), api.cluster_event("Node", "Add", "UpdateNodeAllocatable")]
