"""Decoders for Namespace and PodDisruptionBudget records, and the client's error mapping."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.errors import ApiError, Conflict, Gone, NotFound, ObjectError, TooManyRequests
from ksched.kube.client import status_error
from ksched.model.namespace import Namespace, namespace_from_dict
from ksched.model.pdb import pdb_from_dict


def test_namespace_record() -> None:
    ns = namespace_from_dict({"metadata": {"name": "team-a", "uid": "u1", "labels": {"env": "prod"}}})
    assert ns == Namespace("team-a", {"env": "prod"}, "u1")
    assert ns.described == "Namespace team-a"


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        pytest.param({"metadata": {}}, "metadata.name", id="no name"),
        pytest.param(
            {"metadata": {"name": "a", "labels": {"x": 1}}}, "metadata.labels['x']", id="label not a string"
        ),
        pytest.param({"metadata": "nope"}, "metadata", id="metadata not an object"),
    ],
)
def test_namespace_errors_name_the_field(raw: Any, field: str) -> None:
    with pytest.raises(ObjectError) as info:
        namespace_from_dict(raw)
    assert info.value.field == field


def _pdb(spec: Any = None, status: Any = None, **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "web", "namespace": "shop", "uid": "u", **meta},
        "spec": spec,
        "status": status,
    }


def test_pdb_record() -> None:
    sel = {
        "matchLabels": {"app": "web"},
        "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a"]}],
    }
    pdb = pdb_from_dict(_pdb({"selector": sel, "minAvailable": 2}, {"disruptionsAllowed": 1}))
    assert (pdb.namespace, pdb.name, pdb.uid, pdb.disruptions_allowed) == ("shop", "web", "u", 1)
    assert pdb.selector == sel
    assert pdb.key == "shop/web"


def test_pdb_selector_null_and_empty_differ() -> None:
    assert pdb_from_dict(_pdb({})).selector is None
    assert pdb_from_dict(_pdb({"selector": {}})).selector == {}
    assert pdb_from_dict(_pdb()).disruptions_allowed == 0


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        pytest.param(_pdb({"selector": []}), "spec.selector", id="selector not an object"),
        pytest.param(
            _pdb({"selector": {"matchLabels": {"a": 1}}}), "spec.selector.matchLabels['a']", id="label value"
        ),
        pytest.param(
            _pdb({"selector": {"matchExpressions": [{"key": "a", "operator": "Has"}]}}),
            "spec.selector.matchExpressions[0].operator",
            id="unknown operator",
        ),
        pytest.param(
            _pdb({"selector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}),
            "spec.selector.matchExpressions[0].values",
            id="In without values",
        ),
        pytest.param(
            _pdb({"selector": {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}}),
            "spec.selector.matchExpressions[0].values",
            id="Exists with values",
        ),
        pytest.param(
            _pdb({"selector": {"matchExpressions": [{"operator": "Exists"}]}}),
            "spec.selector.matchExpressions[0].key",
            id="no key",
        ),
        pytest.param(
            _pdb(status={"disruptionsAllowed": "1"}), "status.disruptionsAllowed", id="count as string"
        ),
        pytest.param(
            _pdb(status={"disruptionsAllowed": -1}), "status.disruptionsAllowed", id="negative count"
        ),
        pytest.param({"metadata": {"namespace": "x"}}, "metadata.name", id="no name"),
    ],
)
def test_pdb_errors_name_the_field(raw: Any, field: str) -> None:
    with pytest.raises(ObjectError) as info:
        pdb_from_dict(raw)
    assert info.value.field == field
    assert "PodDisruptionBudget" in info.value.obj


def _status(code: int, message: str, reason: str = "", **extra: Any) -> dict[str, Any]:
    return {
        "kind": "Status",
        "status": "Failure",
        "code": code,
        "message": message,
        "reason": reason,
        **extra,
    }


@pytest.mark.parametrize(
    ("code", "cls"),
    [(409, Conflict), (410, Gone), (404, NotFound), (429, TooManyRequests), (500, ApiError), (403, ApiError)],
)
def test_status_codes_map_to_the_error_tree(code: int, cls: type) -> None:
    err = status_error(code, _status(code, "the message", "Why"))
    assert type(err) is cls
    assert (err.status, err.reason, err.message) == (code, "Why", "the message")


def test_retry_after_comes_from_header_or_details() -> None:
    assert status_error(429, _status(429, "slow"), 3.0).retry_after_s == 3.0  # type: ignore[attr-defined]
    body = _status(429, "slow", details={"retryAfterSeconds": 5})
    assert status_error(429, body).retry_after_s == 5.0  # type: ignore[attr-defined]
    assert status_error(429, b"not json").retry_after_s == 1.0  # type: ignore[attr-defined]


def test_non_json_error_body_becomes_the_message() -> None:
    err = status_error(502, b"<html>bad gateway</html>")
    assert err.status == 502 and "bad gateway" in err.message
