"""Bad requests get kube-apiserver's Status answers; fault injection and the admin endpoints."""

from __future__ import annotations

import json

import pytest
from simhttp import request

from ksched.sim import SimCluster


@pytest.mark.parametrize(
    ("method", "path", "body", "code", "reason"),
    [
        pytest.param(
            "POST", "/api/v1/namespaces/default/pods", "{not json", 400, "BadRequest", id="malformed json"
        ),
        pytest.param("GET", "/api/v1/widgets", None, 404, "NotFound", id="unknown resource"),
        pytest.param("GET", "/apis/nope.io/v1/things", None, 404, "NotFound", id="unknown group"),
        pytest.param(
            "POST",
            "/api/v1/namespaces/default/pods",
            '{"metadata":{}}',
            422,
            "Invalid",
            id="no name and no generateName",
        ),
        pytest.param(
            "GET", "/api/v1/pods?labelSelector=a%20in%20(", None, 400, "BadRequest", id="bad selector"
        ),
        pytest.param(
            "POST",
            "/api/v1/namespaces/other/pods",
            '{"metadata":{"name":"x","namespace":"default"}}',
            400,
            "BadRequest",
            id="namespace mismatch",
        ),
        pytest.param("GET", "/api/v1/namespaces/default/pods/nope", None, 404, "NotFound", id="missing pod"),
    ],
)
def test_bad_requests(
    sim: SimCluster, method: str, path: str, body: str | None, code: int, reason: str
) -> None:
    status, headers, answer = request(sim.url, method, path, body)
    assert status == code
    assert headers["Content-Type"].startswith("application/json")
    assert answer["kind"] == "Status" and answer["apiVersion"] == "v1" and answer["status"] == "Failure"
    assert answer["reason"] == reason and answer["code"] == code and answer["metadata"] == {}


def test_invalid_body_names_the_field(sim: SimCluster) -> None:
    _, _, answer = request(sim.url, "POST", "/api/v1/namespaces/default/pods", '{"metadata":{}}')
    assert answer["details"]["causes"][0]["field"] == "metadata.name"
    assert "name or generateName is required" in answer["message"]


def test_injected_429_with_retry_after_then_cleared(sim: SimCluster) -> None:
    faults = {
        "seed": 3,
        "errors": [{"verb": "list", "resource": "nodes", "code": 429, "rate": 1.0, "retry_after_s": 2}],
    }
    status, _, _ = request(sim.url, "PUT", "/admin/faults", json.dumps(faults))
    assert status == 200
    status, headers, answer = request(sim.url, "GET", "/api/v1/nodes")
    assert (status, answer["reason"], headers["Retry-After"]) == (429, "TooManyRequests", "2")
    assert request(sim.url, "GET", "/api/v1/namespaces")[0] == 200  # other resources unaffected
    assert request(sim.url, "GET", "/admin/faults")[2]["errors"][0]["code"] == 429
    request(sim.url, "PUT", "/admin/faults", "{}")
    assert request(sim.url, "GET", "/api/v1/nodes")[0] == 200
    assert request(sim.url, "PUT", "/admin/faults", '{"bogus": 1}')[0] == 400


def test_injected_binding_conflicts_are_audited(sim: SimCluster) -> None:
    request(sim.url, "PUT", "/admin/faults", json.dumps({"seed": 1, "binding_conflict_rate": 0.5}))
    sim.add_pods(40, name_prefix="b-")
    codes = []
    for i in range(40):
        body = json.dumps({"metadata": {"name": f"b-{i}"}, "target": {"name": "node-0"}})
        codes.append(request(sim.url, "POST", f"/api/v1/namespaces/default/pods/b-{i}/binding", body)[0])
    assert set(codes) == {201, 409}
    audit = request(sim.url, "GET", "/admin/audit")[2]["items"]
    assert [a["code"] for a in audit] == codes
    assert {a["result"] for a in audit} == {"bound", "injected-conflict"}
    assert [a["seq"] for a in audit] == list(range(1, 41))
    assert sim.audit.double_bindings() == []


def test_eviction_respects_pdb(sim: SimCluster) -> None:
    sim.add_pods(
        2,
        {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "c", "image": "pause"}]}},
        name_prefix="db-",
    )
    for i in range(2):
        bind = lambda p: {**p, "spec": {**p["spec"], "nodeName": "node-0"}}  # noqa: E731
        sim.store.mutate("pods", f"db-{i}", "default", bind, subresource="binding")
        run = lambda p: {**p, "status": {**p["status"], "phase": "Running"}}  # noqa: E731
        sim.store.mutate("pods", f"db-{i}", "default", run, subresource="status")
    sim.store.create(
        "poddisruptionbudgets",
        {"metadata": {"name": "db"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}}},
        namespace="default",
    )
    evict = json.dumps(
        {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": "db-0"},
            "deleteOptions": {"gracePeriodSeconds": 0},
        }
    )
    assert request(sim.url, "POST", "/api/v1/namespaces/default/pods/db-0/eviction", evict)[0] == 201
    status, _, answer = request(
        sim.url, "POST", "/api/v1/namespaces/default/pods/db-1/eviction", evict.replace("db-0", "db-1")
    )
    assert status == 429 and answer["details"]["causes"][0]["reason"] == "DisruptionBudget"
