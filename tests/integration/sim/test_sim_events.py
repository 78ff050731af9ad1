"""core/v1 and events.k8s.io/v1 Events are one stored resource served through two API versions.

Upstream (``pkg/apis/events/v1/conversion.go``) converts ``regarding`` <-> ``involvedObject``, ``note``
<-> ``message``, ``reportingController`` <-> ``reportingComponent``, ``deprecated*`` <-> ``count``,
``firstTimestamp``, ``lastTimestamp``, ``source``; everything else keeps its name.
"""

from __future__ import annotations

import http.client
import json
import threading
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import pytest
from simhttp import request
from simhttp import watch as read_watch
from test_sim_kubectl import kubectl

from ksched.sim import SimCluster

CORE = "/api/v1/namespaces/default/events"
EV1 = "/apis/events.k8s.io/v1/namespaces/default/events"


def _pod(sim: SimCluster, name: str = "web-1") -> dict[str, Any]:
    return sim.store.create(
        "pods",
        {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
        namespace="default",
    )


def _v1_event(pod: dict[str, Any], name: str = "web-1.17f0a1b2c3d4e5f6", **extra: Any) -> dict[str, Any]:
    meta = pod["metadata"]
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": "default"},
        "eventTime": "2025-01-02T03:04:05.678901Z",
        "reportingController": "default-scheduler",
        "reportingInstance": "default-scheduler-host-1",
        "action": "Binding",
        "reason": "Scheduled",
        "type": "Normal",
        "note": "Successfully assigned default/web-1 to node-1",
        "regarding": {
            "kind": "Pod",
            "apiVersion": "v1",
            "namespace": "default",
            "name": meta["name"],
            "uid": meta["uid"],
        },
        **extra,
    }


def _post(sim: SimCluster, path: str, body: dict[str, Any]) -> dict[str, Any]:
    code, _, got = request(sim.url, "POST", path, json.dumps(body))
    assert code == 201, got
    return got


def test_events_v1_create_read_through_core(sim: SimCluster) -> None:
    pod = _pod(sim)
    created = _post(
        sim,
        EV1,
        _v1_event(
            pod,
            related={"kind": "Node", "name": "node-1"},
            series={"count": 3, "lastObservedTime": "2025-01-02T03:05:00.000000Z"},
            message="not an events.k8s.io field: dropped",
        ),
    )
    assert created["apiVersion"] == "events.k8s.io/v1" and created["note"].startswith("Successfully")
    assert "message" not in created and "involvedObject" not in created

    code, _, core = request(sim.url, "GET", f"{CORE}/web-1.17f0a1b2c3d4e5f6")
    assert code == 200, core
    assert (core["apiVersion"], core["kind"]) == ("v1", "Event")
    assert core["involvedObject"] == created["regarding"] and "regarding" not in core
    assert core["message"] == "Successfully assigned default/web-1 to node-1" and "note" not in core
    assert core["reportingComponent"] == "default-scheduler" and "reportingController" not in core
    assert core["reportingInstance"] == "default-scheduler-host-1"
    assert "source" not in core and "count" not in core  # not derived from reportingController/series
    for same in ("eventTime", "action", "reason", "type", "series", "related"):
        assert core[same] == created[same], same
    assert core["metadata"] == created["metadata"]  # one object: same uid and resourceVersion

    # one stored resource: both lists, and the Python API under either name, see it once
    for path, key in ((CORE, "involvedObject"), (EV1, "regarding")):
        code, _, lst = request(sim.url, "GET", path)
        assert code == 200 and [i[key]["name"] for i in lst["items"]] == ["web-1"]
    assert sim.store.count("events") == 1
    assert sim.store.list("events.events.k8s.io", "default")[0]["note"] == core["message"]
    assert sim.store.get("events", "web-1.17f0a1b2c3d4e5f6", "default")["message"] == core["message"]


