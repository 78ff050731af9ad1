"""The in-tree plugin registry: plugin name -> factory.

A factory is ``factory(args, handle) -> plugin``; ``args`` is the validated args dataclass from
:mod:`ksched.config` (or None for plugins without args) and ``handle`` a :class:`Handle`. Factories
are named by import path and imported when a profile first uses them, so importing the registry
imports no plugin.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

from ksched.framework import names
from ksched.framework.handle import Handle

Factory = Callable[[Any, Handle], Any]


_BASE = "ksched.framework.plugins"
IN_TREE_FACTORIES: Mapping[str, str] = {
    names.SCHEDULING_GATES: f"{_BASE}.schedulinggates:new",
    names.PRIORITY_SORT: f"{_BASE}.queuesort:new",
    names.NODE_UNSCHEDULABLE: f"{_BASE}.nodeunschedulable:new",
    names.NODE_NAME: f"{_BASE}.nodename:new",
    names.TAINT_TOLERATION: f"{_BASE}.tainttoleration:new",
    names.NODE_AFFINITY: f"{_BASE}.nodeaffinity:new",
    names.NODE_PORTS: f"{_BASE}.nodeports:new",
    names.NODE_RESOURCES_FIT: f"{_BASE}.noderesources:new_fit",
    names.NODE_RESOURCES_BALANCED_ALLOCATION: f"{_BASE}.noderesources:new_balanced_allocation",
    names.IMAGE_LOCALITY: f"{_BASE}.imagelocality:new",
    names.VOLUME_RESTRICTIONS: f"{_BASE}.volumerestrictions:new",
    names.NODE_VOLUME_LIMITS: f"{_BASE}.nodevolumelimits:new",
    names.VOLUME_BINDING: f"{_BASE}.volumebinding:new",
    names.VOLUME_ZONE: f"{_BASE}.volumezone:new",
    names.DYNAMIC_RESOURCES: f"{_BASE}.dynamicresources:new",
    names.POD_TOPOLOGY_SPREAD: f"{_BASE}.podtopologyspread:new",
    names.INTER_POD_AFFINITY: f"{_BASE}.interpodaffinity:new",
    names.DEFAULT_PREEMPTION: f"{_BASE}.defaultpreemption:new",
    names.DEFAULT_BINDER: f"{_BASE}.defaultbinder:new",
}


def resolve(path: str) -> Factory:
    """Import ``module:attr`` and return the factory."""
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)  # type: ignore[no-any-return]


class Registry:
    """Name -> factory, in-tree entries first; out-of-tree plugins can be added by name."""

    def __init__(
        self, extra: Mapping[str, Factory] | None = None, *, in_tree: Mapping[str, str] | None = None
    ) -> None:
        """``extra``: out-of-tree factories by name (guarded). ``in_tree``: more built-in plugins by
        name and ``module:factory`` path, trusted like those of :data:`IN_TREE_FACTORIES` (a
        distribution that builds ksched with plugins of its own, and the tests)."""
        self._paths = {**IN_TREE_FACTORIES, **(in_tree or {})}
        self._factories: dict[str, Factory] = dict(extra or {})

    def __contains__(self, name: object) -> bool:
        return name in self._paths or name in self._factories

    def is_out_of_tree(self, name: str) -> bool:
        """Whether ``name`` was added from outside (its calls are guarded, its results checked)."""
        return name not in self._paths

    def names(self) -> frozenset[str]:
        return frozenset(self._paths) | frozenset(self._factories)

    def factory(self, name: str) -> Factory:
        f = self._factories.get(name)
        if f is None:
            f = resolve(self._paths[name])
            self._factories[name] = f
        return f
