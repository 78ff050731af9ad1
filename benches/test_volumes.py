"""The volume plugins at 5,000 nodes, 10,000 existing pods with one CSI claim each.

Every node has a CSINode limiting ``ebs.csi.aws.com`` to 25 volumes and the topology zone label of
one of three zones; every existing pod mounts a claim bound to a CSI PV of its own (10,000 PVs and
claims), and a tenth of the nodes also carry a VolumeAttachment. Measured:

- ``nodevolumelimits-filter``: NodeVolumeLimits' Filter for a pod with one bound claim (the issue's
  budget: well under 100 µs), and PreFilter + Filter;
- ``volumerestrictions``: PreFilter + Filter for a pod with an inline GCE PD that 500 pods on 250 nodes mount;
- ``volumezone``: PreFilter + Filter for a pod whose PV is in one zone;
- ``cycle``: one full cycle of the default profile without VolumeBinding (still a stub);
- ``index``: assume and forget one pod with a claim (the index's cost per pod event).
"""

from __future__ import annotations

from typing import Any

import pytest

from ksched.cache.cluster import ClusterCache
from ksched.config import config_from_dict
from ksched.framework.interface import CycleState
from ksched.framework.plugins.nodevolumelimits import NodeVolumeLimits
from ksched.framework.plugins.volumerestrictions import VolumeRestrictions
from ksched.framework.plugins.volumezone import VolumeZone
from ksched.framework.profile import build_profiles
from ksched.model.pod import Pod, pod_from_dict
from tests import builders
from tests.builders import claim_volume, inline_volume, make_pod

N_NODES = 5_000
N_PODS = 10_000
EBS = "ebs.csi.aws.com"
ZONE = "topology.kubernetes.io/zone"
NO_BINDING = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "plugins": {"multiPoint": {"disabled": [{"name": "VolumeBinding"}]}},
        }
    ],
}


def build_cluster() -> ClusterCache:
    cache = ClusterCache(node_capacity=N_NODES)
    objects: list[dict[str, Any]] = []
    for i in range(N_NODES):
        name = f"node-{i:05d}"
        cache.add_node(
            builders.node(name, cpu="32", memory="128Gi", pods=110, labels={ZONE: f"zone-{i % 3}"})
        )
        objects.append(builders.make_csi_node(name, {EBS: 25}))
        if i % 10 == 0:
            objects.append(builders.make_volume_attachment(f"va-{i}", node=name, attacher=EBS, pv=f"pv-{i}"))
    for k in range(N_PODS + 1):
        objects.append(builders.make_pv(f"pv-{k}", csi=(EBS, f"vol-{k}"), labels={ZONE: f"zone-{k % 3}"}))
        objects.append(builders.make_pvc(f"c-{k}", volume_name=f"pv-{k}"))
    builders.store_objects(cache, objects)
    gce = inline_volume("gcePersistentDisk", pdName="shared", readOnly=True)
    for k in range(N_PODS):
        volumes = [claim_volume(f"c-{k}")] + ([gce] if k % 20 == 0 else [])
        raw = make_pod(f"p{k}", uid=f"u{k}", node_name=f"node-{k % N_NODES:05d}", volumes=volumes)
        cache.add_pod(pod_from_dict(raw))
    return cache


@pytest.fixture(scope="module")
def cluster() -> ClusterCache:
    return build_cluster()


def _incoming(*volumes: dict[str, Any]) -> Pod:
    return pod_from_dict(make_pod("incoming", requests={"cpu": "1"}, volumes=list(volumes)))


def test_nodevolumelimits_filter(benchmark: Any, cluster: ClusterCache) -> None:
    plugin = NodeVolumeLimits()
    pod = _incoming(claim_volume(f"c-{N_PODS}"))
    state = CycleState()
    benchmark.group = "nodevolumelimits-filter-5000-nodes"
    result = benchmark(plugin.filter, state, pod, cluster)
    assert result.failed is None


def test_nodevolumelimits_prefilter_and_filter(benchmark: Any, cluster: ClusterCache) -> None:
    plugin = NodeVolumeLimits()
    pod = _incoming(claim_volume(f"c-{N_PODS}"))

    def once() -> Any:
        state = CycleState()
        plugin.pre_filter(state, pod, cluster)
        return plugin.filter(state, pod, cluster)

    benchmark.group = "nodevolumelimits-filter-5000-nodes"
    assert benchmark(once).failed is None


def test_volumerestrictions_disk(benchmark: Any, cluster: ClusterCache) -> None:
    plugin = VolumeRestrictions()
    pod = _incoming(inline_volume("gcePersistentDisk", pdName="shared"))

    def once() -> Any:
        state = CycleState()
        plugin.pre_filter(state, pod, cluster)
        return plugin.filter(state, pod, cluster)

    benchmark.group = "volumerestrictions-5000-nodes"
    result = benchmark(once)
    assert result.failed is not None and int((result.failed != 0).sum()) == N_NODES // 20


def test_volumezone(benchmark: Any, cluster: ClusterCache) -> None:
    plugin = VolumeZone()
    pod = _incoming(claim_volume(f"c-{N_PODS}"))

    def once() -> Any:
        state = CycleState()
        plugin.pre_filter(state, pod, cluster)
        return plugin.filter(state, pod, cluster)

    benchmark.group = "volumezone-5000-nodes"
    result = benchmark(once)
    assert result.failed is not None and int((result.failed != 0).sum()) == N_NODES * 2 // 3


def test_cycle_with_a_claim(benchmark: Any, cluster: ClusterCache) -> None:
    fw = build_profiles(config_from_dict(NO_BINDING), seed=1)["default-scheduler"]
    pod = _incoming(claim_volume(f"c-{N_PODS}"))
    benchmark.group = "cycle-volumes-5000-nodes"
    result = benchmark(fw.schedule_pod, pod, cluster)
    assert result.selected_node is not None


def test_index_assume_and_forget(benchmark: Any, cluster: ClusterCache) -> None:
    pod = pod_from_dict(make_pod("moving", uid="moving", volumes=[claim_volume(f"c-{N_PODS}")]))

    def once() -> None:
        cluster.assume(pod, "node-00001")
        cluster.forget(pod.uid)

    benchmark.group = "volume-index-5000-nodes"
    benchmark(once)
