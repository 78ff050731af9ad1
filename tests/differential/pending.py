"""The pending pods of the differential workload, one maker per kind.

Each maker builds the pod number ``i`` of its kind from the shared :class:`Context` and draws
from the workload's one Generator, so the order of the calls is part of the workload: add a kind
at the end of :data:`~tests.differential.names.KINDS`, or expect the golden files to change.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from tests.builders import container, make_pod, tolerating
from tests.differential.names import (
    ANTI_AFFINITY,
    DISK,
    GENERATION,
    GPU,
    GPU_RESOURCE,
    GPU_TAINT,
    HOSTNAME,
    IMAGES,
    KINDS,
    NAMESPACES,
    NODE_AFFINITY,
    PLAIN,
    POD_AFFINITY,
    PREEMPTOR,
    RACK,
    SPREAD,
    TYPE,
    UNSCHEDULABLE,
    ZONE,
    ZONES,
    kind_of,
)


@dataclass(frozen=True, slots=True)
class Context:
    """What pending pods are built against."""

    apps: int
    """Running ``svc-K`` / ``batch-K`` apps (K below this)."""
    protected: list[str]
    exposed: list[str]
    """``std`` nodes whose pods budgets protect, or that no budget covers (see
    ``workload._budget_cover``)."""


def pending_pods(counts: Mapping[str, int], ctx: Context, rng: np.random.Generator) -> list[dict[str, Any]]:
    """``counts[kind]`` pods of each kind, shuffled, preemptors held back to the second half."""
    makers = {
        PLAIN: _plain,
        NODE_AFFINITY: _node_affinity,
        POD_AFFINITY: _pod_affinity,
        ANTI_AFFINITY: _anti_affinity,
        SPREAD: _spread,
        GPU: _gpu,
        PREEMPTOR: _preemptor,
        UNSCHEDULABLE: _unschedulable,
    }
    out: list[dict[str, Any]] = []
    for kind in KINDS:
        for i in range(counts[kind]):
            out.append(makers[kind](f"{kind}-{i:05d}", i, ctx, rng))
    order = rng.permutation(len(out))
    shuffled = [out[int(j)] for j in order]
    # Preemptors come in the second half, once the pending pods of the first half took the free room.
    half = len(shuffled) // 2
    first = [p for p in shuffled[:half] if kind_of(p["metadata"]["name"]) != PREEMPTOR]
    moved = [p for p in shuffled[:half] if kind_of(p["metadata"]["name"]) == PREEMPTOR]
    return first + _interleave(shuffled[half:], moved)


def _interleave(base: list[dict[str, Any]], extra: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``extra`` spread evenly through ``base`` (deterministic, no draws)."""
    if not extra:
        return base
    step = max(1, len(base) // len(extra))
    out: list[dict[str, Any]] = []
    for i, raw in enumerate(base):
        out.append(raw)
        if i % step == step - 1 and extra:
            out.append(extra.pop(0))
    return out + extra


def _pick(rng: np.random.Generator, options: tuple[Any, ...]) -> Any:
    return options[int(rng.integers(len(options)))]


def _requests(rng: np.random.Generator) -> dict[str, str] | None:
    if rng.integers(20) == 0:
        return None  # best effort: scored with upstream's non-zero defaults
    return {
        "cpu": _pick(rng, ("100m", "250m", "500m", "1", "2")),
        "memory": _pick(rng, ("128Mi", "512Mi", "1Gi", "4Gi")),
    }


def _plain(name: str, i: int, ctx: Context, rng: np.random.Generator) -> dict[str, Any]:
    ports = [("TCP", "", 8080)] if rng.integers(20) == 0 else []
    image = IMAGES[int(rng.integers(len(IMAGES)))][0] if rng.integers(4) == 0 else ""
    c = container(requests=_requests(rng), image=image, host_ports=ports)
    return make_pod(name, namespace=_pick(rng, NAMESPACES), containers=[c], labels={"app": f"plain-{i % 50}"})


def _node_affinity(name: str, i: int, ctx: Context, rng: np.random.Generator) -> dict[str, Any]:
    zones = sorted({f"zone-{int(z)}" for z in rng.integers(ZONES, size=2)})
    terms = [
        [{"key": ZONE, "operator": "In", "values": zones}],
        [{"key": TYPE, "operator": "NotIn", "values": ["small", "gpu"]}, {"key": DISK, "operator": "Exists"}],
        [{"key": GENERATION, "operator": "Gt", "values": ["2"]}],
    ]
    required = [{"matchExpressions": terms[i % 3]}]
    preferred = [
        {
            "weight": 50,
            "preference": {"matchExpressions": [{"key": DISK, "operator": "In", "values": ["ssd"]}]},
        },
        {
            "weight": int(rng.integers(1, 100)),
            "preference": {"matchExpressions": [{"key": TYPE, "operator": "In", "values": ["big"]}]},
        },
    ]
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": required},
            "preferredDuringSchedulingIgnoredDuringExecution": preferred,
        }
    }
    selector = {DISK: "ssd"} if i % 7 == 0 else None
    return make_pod(name, requests=_requests(rng), affinity=affinity, node_selector=selector)


