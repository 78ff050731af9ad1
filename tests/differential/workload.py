"""The differential test's workload: a seeded, zoned cluster, the pods already running on it, and
waves of pending pods of every kind the framework decides about.

Everything is drawn from one ``numpy.random.Generator`` seeded by the caller, integers and choices
only, so one (size, seed) is one list of API objects. The objects are raw API dicts made with
:mod:`tests.builders`, so the replay also exercises the model's parsing. The golden file stores a
digest of the objects (:func:`digest`): if numpy ever changes the Generator's stream, the test says
that the *workload* changed rather than showing a confusing decision diff.

The cluster (``node-NNNNN``): zones ``zone-0..4`` (nodes dealt round-robin), racks of 20 nodes per
zone, four node types (``std`` 8 cpu, ``big`` 32 cpu, ``gpu`` 16 cpu + 4 GPUs tainted
``dedicated=gpu:NoSchedule``, ``small`` 4 cpu), a few nodes cordoned or tainted for maintenance.
Running pods fill about three quarters of each node's cpu with ``svc-*`` (priority 100, some
protected by PodDisruptionBudgets) and ``batch-*`` (priority 0) pods, so that pending pods find
room only in the remaining quarter and larger preemptors must evict.

Pending pods come in shuffled waves; midway some batch pods complete, and near the end a few nodes
are added (one of them in a zone no pod could reach before), so parked pods are retried on real
cluster events. The pending pods themselves are made in :mod:`tests.differential.pending`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from tests.builders import make_node, make_pdb, make_pod, tolerating
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
    MAINTENANCE_TAINT,
    NAMESPACES,
    NODE_AFFINITY,
    PLAIN,
    POD_AFFINITY,
    PREEMPTOR,
    RACK,
    RACK_SIZE,
    RUNNING,
    SPREAD,
    START,
    TYPE,
    UNSCHEDULABLE,
    ZONE,
    ZONES,
    kind_of,
)
from tests.differential.pending import Context, pending_pods

NODE_TYPES: Final = ("std", "big", "gpu", "small")
NODE_TYPE_P: Final = (0.70, 0.20, 0.05, 0.05)
CAPACITY: Final[Mapping[str, tuple[int, str, int]]] = {
    "std": (8, "32Gi", 110),
    "big": (32, "128Gi", 110),
    "gpu": (16, "64Gi", 110),
    "small": (4, "16Gi", 30),
}
"""Node type -> (cpu, memory, pods)."""
RUNNING_SHAPE: Final[Mapping[str, tuple[int, int]]] = {
    "std": (2, 3),
    "big": (3, 8),
    "gpu": (2, 4),
    "small": (1, 2),
}
"""Node type -> (running pods per node, cpu of each): three quarters of the node's cpu."""


@dataclass(frozen=True, slots=True)
class Size:
    """How big a workload is: the node count and the pending pods of each kind."""

    nodes: int
    pending: Mapping[str, int]
    wave: int
    """Pending pods per wave."""


SIZES: Final[Mapping[str, Size]] = {
    "small": Size(
        200,
        {
            PLAIN: 80,
            NODE_AFFINITY: 30,
            POD_AFFINITY: 24,
            ANTI_AFFINITY: 24,
            SPREAD: 30,
            GPU: 8,
            PREEMPTOR: 16,
            UNSCHEDULABLE: 12,
        },
        wave=40,
    ),
    "large": Size(
        5000,
        {
            PLAIN: 1200,
            NODE_AFFINITY: 400,
            POD_AFFINITY: 250,
            ANTI_AFFINITY: 300,
            SPREAD: 400,
            GPU: 100,
            PREEMPTOR: 150,
            UNSCHEDULABLE: 120,
        },
        wave=250,
    ),
}


@dataclass(frozen=True, slots=True)
class Wave:
    """What happens at one moment: objects added (pending or bound) and bound pods that complete."""

    after_s: float
    """Seconds of the fake clock since the previous wave."""
    nodes: list[dict[str, Any]] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)
    completed: list[str] = field(default_factory=list)
    """``namespace/name`` of running pods deleted in this wave."""


