"""VolumeBinding's Filter (and the whole default cycle) at 5,000 nodes, for pods with claims.

Cases (group ``volumebinding-5000``):

- ``bound-local``: one claim bound to a local PV (``hostname In [node]``): the PV's affinity mask
  (kept across cycles) and the bound-claims walk; ``bound-zonal-cold`` recomputes the mask every
  time (the node table changed), ``cycle-bound-local`` is the whole default cycle around it (less the
  three volume plugins still stubbed);
- ``unbound-local``: one ``WaitForFirstConsumer`` claim whose class has 150 local PVs on 150 nodes
  to choose from: nodes grouped by the PVs' affinities, the smallest-fit search vectorized over the
  groups;
- ``unbound-3-claims``: three unbound claims, two matched against 250 local PVs of two classes
  (several sizes) and one provisioned with CSIStorageCapacity per zone.

Filter runs on a fresh cycle state each time (its own memo would answer otherwise); PreFilter, which
reads the claims, is timed apart (``pre-filter``).
"""

from __future__ import annotations

from typing import Any

import pytest

from benches.test_micro_cycle import build_cluster
from ksched.cache import volumes as vol
from ksched.cache.cluster import ClusterCache
from ksched.config import config_from_dict
from ksched.config.types import VolumeBindingArgs
from ksched.framework.handle import Handle
from ksched.framework.interface import CycleState
from ksched.framework.plugins.volumebinding import new
from ksched.framework.profile import build_profiles
from ksched.model.pod import Pod, pod_from_dict
from ksched.model.storage import (
    csi_driver_from_dict,
    csi_storage_capacity_from_dict,
    pv_from_dict,
    pvc_from_dict,
    storage_class_from_dict,
)
from tests.builders import make_pod
from tests.storage_builders import (
    claim_volume,
    make_capacity,
    make_csi_driver,
    make_pv,
    make_pvc,
    make_storage_class,
)

HOST, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"
N_NODES = 5_000


def storage_cluster() -> ClusterCache:
    """The micro-cycle cluster (5,000 nodes, ~25,000 pods) with storage objects added once."""
    cache = build_cluster(N_NODES)
    store = cache.volumes
    if "bound-local" in store.pvs:
        return cache
    for raw in (
        make_storage_class("local"),
        make_storage_class("fast"),
        make_storage_class("csi", provisioner="csi.example.com"),
    ):
        store.upsert(vol.STORAGE_CLASSES, storage_class_from_dict(raw))
    store.upsert(
        vol.CSI_DRIVERS, csi_driver_from_dict(make_csi_driver("csi.example.com", storage_capacity=True))
    )
    for z in range(3):
        cap = make_capacity(f"cap-{z}", "csi", node_labels={ZONE: f"zone-{z}"}, capacity="100Gi")
        store.upsert(vol.CSI_STORAGE_CAPACITIES, csi_storage_capacity_from_dict(cap))
    pvs = [
        make_pv(
            "bound-local",
            storage_class="local",
            capacity="10Gi",
            phase="Bound",
            affinity={HOST: ["node-00042"]},
        ),
        make_pv(
            "bound-zonal", storage_class="local", capacity="10Gi", phase="Bound", affinity={ZONE: ["zone-1"]}
        ),
    ]
    pvs += [
        make_pv(f"local-{i}", storage_class="local", capacity="10Gi", affinity={HOST: [f"node-{i * 97:05d}"]})
        for i in range(50)
    ]
    pvs += [
        make_pv(
            f"fast-{i}",
            storage_class=("fast", "local")[i % 2],
            capacity=("5Gi", "20Gi")[i % 3 == 0],
            affinity={HOST: [f"node-{i * 23:05d}"]},
        )
        for i in range(200)
    ]
    for raw in pvs:
        store.upsert(vol.PERSISTENT_VOLUMES, pv_from_dict(raw))
    claims = [
        make_pvc("bound", storage_class="local", volume_name="bound-local", bound=True),
        make_pvc("bound-z", storage_class="local", volume_name="bound-zonal", bound=True),
        make_pvc("one", storage_class="local", request="5Gi"),
        make_pvc("a", storage_class="fast", request="5Gi"),
        make_pvc("b", storage_class="local", request="10Gi"),
        make_pvc("c", storage_class="csi", request="10Gi"),
    ]
    for raw in claims:
        store.upsert(vol.PERSISTENT_VOLUME_CLAIMS, pvc_from_dict(raw))
    return cache


def claim_pod(*claims: str) -> Pod:
    return pod_from_dict(
        make_pod(
            "incoming", requests={"cpu": "500m", "memory": "1Gi"}, volumes=[claim_volume(c) for c in claims]
        )
    )


CASES = {
    "bound-local": ("bound",),
    "unbound-local": ("one",),
    "unbound-3-claims": ("a", "b", "c"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_filter(benchmark: Any, case: str) -> None:
    cache = storage_cluster()
    pl = new(VolumeBindingArgs(), Handle("default-scheduler"))
    pod = claim_pod(*CASES[case])
    prefiltered = CycleState()
    assert pl.pre_filter(prefiltered, pod, cache)[1].ok
    data = prefiltered.read("VolumeBinding")
    benchmark.group = f"volumebinding-{N_NODES}"
    benchmark.name = f"filter-{case}"

    def run() -> Any:
        data.filter_key = None  # the cycle's own memo would answer otherwise
        return pl.filter(prefiltered, pod, cache)

    fr = benchmark(run)
    assert fr.failed is None or (fr.failed == 0).any()


def test_filter_bound_cold(benchmark: Any) -> None:
    """A bound zonal PV whose mask is recomputed every time (as after a node update)."""
    cache = storage_cluster()
    pl = new(VolumeBindingArgs(), Handle("default-scheduler"))
    pod = claim_pod("bound-z")
    state = CycleState()
    assert pl.pre_filter(state, pod, cache)[1].ok
    data = state.read("VolumeBinding")
    node = cache.nodes.node(7)
    benchmark.group = f"volumebinding-{N_NODES}"
    benchmark.name = "filter-bound-zonal-cold"

    def run() -> Any:
        cache.add_node(node)  # bumps the node table's generation: the affinity mask is stale
        data.filter_key = None
        return pl.filter(state, pod, cache)

    benchmark(run)


def test_pre_filter(benchmark: Any) -> None:
    cache = storage_cluster()
    pl = new(VolumeBindingArgs(), Handle("default-scheduler"))
    pod = claim_pod("bound")
    benchmark.group = f"volumebinding-{N_NODES}"
    benchmark.name = "pre-filter-bound"
    benchmark(lambda: pl.pre_filter(CycleState(), pod, cache))


def test_default_cycle_with_a_bound_local_claim(benchmark: Any) -> None:
    """The default profile's cycle less the volume plugins still stubbed, one bound local claim."""
    cache = storage_cluster()
    stubbed = ("VolumeRestrictions", "NodeVolumeLimits", "VolumeZone")
    doc = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "plugins": {"multiPoint": {"disabled": [{"name": n} for n in stubbed]}},
            }
        ],
    }
    fw = build_profiles(config_from_dict(doc), seed=1)["default-scheduler"]
    pod = claim_pod("bound")
    benchmark.group = f"volumebinding-{N_NODES}"
    benchmark.name = "cycle-bound-local"
    result = benchmark(lambda: fw.schedule_pod(pod, cache))
    assert result.selected_node == "node-00042"
