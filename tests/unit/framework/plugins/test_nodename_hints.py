"""NodeName's registrations: upstream node_name.go's EventsToRegister with QueueingHints on (Node/Add
with no hint function, so every new node retries the pod). Upstream has no hint table for it."""

from __future__ import annotations

from ksched.framework.api import Handle, cluster_event
from ksched.framework.plugins.nodename import new


def test_events_to_register() -> None:
    plugin = new(None, Handle("p"))
    assert plugin.events_to_register() == [cluster_event("Node", "Add")]
    assert plugin.queueing_hints() == {cluster_event("Node", "Add"): None}
