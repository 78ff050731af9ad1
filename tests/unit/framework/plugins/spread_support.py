"""Compact builders for the PodTopologySpread tables (upstream's ``st.MakePod().SpreadConstraint(...)``).

Upstream writes ``SpreadConstraint(maxSkew, key, action, selector, minDomains, nodeAffinityPolicy,
nodeTaintsPolicy, matchLabelKeys)``; :func:`sc` takes the same arguments in the same order. Node and
pod tuples keep the tables as short as upstream's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.builders import make_node, make_pod

FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
"""Upstream ``fooSelector``: ``foo`` exists."""
BAR = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}
"""Upstream ``barSelector``."""
NULL: Any = None
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "value": "", "effect": "NoSchedule"}


def sc(
    max_skew: int,
    key: str,
    action: str,
    selector: Mapping[str, Any] | None,
    min_domains: int | None = None,
    affinity_policy: str | None = None,
    taints_policy: str | None = None,
    match_label_keys: Sequence[str] | None = None,
) -> dict[str, Any]:
    c: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": action}
    if selector is not None:
        c["labelSelector"] = dict(selector)
    if min_domains is not None:
        c["minDomains"] = min_domains
    if affinity_policy is not None:
        c["nodeAffinityPolicy"] = affinity_policy
    if taints_policy is not None:
        c["nodeTaintsPolicy"] = taints_policy
    if match_label_keys is not None:
        c["matchLabelKeys"] = list(match_label_keys)
    return c


def node(
    name: str, labels: Mapping[str, str], taints: Sequence[Mapping[str, str]] = (), *, failed: bool = False
) -> dict[str, Any]:
    """A node; ``failed`` marks it unschedulable (a table's ``failedNodes``: not a candidate)."""
    return make_node(name, labels=labels, taints=taints, unschedulable=failed)


def zn(name: str, zone: str) -> dict[str, Any]:
    """Upstream's usual node: ``zone`` and ``node`` labels."""
    return make_node(name, labels={"zone": zone, "node": name})


def bound(
    name: str,
    node_name: str,
    labels: Mapping[str, str],
    *,
    namespace: str = "default",
    terminating: bool = False,
) -> dict[str, Any]:
    return make_pod(name, namespace=namespace, node_name=node_name, labels=labels, terminating=terminating)


def incoming(
    labels: Mapping[str, str], *constraints: Mapping[str, Any], name: str = "p", **kwargs: Any
) -> dict[str, Any]:
    return make_pod(name, labels=labels, topologySpreadConstraints=[dict(c) for c in constraints], **kwargs)


def node_affinity_in(key: str, values: Sequence[str], op: str = "In") -> dict[str, Any]:
    expr: dict[str, Any] = {"key": key, "operator": op, "values": list(values)}
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [expr]}]
            }
        }
    }


SPREAD_ONLY_CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      disabled:
      - name: "*"
      enabled:
      - name: PrioritySort
      - name: DefaultBinder
      - name: PodTopologySpread
      - name: NodeUnschedulable
  pluginConfig:
  - name: PodTopologySpread
    args:
      defaultingType: {defaulting}
"""
"""A profile with only PodTopologySpread (upstream's tables run the plugin alone), plus NodeUnschedulable
so that a table's "failed nodes" (marked ``spec.unschedulable``) are rejected by something else."""


def run_explain(
    tmp: Path,
    objects: Sequence[Mapping[str, Any]],
    pod: Mapping[str, Any],
    *,
    defaulting: str = "List",
) -> dict[str, Any]:
    """``ksched explain`` in-process on a cluster file, with a PodTopologySpread-only profile."""
    from ksched.explain import explain, load_cluster, load_pod

    cluster_file = tmp / "cluster.json"
    cluster_file.write_text(json.dumps({"kind": "List", "apiVersion": "v1", "items": list(objects)}))
    pod_file = tmp / "pod.json"
    pod_file.write_text(json.dumps(pod))
    config = tmp / "config.yaml"
    config.write_text(SPREAD_ONLY_CONFIG.format(defaulting=defaulting))
    return explain(load_cluster(cluster_file), load_pod(pod_file), str(config))