def _pod_affinity(name: str, i: int, ctx: Context, rng: np.random.Generator) -> dict[str, Any]:
    """Half follow a running ``svc`` app (zone or rack); half form ``cache-G`` groups co-located by
    rack, whose first pod is placed by upstream's "no pod matches yet" rule."""
    k = int(rng.integers(ctx.apps))
    namespace = NAMESPACES[k % len(NAMESPACES)]
    if i % 2 == 0:
        topology = ZONE if i % 4 == 0 else RACK
        term = {"labelSelector": {"matchLabels": {"app": f"svc-{k}"}}, "topologyKey": topology}
        preferred = [
            {
                "weight": 80,
                "podAffinityTerm": {
                    "labelSelector": {"matchLabels": {"tier": "batch"}},
                    "topologyKey": HOSTNAME,
                },
            }
        ]
        affinity = {
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [term],
                "preferredDuringSchedulingIgnoredDuringExecution": preferred,
            }
        }
        return make_pod(name, namespace=namespace, requests=_requests(rng), affinity=affinity)
    group = f"cache-{i // 8}"
    term = {"labelSelector": {"matchLabels": {"app": group}}, "topologyKey": RACK}
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return make_pod(name, requests=_requests(rng), labels={"app": group}, affinity=affinity)


def _anti_affinity(name: str, i: int, ctx: Context, rng: np.random.Generator) -> dict[str, Any]:
    """``web-G`` groups of six: one per node (required), preferably apart by zone and from batch pods."""
    group = f"web-{i // 6}"
    required = [{"labelSelector": {"matchLabels": {"app": group}}, "topologyKey": HOSTNAME}]
    preferred = [
        {
            "weight": 100,
            "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": group}}, "topologyKey": ZONE},
        },
        {
            "weight": 10,
            "podAffinityTerm": {
                "labelSelector": {
                    "matchExpressions": [{"key": "tier", "operator": "In", "values": ["batch"]}]
                },
                "namespaceSelector": {},
                "topologyKey": HOSTNAME,
            },
        },
    ]
    affinity = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": required,
            "preferredDuringSchedulingIgnoredDuringExecution": preferred,
        }
    }
    return make_pod(name, requests=_requests(rng), labels={"app": group}, affinity=affinity)


