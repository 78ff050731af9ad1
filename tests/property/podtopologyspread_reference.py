"""A deliberately simple PodTopologySpread, per pod and per node, for tests only.

It follows upstream's Go code path by path (``filtering.go`` ``calPreFilterState`` / ``Filter``,
``scoring.go`` ``initPreScoreState`` / ``PreScore`` / ``Score`` / ``NormalizeScore``) over plain
Python objects: node label dicts and pod records, with maps keyed by topology value. It shares with
the plugin only the parsed :class:`Constraint` records, and knows nothing of label sets, interned
columns or bincounts. The vectorized plugin must agree with it exactly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ksched.framework.plugins.podtopologyspread.constraints import LABEL_HOSTNAME, Constraint
from ksched.model.node import Node
from ksched.model.pod import Pod
from ksched.model.selectors import required_matches

MAX_INT32 = 2**31 - 1
UNRESOLVABLE = "missing-label"
UNSCHEDULABLE = "skew"


@dataclass
class World:
    """Nodes (in row order) and the pods bound to each node name."""

    nodes: list[Node]
    pods_on: dict[str, list[Pod]]


def _count(pods: Sequence[Pod], c: Constraint, namespace: str) -> int:
    sel = c.selector
    if sel is None or sel.empty:
        return 0
    return sum(1 for p in pods if not p.deleting and p.namespace == namespace and sel.matches(p.labels))


def _affinity_ok(pod: Pod, node: Node) -> bool:
    for k, v in pod.node_selector.items():
        if node.labels.get(k) != v:
            return False
    req = pod.node_affinity.required if pod.node_affinity is not None else None
    if req is not None:
        terms = tuple(t for t in req if not t.empty)
        return required_matches(terms, node.labels, node.name)
    return True


def _taints_ok(pod: Pod, node: Node) -> bool:
    for t in node.taints:
        if t.effect in ("NoSchedule", "NoExecute") and not any(tol.tolerates(t) for tol in pod.tolerations):
            return False
    return True


def _included(c: Constraint, pod: Pod, node: Node) -> bool:
    if c.honor_affinity and not _affinity_ok(pod, node):
        return False
    return not (c.honor_taints and not _taints_ok(pod, node))


def _has_all(node: Node, constraints: Sequence[Constraint]) -> bool:
    return all(c.topology_key in node.labels for c in constraints)


def filter_reference(world: World, pod: Pod, constraints: Sequence[Constraint]) -> dict[str, str | None]:
    """Per node name: None (passes), ``missing-label`` or ``skew``."""
    matchnum: list[dict[str, int]] = [{} for _ in constraints]
    for node in world.nodes:
        if not _has_all(node, constraints):
            continue
        for i, c in enumerate(constraints):
            if not _included(c, pod, node):
                continue
            value = node.labels[c.topology_key]
            n = _count(world.pods_on.get(node.name, []), c, pod.namespace)
            matchnum[i][value] = matchnum[i].get(value, 0) + n
    mins = []
    for i, c in enumerate(constraints):
        low = min(matchnum[i].values()) if matchnum[i] else MAX_INT32
        if len(matchnum[i]) < c.min_domains:
            low = 0
        mins.append(low)
    out: dict[str, str | None] = {}
    for node in world.nodes:
        verdict = None
        for i, c in enumerate(constraints):
            if c.topology_key not in node.labels:
                verdict = UNRESOLVABLE
                break
            own = 1 if c.selector is not None and c.selector.matches(pod.labels) else 0
            skew = matchnum[i].get(node.labels[c.topology_key], 0) + own - mins[i]
            if skew > c.max_skew:
                verdict = UNSCHEDULABLE
                break
        out[node.name] = verdict
    return out


def _go_round(x: float) -> int:
    """Go's ``math.Round`` for non-negative values: half away from zero."""
    whole = math.trunc(x)
    return int(whole + (1 if x - whole >= 0.5 else 0))


def score_reference(
    world: World, pod: Pod, constraints: Sequence[Constraint], feasible: Sequence[str], require_all: bool
) -> dict[str, int]:
    """Normalized scores of the feasible node names."""
    by_name = {n.name: n for n in world.nodes}
    ignored = set()
    counts: list[dict[str, int]] = [{} for _ in constraints]
    for name in feasible:
        node = by_name[name]
        if require_all and not _has_all(node, constraints):
            ignored.add(name)
            continue
        for i, c in enumerate(constraints):
            if c.topology_key == LABEL_HOSTNAME:
                continue
            counts[i].setdefault(node.labels.get(c.topology_key, ""), 0)
    weights = []
    for i, c in enumerate(constraints):
        size = len(counts[i])
        if c.topology_key == LABEL_HOSTNAME:
            size = len(feasible) - len(ignored)
        weights.append(math.log(float(size + 2)))
    for node in world.nodes:
        if require_all and not _has_all(node, constraints):
            continue
        for i, c in enumerate(constraints):
            if not _included(c, pod, node):
                continue
            value = node.labels.get(c.topology_key, "")
            if value not in counts[i]:
                continue
            counts[i][value] += _count(world.pods_on.get(node.name, []), c, pod.namespace)
    raw: dict[str, int] = {}
    for name in feasible:
        if name in ignored:
            raw[name] = 0
            continue
        node = by_name[name]
        score = 0.0
        for i, c in enumerate(constraints):
            if c.topology_key in node.labels:
                if c.topology_key == LABEL_HOSTNAME:
                    cnt = _count(world.pods_on.get(name, []), c, pod.namespace)
                else:
                    cnt = counts[i][node.labels[c.topology_key]]
                score += float(cnt) * weights[i] + float(c.max_skew - 1)
        raw[name] = _go_round(score)
    low, high = None, 0
    for name in feasible:
        if name in ignored:
            continue
        s = raw[name]
        low = s if low is None or s < low else low
        high = max(high, s)
    out = {}
    for name in feasible:
        if name in ignored:
            out[name] = 0
        elif high == 0:
            out[name] = 100
        else:
            assert low is not None
            out[name] = 100 * (high + low - raw[name]) // high
    return out
