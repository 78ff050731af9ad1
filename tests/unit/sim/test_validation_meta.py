"""ObjectMeta validation of every kind, through the store and over HTTP.

The cases are the tables of :mod:`tests.sim_validation_cases`.."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest
import yaml

from ksched.sim import SimCluster, SimConfig
from ksched.sim._status import StatusError
from ksched.sim.store import Store
from tests.sim_validation_cases import CORPUS, META_CASES, RESOURCE, build


def refused(store: Store, kind: str, obj: dict[str, Any]) -> StatusError:
    with pytest.raises(StatusError) as info:
        store.create(RESOURCE[kind], obj)
    return info.value


def causes(exc: StatusError) -> list[tuple[str, str]]:
    return [(c["field"], c["reason"]) for c in (exc.details or {}).get("causes", [])]


@pytest.mark.parametrize(("kind", "fragment", "field", "reason"), META_CASES, ids=lambda v: str(v)[:40])
def test_invalid_metadata_is_refused_naming_the_field(
    kind: str, fragment: Any, field: str, reason: str
) -> None:
    exc = refused(Store(), kind, build(kind, fragment))
    assert exc.code == 422 and (field, reason) in causes(exc), causes(exc)


def test_every_corpus_object_is_refused_naming_its_field() -> None:
    entries = yaml.safe_load(CORPUS.read_text())
    assert len(entries) >= 60
    for entry in entries:
        exc = refused(Store(), entry["kind"], entry["object"])
        assert 400 <= exc.code < 500 and entry["field"] in [f for f, _ in causes(exc)], entry["field"]


def test_the_message_is_upstreams() -> None:
    exc = refused(Store(), "Pod", build("Pod", {"metadata": {"name": "Tw"}}))
    assert str(exc.message).startswith(
        'Pod "Tw" is invalid: metadata.name: Invalid value: "Tw": '
        "a lowercase RFC 1123 subdomain must consist of"
    )


@pytest.mark.parametrize(
    ("kind", "name"),
    [("Namespace", "a-b"), ("ClusterRole", "system:a.B_c"), ("ConfigMap", "a.b-c"), ("Pod", "x" * 253)],
)
def test_names_each_kind_allows_are_accepted(kind: str, name: str) -> None:
    Store().create(RESOURCE[kind], build(kind, {"metadata": {"name": name}}))


def test_valid_labels_annotations_owner_and_finalizers_are_accepted() -> None:
    meta = {
        "labels": {"example.com/a": "b-c", "k": ""},
        "annotations": {"Example.com/Key": "any text\n"},
        "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r", "uid": "u", "controller": True}
        ],
        "finalizers": ["example.com/f", "kubernetes"],
    }
    Store().create("configmaps", build("ConfigMap", {"metadata": meta}))


def test_labels_are_checked_on_update_and_finalizers_may_not_be_added_while_deleting() -> None:
    store = Store()
    store.create("configmaps", build("ConfigMap", {}))
    with pytest.raises(StatusError) as info:
        store.mutate(
            "configmaps",
            "cm",
            "default",
            lambda cur: {**cur, "metadata": {**cur["metadata"], "labels": {"bad key": "v"}}},
        )
    assert ("metadata.labels", "FieldValueInvalid") in causes(info.value)
    with pytest.raises(StatusError) as info:
        store.mutate(
            "configmaps",
            "cm",
            "default",
            lambda cur: {**cur, "metadata": {**cur["metadata"], "deletionTimestamp": "2030-01-01T00:00:00Z"}},
        )
    assert ("metadata.deletionTimestamp", "FieldValueInvalid") in causes(info.value)


def test_http_answers_422_with_upstreams_causes() -> None:
    cluster = SimCluster(SimConfig(seed=1))
    cluster.start()
    try:
        body = build(
            "Pod",
            {"metadata": {"name": "Tw", "labels": {"a\x00": "b"}}, "spec": {"containers": [{"name": "c"}]}},
        )
        req = urllib.request.Request(
            f"{cluster.url}/api/v1/namespaces/default/pods",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(req, timeout=10)
        status = json.loads(info.value.read())
    finally:
        cluster.stop()
    assert info.value.code == 422 and status["reason"] == "Invalid" and status["details"]["kind"] == "Pod"
    fields = [c["field"] for c in status["details"]["causes"]]
    assert fields == ["metadata.name", "metadata.labels", "spec.containers[0].image"]