def _spread(name: str, i: int, ctx: Context, rng: np.random.Generator) -> dict[str, Any]:
    """``spread-G`` groups of twenty: even over zones (hard), then hosts (soft); every third group
    only on ssd nodes, counted with ``nodeAffinityPolicy: Honor`` (the default)."""
    g = i // 20
    group = f"spread-{g}"
    selector = {"matchLabels": {"app": group}}
    constraints = [
        {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": selector},
        {
            "maxSkew": 2,
            "topologyKey": HOSTNAME,
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": selector,
        },
    ]
    if g % 4 == 1:
        constraints[0]["minDomains"] = ZONES
    return make_pod(
        name,
        requests=_requests(rng),
        labels={"app": group},
        node_selector={DISK: "ssd"} if g % 3 == 0 else None,
        topologySpreadConstraints=constraints,
    )


def _gpu(name: str, i: int, ctx: Context, rng: np.random.Generator) -> dict[str, Any]:
    requests = {"cpu": "2", "memory": "8Gi", GPU_RESOURCE: str(int(rng.integers(1, 3)))}
    c = container(requests=requests, limits={GPU_RESOURCE: requests[GPU_RESOURCE]}, image=IMAGES[1][0])
    return make_pod(name, containers=[c], tolerations=[tolerating(GPU_TAINT)], labels={"app": "ml"})


def _preemptor(name: str, i: int, ctx: Context, rng: np.random.Generator) -> dict[str, Any]:
    """Too big for the free quarter of any node of their type: std pods of 4 cpu, big pods of 12,
    some confined to one rack (few candidates), to a node whose pods all have budgets that allow no
    disruption, or to such a node and an exposed one; a few that may not preempt."""
    std = {"cpu": "4", "memory": "4Gi"}
    variant = i % 7
    if variant in (0, 1):
        return make_pod(name, requests=std, node_selector={TYPE: "std"}, priority=1000)
    if variant == 2:
        return make_pod(
            name, requests={"cpu": "12", "memory": "16Gi"}, node_selector={TYPE: "big"}, priority=500
        )
    if variant == 3:
        rack = f"zone-{int(rng.integers(ZONES))}-rack-00"
        return make_pod(name, requests=std, node_selector={RACK: rack, TYPE: "std"}, priority=1000)
    if variant == 4 and ctx.protected:
        node = ctx.protected[int(rng.integers(len(ctx.protected)))]
        return make_pod(name, requests=std, node_selector={HOSTNAME: node}, priority=1000)
    if variant == 5 and ctx.protected and ctx.exposed:
        return make_pod(name, requests=std, affinity=_pair_affinity(ctx, rng), priority=1000)
    return make_pod(name, requests=std, node_selector={TYPE: "std"}, priority=1000, preemptionPolicy="Never")


def _pair_affinity(ctx: Context, rng: np.random.Generator) -> dict[str, Any]:
    """A protected node and an exposed one listed before it. Their victims tie on priority, and
    the protected node's victims started later, which upstream prefers: only the budgets make the
    exposed node the better candidate."""
    protected = ctx.protected[int(rng.integers(len(ctx.protected)))]
    earlier = [n for n in ctx.exposed if n < protected] or ctx.exposed
    exposed = earlier[int(rng.integers(len(earlier)))]
    term = {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [exposed, protected]}]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


def _unschedulable(name: str, i: int, ctx: Context, rng: np.random.Generator) -> dict[str, Any]:
    """Pods no node can take now: an absent zone (until a node joins it), more cpu than any node,
    affinity to pods that do not exist, a GPU without the toleration, a zone anti-affinity group
    larger than the zones."""
    variant = i % 5
    if variant == 0:
        return make_pod(name, requests={"cpu": "500m"}, node_selector={ZONE: "zone-9"})
    if variant == 1:
        return make_pod(name, requests={"cpu": "64", "memory": "1Gi"}, priority=1000)
    if variant == 2:
        term = {"labelSelector": {"matchLabels": {"app": "ghost"}}, "topologyKey": ZONE}
        return make_pod(
            name,
            requests=_requests(rng),
            affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
        )
    if variant == 3:
        return make_pod(name, requests={"cpu": "1", GPU_RESOURCE: "1"})
    group = f"zonal-{i // 35}"
    term = {"labelSelector": {"matchLabels": {"app": group}}, "topologyKey": ZONE}
    return make_pod(
        name,
        requests=_requests(rng),
        labels={"app": group},
        affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
    )
