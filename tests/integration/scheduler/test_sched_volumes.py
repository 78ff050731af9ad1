"""Pods with volumes over real HTTP against the embedded cluster (issue 18, "done when").

The scheduler runs in-process with the default profile (all four volume plugins). The embedded
cluster runs its storage stand-ins (PV controller, CSI provisioner, ephemeral volume controller) as a
separate process that talks HTTP to it, so they see the scheduler's writes only through the API, as
kube-controller-manager would. Objects are created in the store directly where only their content
matters, and through the API where its validation is the point.
"""

from __future__ import annotations

import json
import signal
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sched_harness import (
    InProcessScheduler,
    condition,
    events_about,
    node_of,
    pod,
    wait_until,
    write_config,
)

from ksched.sim import ErrorRule, FaultConfig, SimCluster
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


def no_assumed_volumes(sched: InProcessScheduler, sim: SimCluster | None = None) -> None:
    """No assumption left in the cache, and (given the cluster) its PVs and claims recounted from
    the API: the same objects at the same resourceVersions."""

    def none_left(s: Any) -> bool:
        return not list(s.cache.volumes.pvs.assumed()) and not list(s.cache.volumes.pvcs.assumed())

    wait_until(lambda: sched.probe(none_left), what="no assumed PV or PVC left in the cache")
    if sim is None:
        return

    def versions(s: Any) -> tuple[dict[str, int], dict[str, int]]:
        store = s.cache.volumes
        return (
            {pv.name: pv.resource_version for pv in store.pvs.values()},
            {pvc.key: pvc.resource_version for pvc in store.pvcs.values()},
        )

    def api() -> tuple[dict[str, int], dict[str, int]]:
        pvs = {
            o["metadata"]["name"]: int(o["metadata"]["resourceVersion"])
            for o in sim.store.list("persistentvolumes")
        }
        pvcs = {
            f"{o['metadata']['namespace']}/{o['metadata']['name']}": int(o["metadata"]["resourceVersion"])
            for o in sim.store.list("persistentvolumeclaims")
        }
        return pvs, pvcs

    wait_until(lambda: sched.probe(versions) == api(), what="the cache's PVs and claims to match the API's")


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
    no_assumed_volumes(sched, sim)


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
    # The condition carries the latest reason. An Event may not: a failure that repeats another
    # one's key (the same pod version) joins its series and keeps the first note, as upstream.
    wait_until(
        lambda: (
            "node(s) exceed max volume count" in (condition(pod(sim, f"lim-{left}")) or {}).get("message", "")
        ),
        what="the third pod's PodScheduled condition",
    )
    assert events_about(sim, f"lim-{left}", "FailedScheduling")
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


# ---------------------------------------------------------------------------------------------- failures
def volume_config(path: Path, *, bind_timeout_s: int) -> Path:
    """The test harness's fast config with VolumeBinding's bindTimeoutSeconds set."""
    write_config(path, leader_elect=False, max_backoff=2)
    text = path.read_text() + (
        "profiles:\n"
        "  - schedulerName: default-scheduler\n"
        "    pluginConfig:\n"
        "      - name: VolumeBinding\n"
        f"        args: {{bindTimeoutSeconds: {bind_timeout_s}}}\n"
    )
    path.write_text(text)
    return path


def failed_scheduling_notes(sim: SimCluster, name: str) -> list[str]:
    return [e.get("note") or e.get("message") or "" for e in events_about(sim, name, "FailedScheduling")]


def bindings_of(sim: SimCluster, name: str) -> list[Any]:
    return [r for r in sim.audit.records() if r.name == name and r.result == "bound"]


