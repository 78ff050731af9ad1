"""PodTopologySpread's queueing hints as tables: upstream plugin_test.go's Test_isSchedulableAfterNodeChange
and Test_isSchedulableAfterPodChange (v1.35, ``defaultingType: List`` with no defaults, as upstream's
run), through the plugin's ``queueing_hints()``, plus rows written from the functions for default
constraints (which need the cluster's Services), wrong objects and constraints that do not parse."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.cache.cluster import ClusterCache
from ksched.config.types import PodTopologySpreadArgs
from ksched.framework.api import Handle, QueueingHint, cluster_event
from ksched.framework.handle import HandleServices
from ksched.framework.plugins.podtopologyspread import new
from ksched.framework.view import ClusterView
from ksched.model.pod import Pod
from ksched.model.workloads import DECODERS
from tests.builders import node, pod, taint
from tests.unit.framework.plugins.hints_support import NOT_A_NODE, NOT_A_POD, SKIP, Q, spec_keys
from tests.unit.framework.plugins.spread_support import BAR, FOO, sc

POD_EVENT = cluster_event("Pod", "Add", "UpdatePodLabel", "UpdatePodToleration", "Delete")
NODE_EVENT = cluster_event("Node", "Add", "Delete", "UpdateNodeLabel", "UpdateNodeTaint")
DNS = "DoNotSchedule"
LIST = PodTopologySpreadArgs(defaulting_type="List")


def hints_of(args: PodTopologySpreadArgs = LIST, handle: Handle | None = None) -> dict[Any, Any]:
    return new(args, handle or Handle("p")).queueing_hints()


def spread(*constraints: dict[str, Any], name: str = "p", **kw: Any) -> Pod:
    """``st.MakePod().Name(name).SpreadConstraint(...)...``."""
    return pod(name, topologySpreadConstraints=list(constraints), **kw)


ZONE_FOO = sc(1, "zone", DNS, FOO)
NODE_FOO = sc(1, "node", DNS, FOO)
NODE_BAR = sc(1, "node", DNS, BAR)
ON_ZONE = spread(ZONE_FOO)
ON_BOTH = spread(ZONE_FOO, NODE_FOO)
NO_SCHED = taint("aaa", "bbb")
OTHER_TAINT = taint("ccc", "bbb")


@pytest.mark.parametrize(
    ("target", "old", "new_", "want"),
    [
        pytest.param(
            ON_ZONE,
            node("node-a", labels={"zone": "zone1"}),
            node("node-a", labels={"zone": "zone2"}),
            Q,
            id="node updates label which matches topologyKey",
        ),
        pytest.param(
            ON_ZONE,
            node("node-a", labels={"foo": "bar1"}),
            node("node-a", labels={"foo": "bar2"}),
            SKIP,
            id="node that doesn't match topologySpreadConstraints updates non-related label",
        ),
        pytest.param(
            ON_BOTH,
            node("node-a", labels={"zone": "zone1", "node": "node1", "foo": "bar"}),
            node("node-a", labels={"zone": "zone1", "node": "node1"}),
            SKIP,
            id="node that match topologySpreadConstraints adds non-related label",
        ),
        pytest.param(
            ON_ZONE,
            None,
            node("node-a", labels={"foo": "bar"}),
            SKIP,
            id="create node with non-related labels",
        ),
        pytest.param(
            ON_ZONE, None, node("node-a", labels={"zone": "zone1"}), Q, id="create node with related labels"
        ),
        pytest.param(
            ON_ZONE,
            node("node-a", labels={"foo": "bar"}),
            None,
            SKIP,
            id="delete node with non-related labels",
        ),
        pytest.param(
            ON_ZONE, node("node-a", labels={"zone": "zone1"}), None, Q, id="delete node with related labels"
        ),
        pytest.param(
            ON_BOTH,
            None,
            node("node-a", labels={"zone": "zone1"}),
            SKIP,
            id="add node with related labels that only match one of topologySpreadConstraints",
        ),
        pytest.param(
            ON_BOTH,
            None,
            node("node-a", labels={"zone": "zone1", "node": "node1"}),
            Q,
            id="add node with related labels that match all topologySpreadConstraints",
        ),
        pytest.param(
            ON_BOTH,
            node("node-a", labels={"zone": "zone1"}),
            node("node-a", labels={"zone": "zone1"}),
            SKIP,
            id="update node with related labels that only match one of topologySpreadConstraints",
        ),
        pytest.param(
            ON_BOTH,
            node("node-a", labels={"zone": "zone1", "node": "node1"}),
            node("node-a", labels={"zone": "zone1", "node": "node2"}),
            Q,
            id="update node with related labels that match all topologySpreadConstraints",
        ),
        pytest.param(
            ON_BOTH,
            node("node-a", labels={"zone": "zone1", "node": "node1"}, taints=[NO_SCHED]),
            node("node-a", labels={"zone": "zone1", "node": "node1"}, taints=[OTHER_TAINT]),
            Q,
            id="update node with different taints that match all topologySpreadConstraints",
        ),
        pytest.param(
            ON_BOTH,
            node("node-a", labels={"node": "node1"}, taints=[NO_SCHED]),
            node("node-a", labels={"node": "node1"}, taints=[OTHER_TAINT]),
            SKIP,
            id="update node with different taints that only match one of topologySpreadConstraints",
        ),
    ],
)
def test_after_node_change(target: Pod, old: object, new_: object, want: QueueingHint) -> None:
    assert hints_of()[NODE_EVENT](target, old, new_) == want


TARGET = spread(ZONE_FOO, uid="p", labels={"foo": ""})
TARGET_TWO = spread(ZONE_FOO, NODE_BAR, uid="p", labels={"foo": ""})
HONOR = spread(sc(1, "zone", DNS, FOO, None, None, "Honor"), NODE_BAR, uid="p", labels={"foo": ""})
IGNORE = spread(sc(1, "zone", DNS, FOO, None, None, "Ignore"), NODE_BAR, uid="p", labels={"foo": ""})
UNSCHEDULABLE = [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]


def p2(node_name: str = "fake-node", **labels: str) -> Pod:
    """``st.MakePod().UID("p2").Node(node_name).Label(...)``."""
    return pod("p2", uid="p2", node_name=node_name, labels=labels)


def self_(**kw: Any) -> Pod:
    """The rejected pod itself (``st.MakePod().UID("p").Name("p")...``)."""
    return pod("p", uid="p", **kw)


@pytest.mark.parametrize(
    ("target", "old", "new_", "want"),
    [
        pytest.param(
            TARGET, None, p2(foo=""), Q, id="add pod with labels match topologySpreadConstraints selector"
        ),
        pytest.param(TARGET, None, p2("", foo=""), SKIP, id="add un-scheduled pod"),
        pytest.param(TARGET, p2("", bar=""), p2("", foo=""), SKIP, id="update un-scheduled pod"),
        pytest.param(TARGET, p2("", foo=""), None, SKIP, id="delete un-scheduled pod"),
        pytest.param(
            TARGET,
            None,
            pod("p2", uid="p2", node_name="fake-node", namespace="fake-namespace", labels={"foo": ""}),
            SKIP,
            id="add pod with different namespace",
        ),
        pytest.param(
            TARGET,
            None,
            p2(bar=""),
            SKIP,
            id="add pod with labels don't match topologySpreadConstraints selector",
        ),
        pytest.param(
            TARGET,
            p2(foo=""),
            None,
            Q,
            id="delete pod with labels that match topologySpreadConstraints selector",
        ),
        pytest.param(
            TARGET,
            p2(bar=""),
            None,
            SKIP,
            id="delete pod with labels that don't match topologySpreadConstraints selector",
        ),
        pytest.param(
            TARGET, p2(foo="", bar="bar1"), p2(foo="", bar="bar2"), SKIP, id="update pod's non-related label"
        ),
        pytest.param(
            TARGET, p2(), p2(foo=""), Q, id="add pod's label that matches topologySpreadConstraints selector"
        ),
        pytest.param(
            TARGET, p2(foo=""), p2(), Q, id="delete pod label that matches topologySpreadConstraints selector"
        ),
        pytest.param(
            TARGET,
            p2(foo="foo1"),
            p2(foo="foo2"),
            SKIP,
            id="change pod's label that matches topologySpreadConstraints selector",
        ),
        pytest.param(
            TARGET,
            p2(foo="", bar="bar1"),
            p2(foo="", bar="bar2"),
            SKIP,
            id="change pod's label that doesn't match topologySpreadConstraints selector",
        ),
        pytest.param(
            TARGET_TWO,
            p2(foo=""),
            p2(foo="", bar="bar2"),
            Q,
            id="add pod's label that matches topologySpreadConstraints selector "
            "with multi topologySpreadConstraints",
        ),
        pytest.param(
            TARGET_TWO,
            p2(foo=""),
            p2(foo="", baz=""),
            SKIP,
            id="change pod's label that doesn't match topologySpreadConstraints selector "
            "with multi topologySpreadConstraints",
        ),
        pytest.param(
            TARGET_TWO,
            p2(foo="", bar=""),
            p2(foo="", bar="bar2"),
            SKIP,
            id="change pod's label that match topologySpreadConstraints selector "
            "with multi topologySpreadConstraints",
        ),
        pytest.param(
            HONOR,
            self_(labels={"foo": ""}),
            self_(labels={"foo": ""}, tolerations=UNSCHEDULABLE),
            Q,
            id="the unschedulable Pod has topologySpreadConstraint with NodeTaintsPolicy:Honor "
            "and has got a new toleration",
        ),
        pytest.param(
            IGNORE,
            self_(labels={"foo": ""}),
            self_(labels={"foo": ""}, tolerations=UNSCHEDULABLE),
            SKIP,
            id="the unschedulable Pod has topologySpreadConstraint without NodeTaintsPolicy:Honor "
            "and has got a new toleration",
        ),
        pytest.param(
            IGNORE,
            self_(),
            self_(labels={"foo": ""}),
            Q,
            id="the unschedulable Pod has topologySpreadConstraint "
            "and has got a new label matching the selector of the constraint",
        ),
        pytest.param(
            IGNORE,
            self_(),
            self_(labels={"unrelated": ""}),
            SKIP,
            id="the unschedulable Pod has topologySpreadConstraint and has got a new unrelated label",
        ),
    ],
)
def test_after_pod_change(target: Pod, old: object, new_: object, want: QueueingHint) -> None:
    assert hints_of()[POD_EVENT](target, old, new_) == want


# ------------------------------------------------------------------------------ written from the functions
DEFAULTS = PodTopologySpreadArgs(
    defaulting_type="List",
    default_constraints=({"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": DNS},),
)
LABELLED = pod("p", uid="p", labels={"app": "web"})


def handle_with_service(selector: dict[str, str]) -> Handle:
    cache = ClusterCache()
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "default"}}
    cache.selector_owners.upsert(DECODERS["Service"]({**svc, "spec": {"selector": selector}}))
    return Handle("p", services=HandleServices(snapshot=ClusterView(cache)))


def test_default_constraints_take_the_services_selector() -> None:
    pod_hint = hints_of(DEFAULTS, handle_with_service({"app": "web"}))[POD_EVENT]
    assert pod_hint(LABELLED, None, p2(app="web")) == Q
    assert pod_hint(LABELLED, None, p2(app="db")) == SKIP


def test_default_constraints_without_a_selector_are_none() -> None:
    """No Service selects the pod: no constraint, so no assigned pod matters and every node does."""
    found = hints_of(DEFAULTS, handle_with_service({"app": "db"}))
    assert found[POD_EVENT](LABELLED, None, p2(app="web")) == SKIP
    assert found[NODE_EVENT](LABELLED, None, node("n")) == Q


def test_default_constraints_without_a_snapshot_answer_queue() -> None:
    """The default selector needs the cluster's Services; without them the hint cannot tell."""
    found = hints_of(DEFAULTS)
    assert found[POD_EVENT](LABELLED, None, p2(app="db")) == Q
    assert found[NODE_EVENT](LABELLED, None, node("n")) == Q


