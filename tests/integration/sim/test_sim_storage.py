"""The storage API of the embedded cluster and its controller stand-ins, over HTTP.

The stand-ins run as the real child process (``python -m ksched.sim.storage_controllers``) against a
running cluster; tests seed objects through the store or HTTP and observe what a scheduler would:
phases, annotations, claimRefs, node affinity, Events. One cluster serves the module (objects are
named per test); the tests that switch controllers or inject faults get their own.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from simhttp import request

from ksched.sim import FaultConfig, SimCluster, SimConfig
from ksched.sim._storage_names import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_PROVISIONED_BY,
    ANN_SELECTED_NODE,
    ANN_STORAGE_PROVISIONER,
)
from tests.builders import make_csinode, make_pod, make_pv, make_pvc, make_storage_class
from tests.integration.support import wait_until

CONFIG = SimConfig(running_delay_s=0.0, grace_scale=0.0, bookmark_interval_s=0.2, seed=3)
DRIVER = "csi.example.com"
ZONE = "topology.kubernetes.io/zone"
KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"


def _cluster() -> SimCluster:
    sim = SimCluster(CONFIG)
    sim.add_nodes(2, zones=2)  # node-0 (zone-0), node-1 (zone-1): zone and region labels
    sim.add_nodes(1, name_prefix="bare-")  # bare-2: hostname label only
    sim.start()
    return sim


@pytest.fixture(scope="module")
def cluster() -> Iterator[SimCluster]:
    """A cluster with all three stand-ins running, shared by the module's tests."""
    sim = _cluster()
    try:
        sim.start_storage_controllers()
        yield sim
    finally:
        sim.stop()


@pytest.fixture
def fresh() -> Iterator[SimCluster]:
    """A cluster of its own, without stand-ins (the test starts what it needs)."""
    sim = _cluster()
    try:
        yield sim
    finally:
        sim.stop()


def claim(sim: SimCluster, name: str, namespace: str = "default") -> dict[str, Any]:
    got = sim.store.get("persistentvolumeclaims", name, namespace)
    assert got is not None, f"claim {name} is gone"
    return got


def phase(obj: dict[str, Any] | None) -> str:
    return str(((obj or {}).get("status") or {}).get("phase", ""))


def annotations(obj: dict[str, Any]) -> dict[str, str]:
    return dict(obj["metadata"].get("annotations") or {})


def events(sim: SimCluster, name: str, namespace: str = "default") -> list[tuple[str, str, str]]:
    return [
        (e["type"], e["reason"], e["message"])
        for e in sim.store.list("events", namespace)
        if e["involvedObject"].get("name") == name
    ]


def bound(sim: SimCluster, name: str) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        got = claim(sim, name)
        return got if phase(got) == "Bound" else None

    return wait_until(check, timeout_s=10, what=f"{name} Bound")


def select_node(sim: SimCluster, name: str, node: str) -> None:
    """What the scheduler's VolumeBinding PreBind writes for a claim to provision (over HTTP)."""
    patch = json.dumps({"metadata": {"annotations": {ANN_SELECTED_NODE: node}}})
    path = f"/api/v1/namespaces/default/persistentvolumeclaims/{name}"
    status, _, answer = request(sim.url, "PATCH", path, patch, "application/merge-patch+json")
    assert status == 200, answer


# -- the API: defaulting and validation answers ----------------------------------------------------


