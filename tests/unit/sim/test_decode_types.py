"""The JSON decoder's type checks: wrong types and out-of-range integers are 400s with its message.

Messages are kube-apiserver v1.35's (``sigs.k8s.io/json``'s ``UnmarshalTypeError`` and the
``UnmarshalJSON`` errors of quantities, int-or-string and times), behind the create handler's
``<Kind> in version "v1" cannot be handled as a <Kind>: `` prefix.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from ksched.sim import SimCluster, SimConfig
from ksched.sim import _decode_schema as ds
from ksched.sim._decode_explain import base64_error, time_error
from ksched.sim._resources import BY_KEY, RESOURCES, ResourceType
from ksched.sim._status import StatusError
from ksched.sim._storage_validation import QUANTITY_REGEXP_ERROR
from ksched.sim.store import Store
from tests.integration.sim.simhttp import request
from tests.unit.sim.decode_seeds import seed

CORPUS = Path(__file__).parents[2] / "corpus" / "wrong_types.yaml"
POD_PREFIX = 'Pod in version "v1" cannot be handled as a Pod: '


def pod(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}], **spec}}


def refusal(resource: str, obj: dict[str, Any]) -> StatusError:
    with pytest.raises(StatusError) as info:
        Store().create(resource, obj, namespace="default" if BY_KEY[resource].namespaced else None)
    return info.value


CASES = [
    (
        pod(),
        ("spec",),
        "hello",
        "json: cannot unmarshal string into Go struct field Pod.spec of type v1.PodSpec",
    ),
    (
        pod(),
        ("spec", "priority"),
        99999999999,
        "json: cannot unmarshal number 99999999999 into Go struct field PodSpec.spec.priority of type int32",
    ),
    (
        pod(),
        ("spec", "containers", 0, "ports"),
        [{"containerPort": "80"}],
        "json: cannot unmarshal string into Go struct field ContainerPort.spec.containers.ports.containerPort"
        " of type int32",
    ),
    (
        pod(),
        ("metadata", "labels"),
        {"app": 1},
        "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string",
    ),
    (
        pod(),
        ("spec", "containers", 0, "resources"),
        {"requests": {"cpu": "1 core"}},
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
    ),
    (
        pod(),
        ("spec", "containers", 0, "readinessProbe"),
        {"tcpSocket": {"port": 70000.5}},
        "json: cannot unmarshal number 70000.5 into Go value of type int32",
    ),
    (
        pod(),
        ("status", "startTime"),
        "2026-01-01 10:00",
        'parsing time "2026-01-01 10:00" as "2006-01-02T15:04:05Z07:00": cannot parse " 10:00" as "T"',
    ),
    (
        pod(),
        ("spec", "overhead"),
        ["1"],
        "json: cannot unmarshal array into Go struct field PodSpec.spec.overhead of type v1.ResourceList",
    ),
]


def _set(obj: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    node: Any = out
    for key in path[:-1]:
        node = node.setdefault(key, {}) if isinstance(key, str) else node[key]
    node[path[-1]] = value
    return out


@pytest.mark.parametrize(("base", "path", "value", "message"), CASES)
def test_a_wrong_type_is_the_decoders_400(
    base: dict[str, Any], path: tuple[Any, ...], value: Any, message: str
) -> None:
    err = refusal("pods", _set(base, path, value))
    assert (err.code, err.reason, err.message) == (400, "BadRequest", POD_PREFIX + message)


def test_a_type_error_found_first_wins_unless_an_unmarshaler_aborts() -> None:
    """Mismatches are saved (first in document order); an ``UnmarshalJSON`` failure returns at once."""
    first = pod(priority="1", hostNetwork="yes")
    assert "spec.priority" in refusal("pods", first).message
    aborting = pod(priority="1", overhead={"cpu": "?"})
    assert refusal("pods", aborting).message == POD_PREFIX + QUANTITY_REGEXP_ERROR


def test_null_decodes_into_anything() -> None:
    obj = pod(priority=None, nodeSelector=None)
    obj["metadata"]["labels"] = {"a": None}
    assert Store().create("pods", obj, namespace="default")["metadata"]["name"] == "p"


def test_an_update_checks_what_changed() -> None:
    store = Store()
    created = store.create("pods", pod(), namespace="default")
    with pytest.raises(StatusError) as info:
        store.mutate("pods", "p", "default", lambda cur: {**cur, "spec": {**cur["spec"], "priority": True}})
    assert info.value.code == 400 and "PodSpec.spec.priority of type int32" in info.value.message
    assert (
        store.get("pods", "p", "default")["metadata"]["resourceVersion"]
        == created["metadata"]["resourceVersion"]
    )


@pytest.mark.parametrize(
    ("value", "micro", "message"),
    [
        ("2026-01-02T03:04:05Z", False, None),
        ("2026-01-02T03:04:05.123+02:00", False, None),
        ("2026-01-02T03:04:05.000000Z", True, None),
        ("2026-01-02T03:04:05Z", True, 'parsing time "2026-01-02T03:04:05Z" as '
         '"2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000"'),
        ("2026-00-02T03:04:05Z", False, 'parsing time "2026-00-02T03:04:05Z": month out of range'),
        ("2026-01-02T03:04:05Zjunk", False, 'parsing time "2026-01-02T03:04:05Zjunk": extra text: "junk"'),
    ],
)  # fmt: skip
def test_times_parse_as_go_does(value: str, micro: bool, message: str | None) -> None:
    assert time_error(value, micro=micro) == message


def test_base64_errors_name_the_byte() -> None:
    assert base64_error("aGk=") is None
    assert base64_error("aG k") == "illegal base64 data at input byte 2"


def _corpus() -> list[dict[str, Any]]:
    return list(yaml.safe_load(CORPUS.read_text()))


def _rtype(entry: dict[str, Any]) -> ResourceType:
    return next(r for r in RESOURCES if r.kind == entry["kind"] and r.api_version == entry["apiVersion"])


def test_the_wrong_types_corpus_is_refused_with_400s_naming_the_field() -> None:
    entries = _corpus()
    assert len(entries) >= 30
    for entry in entries:
        rtype = _rtype(entry)
        with pytest.raises(StatusError) as info:
            Store().create(
                rtype, copy.deepcopy(entry["object"]), namespace="default" if rtype.namespaced else None
            )
        assert info.value.code == entry["code"] == 400, entry
        assert entry["field"] in info.value.message, (entry, info.value.message)


# -- over HTTP: no body of any shape answers 500 --------------------------------------------------


@pytest.fixture(scope="module")
def sim() -> Iterator[SimCluster]:
    cluster = SimCluster(SimConfig(running_delay_s=0.0, grace_scale=0.0, seed=1))
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


def _wrong(node: ds.Node) -> Any:
    """A value of another JSON kind than ``node`` takes."""
    return {ds.STRUCT: "x", ds.MAP: [], ds.LIST: {}, ds.STRING: 5, ds.BOOL: "true"}.get(node.kind, {})


def _collection(r: ResourceType) -> str:
    base = f"/apis/{r.group}/{r.version}" if r.group else "/api/v1"
    return f"{base}/namespaces/default/{r.plural}" if r.namespaced else f"{base}/{r.plural}"


def _bodies(r: ResourceType) -> Iterator[tuple[str, Any]]:
    node = ds.kind_node(r.group, r.version, r.kind)
    assert node is not None
    for key, sub in node.props.items():
        if key not in ("apiVersion", "kind"):
            yield key, _wrong(sub)
    for value in (
        {"labels": []},
        {"annotations": {"a": 1}},
        {"generateName": 5},
        {"resourceVersion": 7},
        None,
    ):
        yield "metadata", value


def _name(r: ResourceType) -> str:
    return "n-0" if r.kind == "CSINode" else "wrong"


@pytest.mark.parametrize("rtype", RESOURCES, ids=lambda r: r.key)
def test_no_kind_answers_500_to_a_body_of_wrong_types(sim: SimCluster, rtype: ResourceType) -> None:
    coll = _collection(rtype)
    stored = "create" in rtype.verbs and len(rtype.verbs) > 1
    if stored:
        obj = seed(rtype.storage_key, rtype.api_version, rtype.kind, _name(rtype))
        code, _, _ = request(sim.url, "POST", coll, json.dumps(obj))
        assert code in (201, 409)
    for key, value in _bodies(rtype):
        body = {
            "apiVersion": rtype.api_version,
            "kind": rtype.kind,
            "metadata": {"name": _name(rtype)},
            key: value,
        }
        code, _, reply = request(sim.url, "POST", coll, json.dumps(body))
        assert code < 500 and (value is None or code != 201), (key, value, reply)
        if not stored:
            continue
        item = f"{coll}/{_name(rtype)}"
        code, _, reply = request(sim.url, "PUT", item, json.dumps(body))
        assert code < 500 and (value is None or code >= 400), (key, value, reply)
        for ctype in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
            code, _, reply = request(sim.url, "PATCH", item, json.dumps({key: value}), ctype)
            assert code < 500, (key, value, ctype, reply)


def test_a_patch_that_breaks_a_type_is_a_422_on_the_patch(sim: SimCluster) -> None:
    coll = "/api/v1/namespaces/default/configmaps"
    request(sim.url, "POST", coll, json.dumps({"metadata": {"name": "patched"}, "data": {"k": "v"}}))
    code, _, body = request(
        sim.url, "PATCH", f"{coll}/patched", json.dumps({"data": {"k": 1}}), "application/merge-patch+json"
    )
    assert (code, body["reason"]) == (422, "Invalid")
    (cause,) = body["details"]["causes"]
    assert cause["field"] == "patch"
    assert cause["message"].endswith(
        ": json: cannot unmarshal number into Go struct field ConfigMap.data of type string"
    )


def test_under_strict_validation_a_wrong_type_wins_over_unknown_fields(sim: SimCluster) -> None:
    body = {"metadata": {"name": "strict"}, "bogus": 1, "data": {"k": 1}}
    path = "/api/v1/namespaces/default/configmaps?fieldValidation=Strict"
    code, _, reply = request(sim.url, "POST", path, json.dumps(body))
    assert code == 400
    assert reply["message"].endswith(
        "json: cannot unmarshal number into Go struct field ConfigMap.data of type string"
    )
