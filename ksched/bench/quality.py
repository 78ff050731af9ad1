"""Placement quality of a run: the figures that say whether fast also meant right.

Computed from the API objects at the end of the measured phase (what the cluster holds, not what the
scheduler believes). Each workload lists the figures that matter for its shape (``quality.figures``):

- ``nodes_used``: distinct nodes holding a measured pod (spreading vs bin packing);
- ``max_pods_per_node``: the most measured pods on one node;
- ``max_skew``: max - min of measured pods per domain of ``skewKey``, over every domain any node has
  (topology spreading: upstream's maxSkew bounds it for DoNotSchedule);
- ``unscheduled``: measured pods without a node;
- ``preempted``: initial pods that are gone or being deleted (preemption victims);
- ``colocated``: measured pods that share a ``colocateKey`` domain with another measured pod (0 for
  required anti-affinity on the hostname).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ksched.bench.workload import Workload

Obj = dict[str, Any]


def figures(
    workload: Workload, measured: list[Obj], init: list[Obj], nodes: list[Obj], prefix: str
) -> dict[str, Any]:
    mine = [p for p in measured if p["metadata"]["name"].startswith(prefix)]
    placed = [p["spec"]["nodeName"] for p in mine if p.get("spec", {}).get("nodeName")]
    per_node = Counter(placed)
    node_labels = {n["metadata"]["name"]: n["metadata"].get("labels", {}) for n in nodes}
    out: dict[str, Any] = {}
    for fig in workload.quality.figures:
        if fig == "nodes_used":
            out[fig] = len(per_node)
        elif fig == "max_pods_per_node":
            out[fig] = max(per_node.values(), default=0)
        elif fig == "unscheduled":
            out[fig] = len(mine) - len(placed)
        elif fig == "max_skew":
            out[fig] = _max_skew(per_node, node_labels, workload.quality.skew_key)
            out["skew_key"] = workload.quality.skew_key
        elif fig == "preempted":
            created = sum(g.count for g in workload.init_pods)
            alive = sum(1 for p in init if not p["metadata"].get("deletionTimestamp"))
            out[fig] = created - alive
        elif fig == "colocated":
            key = workload.quality.colocate_key
            domains = Counter(node_labels.get(n, {}).get(key) for n in placed)
            out[fig] = sum(c for d, c in domains.items() if d is not None and c > 1)
    return out


def _max_skew(per_node: Counter[str], node_labels: dict[str, dict[str, str]], key: str) -> int:
    per_domain: Counter[str] = Counter({v[key]: 0 for v in node_labels.values() if key in v})
    for node, count in per_node.items():
        value = node_labels.get(node, {}).get(key)
        if value is not None:
            per_domain[value] += count
    if not per_domain:
        return 0
    return max(per_domain.values()) - min(per_domain.values())
