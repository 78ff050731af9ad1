"""NodeUnschedulable's queueing hints as tables: upstream node_unschedulable_test.go's
TestIsSchedulableAfterNodeChange and TestIsSchedulableAfterPodTolerationChange (v1.35)."""

from __future__ import annotations

import pytest

from ksched.framework.api import Handle, QueueingHint
from ksched.framework.plugins.nodeunschedulable import hints, new
from ksched.model.pod import Pod
from tests.builders import node, pod, taint
from tests.unit.framework.plugins.hints_support import NOT_A_NODE, NOT_A_POD, SKIP, Q, spec_keys

NOT_READY = taint("node.kubernetes.io/not-ready", effect="NoExecute")
UNSCHEDULABLE = [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]
"""``st.MakePod().Toleration(v1.TaintNodeUnschedulable)``: that key, any value and effect."""


@pytest.mark.parametrize(
    ("old", "new_", "want"),
    [
        pytest.param(None, NOT_A_NODE, Q, id="error-wrong-new-object"),
        pytest.param(NOT_A_NODE, node("n", unschedulable=True), Q, id="error-wrong-old-object"),
        pytest.param(None, node("n", unschedulable=True), SKIP, id="skip-queue-on-unschedulable-node-added"),
        pytest.param(None, node("n"), Q, id="queue-on-schedulable-node-added"),
        pytest.param(
            node("n", unschedulable=True),
            node("n", unschedulable=True, taints=[NOT_READY]),
            SKIP,
            id="skip-unrelated-change-unschedulable-true",
        ),
        pytest.param(
            node("n"), node("n", taints=[NOT_READY]), SKIP, id="skip-unrelated-change-unschedulable-false"
        ),
        pytest.param(node("n", unschedulable=True), node("n"), Q, id="queue-on-unschedulable-field-change"),
    ],
)
def test_after_node_change(old: object, new_: object, want: QueueingHint) -> None:
    assert hints.after_node_change(pod("p"), old, new_) == want


@pytest.mark.parametrize(
    ("target", "old", "new_", "want"),
    [
        pytest.param(pod("p"), None, NOT_A_POD, Q, id="error-wrong-new-object"),
        pytest.param(pod("p"), NOT_A_POD, pod("p"), Q, id="error-wrong-old-object"),
        pytest.param(
            pod("p", uid="uid"),
            pod("p", uid="different-uid"),
            pod("p", uid="different-uid", tolerations=UNSCHEDULABLE),
            SKIP,
            id="skip-different-pod-update",
        ),
        pytest.param(
            pod("p", uid="uid"),
            pod("p", uid="uid"),
            pod("p", uid="uid", tolerations=UNSCHEDULABLE),
            Q,
            id="queue-when-the-unsched-pod-gets-toleration",
        ),
        pytest.param(
            pod("p", uid="uid"),
            pod("p", uid="uid"),
            pod("p", uid="uid", tolerations=[{"key": "unrelated-key", "operator": "Exists"}]),
            SKIP,
            id="skip-when-the-unsched-pod-gets-unrelated-toleration",
        ),
    ],
)
def test_after_pod_toleration_change(target: Pod, old: object, new_: object, want: QueueingHint) -> None:
    assert hints.after_pod_toleration_change(target, old, new_) == want


def test_events_to_register() -> None:
    """Upstream's EventsToRegister with QueueingHints on, in its order."""
    plugin = new(None, Handle("p"))
    assert spec_keys(plugin.events_to_register()) == [
        ("Node", frozenset({"Add", "UpdateNodeTaint"})),
        ("Pod", frozenset({"UpdatePodToleration"})),
    ]
    assert list(plugin.queueing_hints().values()) == [
        hints.after_node_change,
        hints.after_pod_toleration_change,
    ]
