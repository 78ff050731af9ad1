"""Large cluster files for ``ksched explain`` benchmarks, shaped like scheduler_perf's defaults.

Nodes follow upstream's ``node-default.yaml`` (4 cpu, 32Gi, 110 pods) spread over zones; bound
pods ask for 100m-500m cpu and 128Mi-512Mi. Written as one JSON ``List``, what
``kubectl get nodes,pods -A -o json`` produces.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson


def make_cluster(nodes: int, pods: int, *, zones: int = 10, seed: int = 1) -> dict[str, Any]:
    rng = random.Random(seed)
    items: list[dict[str, Any]] = []
    for i in range(nodes):
        name = f"node-{i:05d}"
        items.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "labels": {
                        "kubernetes.io/hostname": name,
                        "topology.kubernetes.io/zone": f"zone-{i % zones}",
                    },
                },
                "spec": {},
                "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"}},
            }
        )
    for j in range(pods):
        node = f"node-{rng.randrange(nodes):05d}"
        items.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"pod-{j:06d}",
                    "namespace": "default",
                    "uid": f"uid-{j}",
                    "labels": {"app": f"a{j % 50}"},
                },
                "spec": {
                    "nodeName": node,
                    "containers": [
                        {
                            "name": "c",
                            "image": "registry.k8s.io/pause:3.10",
                            "resources": {
                                "requests": {
                                    "cpu": f"{rng.choice((100, 200, 250, 500))}m",
                                    "memory": f"{rng.choice((128, 256, 512))}Mi",
                                }
                            },
                        }
                    ],
                },
            }
        )
    return {"apiVersion": "v1", "kind": "List", "items": items}


def write_cluster(path: Path, nodes: int, pods: int, *, seed: int = 1) -> Path:
    path.write_bytes(orjson.dumps(make_cluster(nodes, pods, seed=seed)))
    return path


POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "probe", "namespace": "default"},
    "spec": {
        "containers": [
            {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
        ]
    },
}