def test_defaults_and_validation_answers_over_http(cluster: SimCluster) -> None:
    status, _, sc = request(
        cluster.url,
        "POST",
        "/apis/storage.k8s.io/v1/storageclasses",
        json.dumps(make_storage_class("http-sc")),
    )
    assert status == 201 and (sc["reclaimPolicy"], sc["volumeBindingMode"]) == ("Delete", "Immediate")
    status, _, pv = request(cluster.url, "POST", "/api/v1/persistentvolumes", json.dumps(make_pv("http-pv")))
    assert status == 201
    assert (pv["spec"]["persistentVolumeReclaimPolicy"], pv["spec"]["volumeMode"]) == ("Retain", "Filesystem")
    assert pv["status"]["phase"] == "Pending"
    wait_until(
        lambda: phase(cluster.store.get("persistentvolumes", "http-pv")) == "Available", what="Available"
    )
    body = json.dumps(make_pvc("Bad_Claim", access_modes=()))
    status, _, answer = request(
        cluster.url, "POST", "/api/v1/namespaces/default/persistentvolumeclaims", body
    )
    assert (status, answer["kind"], answer["reason"], answer["code"]) == (422, "Status", "Invalid", 422)
    fields = [c["field"] for c in answer["details"]["causes"]]
    assert fields == ["metadata.name", "spec.accessModes"]
    assert answer["details"]["kind"] == "PersistentVolumeClaim" and answer["details"]["name"] == "Bad_Claim"
    body = json.dumps(make_pvc("q", storage="plenty"))
    status, _, answer = request(
        cluster.url, "POST", "/api/v1/namespaces/default/persistentvolumeclaims", body
    )
    assert (status, answer["reason"]) == (400, "BadRequest")
    assert "quantities must match the regular expression" in answer["message"]
    csinode = make_csinode("node-x", {DRIVER: [ZONE]}, count=-1)
    status, _, answer = request(cluster.url, "POST", "/apis/storage.k8s.io/v1/csinodes", json.dumps(csinode))
    assert status == 422 and answer["details"]["causes"][0]["field"] == "spec.drivers[0].allocatable.count"