def test_system_defaults_are_all_schedule_anyway() -> None:
    """System defaulting has no DoNotSchedule constraint: the hints need no selector."""
    found = hints_of(PodTopologySpreadArgs())
    assert found[POD_EVENT](LABELLED, None, p2(app="web")) == SKIP


@pytest.mark.parametrize(
    ("event", "old", "new_"),
    [
        pytest.param(POD_EVENT, NOT_A_POD, None, id="pod event: a wrong old object"),
        pytest.param(POD_EVENT, None, NOT_A_POD, id="pod event: a wrong new object"),
        pytest.param(NODE_EVENT, NOT_A_NODE, node("n"), id="node event: a wrong old object"),
        pytest.param(NODE_EVENT, None, NOT_A_NODE, id="node event: a wrong new object"),
    ],
)
def test_wrong_objects_answer_queue(event: Any, old: object, new_: object) -> None:
    assert hints_of()[event](TARGET, old, new_) == Q


def test_constraints_that_do_not_parse_answer_queue() -> None:
    bad = spread({"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": DNS}, uid="p")
    assert hints_of()[NODE_EVENT](bad, None, node("n")) == Q
    assert hints_of()[POD_EVENT](bad, None, p2(foo="")) == Q


def test_events_to_register() -> None:
    """Upstream's EventsToRegister with QueueingHints on, in its order."""
    plugin = new(LIST, Handle("p"))
    assert spec_keys(plugin.events_to_register()) == [
        ("Pod", frozenset({"Add", "UpdatePodLabel", "UpdatePodToleration", "Delete"})),
        ("Node", frozenset({"Add", "Delete", "UpdateNodeLabel", "UpdateNodeTaint"})),
    ]
    assert plugin.events_to_register() == [POD_EVENT, NODE_EVENT]
