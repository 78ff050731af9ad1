"""DefaultPreemption's registrations: upstream default_preemption.go's EventsToRegister with async
preemption on (v1.35's default): Pod/Delete, whose hint always skips. Upstream has no hint table."""

from __future__ import annotations

from ksched.framework.api import Handle, QueueingHint, cluster_event
from ksched.framework.plugins.defaultpreemption import hints, new
from tests.builders import pod
from tests.unit.framework.plugins.hints_support import NOT_A_POD


def test_events_to_register() -> None:
    plugin = new(None, Handle("p"))
    assert plugin.events_to_register() == [cluster_event("Pod", "Delete")]
    assert list(plugin.queueing_hints().values()) == [hints.after_pod_deleted]


def test_the_hint_always_skips() -> None:
    """Upstream checks no type either: even a wrong object is a skip."""
    victim = pod("victim", node_name="n1")
    for old in (victim, NOT_A_POD, None):
        assert hints.after_pod_deleted(pod("p"), old, None) == QueueingHint.QUEUE_SKIP