@pytest.mark.parametrize("code", [409, 500])
def test_failed_claim_update_unreserves_reports_and_retries(
    sim: SimCluster, start_scheduler: StartScheduler, tmp_path: Path, code: int
) -> None:
    storage_class(sim, "zonal", mode="WaitForFirstConsumer", zones=["a", "b"])
    claim(sim, "data-db-0", "zonal")
    # Only the scheduler's writes of the claim fail; the stand-ins' requests go through.
    rule = ErrorRule(
        verb="update", resource="persistentvolumeclaims", code=code, rate=1.0, user_agent="ksched/"
    )
    sim.faults.configure(FaultConfig(errors=[rule]))
    sched = start_scheduler(volume_config(tmp_path / "ksched.yaml", bind_timeout_s=30))
    pod_with(sim, "db-0", "data-db-0")
    notes = wait_until(
        lambda: [
            n
            for n in failed_scheduling_notes(sim, "db-0")
            if n.startswith('running PreBind plugin "VolumeBinding"')
        ],
        what="a FailedScheduling event from VolumeBinding's PreBind",
    )
    # The API's refusal, as upstream's bindAPIUpdate returns it (no "binding volumes:" wrapping).
    assert len(notes[0]) > len('running PreBind plugin "VolumeBinding": '), notes[0]
    no_assumed_volumes(sched)
    assert not pod(sim, "db-0")["spec"].get("nodeName")
    sim.faults.configure(FaultConfig())
    (node,) = bound(sim, "db-0")
    assert pv_zones(pv_of_claim(sim, "data-db-0")) == {zone_of(sim, node)}
    assert len(bindings_of(sim, "db-0")) == 1
    no_assumed_volumes(sched, sim)


def test_provisioner_off_until_bind_timeout_then_on(
    sim: SimCluster, start_scheduler: StartScheduler, tmp_path: Path
) -> None:
    sim.start_storage_controllers(provisioner=False)
    storage_class(sim, "zonal", mode="WaitForFirstConsumer", zones=["a", "b"])
    claim(sim, "data-q-0", "zonal")
    sched = start_scheduler(volume_config(tmp_path / "ksched.yaml", bind_timeout_s=2))
    pod_with(sim, "q-0", "data-q-0")
    wait_until(
        lambda: any("binding volumes" in n for n in failed_scheduling_notes(sim, "q-0")),
        timeout=20,
        what="PreBind to time out while nothing provisions",
    )
    no_assumed_volumes(sched)
    assert not pod(sim, "q-0")["spec"].get("nodeName")
    sim.start_storage_controllers()
    (node,) = bound(sim, "q-0", timeout=40)
    assert pv_zones(pv_of_claim(sim, "data-q-0")) == {zone_of(sim, node)}
    assert len(bindings_of(sim, "q-0")) == 1
    no_assumed_volumes(sched, sim)


def test_restart_mid_binding_loses_no_pod_and_binds_none_twice(
    sim: SimCluster, start_process: Callable[..., Any], tmp_path: Path
) -> None:
    sim.start_storage_controllers(provisioner=False)
    storage_class(sim, "zonal", mode="WaitForFirstConsumer", zones=["a", "b"])
    for i in range(3):
        claim(sim, f"data-r-{i}", "zonal")
        pod_with(sim, f"r-{i}", f"data-r-{i}")
    kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig")
    config = volume_config(tmp_path / "ksched.yaml", bind_timeout_s=60)
    first = start_process("first", kubeconfig, config, leader_elect=False)

    def selected() -> bool:
        claims = [sim.store.get("persistentvolumeclaims", f"data-r-{i}", "default") for i in range(3)]
        return all(
            "volume.kubernetes.io/selected-node" in (c["metadata"].get("annotations") or {}) for c in claims
        )

    wait_until(selected, timeout=30, what="every claim to get a selected node")
    first.signal(signal.SIGKILL)
    first.wait(10)
    second = start_process("second", kubeconfig, config, leader_elect=False)
    sim.start_storage_controllers()
    nodes = bound(sim, "r-0", "r-1", "r-2", timeout=60)
    for i, node in enumerate(nodes):
        selected_node = sim.store.get("persistentvolumeclaims", f"data-r-{i}", "default")["metadata"][
            "annotations"
        ]["volume.kubernetes.io/selected-node"]
        assert node == selected_node, f"r-{i} bound to {node}, its claim was provisioned for {selected_node}"
        assert len(bindings_of(sim, f"r-{i}")) == 1
    assert second.proc.poll() is None, second.log()


