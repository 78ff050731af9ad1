"""SchedulingGates' queueing hint as a table: upstream scheduling_gates_test.go's
Test_isSchedulableAfterPodChange (v1.35) and its EventsToRegister with QueueingHints on."""

from __future__ import annotations

import pytest

from ksched.framework.api import Handle, QueueingHint, cluster_event
from ksched.framework.plugins.schedulinggates import hints, new
from ksched.model.pod import Pod
from tests.builders import pod
from tests.unit.framework.plugins.hints_support import NOT_A_POD, SKIP, Q


@pytest.mark.parametrize(
    ("target", "old", "new_", "want"),
    [
        pytest.param(pod("p"), NOT_A_POD, None, Q, id="backoff-wrong-old-object"),
        pytest.param(pod("p"), None, NOT_A_POD, Q, id="backoff-wrong-new-object"),
        pytest.param(
            pod("p", scheduling_gates=["foo", "bar"], uid="uid0"),
            pod("p1", scheduling_gates=["foo", "bar"], uid="uid1"),
            pod("p1", scheduling_gates=["foo"], uid="uid1"),
            SKIP,
            id="skip-queue-on-other-pod-updated",
        ),
        pytest.param(
            pod("p", scheduling_gates=["foo"]),
            pod("p", scheduling_gates=["foo"]),
            pod("p"),
            Q,
            id="queue-on-the-unsched-pod-updated",
        ),
    ],
)
def test_after_gates_eliminated(target: Pod, old: object, new_: object, want: QueueingHint) -> None:
    assert hints.after_gates_eliminated(target, old, new_) == want


def test_events_to_register() -> None:
    plugin = new(None, Handle("p"))
    assert plugin.events_to_register() == [cluster_event("Pod", "UpdatePodSchedulingGatesEliminated")]
    assert list(plugin.queueing_hints().values()) == [hints.after_gates_eliminated]
