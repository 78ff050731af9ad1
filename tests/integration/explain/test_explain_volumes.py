"""``ksched explain`` shows the volume plugins' reasons per node, with their details.

In-process, on a cluster file with nodes, storage objects and bound pods: one node outside the
claim's zone (VolumeZone), one at its CSI volume limit (NodeVolumeLimits), one holding the pod's
inline disk (VolumeRestrictions), one that fits. VolumeBinding is off: it is still a stand-in.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ksched.explain import explain, load_cluster, load_pod
from tests.builders import (
    claim_volume,
    inline_volume,
    make_csi_node,
    make_node,
    make_pod,
    make_pv,
    make_pvc,
)

EBS = "ebs.csi.aws.com"
ZONE = "topology.kubernetes.io/zone"
CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      disabled:
      - name: VolumeBinding
"""
DISK = inline_volume("gcePersistentDisk", "disk", pdName="d")


def _objects() -> list[dict[str, Any]]:
    nodes = [
        make_node(name, cpu=4, memory="8Gi", pods=10, labels={ZONE: zone})
        for name, zone in (("other-zone", "b"), ("full", "a"), ("disk", "a"), ("fits", "a"))
    ]
    storage = [
        make_csi_node(n, {EBS: 1 if n == "full" else 5}) for n in ("other-zone", "full", "disk", "fits")
    ]
    storage += [make_pv(f"pv{i}", csi=(EBS, f"h{i}"), labels={ZONE: "a"}) for i in range(2)]
    storage += [make_pvc(f"c{i}", volume_name=f"pv{i}") for i in range(2)]
    pods = [
        make_pod("holder", node_name="full", volumes=[claim_volume("c1")]),
        make_pod("disk-user", node_name="disk", volumes=[DISK]),
    ]
    return nodes + storage + pods


def test_volume_plugins_reasons(tmp_path: Path) -> None:
    cluster_file = tmp_path / "cluster.json"
    cluster_file.write_text(json.dumps({"kind": "List", "apiVersion": "v1", "items": _objects()}))
    pod_file = tmp_path / "pod.json"
    pod_file.write_text(
        json.dumps(make_pod("new", requests={"cpu": "1"}, volumes=[claim_volume("c0"), DISK]))
    )
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG)
    report = explain(load_cluster(cluster_file), load_pod(pod_file), str(config))
    assert report["selectedNode"] == "fits"
    nodes = {n["name"]: n for n in report["nodes"]}
    assert nodes["other-zone"]["plugin"] == "VolumeZone"
    assert nodes["other-zone"]["reasons"] == ["node(s) had no available volume zone"]
    assert nodes["other-zone"]["detail"] == f"PersistentVolume pv0 has {ZONE} in [a], the node has 'b'"
    assert nodes["full"]["plugin"] == "NodeVolumeLimits"
    assert nodes["full"]["reasons"] == ["node(s) exceed max volume count"]
    assert nodes["full"]["detail"] == f"{EBS}: 1 attached, 1 more wanted, limit 1"
    assert nodes["disk"]["plugin"] == "VolumeRestrictions"
    assert nodes["disk"]["reasons"] == ["node(s) had no available disk"]
    assert nodes["disk"]["detail"] == "kubernetes.io/gce-pd disk 'd' is in use on the node"
    assert nodes["fits"]["feasible"] is True