def test_core_create_read_through_events_v1(sim: SimCluster) -> None:
    body = {
        "metadata": {"name": "web-1.abc"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web-1", "uid": "u-1"},
        "reason": "Pulled",
        "message": "Container image pulled",
        "type": "Normal",
        "source": {"component": "kubelet", "host": "node-1"},
        "firstTimestamp": "2025-01-02T03:04:05Z",
        "lastTimestamp": "2025-01-02T03:06:05Z",
        "count": 2,
        "reportingComponent": "kubelet",
        "reportingInstance": "node-1",
        "note": "not a core/v1 field: dropped",
    }
    created = _post(sim, CORE, body)
    assert created["message"] == "Container image pulled" and "note" not in created

    code, _, ev = request(sim.url, "GET", f"{EV1}/web-1.abc")
    assert code == 200, ev
    assert (ev["apiVersion"], ev["kind"]) == ("events.k8s.io/v1", "Event")
    assert ev["regarding"] == body["involvedObject"] and ev["note"] == "Container image pulled"
    assert ev["reportingController"] == "kubelet" and ev["reportingInstance"] == "node-1"
    assert ev["deprecatedSource"] == {"component": "kubelet", "host": "node-1"}
    assert ev["deprecatedFirstTimestamp"] == "2025-01-02T03:04:05Z"
    assert ev["deprecatedLastTimestamp"] == "2025-01-02T03:06:05Z" and ev["deprecatedCount"] == 2
    for core_only in ("involvedObject", "message", "source", "count", "firstTimestamp", "reportingComponent"):
        assert core_only not in ev, core_only


def test_patch_and_delete_across_versions(sim: SimCluster) -> None:
    pod = _pod(sim)
    _post(sim, EV1, _v1_event(pod))
    name = "web-1.17f0a1b2c3d4e5f6"
    # a merge patch through core/v1 uses core names; events.k8s.io sees it converted
    code, _, core = request(
        sim.url, "PATCH", f"{CORE}/{name}", json.dumps({"count": 2}), "application/merge-patch+json"
    )
    assert code == 200 and core["count"] == 2, core
    code, _, ev = request(
        sim.url,
        "PATCH",
        f"{EV1}/{name}",
        json.dumps({"series": {"count": 2, "lastObservedTime": "2025-01-02T03:05:00.000000Z"}}),
        "application/merge-patch+json",
    )
    assert code == 200 and ev["deprecatedCount"] == 2 and ev["series"]["count"] == 2, ev
    assert int(ev["metadata"]["resourceVersion"]) > int(core["metadata"]["resourceVersion"])
    # a PUT of the events.k8s.io view round-trips; its note is immutable there (not through core/v1)
    labelled = {**ev, "metadata": {**ev["metadata"], "labels": {"a": "b"}}}
    code, _, put = request(sim.url, "PUT", f"{EV1}/{name}", json.dumps(labelled))
    assert code == 200 and put["metadata"]["labels"] == {"a": "b"}, put
    code, _, bad = request(sim.url, "PUT", f"{EV1}/{name}", json.dumps({**put, "note": "edited"}))
    assert code == 422 and bad["details"]["causes"][0]["field"] == "message", bad
    code, _, core = request(sim.url, "GET", f"{CORE}/{name}")
    code, _, put = request(sim.url, "PUT", f"{CORE}/{name}", json.dumps({**core, "message": "edited"}))
    assert code == 200 and sim.store.get("events", name, "default")["message"] == "edited", put
    # delete through core/v1: gone from events.k8s.io/v1 too
    code, _, gone = request(sim.url, "DELETE", f"{CORE}/{name}")
    assert code == 200 and gone["involvedObject"]["name"] == "web-1"
    code, _, nf = request(sim.url, "GET", f"{EV1}/{name}")
    assert code == 404 and nf["details"]["group"] == "events.k8s.io", nf


def test_field_selectors_on_both_paths(sim: SimCluster) -> None:
    pod = _pod(sim)
    _post(sim, EV1, _v1_event(pod))
    other = _v1_event(pod, name="other.1", reason="FailedScheduling", type="Warning")
    other["regarding"] = {"kind": "Pod", "namespace": "default", "name": "other", "uid": "u-2"}
    _post(sim, EV1, other)
    uid = pod["metadata"]["uid"]
    cases = [
        (CORE, f"involvedObject.name=web-1,involvedObject.namespace=default,involvedObject.uid={uid}"),
        (CORE, "involvedObject.kind=Pod,reason=Scheduled"),
        (CORE, "type=Normal"),
        (CORE, "reportingComponent=default-scheduler,involvedObject.name!=other"),
        (EV1, f"regarding.name=web-1,regarding.namespace=default,regarding.uid={uid}"),
        (EV1, "regarding.kind=Pod,reason=Scheduled,type=Normal"),
        (EV1, "reportingController=default-scheduler,regarding.name!=other"),
    ]
    for path, sel in cases:
        code, _, lst = request(sim.url, "GET", f"{path}?fieldSelector={quote(sel)}")
        assert code == 200, lst
        assert [i["metadata"]["name"] for i in lst["items"]] == ["web-1.17f0a1b2c3d4e5f6"], (path, sel)
    code, _, lst = request(sim.url, "GET", f"{CORE}?fieldSelector={quote('source=kubelet')}")
    assert code == 200 and lst["items"] == []


def test_core_watch_sees_events_v1_writes_and_back(sim: SimCluster) -> None:
    pod = _pod(sim)
    _, _, lst = request(sim.url, "GET", CORE)
    rv = lst["metadata"]["resourceVersion"]
    sel = quote("involvedObject.name=web-1")
    core_frames: list[dict[str, Any]] = []
    ev1_frames: list[dict[str, Any]] = []
    watchers = [
        threading.Thread(
            target=lambda: core_frames.extend(
                read_watch(sim.url, f"{CORE}?watch=true&resourceVersion={rv}&fieldSelector={sel}", 3)
            )
        ),
        threading.Thread(
            target=lambda: ev1_frames.extend(read_watch(sim.url, f"{EV1}?watch=true&resourceVersion={rv}", 3))
        ),
    ]
    for t in watchers:  # they replay from rv, so they need not be connected before the writes
        t.start()
    name = "web-1.17f0a1b2c3d4e5f6"
    _post(sim, EV1, _v1_event(pod))
    code, _, _ = request(
        sim.url, "PATCH", f"{CORE}/{name}", json.dumps({"count": 2}), "application/merge-patch+json"
    )
    assert code == 200
    assert request(sim.url, "DELETE", f"{EV1}/{name}")[0] == 200
    for t in watchers:
        t.join(10)
    assert [f["type"] for f in core_frames] == ["ADDED", "MODIFIED", "DELETED"]
    assert [f["type"] for f in ev1_frames] == ["ADDED", "MODIFIED", "DELETED"]
    assert all(f["object"]["apiVersion"] == "v1" for f in core_frames)
    assert all(f["object"]["apiVersion"] == "events.k8s.io/v1" for f in ev1_frames)
    assert core_frames[0]["object"]["message"] == ev1_frames[0]["object"]["note"]
    assert core_frames[1]["object"]["count"] == 2 and ev1_frames[1]["object"]["deprecatedCount"] == 2
    assert core_frames[2]["object"]["involvedObject"]["name"] == "web-1"
    assert [f["object"]["metadata"]["resourceVersion"] for f in core_frames] == [
        f["object"]["metadata"]["resourceVersion"] for f in ev1_frames
    ]


def test_table_columns(sim: SimCluster) -> None:
    pod = _pod(sim)
    _post(sim, EV1, _v1_event(pod))
    u = urlsplit(sim.url)
    for path, version in ((CORE, "v1"), (EV1, "events.k8s.io/v1")):
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=5)
        conn.request(
            "GET",
            path + "?includeObject=Object",
            headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"},
        )
        tab = json.loads(conn.getresponse().read())
        conn.close()
        cols = [c["name"] for c in tab["columnDefinitions"]]
        assert cols[:4] == ["Last Seen", "Type", "Reason", "Object"] and "Message" in cols
        cells = dict(zip(cols, tab["rows"][0]["cells"], strict=True))
        assert cells["Type"] == "Normal" and cells["Reason"] == "Scheduled"
        assert cells["Object"] == "pod/web-1"
        assert cells["Message"] == "Successfully assigned default/web-1 to node-1"
        assert cells["Source"] == "default-scheduler, default-scheduler-host-1"
        assert cells["Count"] == 1 and cells["Name"] == "web-1.17f0a1b2c3d4e5f6"
        assert tab["rows"][0]["object"]["apiVersion"] == version


