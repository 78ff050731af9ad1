"""Defaulting and managedFields on the store's writes, as kube-apiserver v1.35 does them."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from ksched.sim.store import Store
from ksched.sim.workloads import make_nodes

Obj = dict[str, Any]


@pytest.fixture
def store() -> Store:
    s = Store()
    s.create("namespaces", {"metadata": {"name": "default"}})
    return s


def _pod(image: str = "nginx", **spec: Any) -> Obj:
    return {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": image}], **spec}}


def test_pod_create_fills_what_kube_apiserver_fills(store: Store) -> None:
    pod = _pod(containers=[{"name": "c", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}])
    pod["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "1", "memory": "1Gi"}}
    got = store.create("pods", pod)
    spec = got["spec"]
    c = spec["containers"][0]
    assert c["imagePullPolicy"] == "IfNotPresent"
    assert (c["terminationMessagePath"], c["terminationMessagePolicy"]) == ("/dev/termination-log", "File")
    assert c["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert c["resources"]["requests"] == {"cpu": "1", "memory": "1Gi"}
    assert {k: spec[k] for k in ("dnsPolicy", "restartPolicy", "schedulerName", "securityContext")} == {
        "dnsPolicy": "ClusterFirst",
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
        "securityContext": {},
    }
    assert spec["enableServiceLinks"] is True and spec["terminationGracePeriodSeconds"] == 30
    assert (spec["priority"], spec["preemptionPolicy"]) == (0, "PreemptLowerPriority")
    assert spec["serviceAccountName"] == spec["serviceAccount"] == "default"
    assert [(t["key"], t["effect"], t["tolerationSeconds"]) for t in spec["tolerations"]] == [
        ("node.kubernetes.io/not-ready", "NoExecute", 300),
        ("node.kubernetes.io/unreachable", "NoExecute", 300),
    ]
    assert got["status"] == {"phase": "Pending", "qosClass": "Guaranteed"}
    assert got["metadata"]["generation"] == 1


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("nginx", "Always"),
        ("nginx:latest", "Always"),
        ("registry:5000/nginx", "Always"),
        ("registry:5000/nginx:1.2", "IfNotPresent"),
        ("nginx@sha256:" + "a" * 64, "IfNotPresent"),
    ],
)
def test_image_pull_policy(store: Store, image: str, policy: str) -> None:
    assert store.create("pods", _pod(image))["spec"]["containers"][0]["imagePullPolicy"] == policy


def test_own_tolerations_and_priority_are_kept(store: Store) -> None:
    tol = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}
    spec = store.create("pods", _pod(tolerations=[tol], priority=7))["spec"]
    assert spec["priority"] == 7
    assert [t["key"] for t in spec["tolerations"]] == [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ]


def test_redefaulting_an_unchanged_object_is_no_write(store: Store) -> None:
    created = store.create("pods", _pod())
    rv = created["metadata"]["resourceVersion"]
    same = store.update("pods", created, namespace="default")
    assert same["metadata"]["resourceVersion"] == rv
    assert same["metadata"]["managedFields"] == created["metadata"]["managedFields"]


def test_an_update_never_mutates_the_stored_parts_it_shares(store: Store) -> None:
    store.create("pods", _pod("nginx:1"))
    before = store.get("pods", "p", "default")
    frozen = orjson.dumps(before)
    bare = {"name": "c", "image": "nginx:2"}  # the image is a field a pod update may change
    store.mutate("pods", "p", "default", lambda p: {**p, "spec": {**p["spec"], "containers": [bare]}})
    assert orjson.dumps(before) == frozen
    got = store.get("pods", "p", "default")["spec"]["containers"][0]
    assert got["image"] == "nginx:2" and got["imagePullPolicy"] == "IfNotPresent"
    assert got["terminationMessagePath"] == "/dev/termination-log"
    assert bare == {"name": "c", "image": "nginx:2"}


def test_workload_defaults(store: Store) -> None:
    tpl = {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "x:1"}]}}
    sel = {"matchLabels": {"a": "b"}}
    d = store.create(
        "deployments.apps", {"metadata": {"name": "d"}, "spec": {"selector": sel, "template": tpl}}
    )
    spec = d["spec"]
    assert (spec["replicas"], spec["revisionHistoryLimit"], spec["progressDeadlineSeconds"]) == (1, 10, 600)
    assert spec["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
    }
    pod_spec = spec["template"]["spec"]
    assert pod_spec["dnsPolicy"] == "ClusterFirst" and "tolerations" not in pod_spec
    assert pod_spec["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    sts = store.create(
        "statefulsets.apps",
        {"metadata": {"name": "s"}, "spec": {"selector": sel, "template": tpl, "serviceName": "s"}},
    )
    assert sts["spec"]["podManagementPolicy"] == "OrderedReady"
    assert sts["spec"]["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert sts["status"] == {"replicas": 0, "availableReplicas": 0}
    svc = store.create("services", {"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}})
    assert svc["spec"]["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    assert svc["spec"]["type"] == "ClusterIP" and svc["spec"]["clusterIPs"] == [svc["spec"]["clusterIP"]]


def test_managed_fields_of_a_create_and_a_status_write(store: Store) -> None:
    created = store.create("pods", _pod(), manager="kubectl")
    (entry,) = created["metadata"]["managedFields"]
    assert {k: entry[k] for k in ("manager", "operation", "apiVersion", "fieldsType")} == {
        "manager": "kubectl",
        "operation": "Update",
        "apiVersion": "v1",
        "fieldsType": "FieldsV1",
    }
    assert entry["time"] == created["metadata"]["creationTimestamp"] and "subresource" not in entry
    spec = entry["fieldsV1"]["f:spec"]
    assert spec["f:containers"]['k:{"name":"c"}']["."] == {}
    assert "f:dnsPolicy" in spec and "f:tolerations" not in spec and "f:priority" not in spec
    status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    got = store.mutate(
        "pods", "p", "default", lambda p: {**p, "status": {**p["status"], **status}}, subresource="status"
    )
    first, kubelet = got["metadata"]["managedFields"]
    assert first == entry
    assert (kubelet["manager"], kubelet["subresource"]) == ("kubelet", "status")
    assert kubelet["fieldsV1"] == {
        "f:status": {
            "f:phase": {},
            "f:conditions": {'k:{"type":"Ready"}': {".": {}, "f:type": {}, "f:status": {}}},
        }
    }


def test_a_binding_and_a_no_op_leave_managed_fields_alone(store: Store) -> None:
    created = store.create("pods", _pod(), manager="kubectl")
    mf = created["metadata"]["managedFields"]
    bound = store.mutate(
        "pods", "p", "default", lambda p: {**p, "spec": {**p["spec"], "nodeName": "n"}}, subresource="binding"
    )
    assert bound["metadata"]["managedFields"] is mf
    assert bound["metadata"]["generation"] == 1


def test_another_manager_takes_the_fields_it_changes(store: Store) -> None:
    store.create(
        "pods", {**_pod(), "metadata": {"name": "p", "labels": {"a": "1", "b": "1"}}}, manager="kubectl"
    )

    def relabel(p: Obj) -> Obj:
        return {**p, "metadata": {**p["metadata"], "labels": {"a": "2", "b": "1"}}}

    got = store.mutate("pods", "p", "default", relabel, manager="kustomize")
    by = {e["manager"]: e["fieldsV1"] for e in got["metadata"]["managedFields"]}
    assert by["kustomize"] == {"f:metadata": {"f:labels": {"f:a": {}}}}
    assert by["kubectl"]["f:metadata"]["f:labels"] == {".": {}, "f:b": {}}


def test_a_request_clears_managed_fields_with_one_empty_entry(store: Store) -> None:
    created = store.create("pods", _pod(), manager="kubectl")
    cleared = store.update(
        "pods", {**created, "metadata": {**created["metadata"], "managedFields": [{}]}}, namespace="default"
    )
    assert "managedFields" not in cleared["metadata"]
    kept = store.update("pods", {**cleared, "metadata": {**cleared["metadata"], "managedFields": []}})
    assert "managedFields" not in kept["metadata"]


def test_simulated_nodes_carry_what_a_kubelet_reports() -> None:
    (node,) = make_nodes(1, now=1_700_000_000)
    status = node["status"]
    assert [c["type"] for c in status["conditions"]] == [
        "MemoryPressure",
        "DiskPressure",
        "PIDPressure",
        "Ready",
    ]
    assert all(c["lastHeartbeatTime"] == "2023-11-14T22:13:20Z" and c["reason"] for c in status["conditions"])
    assert len(status["nodeInfo"]) == 10 and status["daemonEndpoints"] == {"kubeletEndpoint": {"Port": 10250}}
    assert [a["type"] for a in status["addresses"]] == ["InternalIP", "Hostname"]
    assert status["allocatable"] == status["capacity"]
    assert node["metadata"]["labels"]["beta.kubernetes.io/arch"] == "amd64"
