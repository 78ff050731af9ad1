"""Profiles: one :class:`Framework` per ``schedulerName``, built from a validated configuration.

Each plugin is built once per profile (its factory gets its args and a shared :class:`Handle`) and
placed at every extension point the configuration's effective lists name it at, in that order.
A name that no registry knows, or a plugin that does not implement an extension point it is
listed at, is a :class:`ConfigError` naming the field, raised at start-up, never mid-cycle.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ksched.config import names as ext
from ksched.config.types import Profile, SchedulerConfiguration
from ksched.errors import ConfigError
from ksched.framework.api import PermitPlugin, PostBindPlugin, PreBindPlugin, ReservePlugin
from ksched.framework.guards import GuardedPlugin
from ksched.framework.handle import Handle, HandleServices
from ksched.framework.hooks import check_hooks
from ksched.framework.interface import (
    FilterPlugin,
    PostFilterPlugin,
    PreFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
)
from ksched.framework.loader import METHOD_OF_POINT
from ksched.framework.registry import Registry
from ksched.framework.runtime import Framework, FrameworkRecorder, StartIndex

_METHOD_OF = {
    ext.PRE_FILTER: "pre_filter",
    ext.FILTER: "filter",
    ext.PRE_SCORE: "pre_score",
    ext.SCORE: "score",
    ext.QUEUE_SORT: "sort_key",
    ext.PRE_ENQUEUE: "pre_enqueue",
    ext.POST_FILTER: "post_filter",
}


def build_framework(
    profile: Profile,
    *,
    index: int = 0,
    registry: Registry | None = None,
    rng: np.random.Generator | None = None,
    global_percentage: int | None = None,
    services: HandleServices | None = None,
    recorder: FrameworkRecorder | None = None,
    start_index: StartIndex | None = None,
    batching: bool = True,
) -> Framework:
    """Instantiate ``profile``'s plugins and order them per extension point.

    ``batching``: the ``OpportunisticBatching`` gate (:mod:`ksched.framework.batching`).

    ``services`` are what the scheduler process lends binding-cycle plugins (event recorder, API
    client); ``recorder`` receives the extension-point and plugin timings and plugin failures;
    ``start_index`` is where ``percentageOfNodesToScore``'s search starts, shared by the profiles.
    """
    registry = registry or Registry()
    handle = Handle(profile.scheduler_name, rng=rng, services=services)
    built: dict[str, object] = {}
    per_point: dict[str, list[object]] = {}
    for point, refs in profile.plugins.items():
        for i, ref in enumerate(refs):
            path = f"profiles[{index}].plugins.{point}.enabled[{i}].name"
            if ref.name not in registry:
                raise ConfigError(path, f'unknown plugin "{ref.name}"')
            plugin = built.get(ref.name)
            out_of_tree = registry.is_out_of_tree(ref.name)
            if plugin is None:
                if out_of_tree:
                    plugin = _build_out_of_tree(registry, ref.name, profile, index, handle, recorder)
                else:
                    plugin = registry.factory(ref.name)(profile.plugin_args.get(ref.name), handle)
                check_hooks(plugin, ref.name, path)
                built[ref.name] = plugin
            method = (METHOD_OF_POINT if out_of_tree else _METHOD_OF).get(point)
            if method is not None and not hasattr(plugin, method):
                # Upstream expands multiPoint only into the points a plugin implements; an
                # explicit listing at a point it does not implement is a configuration error.
                raise ConfigError(path, f'plugin "{ref.name}" does not extend {point} plugin')
            per_point.setdefault(point, []).append(plugin)
    weights = {ref.name: (ref.weight or 1) for ref in profile.plugins.get(ext.SCORE, ())}
    percentage = profile.percentage_of_nodes_to_score
    if percentage is None:
        percentage = global_percentage
    return Framework(
        profile.scheduler_name,
        pre_filter=[p for p in per_point.get(ext.PRE_FILTER, []) if isinstance(p, PreFilterPlugin)],
        filters=[p for p in per_point.get(ext.FILTER, []) if isinstance(p, FilterPlugin)],
        pre_score=[p for p in per_point.get(ext.PRE_SCORE, []) if isinstance(p, PreScorePlugin)],
        scores=[(p, weights[p.name]) for p in per_point.get(ext.SCORE, []) if isinstance(p, ScorePlugin)],
        post_filter=[p for p in per_point.get(ext.POST_FILTER, []) if isinstance(p, PostFilterPlugin)],
        percentage_of_nodes_to_score=percentage,
        plugins=list(built.values()),
        reserve=[p for p in per_point.get(ext.RESERVE, []) if isinstance(p, ReservePlugin)],
        permit=[p for p in per_point.get(ext.PERMIT, []) if isinstance(p, PermitPlugin)],
        pre_bind=[p for p in per_point.get(ext.PRE_BIND, []) if isinstance(p, PreBindPlugin)],
        post_bind=[p for p in per_point.get(ext.POST_BIND, []) if isinstance(p, PostBindPlugin)],
        handle=handle,
        recorder=recorder,
        start_index=start_index,
        batching_enabled=batching,
    )


def _build_out_of_tree(
    registry: Registry,
    name: str,
    profile: Profile,
    index: int,
    handle: Handle,
    recorder: FrameworkRecorder | None,
) -> object:
    """Call an out-of-tree factory with its args as a dict and wrap the plugin in result guards.

    Anything the factory raises (typically its own args validation) is a start-up ConfigError
    naming the plugin's pluginConfig args.
    """
    args = profile.plugin_args.get(name)
    if args is None:
        args = {}
    path = f"profiles[{index}].pluginConfig[{name}].args"
    try:
        plugin = registry.factory(name)(args, handle)
    except ConfigError:
        raise
    except Exception as exc:
        raise ConfigError(path, f"plugin {name!r} rejected its args: {type(exc).__name__}: {exc}") from exc
    if plugin is None:
        raise ConfigError(path, f"the factory of plugin {name!r} returned None instead of a plugin")
    return GuardedPlugin(plugin, name, recorder)


def build_profiles(
    config: SchedulerConfiguration,
    *,
    registry: Registry | None = None,
    seed: int | None = None,
    services: HandleServices | None = None,
    recorder: FrameworkRecorder | None = None,
) -> Mapping[str, Framework]:
    """``schedulerName -> Framework`` for every profile in ``config`` (one seeded generator for all,
    one search start index for all, as upstream's scheduler has one ``nextStartNodeIndex``)."""
    registry = registry or Registry()
    rng = np.random.default_rng(seed)
    start_index = StartIndex()
    return {
        p.scheduler_name: build_framework(
            p,
            index=i,
            registry=registry,
            rng=rng,
            global_percentage=config.percentage_of_nodes_to_score,
            services=services,
            recorder=recorder,
            start_index=start_index,
            batching=config.feature_gates.enabled("OpportunisticBatching"),
        )
        for i, p in enumerate(config.profiles)
    }
