"""ImageLocality registers no event: upstream's plugin is Score-only and has no EventsToRegister."""

from __future__ import annotations

from ksched.framework.api import Handle
from ksched.framework.plugins.imagelocality import new


def test_events_to_register() -> None:
    plugin = new(None, Handle("p"))
    assert plugin.events_to_register() == []
    assert plugin.queueing_hints() == {}
