"""NodeAffinity's queueing hint as a table: upstream node_affinity_test.go's
Test_isSchedulableAfterNodeChange (v1.35), through the plugin's ``queueing_hints()`` so that
``addedAffinity`` comes from the args, plus cases written from the function for what no upstream row
covers (nodeSelector, a term that does not parse, the node-name field)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from ksched.config.types import NodeAffinityArgs
from ksched.framework.api import Handle, QueueingHint, cluster_event
from ksched.framework.plugins.nodeaffinity import new
from ksched.model.pod import Pod
from tests.builders import node, pod
from tests.unit.framework.plugins.hints_support import NOT_A_NODE, SKIP, Q, capacity_node, spec_keys

FOO_IN_BAR = {
    "requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar"]}]}]
    }
}
"""``st.MakePod().NodeAffinityIn("foo", []string{"bar"}, st.NodeSelectorTypeMatchExpressions)``."""
POD = pod("p", affinity={"nodeAffinity": FOO_IN_BAR})


def hint(added: Mapping[str, Any] | None = None) -> Any:
    plugin = new(NodeAffinityArgs(added_affinity=added), Handle("p"))
    return plugin.queueing_hints()[cluster_event("Node", "Add", "UpdateNodeLabel")]


@pytest.mark.parametrize(
    ("added", "old", "new_", "want"),
    [
        pytest.param(None, None, NOT_A_NODE, Q, id="backoff-wrong-new-object"),
        pytest.param(None, NOT_A_NODE, node("node"), Q, id="backoff-wrong-old-object"),
        pytest.param(None, None, node("node"), SKIP, id="skip-queue-on-add"),
        pytest.param(None, None, node("node", labels={"foo": "bar"}), Q, id="queue-on-add"),
        pytest.param(None, node("node"), capacity_node(), SKIP, id="skip-unrelated-changes"),
        pytest.param(
            None, node("node"), node("node", labels={"k": "v"}), SKIP, id="skip-unrelated-changes-on-labels"
        ),
        pytest.param(
            None,
            node("node", labels={"foo": "bar"}),
            node("node", labels={"k": "v"}),
            SKIP,
            id="skip-labels-changes-on-node-from-suitable-to-unsuitable",
        ),
        pytest.param(
            None,
            node("node"),
            node("node", labels={"foo": "bar"}),
            Q,
            id="queue-on-labels-change-makes-pod-schedulable",
        ),
        pytest.param(
            FOO_IN_BAR, None, node("node"), SKIP, id="skip-queue-on-add-scheduler-enforced-node-affinity"
        ),
        pytest.param(
            FOO_IN_BAR,
            None,
            node("node", labels={"foo": "bar"}),
            Q,
            id="queue-on-add-scheduler-enforced-node-affinity",
        ),
    ],
)
def test_after_node_change(
    added: Mapping[str, Any] | None, old: object, new_: object, want: QueueingHint
) -> None:
    assert hint(added)(POD, old, new_) == want


def _term(*exprs: dict[str, Any], fields: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    return {"matchExpressions": list(exprs), "matchFields": list(fields)}


def _required(*terms: dict[str, Any]) -> Pod:
    return pod(
        "p",
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
            }
        },
    )


BAD_GT = {"key": "level", "operator": "Gt", "values": ["high"]}
"""Gt needs an integer: the term fails to parse, so it never matches and upstream's Match errs."""


@pytest.mark.parametrize(
    ("target", "old", "new_", "want"),
    [
        pytest.param(
            pod("p", node_selector={"disk": "ssd"}),
            None,
            node("n", labels={"disk": "ssd"}),
            Q,
            id="nodeSelector matches a new node",
        ),
        pytest.param(
            pod("p", node_selector={"disk": "ssd"}),
            None,
            node("n", labels={"disk": "hdd"}),
            SKIP,
            id="nodeSelector misses a new node",
        ),
        pytest.param(
            pod("p", node_selector={"disk": "ssd"}),
            node("n", labels={"disk": "ssd"}),
            node("n", labels={"disk": "ssd", "x": "y"}),
            SKIP,
            id="nodeSelector matched before and after",
        ),
        pytest.param(
            _required(_term(BAD_GT)), None, node("n"), Q, id="a term that does not parse answers queue"
        ),
        pytest.param(
            _required(_term(BAD_GT), _term({"key": "zone", "operator": "Exists", "values": []})),
            node("n", labels={"zone": "a"}),
            node("n", labels={"zone": "b"}),
            SKIP,
            id="another term matches before and after: no error",
        ),
        pytest.param(
            _required(_term(fields=({"key": "metadata.name", "operator": "In", "values": ["n1"]},))),
            None,
            node("n2"),
            SKIP,
            id="metadata.name names another node",
        ),
        pytest.param(
            _required(_term(fields=({"key": "metadata.name", "operator": "In", "values": ["n1"]},))),
            None,
            node("n1"),
            Q,
            id="metadata.name names this node",
        ),
        pytest.param(_required(), None, node("n"), SKIP, id="no terms match no node"),
    ],
)
def test_after_node_change_more(target: Pod, old: object, new_: object, want: QueueingHint) -> None:
    assert hint()(target, old, new_) == want


def test_events_to_register() -> None:
    """Upstream's EventsToRegister with QueueingHints on: Node Add | UpdateNodeLabel."""
    plugin = new(None, Handle("p"))
    assert spec_keys(plugin.events_to_register()) == [("Node", frozenset({"Add", "UpdateNodeLabel"}))]
    assert plugin.events_to_register() == list(plugin.queueing_hints())