def test_bad_storage_input_is_named_and_others_are_served(
    sim: SimCluster, start_scheduler: StartScheduler
) -> None:
    start_scheduler()
    # A claim naming a class that does not exist: the PV controller says so on the claim, and the
    # pod is told its claim is unbound (the class may still come).
    claim(sim, "lost", "no-such-class")
    pod_with(sim, "orphan", "lost")
    wait_until(
        lambda: any(
            "pod has unbound immediate PersistentVolumeClaims" in n
            for n in failed_scheduling_notes(sim, "orphan")
        ),
        what="the orphan's FailedScheduling event",
    )
    wait_until(
        lambda: any(
            'storageclass.storage.k8s.io "no-such-class" not found'
            in (e.get("note") or e.get("message") or "")
            for e in events_about(sim, "lost", "ProvisioningFailed")
        ),
        what="the PV controller's ProvisioningFailed event on the claim",
    )
    # The API refuses what the scheduler could not read, naming the object (kube-apiserver's decoder
    # names no field for a quantity) or the field; the scheduler keeps serving other pods.
    csi = {"driver": DRIVER, "volumeHandle": "h"}
    bad_affinity = {
        "required": {"nodeSelectorTerms": [{"matchExpressions": [{"key": ZONE, "operator": "Near"}]}]}
    }
    for path, obj, named in (
        (
            "/api/v1/persistentvolumes",
            {
                "metadata": {"name": "bad"},
                "spec": {"capacity": {"storage": "lots"}, "accessModes": ["ReadWriteOnce"], "csi": csi},
            },
            "quantities must match the regular expression",
        ),
        (
            "/api/v1/persistentvolumes",
            {
                "metadata": {"name": "bad"},
                "spec": {
                    "capacity": {"storage": "1Gi"},
                    "accessModes": ["ReadWriteOnce"],
                    "csi": csi,
                    "nodeAffinity": bad_affinity,
                },
            },
            "spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].operator",
        ),
        (
            "/apis/storage.k8s.io/v1/csinodes",
            {
                "metadata": {"name": "node-1"},
                "spec": {"drivers": [{"name": DRIVER, "nodeID": "n", "allocatable": {"count": -1}}]},
            },
            "spec.drivers[0].allocatable.count",
        ),
    ):
        status, body = post_json(sim.url + path, obj)
        assert status in (400, 422) and named in body, (
            status,
            body,
        )
    pod_with(sim, "plain")
    bound(sim, "plain")


def post_json(url: str, obj: dict[str, Any]) -> tuple[int, str]:
    request = urllib.request.Request(
        url, data=json.dumps(obj).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.read().decode()


def test_failed_volume_update_of_a_static_binding_unreserves_and_retries(
    sim: SimCluster, start_scheduler: StartScheduler, tmp_path: Path
) -> None:
    storage_class(sim, "local", mode="WaitForFirstConsumer", provisioner="kubernetes.io/no-provisioner")
    volume(sim, "pv-local", "local", zone="b")
    claim(sim, "data-st-0", "local")
    rule = ErrorRule(verb="update", resource="persistentvolumes", code=500, rate=1.0, user_agent="ksched/")
    sim.faults.configure(FaultConfig(errors=[rule]))
    sched = start_scheduler(volume_config(tmp_path / "ksched.yaml", bind_timeout_s=30))
    pod_with(sim, "st-0", "data-st-0")
    wait_until(
        lambda: any(
            n.startswith('running PreBind plugin "VolumeBinding"')
            for n in failed_scheduling_notes(sim, "st-0")
        ),
        what="a FailedScheduling event from VolumeBinding's PreBind",
    )
    no_assumed_volumes(sched)
    sim.faults.configure(FaultConfig())
    (node,) = bound(sim, "st-0")
    assert zone_of(sim, node) == "b"
    pv = pv_of_claim(sim, "data-st-0")
    assert pv["metadata"]["name"] == "pv-local" and pv["spec"]["claimRef"]["name"] == "data-st-0"
    assert len(bindings_of(sim, "st-0")) == 1
    no_assumed_volumes(sched, sim)
