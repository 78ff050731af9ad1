"""Every in-tree plugin's ``queueing_hints()`` registers what ``DEFAULT_PLUGIN_EVENTS`` lists for it,
and each ``events_to_register()`` is the keys of its ``queueing_hints()``: the registry the queue
reads today and the plugins' own registrations (read from upstream v1.35) stay one list. DynamicResources
is a stub and PrioritySort / DefaultBinder reject no pod; they are left out."""

from __future__ import annotations

import pytest

from ksched.framework import names
from ksched.framework.api import Handle
from ksched.framework.registry import Registry
from ksched.scheduler.events_registry import DEFAULT_PLUGIN_EVENTS, events_of_plugin

WITH_HINTS = (
    names.NODE_RESOURCES_FIT,
    names.NODE_RESOURCES_BALANCED_ALLOCATION,
    names.NODE_AFFINITY,
    names.TAINT_TOLERATION,
    names.NODE_UNSCHEDULABLE,
    names.NODE_NAME,
    names.NODE_PORTS,
    names.INTER_POD_AFFINITY,
    names.POD_TOPOLOGY_SPREAD,
    names.SCHEDULING_GATES,
    names.DEFAULT_PREEMPTION,
    names.IMAGE_LOCALITY,
    names.VOLUME_BINDING,
    names.VOLUME_RESTRICTIONS,
    names.VOLUME_ZONE,
    names.NODE_VOLUME_LIMITS,
)


HINTS_OMIT_EVENTS = frozenset({names.VOLUME_BINDING})
"""Its ``queueing_hints()`` leaves out the events without a hint function (PersistentVolume, Node)."""


@pytest.mark.parametrize("name", WITH_HINTS)
def test_registrations_match_the_default_plugin_events(name: str) -> None:
    plugin = Registry().factory(name)(None, Handle("p"))
    if name not in HINTS_OMIT_EVENTS:
        assert list(plugin.events_to_register()) == list(plugin.queueing_hints())
    assert events_of_plugin(plugin) == DEFAULT_PLUGIN_EVENTS[name]
