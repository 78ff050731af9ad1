"""Which events a node update derives: upstream ``events_test.go`` ``TestNodeSchedulingPropertiesChange``
cases, as data, on ksched's node records."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.model.node import node_from_dict
from ksched.scheduler.events_registry import ActionType as A
from ksched.scheduler.handlers import node_update_events
from tests.builders import make_node, taint

BASE: dict[str, Any] = {"cpu": 4, "labels": {"foo": "bar"}, "taints": [taint("k", "v")]}


def _node(
    *, conditions: list[tuple[str, str]] | None = None, annotations: dict[str, str] | None = None, **kw: Any
) -> Any:
    raw = make_node("n", **{**BASE, **kw})
    raw["status"]["conditions"] = [{"type": t, "status": s} for t, s in (conditions or [("Ready", "True")])]
    raw["metadata"]["annotations"] = annotations or {}
    return node_from_dict(raw)


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        pytest.param({}, {}, [], id="no specific changed applied"),
        pytest.param(
            {"unschedulable": True}, {}, [A.UPDATE_NODE_TAINT], id="only node spec unavailable changed"
        ),
        pytest.param({}, {"unschedulable": True}, [], id="node spec becoming unschedulable is no event"),
        pytest.param({}, {"cpu": 8}, [A.UPDATE_NODE_ALLOCATABLE], id="only node allocatable changed"),
        pytest.param({}, {"labels": {"foo": "fuz"}}, [A.UPDATE_NODE_LABEL], id="only node label changed"),
        pytest.param({}, {"taints": [taint("k", "v2")]}, [A.UPDATE_NODE_TAINT], id="only node taint changed"),
        pytest.param(
            {}, {"annotations": {"a": "b"}}, [A.UPDATE_NODE_ANNOTATION], id="only node annotation changed"
        ),
        pytest.param(
            {},
            {"conditions": [("Ready", "False")]},
            [A.UPDATE_NODE_CONDITION],
            id="only node condition changed",
        ),
        pytest.param(
            {"conditions": [("Ready", "True"), ("MemoryPressure", "False")]},
            {"conditions": [("MemoryPressure", "False"), ("Ready", "True")]},
            [],
            id="conditions reordered are no change",
        ),
        pytest.param(
            {},
            {"labels": {"foo": "fuz"}, "taints": [taint("k", "v2")]},
            [A.UPDATE_NODE_LABEL, A.UPDATE_NODE_TAINT],
            id="both node label and node taint changed",
        ),
        pytest.param(
            {"unschedulable": True},
            {"taints": [taint("k", "v2")]},
            [A.UPDATE_NODE_TAINT, A.UPDATE_NODE_TAINT],
            id="spec unschedulable cleared and a taint changed: upstream sends both",
        ),
    ],
)
def test_node_update_events(old: dict[str, Any], new: dict[str, Any], want: list[A]) -> None:
    assert [e.action for e in node_update_events(_node(**old), _node(**new))] == want
