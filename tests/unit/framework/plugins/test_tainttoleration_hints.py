"""TaintToleration's queueing hints as tables: upstream taint_toleration_test.go's
TestIsSchedulableAfterNodeChange and the pod-toleration table (Test_isSchedulableAfterPodChange, in
v1.35 only the target pod's uid decides: its "skip-updates-not-toleration" row tested an older hint
that also compared tolerations, and the event is now only sent when they changed)."""

from __future__ import annotations

import pytest

from ksched.framework.api import Handle, QueueingHint
from ksched.framework.plugins.tainttoleration import hints, new
from ksched.model.pod import Pod
from tests.builders import node, pod, taint
from tests.unit.framework.plugins.hints_support import NOT_A_NODE, NOT_A_POD, SKIP, Q, spec_keys

USER1 = taint("dedicated", "user1")
USER2 = taint("dedicated", "user2")
USER3 = taint("dedicated", "user3")
TOLERATES_USER2 = pod(
    "pod1", tolerations=[{"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"}]
)


@pytest.mark.parametrize(
    ("target", "old", "new_", "want"),
    [
        pytest.param(pod("p"), None, NOT_A_NODE, Q, id="backoff-wrong-new-object"),
        pytest.param(pod("p"), NOT_A_NODE, node("nodeA", taints=[USER1]), Q, id="backoff-wrong-old-object"),
        pytest.param(
            TOLERATES_USER2,
            None,
            node("nodeA", taints=[USER1]),
            SKIP,
            id="skip-queue-on-untoleratedtaint-node-added",
        ),
        pytest.param(
            TOLERATES_USER2, None, node("nodeA", taints=[USER2]), Q, id="queue-on-toleratedtaint-node-added"
        ),
        pytest.param(
            TOLERATES_USER2,
            node("nodeA", taints=[USER1]),
            node("nodeA", taints=[USER1, USER3]),
            SKIP,
            id="skip-unrelated-change",
        ),
        pytest.param(
            TOLERATES_USER2,
            node("nodeA", taints=[USER1]),
            node("nodeA", taints=[USER2]),
            Q,
            id="queue-on-taint-change",
        ),
        pytest.param(
            pod("p"),
            node("nodeA", taints=[taint("soft", effect="PreferNoSchedule")]),
            node("nodeA"),
            SKIP,
            id="a PreferNoSchedule taint never rejected the pod (written from the function)",
        ),
    ],
)
def test_after_node_change(target: Pod, old: object, new_: object, want: QueueingHint) -> None:
    assert hints.after_node_change(target, old, new_) == want


FOO_TOLERATION = [{"key": "foo", "effect": "NoSchedule"}]


@pytest.mark.parametrize(
    ("target", "old", "new_", "want"),
    [
        pytest.param(pod("p"), None, NOT_A_POD, Q, id="backoff-wrong-new-object"),
        pytest.param(pod("p"), NOT_A_POD, pod("p"), Q, id="backoff-wrong-old-object"),
        pytest.param(
            pod("pod-1", namespace="ns-1", uid="uid0"),
            pod("pod-2", namespace="ns-1", uid="uid1"),
            pod("pod-2", namespace="ns-1", uid="uid1", tolerations=FOO_TOLERATION),
            SKIP,
            id="skip-updates-other-pod",
        ),
        pytest.param(
            pod("pod-1", namespace="ns-1"),
            pod("pod-1", namespace="ns-1"),
            pod("pod-1", namespace="ns-1", tolerations=FOO_TOLERATION),
            Q,
            id="queue-on-toleration-added",
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