@pytest.mark.kubectl
def test_kubectl_get_events_and_describe_pod(sim: SimCluster, kubeconfig: Path) -> None:
    pod = _pod(sim)
    _pod(sim, "other")
    _post(sim, EV1, _v1_event(pod))
    events = kubectl(kubeconfig, "get", "events")
    header, *rows = events.splitlines()
    assert header.split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert len(rows) == 1
    assert rows[0].split()[1:4] == ["Normal", "Scheduled", "pod/web-1"]
    assert rows[0].rstrip().endswith("Successfully assigned default/web-1 to node-1")
    wide = kubectl(kubeconfig, "get", "events", "-o", "wide")
    assert "default-scheduler, default-scheduler-host-1" in wide
    assert "Successfully assigned" in kubectl(
        kubeconfig, "get", "events.v1.events.k8s.io", "--field-selector", "regarding.name=web-1"
    )

    desc = kubectl(kubeconfig, "describe", "pod", "web-1")
    events_part = desc.split("Events:", 1)[1]
    assert "Scheduled" in events_part and "default-scheduler" in events_part
    assert "Successfully assigned default/web-1 to node-1" in events_part
    assert "<none>" in kubectl(kubeconfig, "describe", "pod", "other").split("Events:", 1)[1]


# -- events.k8s.io/v1 validation (pkg/apis/core/validation/events.go) ----------------------------------
LONG = "x" * 129