@pytest.mark.kubectl
def test_kubectl_apply_and_get_each_storage_kind(cluster: SimCluster, tmp_path: Path) -> None:
    kubeconfig = cluster.write_kubeconfig(tmp_path / "kubeconfig")
    docs = [
        make_storage_class("kc-sc", binding_mode="WaitForFirstConsumer"),
        make_pv("kc-pv", storage="5Gi", storage_class="kc-sc"),
        make_pvc("kc-pvc", storage_class="kc-sc"),
        make_csinode("node-0", {DRIVER: [ZONE]}, count=8),
        {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": "kc.csi.example.com"}},
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIStorageCapacity",
            "metadata": {"name": "kc-cap", "namespace": "default"},
            "storageClassName": "kc-sc",
            "capacity": "100Gi",
            "nodeTopology": {"matchLabels": {ZONE: "zone-0"}},
        },
    ]
    manifest = "---\n".join(yaml.safe_dump(d) for d in docs)

    def kubectl(*args: str, stdin: str | None = None) -> str:
        proc = subprocess.run(
            [KUBECTL, "--kubeconfig", str(kubeconfig), *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    assert kubectl("apply", "-f", "-", stdin=manifest).count("created") == len(docs)
    assert "unchanged" in kubectl("apply", "-f", "-", stdin=manifest)
    out = kubectl("get", "pv,pvc,sc,csinodes,csidrivers,csistoragecapacities")
    headers = [line.split() for line in out.splitlines() if line.startswith("NAME")]
    assert headers[0][:6] == ["NAME", "CAPACITY", "ACCESS", "MODES", "RECLAIM", "POLICY"]
    assert headers[1][:4] == ["NAME", "STATUS", "VOLUME", "CAPACITY"]
    assert headers[2] == [
        "NAME",
        "PROVISIONER",
        "RECLAIMPOLICY",
        "VOLUMEBINDINGMODE",
        "ALLOWVOLUMEEXPANSION",
        "AGE",
    ]
    assert headers[3] == ["NAME", "DRIVERS", "AGE"]
    assert headers[4][:4] == ["NAME", "ATTACHREQUIRED", "PODINFOONMOUNT", "STORAGECAPACITY"]
    assert headers[5] == ["NAME", "STORAGECLASSNAME", "CAPACITY", "AGE"]
    rows = {
        line.split()[0]: line.split()[1:] for line in out.splitlines() if line and not line.startswith("NAME")
    }
    assert rows["persistentvolume/kc-pv"][:5] == ["5Gi", "RWO", "Retain", "Available", "kc-sc"]
    assert rows["storageclass.storage.k8s.io/kc-sc"][:4] == [
        "csi.example.com",
        "Delete",
        "WaitForFirstConsumer",
        "false",
    ]
    assert "csinode.storage.k8s.io/node-0" in out and "100Gi" in out
    pv_yaml = kubectl("get", "pv", "kc-pv", "-o", "yaml")
    assert "persistentVolumeReclaimPolicy: Retain" in pv_yaml and "volumeMode: Filesystem" in pv_yaml
    driver_yaml = kubectl("get", "csidriver", "kc.csi.example.com", "-o", "yaml")
    assert "attachRequired: true" in driver_yaml and "fsGroupPolicy: ReadWriteOnceWithFSType" in driver_yaml
    assert "Pending" in kubectl("get", "pvc", "kc-pvc", "-o", "wide")
    changed = manifest.replace("count: 8", "count: 4")
    assert "csinode.storage.k8s.io/node-0 configured" in kubectl("apply", "-f", "-", stdin=changed)
    got = cluster.store.get("csinodes", "node-0")
    assert got is not None and got["spec"]["drivers"][0]["allocatable"] == {"count": 4}
    assert "deleted" in kubectl("delete", "-f", "-", stdin=manifest)


# -- the PV controller -----------------------------------------------------------------------------


def test_immediate_claim_binds_the_smallest_matching_volume(cluster: SimCluster) -> None:
    store = cluster.store
    store.create("storageclasses", make_storage_class("imm", provisioner="kubernetes.io/no-provisioner"))
    for name, kwargs in (
        ("imm-10g", {"storage": "10Gi"}),
        ("imm-2g", {"storage": "2Gi"}),
        ("imm-1g-too-small", {"storage": "1Gi"}),
        ("imm-2g-rox-only", {"storage": "1500Mi", "access_modes": ("ReadOnlyMany",)}),
        ("imm-2g-block", {"storage": "1600Mi", "volume_mode": "Block"}),
        ("imm-2g-other-class", {"storage": "1700Mi", "storage_class": "other"}),
        ("imm-2g-claimed", {"storage": "1800Mi", "claim_ref": {"namespace": "default", "name": "someone"}}),
        ("imm-2g-unlabelled", {"storage": "1900Mi", "labels": {}}),
    ):
        labels = kwargs.pop("labels", {"tier": "fast"})
        store.create(
            "persistentvolumes", make_pv(name, **{"storage_class": "imm", "labels": labels, **kwargs})
        )
    store.create(
        "persistentvolumeclaims",
        make_pvc(
            "imm-claim", storage="1200Mi", storage_class="imm", selector={"matchLabels": {"tier": "fast"}}
        ),
    )
    got = bound(cluster, "imm-claim")
    assert got["spec"]["volumeName"] == "imm-2g"
    assert annotations(got) == {ANN_BIND_COMPLETED: "yes", ANN_BOUND_BY_CONTROLLER: "yes"}
    assert got["status"] == {
        "phase": "Bound",
        "accessModes": ["ReadWriteOnce"],
        "capacity": {"storage": "2Gi"},
    }
    pv = store.get("persistentvolumes", "imm-2g")
    assert pv is not None and phase(pv) == "Bound" and annotations(pv) == {ANN_BOUND_BY_CONTROLLER: "yes"}
    meta = got["metadata"]
    ref = pv["spec"]["claimRef"]
    assert {k: ref[k] for k in ("kind", "namespace", "name", "uid", "apiVersion")} == {
        "kind": "PersistentVolumeClaim",
        "namespace": "default",
        "name": "imm-claim",
        "uid": meta["uid"],
        "apiVersion": "v1",
    }
    assert int(ref["resourceVersion"]) > 0
    assert phase(store.get("persistentvolumes", "imm-10g")) == "Available"
    assert phase(store.get("persistentvolumes", "imm-2g-claimed")) == "Available"  # pre-bound, no uid


def test_released_and_lost_phases(cluster: SimCluster) -> None:
    store = cluster.store
    store.create("persistentvolumes", make_pv("ph-pv-a", storage_class="ph"))
    store.create("persistentvolumes", make_pv("ph-pv-b", storage_class="ph"))
    store.create("persistentvolumeclaims", make_pvc("ph-a", storage_class="ph", volume_name="ph-pv-a"))
    store.create("persistentvolumeclaims", make_pvc("ph-b", storage_class="ph", volume_name="ph-pv-b"))
    assert ANN_BOUND_BY_CONTROLLER not in annotations(bound(cluster, "ph-a"))  # the user chose the volume
    bound(cluster, "ph-b")
    store.delete("persistentvolumeclaims", "ph-a", "default")
    wait_until(lambda: phase(store.get("persistentvolumes", "ph-pv-a")) == "Released", what="Released")
    store.delete("persistentvolumes", "ph-pv-b")
    wait_until(lambda: phase(claim(cluster, "ph-b")) == "Lost", what="Lost")
    assert (
        "Warning",
        "ClaimLost",
        "Bound claim has lost its PersistentVolume. Data on the volume is lost!",
    ) in events(cluster, "ph-b")


def test_missing_class_is_reported_as_upstream_does(cluster: SimCluster) -> None:
    cluster.store.create("persistentvolumeclaims", make_pvc("mc-claim", storage_class="no-such-class"))
    want = ("Warning", "ProvisioningFailed", 'storageclass.storage.k8s.io "no-such-class" not found')
    wait_until(lambda: want in events(cluster, "mc-claim"), timeout_s=10, what="ProvisioningFailed event")
    assert phase(claim(cluster, "mc-claim")) == "Pending"


def test_static_binding_by_claim_ref_is_completed(cluster: SimCluster) -> None:
    store = cluster.store
    store.create("storageclasses", make_storage_class("st-wffc", binding_mode="WaitForFirstConsumer"))
    store.create("persistentvolumes", make_pv("st-pv", storage_class="st-wffc", storage="3Gi"))
    store.create("persistentvolumeclaims", make_pvc("st-claim", storage_class="st-wffc"))
    wait_until(lambda: phase(store.get("persistentvolumes", "st-pv")) == "Available", what="Available")
    assert (
        claim(cluster, "st-claim")["spec"].get("volumeName") is None
    )  # WaitForFirstConsumer: left to the scheduler
    uid = claim(cluster, "st-claim")["metadata"]["uid"]
    # the scheduler's static binding: claimRef (with uid) and bound-by-controller on the volume
    patch = {
        "metadata": {"annotations": {ANN_BOUND_BY_CONTROLLER: "yes"}},
        "spec": {
            "claimRef": {
                "kind": "PersistentVolumeClaim",
                "namespace": "default",
                "name": "st-claim",
                "uid": uid,
            }
        },
    }
    status, _, answer = request(
        cluster.url,
        "PATCH",
        "/api/v1/persistentvolumes/st-pv",
        json.dumps(patch),
        "application/merge-patch+json",
    )
    assert status == 200, answer
    got = bound(cluster, "st-claim")
    assert got["spec"]["volumeName"] == "st-pv" and annotations(got)[ANN_BIND_COMPLETED] == "yes"
    assert got["status"]["capacity"] == {"storage": "3Gi"}
    wait_until(lambda: phase(store.get("persistentvolumes", "st-pv")) == "Bound", what="volume Bound")


# -- the provisioner -------------------------------------------------------------------------------


def test_wait_for_first_consumer_then_provisioned_in_the_nodes_topology(cluster: SimCluster) -> None:
    store = cluster.store
    store.create("storageclasses", make_storage_class("wf", binding_mode="WaitForFirstConsumer"))
    store.create("csinodes", make_csinode("node-1", {DRIVER: [ZONE]}))
    for name in ("wf-csinode", "wf-zone", "wf-host"):
        store.create("persistentvolumeclaims", make_pvc(name, storage_class="wf", storage="3Gi"))
    want = ("Normal", "WaitForFirstConsumer", "waiting for first consumer to be created before binding")
    wait_until(lambda: want in events(cluster, "wf-csinode"), what="WaitForFirstConsumer event")
    untouched = claim(cluster, "wf-csinode")
    assert phase(untouched) == "Pending" and ANN_STORAGE_PROVISIONER not in annotations(untouched)
    claimed = {(v["spec"].get("claimRef") or {}).get("name") for v in store.list("persistentvolumes")}
    assert not claimed & {"wf-csinode", "wf-zone", "wf-host"}
    node0 = store.get("nodes", "node-0")["metadata"]["labels"]  # type: ignore[index]
    select_node(cluster, "wf-csinode", "node-1")  # CSINode names the driver's topology key
    select_node(cluster, "wf-zone", "node-0")  # no CSINode: the zone and region labels
    select_node(cluster, "wf-host", "bare-2")  # no zone label: the hostname
    expected = {
        "wf-csinode": {ZONE: "zone-1"},
        "wf-zone": {k: node0[k] for k in (ZONE, "topology.kubernetes.io/region")},
        "wf-host": {"kubernetes.io/hostname": "bare-2"},
    }
    for name, segment in expected.items():
        got = bound(cluster, name)
        assert annotations(got)[ANN_STORAGE_PROVISIONER] == DRIVER
        pv = store.get("persistentvolumes", got["spec"]["volumeName"])
        assert pv is not None and pv["metadata"]["name"] == f"pvc-{got['metadata']['uid']}"
        assert annotations(pv)[ANN_PROVISIONED_BY] == DRIVER
        spec = pv["spec"]
        assert spec["csi"]["driver"] == DRIVER and spec["csi"]["volumeHandle"]
        assert (spec["capacity"], spec["accessModes"], spec["volumeMode"]) == (
            {"storage": "3Gi"},
            ["ReadWriteOnce"],
            "Filesystem",
        )
        assert (spec["storageClassName"], spec["persistentVolumeReclaimPolicy"]) == ("wf", "Delete")
        exprs = spec["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"]
        assert {e["key"]: e["values"][0] for e in exprs} == segment and {e["operator"] for e in exprs} == {
            "In"
        }
    gone = claim(cluster, "wf-zone")["spec"]["volumeName"]
    assert ("Normal", "ProvisioningSucceeded", f"Successfully provisioned volume {gone}") in events(
        cluster, "wf-zone"
    )
    store.delete("persistentvolumeclaims", "wf-zone", "default")  # Delete policy: the volume goes too
    wait_until(lambda: store.get("persistentvolumes", gone) is None, what="provisioned volume deleted")


@pytest.mark.parametrize(
    ("setup", "node", "message"),
    [
        pytest.param({}, "ghost-node", 'nodes "ghost-node" not found', id="selected node gone"),
        pytest.param(
            {"allowed": {ZONE: ["zone-0"]}},
            "node-1",
            "is not in allowed topologies: [map[topology.kubernetes.io/zone:zone-0]]",
            id="node outside allowedTopologies",
        ),
        pytest.param(
            {"capacity": "1Gi"},
            "node-0",
            "rpc error: code = ResourceExhausted",
            id="capacity of the segment short",
        ),
    ],
)
def test_provisioning_failure_removes_selected_node(
    cluster: SimCluster, setup: dict[str, Any], node: str, message: str
) -> None:
    store = cluster.store
    name = f"pf-{node}-{'-'.join(setup) or 'plain'}"
    driver = f"{name}.csi.example.com"
    sc = make_storage_class(
        name, provisioner=driver, binding_mode="WaitForFirstConsumer", allowed_topologies=setup.get("allowed")
    )
    store.create("storageclasses", sc)
    if "capacity" in setup:
        store.create("csidrivers", {"metadata": {"name": driver}, "spec": {"storageCapacity": True}})
        capacity = {
            "metadata": {"name": f"{name}-cap"},
            "storageClassName": name,
            "capacity": setup["capacity"],
            "nodeTopology": {"matchLabels": {ZONE: "zone-0"}},
        }
        store.create("csistoragecapacities", capacity, namespace="default")
    store.create("persistentvolumeclaims", make_pvc(name, storage_class=name, storage="2Gi"))
    select_node(cluster, name, node)
    wait_until(
        lambda: ANN_SELECTED_NODE not in annotations(claim(cluster, name)),
        timeout_s=10,
        what="selected-node removed",
    )
    failed = [m for t, r, m in events(cluster, name) if (t, r) == ("Warning", "ProvisioningFailed")]
    assert failed and message in failed[0], failed
    assert claim(cluster, name)["spec"].get("volumeName") is None


# -- the ephemeral volume controller ---------------------------------------------------------------


def test_ephemeral_volume_claim_is_created_owned_by_the_pod(cluster: SimCluster) -> None:
    store = cluster.store
    template = {
        "metadata": {"labels": {"app": "scratch"}, "annotations": {"note": "from-template"}},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
            "storageClassName": "eph",
        },
    }
    pod = make_pod("eph-pod", volumes=[{"name": "scratch", "ephemeral": {"volumeClaimTemplate": template}}])
    created = store.create("pods", pod, namespace="default")
    got = wait_until(
        lambda: store.get("persistentvolumeclaims", "eph-pod-scratch", "default"), what="ephemeral claim"
    )
    assert got["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": "eph-pod",
            "uid": created["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert (
        got["metadata"]["labels"] == {"app": "scratch"}
        and got["metadata"]["annotations"]["note"] == "from-template"
    )
    assert (
        got["spec"]["resources"] == template["spec"]["resources"] and got["spec"]["storageClassName"] == "eph"
    )
    store.delete("pods", "eph-pod", "default", grace_period_s=0)
    wait_until(
        lambda: store.get("persistentvolumeclaims", "eph-pod-scratch", "default") is None,
        what="claim collected",
    )


# -- switches, faults, lifecycle -------------------------------------------------------------------


def test_provisioner_switched_off_then_on(fresh: SimCluster) -> None:
    store = fresh.store
    proc = fresh.start_storage_controllers(provisioner=False, ephemeral=False)
    store.create("storageclasses", make_storage_class("sw", binding_mode="WaitForFirstConsumer"))
    store.create("persistentvolumeclaims", make_pvc("sw-claim", storage_class="sw"))
    select_node(fresh, "sw-claim", "node-0")
    wait_until(
        lambda: ANN_STORAGE_PROVISIONER in annotations(claim(fresh, "sw-claim")),
        what="handed to the provisioner",
    )
    assert phase(claim(fresh, "sw-claim")) == "Pending" and not store.list("persistentvolumes")
    fresh.start_storage_controllers()  # replaces the running set
    assert proc.proc.poll() is not None  # the first child is gone
    assert bound(fresh, "sw-claim")["spec"]["volumeName"].startswith("pvc-")
    fresh.stop_storage_controllers()
    assert fresh.storage_controllers is None


def test_injected_500_on_the_provisioners_create_is_retried(fresh: SimCluster) -> None:
    rule = {"verb": "create", "resource": "persistentvolumes", "code": 500, "rate": 1.0}
    faults = {"errors": [{**rule, "user_agent": "ksched-sim-storage-controllers/"}]}
    assert request(fresh.url, "PUT", "/admin/faults", json.dumps(faults))[0] == 200
    proc = fresh.start_storage_controllers(ephemeral=False)
    fresh.store.create("storageclasses", make_storage_class("ft"))  # Immediate: provisioned at once
    fresh.store.create("persistentvolumeclaims", make_pvc("ft-claim", storage_class="ft"))
    wait_until(lambda: fresh.faults.counts["error-500"] >= 2, what="the create failed and was tried again")
    status, _, _ = request(fresh.url, "POST", "/api/v1/persistentvolumes", json.dumps(make_pv("ft-other")))
    assert status == 201  # the rule matches only the stand-ins' User-Agent
    assert phase(claim(fresh, "ft-claim")) == "Pending"
    request(fresh.url, "PUT", "/admin/faults", "{}")
    assert bound(fresh, "ft-claim")["spec"]["volumeName"].startswith("pvc-")
    fresh.stop()
    assert proc.proc.poll() is not None  # stopped with the cluster


def test_stand_ins_survive_dropped_watches_and_expired_versions() -> None:
    """Watches dropped every few events and a history so short that resuming gets 410: the informers
    resume and relist, and every claim still binds."""
    sim = SimCluster(SimConfig(running_delay_s=0.0, history_window=8, seed=5))
    sim.add_nodes(1)
    sim.start()
    try:
        sim.faults.configure(FaultConfig(watch_drop_every=3))
        sim.start_storage_controllers()
        template = {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}
        for i in range(12):
            sim.store.create("persistentvolumes", make_pv(f"dw-pv-{i}", storage_class="dw"))
            sim.store.create("persistentvolumeclaims", make_pvc(f"dw-{i}", storage_class="dw"))
            sim.add_pods(3, name_prefix=f"plain-{i}-")  # pods without volumes: filtered, never decoded
            pod = make_pod(
                f"dw-pod-{i}", volumes=[{"name": "v", "ephemeral": {"volumeClaimTemplate": template}}]
            )
            sim.store.create("pods", pod, namespace="default")
        for i in range(12):
            bound(sim, f"dw-{i}")
            wait_until(
                lambda i=i: sim.store.get("persistentvolumeclaims", f"dw-pod-{i}-v", "default"), what="claim"
            )
        assert sim.faults.counts["watch-drop"] > 0
    finally:
        sim.stop()
