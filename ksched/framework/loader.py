"""Finding out-of-tree plugins: ``--plugin module:factory`` and the ``ksched.plugins`` entry points.

A *factory* is called as ``factory(args, handle)`` and returns the plugin; ``args`` is the plugin's
``pluginConfig[].args`` from the configuration as a plain dict (``{}`` when there is none) and the
factory validates it (raise ``ValueError`` / ``TypeError`` with a message: it becomes a start-up
error naming the field). Usually the factory *is* the plugin class, whose ``name`` class attribute
is the name the configuration uses.

The plugin's name comes from the factory's ``name`` attribute (a class attribute of the class, or
one set on a factory function), else from the entry point's name. Which extension points it
implements (what ``multiPoint`` expands to, and what the configuration may list it at) comes from
the methods of the plugin class: the factory itself when it is a class, else the class named by its
return annotation, else its ``extension_points`` attribute (a collection of config names such as
``{"filter", "score"}``).

Import paths are resolved with the current directory on ``sys.path`` first (as ``python -m``
would), so ``--plugin examples.plugins.gpu_binpack:GpuBinPack`` works from a checkout.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import os
import sys
import typing
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ksched.config import default_config, load_config
from ksched.config import names as ext
from ksched.config.types import SchedulerConfiguration
from ksched.errors import ConfigError
from ksched.framework.registry import IN_TREE_FACTORIES, Factory, Registry

ENTRY_POINT_GROUP = "ksched.plugins"

METHOD_OF_POINT: Mapping[str, str] = {
    ext.PRE_ENQUEUE: "pre_enqueue",
    ext.QUEUE_SORT: "sort_key",
    ext.PRE_FILTER: "pre_filter",
    ext.FILTER: "filter",
    ext.POST_FILTER: "post_filter",
    ext.PRE_SCORE: "pre_score",
    ext.SCORE: "score",
    ext.RESERVE: "reserve",
    ext.PERMIT: "permit",
    ext.PRE_BIND: "pre_bind",
    ext.POST_BIND: "post_bind",
}
"""Config extension point -> the method a plugin needs to sit there."""


def load_factory(spec: str) -> Factory:
    """Import ``module:attr`` (dots allowed in ``attr``); ConfigError naming the flag on failure."""
    module, sep, attr = spec.partition(":")
    if not sep or not module or not attr:
        raise ConfigError(
            "--plugin", f"invalid value {spec!r}: expected module:factory, e.g. mypkg.plugins:MyPlugin"
        )
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        obj: Any = importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError("--plugin", f"{spec!r}: cannot import module {module!r}: {exc}") from exc
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as exc:
            raise ConfigError("--plugin", f"{spec!r}: module {module!r} has no attribute {attr!r}") from exc
    if not callable(obj):
        raise ConfigError("--plugin", f"{spec!r}: {attr!r} is not callable (a plugin class or factory)")
    return obj  # type: ignore[no-any-return]


def plugin_class(factory: Any) -> type | None:
    """The class a factory builds: itself, or its return annotation when that is a class."""
    if inspect.isclass(factory):
        return factory
    try:
        hints = typing.get_type_hints(factory)
    except Exception:  # unresolvable annotations: fall back to ``extension_points``
        return None
    ret = hints.get("return")
    return ret if inspect.isclass(ret) else None


def extension_points(factory: Any) -> frozenset[str] | None:
    """Config extension points the factory's plugin implements; None when it cannot be told."""
    declared = getattr(factory, "extension_points", None)
    if declared is not None and not callable(declared):
        return frozenset(declared)
    cls = plugin_class(factory)
    if cls is None:
        return None
    return frozenset(p for p, m in METHOD_OF_POINT.items() if callable(getattr(cls, m, None)))


def plugin_name(factory: Any, fallback: str = "") -> str:
    name = getattr(factory, "name", None)
    if not isinstance(name, str) or not name:
        cls = plugin_class(factory)
        name = getattr(cls, "name", None) if cls is not None else None
    if isinstance(name, str) and name:
        return name
    return fallback


class PluginRegistry(Registry):
    """The in-tree registry plus out-of-tree factories, and what each out-of-tree one implements."""

    def __init__(self, extra: Mapping[str, Factory] | None = None) -> None:
        super().__init__(extra)
        self._points = {name: extension_points(f) for name, f in (extra or {}).items()}

    def implements(self, name: str) -> frozenset[str] | None:
        """For :func:`ksched.config.load_config`: the points an out-of-tree plugin implements."""
        if name not in self._points:
            return None
        points = self._points[name]
        if points is None:
            raise ConfigError(
                f"plugin {name!r}",
                "cannot tell which extension points it implements: make its factory the plugin class, "
                "annotate the factory's return type with the class, or set factory.extension_points",
            )
        return points

    @property
    def out_of_tree(self) -> frozenset[str]:
        return frozenset(self._points)


def out_of_tree_registry(specs: Iterable[str] = (), *, entry_points: bool = True) -> PluginRegistry:
    """A registry with the plugins of ``specs`` (``module:factory``) and of the entry points.

    Raises ConfigError for an import failure, a factory without a name, a name given twice, or one
    that is an in-tree plugin's.
    """
    found: dict[str, tuple[Factory, str]] = {}

    def add(name: str, factory: Factory, origin: str) -> None:
        if not name:
            raise ConfigError(
                "--plugin",
                f'{origin}: the plugin has no name; give its class a `name = "MyPlugin"` attribute',
            )
        if name in IN_TREE_FACTORIES:
            raise ConfigError("--plugin", f"{origin}: plugin name {name!r} is an in-tree plugin's")
        if name in found and found[name][0] is not factory:
            raise ConfigError(
                "--plugin", f"{origin}: plugin {name!r} is already registered by {found[name][1]}"
            )
        found[name] = (factory, origin)

    if entry_points:
        for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            try:
                factory = ep.load()
            except Exception as exc:
                raise ConfigError(
                    f"entry point {ENTRY_POINT_GROUP}:{ep.name}", f"cannot load {ep.value!r}: {exc}"
                ) from exc
            add(plugin_name(factory, ep.name), factory, f"entry point {ep.name!r} ({ep.value})")
    for spec in specs:
        factory = load_factory(spec)
        add(plugin_name(factory), factory, f"--plugin {spec}")
    return PluginRegistry({name: f for name, (f, _) in found.items()})


def load_with_plugins(
    config_path: str | None, plugins: Sequence[str] = (), *, entry_points: bool = True
) -> tuple[SchedulerConfiguration, PluginRegistry]:
    """The configuration at ``config_path`` (upstream's defaults when None), validated against the
    in-tree plugins plus the out-of-tree ones of ``plugins`` and the entry points, and that
    registry (pass it to :func:`~ksched.framework.profile.build_profiles`)."""
    registry = out_of_tree_registry(plugins, entry_points=entry_points)
    if config_path is None:
        return default_config(), registry
    return load_config(config_path, known_plugins=registry.names(), implements=registry.implements), registry