@pytest.mark.parametrize(
    ("change", "field"),
    [
        pytest.param({}, None, id="a valid event"),
        pytest.param({"eventTime": None}, "eventTime", id="eventTime is required"),
        pytest.param({"type": "Unknown"}, "type", id="type is Normal or Warning"),
        pytest.param({"deprecatedCount": 2}, "count", id="deprecatedCount must be unset"),
        pytest.param({"deprecatedSource": {"component": "c"}}, "source", id="deprecatedSource must be unset"),
        pytest.param(
            {"deprecatedFirstTimestamp": "2025-01-02T03:04:05Z"},
            "firstTimestamp",
            id="deprecatedFirstTimestamp must be unset",
        ),
        pytest.param(
            {"series": {"count": 1, "lastObservedTime": "2025-01-02T03:05:00.000000Z"}},
            "series.count",
            id="a series counts at least 2",
        ),
        pytest.param({"series": {"count": 2}}, "series.lastObservedTime", id="a series has lastObservedTime"),
        pytest.param({"reportingController": None}, "reportingController", id="reportingController required"),
        pytest.param(
            {"reportingController": "not/a/qualified/name"},
            "reportingController",
            id="reportingController is a qualified name",
        ),
        pytest.param({"reportingInstance": None}, "reportingInstance", id="reportingInstance required"),
        pytest.param({"reportingInstance": LONG}, "reportingInstance", id="reportingInstance at most 128"),
        pytest.param({"action": None}, "action", id="action required"),
        pytest.param({"reason": LONG}, "reason", id="reason at most 128"),
        pytest.param({"note": "n" * 1025}, "message", id="note at most 1024"),
        pytest.param({"metadata": {"name": "Not_A_Name"}}, "metadata.name", id="name is a DNS subdomain"),
    ],
)
def test_events_v1_create_validation(sim: SimCluster, change: dict[str, Any], field: str | None) -> None:
    body = _v1_event(_pod(sim))
    for k, v in change.items():
        if v is None:
            body.pop(k)
        else:
            body[k] = v
    code, _, got = request(sim.url, "POST", EV1, json.dumps(body))
    if field is None:
        assert code == 201, got
        return
    assert code == 422, got
    assert {c["field"] for c in got["details"]["causes"]} == {field}, got  # upstream may list several
    assert got["details"]["group"] == "events.k8s.io" and got["reason"] == "Invalid"


def test_core_v1_keeps_the_lenient_rules(sim: SimCluster) -> None:
    """Upstream validates core/v1 writes with the legacy rules only (backwards compatibility)."""
    body = _v1_event(_pod(sim))
    core = {
        "metadata": body["metadata"],
        "involvedObject": body["regarding"],
        "reason": "Pulled",
        "message": "m",
        "count": 3,
        "source": {"component": "kubelet"},
    }
    code, _, got = request(sim.url, "POST", CORE, json.dumps(core))
    assert code == 201, got


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        pytest.param(
            {"series": {"count": 5, "lastObservedTime": "2025-01-02T03:06:00.000000Z"}},
            None,
            id="the series may change",
        ),
        pytest.param({"metadata": {"labels": {"a": "b"}}}, None, id="so may metadata"),
        pytest.param(
            {"series": {"count": 1, "lastObservedTime": "2025-01-02T03:06:00.000000Z"}},
            "series.count",
            id="a changed series is validated",
        ),
        pytest.param({"note": "other"}, "message", id="the note is immutable"),
        pytest.param({"reason": "Other"}, "reason", id="the reason is immutable"),
        pytest.param({"reportingController": "other"}, "reportingController", id="the controller too"),
        pytest.param({"regarding": {"kind": "Pod", "name": "x"}}, "involvedObject", id="and regarding"),
    ],
)
def test_events_v1_update_validation(sim: SimCluster, patch: dict[str, Any], field: str | None) -> None:
    name = _post(sim, EV1, _v1_event(_pod(sim)))["metadata"]["name"]
    code, _, got = request(
        sim.url, "PATCH", f"{EV1}/{name}", json.dumps(patch), "application/strategic-merge-patch+json"
    )
    if field is None:
        assert code == 200, got
        return
    assert code == 422 and [c["field"] for c in got["details"]["causes"]] == [field], got
