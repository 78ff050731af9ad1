"""CRUD, selectors, pagination, bindings and Leases through the official kubernetes Python client."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from ksched.sim import SimCluster, make_pods


def _pod(name: str, labels: dict[str, str] | None = None) -> dict:
    pod = make_pods(1, namespace="default", name_prefix=name)[0]
    pod["metadata"]["name"] = name
    pod["metadata"]["labels"] = labels or {}
    return pod


def test_load_kube_config_and_crud(sim: SimCluster, kubeconfig: Path) -> None:
    cfg = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
    with client.ApiClient(cfg) as api:
        v1 = client.CoreV1Api(api)
        created = v1.create_namespaced_pod("default", _pod("a", {"app": "web"}))
        assert created.metadata.uid and created.metadata.resource_version
        assert created.status.phase == "Pending"
        got = v1.read_namespaced_pod("a", "default")
        assert got.metadata.uid == created.metadata.uid
        patched = v1.patch_namespaced_pod("a", "default", {"metadata": {"labels": {"tier": "fe"}}})
        assert patched.metadata.labels == {"app": "web", "tier": "fe"}
        assert int(patched.metadata.resource_version) > int(created.metadata.resource_version)
        assert [p.metadata.name for p in v1.list_namespaced_pod("default").items] == ["a"]
        v1.delete_namespaced_pod("a", "default")
        assert v1.list_namespaced_pod("default").items == []
        with pytest.raises(ApiException) as err:
            v1.read_namespaced_pod("a", "default")
        assert err.value.status == 404
        assert json.loads(err.value.body)["reason"] == "NotFound"


def test_create_twice_is_already_exists(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", _pod("dup"))
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod("default", _pod("dup"))
    body = json.loads(err.value.body)
    assert (err.value.status, body["reason"], body["kind"]) == (409, "AlreadyExists", "Status")


def test_generate_name(core: client.CoreV1Api) -> None:
    pod = _pod("x")
    del pod["metadata"]["name"]
    pod["metadata"]["generateName"] = "gen-"
    made = core.create_namespaced_pod("default", pod)
    assert made.metadata.name.startswith("gen-") and len(made.metadata.name) == 9


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        pytest.param("app=web", ["p0", "p1"], id="equality"),
        pytest.param("app==web,tier!=db", ["p0"], id="double equals and not equals"),
        pytest.param("app in (web,db)", ["p0", "p1", "p2"], id="set in"),
        pytest.param("app notin (web)", ["p2", "p3"], id="notin includes missing key"),
        pytest.param("tier", ["p1", "p2"], id="exists"),
        pytest.param("!tier", ["p0", "p3"], id="does not exist"),
    ],
)
def test_label_selectors(core: client.CoreV1Api, selector: str, expected: list[str]) -> None:
    labels = [{"app": "web"}, {"app": "web", "tier": "db"}, {"app": "db", "tier": "db"}, {}]
    for i, lab in enumerate(labels):
        core.create_namespaced_pod("default", _pod(f"p{i}", lab))
    got = [p.metadata.name for p in core.list_pod_for_all_namespaces(label_selector=selector).items]
    assert got == expected


def test_field_selectors_and_binding(sim: SimCluster, core: client.CoreV1Api) -> None:
    for i in range(3):
        core.create_namespaced_pod("default", _pod(f"f{i}"))
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "f1"},
        "target": {"kind": "Node", "name": "node-0"},
    }
    resp = core.create_namespaced_pod_binding("f1", "default", body, _preload_content=False)
    try:
        assert resp.status == 201
    finally:
        resp.read()  # an unread raw response keeps its socket out of the pool until GC closes it
        resp.release_conn()
    unbound = core.list_pod_for_all_namespaces(field_selector="spec.nodeName=")
    assert [p.metadata.name for p in unbound.items] == ["f0", "f2"]
    on_node = core.list_namespaced_pod("default", field_selector="spec.nodeName=node-0")
    assert [p.metadata.name for p in on_node.items] == ["f1"]
    assert on_node.items[0].status.conditions[0].type == "PodScheduled"
    named = core.list_namespaced_pod("default", field_selector="metadata.name!=f0,metadata.namespace=default")
    assert [p.metadata.name for p in named.items] == ["f1", "f2"]
    sched = core.list_namespaced_pod("default", field_selector="spec.schedulerName=default-scheduler")
    assert len(sched.items) == 3

    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod_binding(
            "f1", "default", {**body, "target": {"name": "node-1"}}, _preload_content=False
        )
    status = json.loads(err.value.body)
    assert err.value.status == 409 and status["reason"] == "Conflict"
    assert status["message"] == (
        'Operation cannot be fulfilled on pods/binding "f1": pod f1 is already assigned to node "node-0"'
    )
    bad_uid = {**body, "metadata": {"name": "f2", "uid": "not-the-uid"}}
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod_binding("f2", "default", bad_uid, _preload_content=False)
    assert err.value.status == 409
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod_binding("gone", "default", body, _preload_content=False)
    assert err.value.status == 404
    results = [(r.name, r.result, r.code) for r in sim.audit.records()]
    assert results == [
        ("f1", "bound", 201),
        ("f1", "conflict", 409),
        ("f2", "conflict", 409),
        ("gone", "not-found", 404),
    ]
    assert sim.audit.double_bindings() == []


def test_pagination(sim: SimCluster, core: client.CoreV1Api) -> None:
    sim.add_pods(25, namespace="default", name_prefix="pg-")
    names: list[str] = []
    token = None
    pages = 0
    while True:
        page = core.list_namespaced_pod("default", limit=10, _continue=token)
        names += [p.metadata.name for p in page.items]
        pages += 1
        token = page.metadata._continue
        if not token:
            break
        assert page.metadata.remaining_item_count == 25 - len(names)
    assert pages == 3 and len(names) == 25 and len(set(names)) == 25


def test_lease_optimistic_concurrency(sim: SimCluster) -> None:
    with client.ApiClient(client.Configuration(host=sim.url)) as api:
        coord = client.CoordinationV1Api(api)
        lease = {"metadata": {"name": "ksched"}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}
        first = coord.create_namespaced_lease("kube-system", lease)
        stale_rv = first.metadata.resource_version
        first.spec.holder_identity = "b"
        second = coord.replace_namespaced_lease("ksched", "kube-system", first)
        assert second.spec.holder_identity == "b"
        first.metadata.resource_version = stale_rv
        first.spec.holder_identity = "c"
        with pytest.raises(ApiException) as err:
            coord.replace_namespaced_lease("ksched", "kube-system", first)
        body = json.loads(err.value.body)
        assert err.value.status == 409 and body["reason"] == "Conflict"
        assert "the object has been modified" in body["message"]
        assert sim.store.get("leases", "ksched", "kube-system")["spec"]["holderIdentity"] == "b"


def test_status_strategic_patch_merges_conditions(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", _pod("s"))
    patch = {
        "status": {
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
            "nominatedNodeName": "node-1",
        }
    }
    core.patch_namespaced_pod_status("s", "default", patch)
    patch2 = {
        "$setElementOrder/conditions": [{"type": "Other"}, {"type": "PodScheduled"}],
        "status": {"conditions": [{"type": "Other", "status": "True"}]},
    }
    got = core.patch_namespaced_pod_status("s", "default", patch2)
    types = {c.type: c.status for c in got.status.conditions}
    assert types == {"PodScheduled": "False", "Other": "True"}
    assert got.status.nominated_node_name == "node-1"


def test_graceful_delete_via_kubelet(sim: SimCluster, core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", _pod("g"))
    resp = core.create_namespaced_pod_binding(
        "g", "default", {"metadata": {"name": "g"}, "target": {"name": "node-0"}}, _preload_content=False
    )
    resp.read()
    resp.release_conn()
    deleted = core.delete_namespaced_pod("g", "default", grace_period_seconds=30)
    assert deleted.metadata.deletion_timestamp is not None or sim.store.get("pods", "g", "default") is None
    import time

    for _ in range(200):  # grace_scale=0 in the fixture: the kubelet removes it at once
        if sim.store.get("pods", "g", "default") is None:
            break
        time.sleep(0.01)
    assert sim.store.get("pods", "g", "default") is None


def test_delete_uid_precondition(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", _pod("u"))
    with pytest.raises(ApiException) as err:
        core.delete_namespaced_pod("u", "default", body={"preconditions": {"uid": "nope"}})
    assert err.value.status == 409
