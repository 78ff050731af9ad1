"""The vocabulary of the differential workload: pod kinds (each pod's name starts with its kind),
label keys, taints, namespaces and images, shared by the cluster and the pending pods."""

from __future__ import annotations

import datetime as dt
from typing import Final

PLAIN: Final = "plain"
NODE_AFFINITY: Final = "nodeaff"
POD_AFFINITY: Final = "podaff"
ANTI_AFFINITY: Final = "anti"
SPREAD: Final = "spread"
GPU: Final = "gpu"
PREEMPTOR: Final = "preempt"
UNSCHEDULABLE: Final = "unsched"
RUNNING: Final = "running"
KINDS: Final = (PLAIN, NODE_AFFINITY, POD_AFFINITY, ANTI_AFFINITY, SPREAD, GPU, PREEMPTOR, UNSCHEDULABLE)

ZONES: Final = 5
RACK_SIZE: Final = 20
NAMESPACES: Final = ("default", "team-a", "team-b")
HOSTNAME: Final = "kubernetes.io/hostname"
ZONE: Final = "topology.kubernetes.io/zone"
RACK: Final = "topology.example.com/rack"
TYPE: Final = "node.example.com/type"
DISK: Final = "node.example.com/disk"
GENERATION: Final = "node.example.com/generation"
GPU_RESOURCE: Final = "nvidia.com/gpu"
GPU_TAINT: Final = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
MAINTENANCE_TAINT: Final = {"key": "maintenance", "value": "true", "effect": "NoSchedule"}
IMAGES: Final = (("registry.example/web:1", 400 << 20), ("registry.example/ml:2", 900 << 20))
START: Final = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


def kind_of(name: str) -> str:
    """The kind a pod was generated as (its name's first part)."""
    return name.split("-", 1)[0]
