"""InterPodAffinity's queueing hints as tables: upstream plugin_test.go's Test_isSchedulableAfterPodChange
and Test_isSchedulableAfterNodeChange (v1.35 era, with the rows of kubernetes#135325 and #135394),
through the plugin's ``queueing_hints()``, plus rows written from the functions for what no upstream
row covers (a nominated pod, a namespace selector, a term that does not parse)."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.framework.api import Handle, QueueingHint, cluster_event
from ksched.framework.plugins.interpodaffinity import new
from ksched.model.pod import Pod
from tests.builders import node, pod, pod_status
from tests.unit.framework.plugins.hints_support import NOT_A_NODE, NOT_A_POD, SKIP, Q, spec_keys

POD_EVENT = cluster_event("Pod", "Add", "UpdatePodLabel", "Delete")
NODE_EVENT = cluster_event("Node", "Add", "UpdateNodeLabel")
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def term(topology_key: str, *exprs: dict[str, Any], **selector: Any) -> dict[str, Any]:
    """A required PodAffinityTerm; ``selector`` overrides the label selector built from ``exprs``."""
    label_selector = selector.pop("label_selector", {"matchExpressions": list(exprs)})
    return {"labelSelector": label_selector, "topologyKey": topology_key, **selector}


def in_(key: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": "In", "values": list(values)}


def exists(key: str) -> dict[str, Any]:
    return {"key": key, "operator": "Exists"}


def with_terms(
    name: str = "p",
    *,
    affinity: tuple[dict[str, Any], ...] = (),
    anti: tuple[dict[str, Any], ...] = (),
    **kw: Any,
) -> Pod:
    """``st.MakePod().PodAffinity...(...)``/``PodAntiAffinity...(...)`` with required terms."""
    spec: dict[str, Any] = {}
    if affinity:
        spec["podAffinity"] = {REQUIRED: list(affinity)}
    if anti:
        spec["podAntiAffinity"] = {REQUIRED: list(anti)}
    return pod(name, affinity=spec, **kw)


SERVICE_IN = in_("service", "securityscan", "value2")
AFFINITY_P = with_terms(uid="p", affinity=(term("region", SERVICE_IN),))
"""``PodAffinityIn("service", "region", []string{"securityscan", "value2"}, required)``."""
ANTI_P = with_terms(uid="p", anti=(term("region", SERVICE_IN),))
TWO_EXISTS_P = with_terms(
    uid="p", affinity=(term("hostname", exists("aaa")), term("hostname", exists("bbb")))
)


def other(node_name: str = "fake-node", **labels: str) -> Pod:
    """``st.MakePod().UID("other").Node(node_name).Label(...)``."""
    return pod("other", uid="other", node_name=node_name, labels=labels)


def hints_of() -> dict[Any, Any]:
    return new(None, Handle("p")).queueing_hints()


@pytest.mark.parametrize(
    ("target", "old", "new_", "want"),
    [
        pytest.param(
            AFFINITY_P, None, other(service="securityscan"), Q, id="add a pod which matches the pod affinity"
        ),
        pytest.param(AFFINITY_P, None, other("", service="securityscan"), SKIP, id="add an un-scheduled pod"),
        pytest.param(
            AFFINITY_P, None, other(aaa="a"), SKIP, id="add a pod which doesn't match the pod affinity"
        ),
        pytest.param(
            AFFINITY_P,
            other(aaa="a"),
            other(service="securityscan"),
            Q,
            id="update a pod from non-match to match pod affinity",
        ),
        pytest.param(
            AFFINITY_P,
            other(service="value2"),
            other(service="securityscan"),
            SKIP,
            id="the updating pod matches target pod's affinity both before and after label changes",
        ),
        pytest.param(
            AFFINITY_P,
            other("", aaa="a"),
            other("", service="securityscan"),
            SKIP,
            id="update an un-scheduled pod",
        ),
        pytest.param(
            AFFINITY_P,
            other(service="securityscan"),
            other(aaa="a"),
            SKIP,
            id="update a pod from match to non-match the pod affinity",
        ),
        pytest.param(
            TWO_EXISTS_P,
            other(aaa="a"),
            other(service="securityscan"),
            SKIP,
            id="update a pod from match to non-match pod's affinity - multiple terms case",
        ),
        pytest.param(
            TWO_EXISTS_P,
            other(aaa="a"),
            other(aaa="", bbb=""),
            Q,
            id="update a pod from non-match to match pod's affinity - multiple terms case",
        ),
        pytest.param(
            pod("p", uid="p", labels={"foo": "baz"}),
            pod("p", uid="p", labels={"foo": "bar"}),
            pod("p", uid="p", labels={"foo": "baz"}),
            Q,
            id="updated pod is the target pod",
        ),
        pytest.param(
            ANTI_P,
            other(service="securityscan"),
            other(service="aaaa"),
            Q,
            id="modify pod label to change it from satisfying pod anti-affinity "
            "to not satisfying anti-affinity",
        ),
        pytest.param(
            ANTI_P,
            other(service="bbb"),
            other(service="securityscan"),
            SKIP,
            id="modify pod label to change it from not satisfying pod anti-affinity "
            "to satisfying anti-affinity",
        ),
        pytest.param(
            ANTI_P, other(aaa="a"), None, SKIP, id="delete a pod which doesn't match pod's anti-affinity"
        ),
        pytest.param(
            ANTI_P,
            other(service="securityscan"),
            None,
            Q,
            id="delete a pod which matches pod's anti-affinity",
        ),
        pytest.param(
            pod("p", labels={"service": "securityscan"}),
            with_terms("other", anti=(term("region", SERVICE_IN),), node_name="fake-node"),
            None,
            Q,
            id="delete a pod with anti-affinity that matches pending pod",
        ),
        pytest.param(
            pod("p", labels={"service": "foo"}),
            with_terms("other", anti=(term("region", SERVICE_IN),), node_name="fake-node"),
            None,
            SKIP,
            id="delete a pod with anti-affinity that doesn't match pending pod",
        ),
        pytest.param(
            with_terms(anti=(term("region", SERVICE_IN),), labels={"service": "foo"}),
            with_terms(
                "other", anti=(term("region", SERVICE_IN),), node_name="fake-node", labels={"service": "foo"}
            ),
            None,
            SKIP,
            id="delete a pod which doesn't match pending pod's anti-affinity "
            "and has anti-affinity that doesn't match pending pod",
        ),
    ],
)
def test_after_pod_change(target: Pod, old: object, new_: object, want: QueueingHint) -> None:
    assert hints_of()[POD_EVENT](target, old, new_) == want


NS_SELECTOR_TERM = term("region", SERVICE_IN, namespaceSelector={"matchLabels": {"team": "a"}})


@pytest.mark.parametrize(
    ("target", "old", "new_", "want"),
    [
        pytest.param(AFFINITY_P, NOT_A_POD, None, Q, id="a wrong old object"),
        pytest.param(AFFINITY_P, None, NOT_A_POD, Q, id="a wrong new object"),
        pytest.param(
            ANTI_P,
            pod("other", labels={"service": "securityscan"}, status=pod_status(nominated_node_name="n1")),
            None,
            Q,
            id="a nominated pod counts as placed",
        ),
        pytest.param(
            pod("p", namespace="ns-b", labels={"service": "securityscan"}),
            with_terms("other", anti=(NS_SELECTOR_TERM,), node_name="fake-node"),
            None,
            Q,
            id="a deleted pod's anti-affinity namespace selector is taken to cover the pending pod",
        ),
        pytest.param(
            with_terms(
                uid="p", affinity=(term("region", SERVICE_IN, namespaceSelector={"matchLabels": {"t": "a"}}),)
            ),
            None,
            pod("other", namespace="ns-b", node_name="n1", labels={"service": "securityscan"}),
            SKIP,
            id="the pending pod's namespace selector meets no labels, as in upstream's Matches(pod, nil)",
        ),
        pytest.param(
            with_terms(
                uid="p", affinity=(term("region", label_selector={"matchLabels": {"bad key!": "x"}}),)
            ),
            None,
            other(service="securityscan"),
            Q,
            id="a term that does not parse answers queue",
        ),
    ],
)
def test_after_pod_change_more(target: Pod, old: object, new_: object, want: QueueingHint) -> None:
    assert hints_of()[POD_EVENT](target, old, new_) == want


AFF_ZONE = with_terms(affinity=(term("zone", SERVICE_IN),))
AFF_REGION = with_terms(affinity=(term("region", SERVICE_IN),))
ANTI_ZONE = with_terms(anti=(term("zone", label_selector={"matchLabels": {"another": "label"}}),))


@pytest.mark.parametrize(
    ("target", "old", "new_", "want"),
    [
        pytest.param(
            AFF_ZONE,
            None,
            node("node-a", labels={"zone": "zone1"}),
            Q,
            id="add a new node with matched pod affinity topologyKey",
        ),
        pytest.param(
            AFF_REGION,
            None,
            node("node-a", labels={"zone": "zone1"}),
            SKIP,
            id="add a new node without matched topologyKey",
        ),
        pytest.param(
            AFF_ZONE,
            node("node-a", labels={"aaa": "a"}),
            node("node-a", labels={"aaa": "b"}),
            SKIP,
            id="update node label but not topologyKey",
        ),
        pytest.param(
            AFF_ZONE,
            node("node-a", labels={"zone": "zone1"}),
            node("node-a", labels={"zone": "zone1", "unrelated-label": "unrelated"}),
            SKIP,
            id="update node label that isn't related to the pod affinity",
        ),
        pytest.param(
            AFF_ZONE,
            node("node-a", labels={"zone": "zone1"}),
            node("node-a", labels={"zone": "zone2"}),
            Q,
            id="update node with different affinity topologyKey value",
        ),
        pytest.param(
            AFF_ZONE,
            node("node-a", labels={"aaa": "a"}),
            node("node-a", labels={"zone": "zone1"}),
            Q,
            id="update node to have the affinity topology label",
        ),
        pytest.param(
            ANTI_ZONE,
            None,
            node("node-a", labels={"zone": "zone1"}),
            Q,
            id="add a new node with matched pod anti-affinity topologyKey",
        ),
        pytest.param(
            ANTI_ZONE,
            None,
            node("node-a"),
            Q,
            id="add a new node without matched pod anti-affinity topologyKey",
        ),
        pytest.param(
            ANTI_ZONE,
            node("node-a", labels={"zone": "zone1"}),
            node("node-a", labels={"zone": "zone1", "unrelated-label": "unrelated"}),
            SKIP,
            id="update node label that isn't related to the pod anti-affinity",
        ),
        pytest.param(
            ANTI_ZONE,
            node("node-a", labels={"zone": "zone1"}),
            node("node-a", labels={"zone": "zone2"}),
            Q,
            id="update node with different anti-affinity topologyKey value",
        ),
        pytest.param(
            ANTI_ZONE,
            node("node-a", labels={"aaa": "a"}),
            node("node-a", labels={"zone": "zone1"}),
            SKIP,
            id="update node to have the anti-affinity topology label",
        ),
        pytest.param(
            ANTI_ZONE,
            node("node-a", labels={"zone": "zone1"}),
            node("node-a", labels={"aaa": "a"}),
            Q,
            id="update node label not to have anti-affinity topology label",
        ),
        pytest.param(AFF_ZONE, None, NOT_A_NODE, Q, id="a wrong new object (written from the function)"),
        pytest.param(
            pod("p"), None, node("node-a"), SKIP, id="no required terms (written from the function)"
        ),
    ],
)
def test_after_node_change(target: Pod, old: object, new_: object, want: QueueingHint) -> None:
    assert hints_of()[NODE_EVENT](target, old, new_) == want


def test_events_to_register() -> None:
    """Upstream's EventsToRegister with QueueingHints on, in its order."""
    plugin = new(None, Handle("p"))
    assert spec_keys(plugin.events_to_register()) == [
        ("Pod", frozenset({"Add", "UpdatePodLabel", "Delete"})),
        ("Node", frozenset({"Add", "UpdateNodeLabel"})),
    ]
    assert plugin.events_to_register() == [POD_EVENT, NODE_EVENT]
