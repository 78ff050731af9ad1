"""Pods with volumes over real HTTP against the embedded cluster (issue 18, "done when").

The scheduler runs in-process with the default profile (all four volume plugins). The embedded
cluster runs its storage stand-ins (PV controller, CSI provisioner, ephemeral volume controller) as a
separate process that talks HTTP to it, so they see the scheduler's writes only through the API, as
kube-controller-manager would. Objects are created in the store directly where only their content
matters, and through the API where its validation is the point.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from sched_harness import InProcessScheduler, events_about, node_of, pod, wait_until

from ksched.sim import SimCluster
from ksched.sim.workloads import node_template, pod_template

StartScheduler = Callable[..., InProcessScheduler]
ZONE = "topology.kubernetes.io/zone"
DRIVER = "csi.example.com"


@pytest.fixture
def sim(make_sim: Callable[..., SimCluster]) -> Iterator[SimCluster]:
    """Six nodes, two in each of zones a, b and c, and the storage stand-ins running."""
    cluster = make_sim()
    for i, zone in enumerate("aabbcc"):
        node = node_template(
            cpu="4", memory="8Gi", labels={ZONE: zone, "kubernetes.io/hostname": f"node-{i}"}
        )
        node["metadata"]["name"] = f"node-{i}"
        cluster.store.create("nodes", node)
    if cluster.store.get("namespaces", "default") is None:
        cluster.store.create("namespaces", {"metadata": {"name": "default"}})
    cluster.start_storage_controllers()
    yield cluster
    cluster.stop_storage_controllers()


def storage_class(
    sim: SimCluster, name: str, *, mode: str, zones: list[str] | None = None, provisioner: str = DRIVER
) -> None:
    sc: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
        "reclaimPolicy": "Delete",
    }
    if zones:
        sc["allowedTopologies"] = [{"matchLabelExpressions": [{"key": ZONE, "values": zones}]}]
    sim.store.create("storageclasses", sc)


def claim(
    sim: SimCluster, name: str, cls: str, *, modes: tuple[str, ...] = ("ReadWriteOnce",), volume: str = ""
) -> None:
    spec: dict[str, Any] = {
        "storageClassName": cls,
        "accessModes": list(modes),
        "resources": {"requests": {"storage": "1Gi"}},
        "volumeMode": "Filesystem",
    }
    if volume:
        spec["volumeName"] = volume
    sim.store.create(
        "persistentvolumeclaims", {"metadata": {"name": name, "namespace": "default"}, "spec": spec}
    )


def volume(
    sim: SimCluster, name: str, cls: str, *, zone: str, modes: tuple[str, ...] = ("ReadWriteOnce",)
) -> None:
    sim.store.create(
        "persistentvolumes",
        {
            "metadata": {"name": name, "labels": {ZONE: zone}},
            "spec": {
                "storageClassName": cls,
                "capacity": {"storage": "1Gi"},
                "accessModes": list(modes),
                "volumeMode": "Filesystem",
                "persistentVolumeReclaimPolicy": "Retain",
                "csi": {"driver": DRIVER, "volumeHandle": name},
                "nodeAffinity": {
                    "required": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": ZONE, "operator": "In", "values": [zone]}]}
                        ]
                    }
                },
            },
        },
    )


def pod_with(
    sim: SimCluster, name: str, *claims: str, priority: int = 0, node_selector: dict[str, str] | None = None
) -> None:
    obj = pod_template(cpu="100m", memory="100Mi", priority=priority, node_selector=node_selector)
    obj["metadata"]["name"] = name
    obj["spec"]["volumes"] = [
        {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)
    ]
    obj["spec"]["terminationGracePeriodSeconds"] = 0
    sim.store.create("pods", obj)


def bound(sim: SimCluster, *names: str, timeout: float = 30.0) -> list[str]:
    def all_bound() -> list[str] | None:
        nodes = [(sim.store.get("pods", n, "default") or {}).get("spec", {}).get("nodeName") for n in names]
        return nodes if all(nodes) else None

    return wait_until(all_bound, timeout=timeout, what=f"pods {names} bound")


def zone_of(sim: SimCluster, node: str) -> str:
    return sim.store.get("nodes", node)["metadata"]["labels"][ZONE]


def pv_of_claim(sim: SimCluster, name: str) -> dict[str, Any]:
    pvc = wait_until(
        lambda: (
            (o := sim.store.get("persistentvolumeclaims", name, "default"))
            and o.get("status", {}).get("phase") == "Bound"
            and o
        ),
        what=f"claim {name} bound",
    )
    return sim.store.get("persistentvolumes", pvc["spec"]["volumeName"])


def pv_zones(pv: dict[str, Any]) -> set[str]:
    terms = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    return {v for t in terms for e in t.get("matchExpressions", []) if e["key"] == ZONE for v in e["values"]}


def no_assumed_volumes(sched: InProcessScheduler) -> None:
    def none_left(s: Any) -> bool:
        return not list(s.cache.volumes.pvs.assumed()) and not list(s.cache.volumes.pvcs.assumed())

    wait_until(lambda: sched.probe(none_left), what="no assumed PV or PVC left in the cache")


def test_statefulset_claims_are_provisioned_in_the_pods_allowed_zone(
    sim: SimCluster, start_scheduler: StartScheduler
) -> None:
    storage_class(sim, "zonal", mode="WaitForFirstConsumer", zones=["a", "b"])
    sched = start_scheduler()
    for i in range(3):
        claim(sim, f"data-web-{i}", "zonal")
        pod_with(sim, f"web-{i}", f"data-web-{i}")
    nodes = bound(sim, "web-0", "web-1", "web-2")
    for i, node in enumerate(nodes):
        zone = zone_of(sim, node)
        assert zone in ("a", "b"), f"web-{i} on {node} in zone {zone}"
        pv = pv_of_claim(sim, f"data-web-{i}")
        assert pv_zones(pv) == {zone}, (
            f"web-{i}: volume {pv['metadata']['name']} in {pv_zones(pv)}, pod in {zone}"
        )
        assert pv["spec"]["csi"]["driver"] == DRIVER
    no_assumed_volumes(sched)


def test_prebound_zonal_volumes_pin_their_pods_to_the_zone(
    sim: SimCluster, start_scheduler: StartScheduler
) -> None:
    storage_class(sim, "static", mode="Immediate", provisioner="kubernetes.io/no-provisioner")
    for i in range(4):
        volume(sim, f"pv-c-{i}", "static", zone="c")
        claim(sim, f"c-{i}", "static", volume=f"pv-c-{i}")
    start_scheduler()
    for i in range(4):
        pod_with(sim, f"zonal-{i}", f"c-{i}")
    nodes = bound(sim, *[f"zonal-{i}" for i in range(4)])
    assert {zone_of(sim, n) for n in nodes} == {"c"}


def test_csinode_limit_of_two_is_never_exceeded(sim: SimCluster, start_scheduler: StartScheduler) -> None:
    sim.store.create(
        "csinodes",
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSINode",
            "metadata": {"name": "node-0"},
            "spec": {"drivers": [{"name": DRIVER, "nodeID": "node-0", "allocatable": {"count": 2}}]},
        },
    )
    storage_class(sim, "static", mode="Immediate", provisioner="kubernetes.io/no-provisioner")
    for i in range(3):
        volume(sim, f"pv-a-{i}", "static", zone="a")
        claim(sim, f"a-{i}", "static", volume=f"pv-a-{i}")
    sched = start_scheduler()
    for i in range(3):
        pod_with(sim, f"lim-{i}", f"a-{i}", node_selector={"kubernetes.io/hostname": "node-0"})
    placed = wait_until(
        lambda: (
            (n := [x for x in range(3) if pod(sim, f"lim-{x}")["spec"].get("nodeName")]) and len(n) == 2 and n
        ),
        what="two of three pods bound to node-0",
    )
    (left,) = set(range(3)) - set(placed)
    wait_until(
        lambda: any(
            "node(s) exceed max volume count" in e.get("note", e.get("message", ""))
            for e in events_about(sim, f"lim-{left}", "FailedScheduling")
        ),
        what="the third pod's FailedScheduling event",
    )
    assert not pod(sim, f"lim-{left}")["spec"].get("nodeName")
    del sched


RWOP_MESSAGE = "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"


def test_second_readwriteoncepod_user_is_rejected_and_preempts_a_lower_priority_holder(
    sim: SimCluster, start_scheduler: StartScheduler
) -> None:
    storage_class(sim, "static", mode="Immediate", provisioner="kubernetes.io/no-provisioner")
    volume(sim, "pv-solo", "static", zone="a", modes=("ReadWriteOncePod",))
    claim(sim, "solo", "static", modes=("ReadWriteOncePod",), volume="pv-solo")
    start_scheduler()
    pod_with(sim, "holder", "solo", priority=0)
    bound(sim, "holder")
    # An equal-priority user cannot preempt: it is rejected with upstream's message.
    pod_with(sim, "same", "solo", priority=0)
    wait_until(
        lambda: any(
            RWOP_MESSAGE in (e.get("note") or e.get("message") or "")
            for e in events_about(sim, "same", "FailedScheduling")
        ),
        what="the RWOP rejection of the equal-priority user",
    )
    sim.store.delete("pods", "same", "default")
    # A higher-priority user evicts the holder and takes the claim.
    pod_with(sim, "boss", "solo", priority=1000)
    wait_until(lambda: sim.store.get("pods", "holder", "default") is None, what="the holder preempted")
    bound(sim, "boss")
    assert zone_of(sim, node_of(sim, "boss")) == "a"
