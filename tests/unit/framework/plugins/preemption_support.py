"""Builders for the DefaultPreemption tests, after upstream's ``default_preemption_test.go`` setup.

Upstream hands PostFilter a ``NodeToStatus`` map; ksched hands it the cycle's :class:`CycleResult`.
:func:`cycle_with_statuses` builds a result whose per-node codes are exactly the map's (nodes not
named get ``absent``), so the tables carry over as written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ksched.cache.cluster import ClusterCache
from ksched.config.types import DefaultPreemptionArgs
from ksched.framework.interface import Code, CycleState, FilterResult, Status
from ksched.framework.plugins.defaultpreemption import DefaultPreemption
from ksched.framework.plugins.noderesources import new_fit
from ksched.framework.registry import Handle
from ksched.framework.result import CycleResult
from ksched.framework.runtime import Framework
from ksched.model.pdb import pdb_from_dict
from ksched.model.pod import Pod, pod_from_dict
from tests.builders import make_node, make_pod, pod_status

NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000
SMALL = {"cpu": "100m", "memory": "100"}
MEDIUM = {"cpu": "200m", "memory": "200"}
LARGE = {"cpu": "300m", "memory": "300"}
VERY_LARGE = {"cpu": "500m", "memory": "500"}
ONE_POD = {"pods": "1"}
LABEL_KEYS = ("hostname", "zone", "region")


def node(spec: str, capacity: Mapping[str, str] = VERY_LARGE) -> dict[str, Any]:
    """Upstream ``st.MakeNode().Capacity(res)``: pods default to 32; ``"name/zone/region"`` also
    becomes hostname / zone / region labels, as the DryRun tables do."""
    parts = spec.split("/")
    alloc = {"pods": "32", **capacity}
    labels = dict(zip(LABEL_KEYS, parts, strict=False))
    return make_node(parts[0], allocatable=alloc, labels=labels)


def vpod(
    name: str,
    node_name: str = "",
    *,
    priority: int | None = None,
    req: Mapping[str, str] | None = None,
    start: int | None = None,
    labels: Mapping[str, str] | None = None,
    terminating: bool = False,
    preempted: bool = False,
    nominated: str = "",
    policy: str | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A pod dict like upstream's ``st.MakePod()...Obj()``; ``start`` is StartTime(epoch + start s)."""
    return make_pod(
        name,
        uid=name,
        node_name=node_name,
        priority=priority,
        requests=req,
        labels=labels,
        preemption_policy=policy,
        terminating=terminating,
        status=pod_status(start_s=start, nominated_node_name=nominated, disruption_target=preempted),
        **spec,
    )


def pdb(name: str, match: Mapping[str, str] | None, allowed: int, disrupted: Iterable[str] = ()) -> Any:
    raw: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"matchLabels": dict(match)} if match is not None else None},
        "status": {
            "disruptionsAllowed": allowed,
            "disruptedPods": {p: "2024-01-01T00:00:00Z" for p in disrupted},
        },
    }
    return pdb_from_dict(raw)


def cluster(
    nodes: Sequence[Mapping[str, Any]], pods: Sequence[Mapping[str, Any]], pdbs: Sequence[Any] = ()
) -> ClusterCache:
    from ksched.model.node import node_from_dict

    cache = ClusterCache()
    for n in nodes:
        cache.add_node(node_from_dict(n))
    for p in pods:
        cache.add_pod(pod_from_dict(p))
    for b in pdbs:
        cache.pdbs[b.key] = b
    return cache


class AllFail:
    """Upstream ``FalseFilterPlugin`` / a FakeFilter that fails every node (``fakeFilterRC``)."""

    def __init__(self, name: str = "FakeFilter") -> None:
        self.name = name
        self.row_local = True

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterCache) -> FilterResult:
        n = cluster.nodes.n_rows
        return FilterResult.from_mask(
            np.ones(n, dtype=np.bool_), f"injecting failure for pod {pod.name}", Code.UNSCHEDULABLE
        )


class MatchName:
    """Upstream ``MatchFilterPlugin``: only the node named like the pod passes."""

    name = "MatchFilter"
    row_local = True

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterCache) -> FilterResult:
        nodes = cluster.nodes
        fails = np.array(
            [nodes.nodes[r] is None or nodes.nodes[r].name != pod.name for r in range(nodes.n_rows)]
        )
        return FilterResult.from_mask(fails, "pod name does not match", Code.UNSCHEDULABLE)


def fit_framework(
    extra_filters: Sequence[Any] = (),
    *,
    fit: bool = True,
    args: DefaultPreemptionArgs | None = None,
    pre_filter: Sequence[Any] = (),
    offsets: Sequence[int] | None = None,
) -> tuple[Framework, DefaultPreemption]:
    """A profile with NodeResourcesFit (PreFilter + Filter, like upstream's tables), the given extra
    filters and DefaultPreemption; ``offsets`` replaces upstream's seeded ``getOffsetRand``."""
    handle = Handle("default-scheduler", rng=np.random.default_rng(0))
    plugin = DefaultPreemption(args, handle)
    filters: list[Any] = list(extra_filters)
    pres: list[Any] = list(pre_filter)
    if fit:
        f = new_fit(None, Handle("default-scheduler"))
        filters.append(f)
        pres.append(f)
    fw = Framework(
        "default-scheduler",
        pre_filter=pres,
        filters=filters,
        post_filter=[plugin],
        handle=handle,
    )
    if offsets is not None:
        it = iter(offsets)
        plugin.offset_for = lambda n: next(it)
    return fw, plugin


def cycle_with_statuses(
    pod: Pod,
    cache: ClusterCache,
    statuses: Mapping[str, Code] | None,
    absent: Code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
) -> CycleResult:
    """A failed cycle whose node statuses are ``statuses`` (None: every node Unschedulable)."""
    nodes = cache.nodes
    n = nodes.n_rows
    valid = nodes.valid[:n].copy()
    failed = np.zeros(n, dtype=np.uint64)
    for row in range(n):
        nd = nodes.nodes[row]
        if nd is None:
            continue
        code = Code.UNSCHEDULABLE if statuses is None else statuses.get(nd.name, absent)
        failed[row] = 1 if code == Code.UNSCHEDULABLE else 2
    result = CycleResult(pod, "default-scheduler", len(nodes), Status(Code.UNSCHEDULABLE))
    result.valid = valid
    result.feasible = np.zeros(n, dtype=np.bool_)
    result.filters.append(
        (
            "Given",
            FilterResult(
                failed, ("given", "given"), (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
            ),
        )
    )
    return result
