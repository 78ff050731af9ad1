"""``lean_json``: for a document of the pod and node shapes, orjson's answer without
managedFields; for one the shapes do not fit, orjson's answer (or its error) itself."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ksched.errors import ObjectError
from ksched.kube.lean_json import loads_event, loads_list
from ksched.model.pod import pod_from_dict

MANAGED = [
    {
        "manager": "kubectl",
        "operation": "Update",
        "apiVersion": "v1",
        "time": "2026-01-01T00:00:00Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "f:spec": {"f:containers": {}}},
    }
]


def _pod(name: str, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"u-{name}",
            "managedFields": MANAGED,
            **meta,
        },
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]},
        "status": {"phase": "Pending"},
    }


def _without_managed(obj: dict[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
    return {**obj, "metadata": meta}


def test_a_list_page_is_orjsons_without_managed_fields() -> None:
    page = {
        "apiVersion": "v1",
        "kind": "PodList",
        "metadata": {"resourceVersion": "42", "continue": "tok", "remainingItemCount": 3},
        "items": [_pod("a", labels={"app": "web"}), _pod("b", annotations={"x": "y"}, finalizers=["f"])],
    }
    assert loads_list(orjson.dumps(page)) == {**page, "items": [_without_managed(i) for i in page["items"]]}


@pytest.mark.parametrize(
    "event",
    [
        pytest.param({"type": "ADDED", "object": _pod("a")}, id="added"),
        pytest.param(
            {"type": "MODIFIED", "object": _pod("a", deletionTimestamp="2026-01-01T00:00:00Z")}, id="mod"
        ),
        pytest.param(
            {
                "type": "BOOKMARK",
                "object": {
                    "kind": "Pod",
                    "apiVersion": "v1",
                    "metadata": {
                        "resourceVersion": "7",
                        "annotations": {"k8s.io/initial-events-end": "true"},
                    },
                },
            },
            id="bookmark",
        ),
    ],
)
def test_a_watch_event_is_orjsons_without_managed_fields(event: dict[str, Any]) -> None:
    want = {**event, "object": _without_managed(event["object"])}
    assert loads_event(orjson.dumps(event)) == want


def test_a_watch_error_keeps_its_status() -> None:
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "too old resource version: 1 (5)",
        "reason": "Expired",
        "details": {"causes": []},
        "code": 410,
    }
    assert loads_event(orjson.dumps({"type": "ERROR", "object": status})) == {
        "type": "ERROR",
        "object": status,
    }


@pytest.mark.parametrize(
    ("loads", "raw"),
    [
        pytest.param(loads_list, b'{"items": [{"metadata": "nope"}]}', id="metadata not an object"),
        pytest.param(loads_list, b'{"items": {"a": 1}}', id="items not an array"),
        pytest.param(loads_list, b'{"items": [7, null]}', id="items not objects"),
        pytest.param(loads_list, b"[1, 2]", id="a list not an object"),
        pytest.param(loads_event, b'{"type": "ADDED", "object": 5}', id="object not an object"),
        pytest.param(loads_event, b'{"type": "ADDED", "object": {"metadata": [1]}}', id="event metadata"),
        pytest.param(loads_event, b'"ADDED"', id="an event not an object"),
    ],
)
def test_a_document_the_shapes_do_not_fit_is_orjsons(loads: Any, raw: bytes) -> None:
    assert loads(raw) == orjson.loads(raw)


def test_the_lists_own_metadata_is_kept_whole() -> None:
    raw = b'{"items": [], "metadata": {"managedFields": [1], "resourceVersion": "3"}}'
    assert loads_list(raw) == orjson.loads(raw)


def test_a_value_nobody_reads_is_checked_for_syntax_only() -> None:
    raw = b'{"type": "ADDED", "object": {"extra": 1e400, "metadata": {"managedFields": "\xff"}}}'
    assert loads_event(raw) == {"type": "ADDED", "object": {"metadata": {}}}


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b'{"items": [', id="truncated"),
        pytest.param(b'{"kind": 1e400, "type": 1e400}', id="infinite number"),
        pytest.param(b'{"type": "ADDED", "object": {"extra": [1,]}}', id="bad syntax where nothing is read"),
        pytest.param(b'{"kind": "\\ud800", "type": "\\ud800"}', id="lone surrogate"),
        pytest.param(b'{"items": ' + b"[" * 2000 + b"]" * 2000 + b"}", id="deep nesting"),
        pytest.param(b"\xef\xbb\xbf{}", id="byte order mark"),
    ],
)
def test_malformed_json_fails_as_orjson_fails(raw: bytes) -> None:
    for loads in (loads_list, loads_event):
        with pytest.raises(orjson.JSONDecodeError):
            loads(raw)


def test_an_integer_past_64_bits_is_still_out_of_range_for_the_model() -> None:
    raw = orjson.dumps({"type": "ADDED", "object": _pod("big")}).replace(
        b'"spec":{', b'"spec":{"priority":123456789012345678901234567890,', 1
    )
    with pytest.raises(ObjectError) as info:
        pod_from_dict(loads_event(raw)["object"])
    assert info.value.field == "spec.priority"


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
_META_KEYS = ["name", "namespace", "uid", "labels", "annotations", "resourceVersion", "ownerReferences"]
_meta = st.dictionaries(st.sampled_from([*_META_KEYS, "managedFields"]), _json, max_size=5)
_object = st.fixed_dictionaries(
    {}, optional={"kind": _json, "metadata": _meta, "spec": _json, "status": _json}
)


@settings(max_examples=200, deadline=None)
@given(items=st.lists(_object, max_size=4), list_meta=_json)
def test_any_fitting_page_is_orjsons_without_managed_fields(
    items: list[dict[str, Any]], list_meta: Any
) -> None:
    raw = orjson.dumps({"kind": "PodList", "metadata": list_meta, "items": items})
    want = orjson.loads(raw)
    for item in want["items"]:
        if "metadata" in item:
            item["metadata"].pop("managedFields", None)
    assert loads_list(raw) == want


@settings(max_examples=200, deadline=None)
@given(etype=_json, obj=_object)
def test_any_fitting_event_is_orjsons_without_managed_fields(etype: Any, obj: dict[str, Any]) -> None:
    raw = orjson.dumps({"type": etype, "object": obj})
    want = orjson.loads(raw)
    want["object"].get("metadata", {}).pop("managedFields", None)
    assert loads_event(raw) == want


@settings(max_examples=200, deadline=None)
@given(doc=_json.filter(lambda doc: not isinstance(doc, dict)))
def test_any_document_but_an_object_is_orjsons(doc: Any) -> None:
    raw = orjson.dumps(doc)
    assert loads_list(raw) == orjson.loads(raw)
    assert loads_event(raw) == orjson.loads(raw)