@dataclass(frozen=True, slots=True)
class Workload:
    """The initial cluster, then the waves, in the order the harness feeds them."""

    nodes: list[dict[str, Any]]
    running: list[dict[str, Any]]
    pdbs: list[dict[str, Any]]
    waves: list[Wave]

    def pending_by_kind(self) -> dict[str, int]:
        counts = dict.fromkeys(KINDS, 0)
        for wave in self.waves:
            for raw in wave.pods:
                if not raw["spec"].get("nodeName"):
                    counts[kind_of(raw["metadata"]["name"])] += 1
        return counts


def digest(workload: Workload) -> str:
    """A short hash of every object in the workload, in order (see the module docstring)."""
    blob = json.dumps(
        [workload.nodes, workload.running, workload.pdbs, [vars_of(w) for w in workload.waves]],
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def vars_of(wave: Wave) -> dict[str, Any]:
    return {"after_s": wave.after_s, "nodes": wave.nodes, "pods": wave.pods, "completed": wave.completed}


def generate(size: Size, seed: int) -> Workload:
    """The workload of ``size`` drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    nodes = [_node(i, str(rng.choice(NODE_TYPES, p=NODE_TYPE_P)), rng) for i in range(size.nodes)]
    running = _running(nodes, rng)
    pdbs = _pdbs(running, rng)
    protected, exposed = _budget_cover(nodes, running, pdbs)
    ctx = Context(apps=max(10, len(nodes) // 25), protected=protected, exposed=exposed)
    pending = pending_pods(size.pending, ctx, rng)
    return Workload(nodes, running, pdbs, _waves(size, pending, running, len(nodes), rng))


# ------------------------------------------------------------------------------------------ the cluster
def _node(i: int, node_type: str, rng: np.random.Generator, zone: str | None = None) -> dict[str, Any]:
    name = f"node-{i:05d}"
    z = i % ZONES
    zone = zone or f"zone-{z}"
    cpu, memory, pods = CAPACITY[node_type]
    labels = {
        HOSTNAME: name,
        ZONE: zone,
        RACK: f"{zone}-rack-{i // ZONES // RACK_SIZE:02d}",
        TYPE: node_type,
        DISK: "ssd" if rng.integers(10) < 4 else "hdd",
        GENERATION: str(int(rng.integers(1, 5))),
    }
    taints = [GPU_TAINT] if node_type == "gpu" else []
    roll = int(rng.integers(200))
    if roll < 2:
        taints.append(MAINTENANCE_TAINT)
    allocatable = {GPU_RESOURCE: "4"} if node_type == "gpu" else {}
    images = [([image], size) for image, size in IMAGES if rng.integers(3) == 0]
    return make_node(
        name,
        cpu=cpu,
        memory=memory,
        pods=pods,
        allocatable=allocatable,
        labels=labels,
        taints=taints,
        unschedulable=roll == 2,
        images=images,
    )


def _running(nodes: list[dict[str, Any]], rng: np.random.Generator) -> list[dict[str, Any]]:
    """The pods already bound when the scheduler starts; ``svc-K`` lives in ``NAMESPACES[K % 3]``."""
    apps = max(10, len(nodes) // 25)
    out = []
    for node in nodes:
        node_type = node["metadata"]["labels"][TYPE]
        count, cpu = RUNNING_SHAPE[node_type]
        for _ in range(count):
            k = int(rng.integers(apps))
            svc = rng.integers(10) < 6
            app = f"svc-{k}" if svc else f"batch-{k}"
            i = len(out)
            out.append(
                make_pod(
                    f"{RUNNING}-{i:05d}",
                    namespace=NAMESPACES[k % len(NAMESPACES)],
                    node_name=node["metadata"]["name"],
                    requests={"cpu": cpu, "memory": f"{cpu * 3}Gi"},
                    labels={"app": app, "tier": "svc" if svc else "batch"},
                    priority=100 if svc else 0,
                    tolerations=[tolerating(GPU_TAINT)] if node_type == "gpu" else [],
                    status={"phase": "Running", "startTime": _timestamp(i)},
                )
            )
    return out


def _pdbs(running: list[dict[str, Any]], rng: np.random.Generator) -> list[dict[str, Any]]:
    """A budget for every third ``svc`` app, allowing 0, 1 or 2 disruptions at the start."""
    members: dict[tuple[str, str], int] = {}
    for raw in running:
        meta = raw["metadata"]
        key = (meta["namespace"], meta["labels"]["app"])
        members[key] = members.get(key, 0) + 1
    out = []
    for (namespace, app), count in sorted(members.items()):
        if not app.startswith("svc-") or int(app[4:]) % 3:
            continue
        allowed = min(count, int(rng.integers(3)))
        out.append(
            make_pdb(
                f"pdb-{app}",
                namespace=namespace,
                match_labels={"app": app},
                min_available=count - allowed,
                disruptions_allowed=allowed,
            )
        )
    return out


def _budget_cover(
    nodes: list[dict[str, Any]], running: list[dict[str, Any]], pdbs: list[dict[str, Any]]
) -> tuple[list[str], list[str]]:
    """``std`` nodes (two running pods each) split by what budgets say about their pods:
    *protected*, both pods in budgets that allow no disruption (a preemptor confined to one must
    violate a budget; upstream then still preempts), and *exposed*, both pods ``svc`` (priority
    100) that no budget covers."""
    allowed = {
        (b["metadata"]["namespace"], b["spec"]["selector"]["matchLabels"]["app"]): b["status"][
            "disruptionsAllowed"
        ]
        for b in pdbs
    }
    by_node: dict[str, list[int | None]] = {}
    for raw in running:
        meta = raw["metadata"]
        cover = allowed.get((meta["namespace"], meta["labels"]["app"]))
        by_node.setdefault(raw["spec"]["nodeName"], []).append(
            -1 if cover is None and meta["labels"]["tier"] == "svc" else cover
        )
    std = {n["metadata"]["name"] for n in nodes if n["metadata"]["labels"][TYPE] == "std"}
    pairs = sorted((node, covers) for node, covers in by_node.items() if node in std)
    protected = [node for node, covers in pairs if covers == [0, 0]]
    exposed = [node for node, covers in pairs if covers == [-1, -1]]
    return protected, exposed


# ------------------------------------------------------------------------------------------ waves
def _waves(
    size: Size,
    pending: list[dict[str, Any]],
    running: list[dict[str, Any]],
    n_nodes: int,
    rng: np.random.Generator,
) -> list[Wave]:
    """Pending pods in waves two seconds apart; batch completions after the middle wave; new nodes
    (two ``big`` ones and one in ``zone-9``) after three quarters; then the five-minute sweep."""
    waves = []
    chunks = [pending[j : j + size.wave] for j in range(0, len(pending), size.wave)]
    batch = [
        f"{p['metadata']['namespace']}/{p['metadata']['name']}"
        for p in running
        if p["metadata"]["labels"]["tier"] == "batch"
    ]
    for j, chunk in enumerate(chunks):
        wave = Wave(after_s=2.0, pods=chunk)
        if j == len(chunks) // 2:
            picks = sorted(
                int(x) for x in rng.choice(len(batch), size=max(1, len(batch) // 50), replace=False)
            )
            wave.completed.extend(batch[x] for x in picks)
        if j == (3 * len(chunks)) // 4:
            wave.nodes.extend(
                [
                    _node(n_nodes, "big", rng),
                    _node(n_nodes + 1, "big", rng),
                    _node(n_nodes + 2, "std", rng, zone="zone-9"),
                ]
            )
        waves.append(wave)
    waves.append(Wave(after_s=310.0))  # past podMaxInUnschedulablePodsDuration: every parked pod once more
    return waves


def _timestamp(i: int) -> str:
    return (START + dt.timedelta(seconds=i)).strftime("%Y-%m-%dT%H:%M:%SZ")
