"""Default plugins + user plugins -> the effective plugin list at each extension point.

Two steps, as upstream:

1. :func:`merge_plugin_set` (``default_plugins.go`` ``mergePluginSet``), per extension point
   including ``multiPoint``: ``disabled: [{name: "*"}]`` drops every default there; a disabled
   name drops that default; a user-enabled plugin with a default's name replaces it *in place*
   (this is how a default weight is overridden); other user plugins are appended, in order.
2. :func:`expand` (``framework.go`` ``expandMultiPointPlugins``): each MultiPoint plugin is added
   to every extension point it implements, except where that point disables it or disables "*".
   A plugin enabled explicitly at a point overrides its MultiPoint entry and runs first; then the
   MultiPoint plugins; then the remaining explicit plugins.

Which points a plugin implements comes from ``implements(name)``: the in-tree table for in-tree
plugins; for any other name, the caller's callable, or ``None`` ("unknown"). An unknown plugin is
trusted wherever it is enabled explicitly and is expanded nowhere from MultiPoint: ksched cannot
run a plugin it does not have, so the caller that registers out-of-tree plugins must say what they
implement.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ksched.config import names as n
from ksched.config.defaults import GATED_OFF, IN_TREE_EXTENSION_POINTS, MAX_NODE_SCORE, MAX_TOTAL_SCORE
from ksched.config.types import PluginRef
from ksched.errors import ConfigError

ImplementsFn = Callable[[str], frozenset[str] | None]


@dataclass(frozen=True, slots=True, kw_only=True)
class PluginEntry:
    """One ``{name, weight}`` item of a plugin set, as written (weight None when unset)."""

    name: str
    weight: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PluginSet:
    """The ``enabled``/``disabled`` lists of one extension point."""

    enabled: tuple[PluginEntry, ...] = ()
    disabled: tuple[str, ...] = ()


def merge_plugin_set(default: PluginSet, custom: PluginSet) -> PluginSet:
    """Upstream ``mergePluginSet``: the user's ``custom`` set applied over ``default``."""
    disabled = (*custom.disabled, *default.disabled)
    disabled_names = set(disabled)
    # A name enabled twice by the user maps to its last entry (as upstream's map does); the
    # duplicate is later rejected as a double registration.
    custom_by_name = {entry.name: (i, entry) for i, entry in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[PluginEntry] = []
    if "*" not in disabled_names:
        for entry in default.enabled:
            if entry.name in disabled_names:
                continue
            if entry.name in custom_by_name:
                i, entry = custom_by_name[entry.name]
                replaced.add(i)
            enabled.append(entry)
    enabled.extend(entry for i, entry in enumerate(custom.enabled) if i not in replaced)
    return PluginSet(enabled=tuple(enabled), disabled=disabled)


def merge_plugins(default: Mapping[str, PluginSet], custom: Mapping[str, PluginSet]) -> dict[str, PluginSet]:
    """:func:`merge_plugin_set` at every extension point (keys of ``names.EXTENSION_POINTS``)."""
    empty = PluginSet()
    return {ep: merge_plugin_set(default.get(ep, empty), custom.get(ep, empty)) for ep in n.EXTENSION_POINTS}


def in_tree_implements(extra: ImplementsFn | None = None) -> ImplementsFn:
    """``implements`` for in-tree plugins, falling back to ``extra`` (or None) for other names."""

    def implements(name: str) -> frozenset[str] | None:
        if name in IN_TREE_EXTENSION_POINTS:
            return IN_TREE_EXTENSION_POINTS[name]
        return extra(name) if extra is not None else None

    return implements


@dataclass(frozen=True, slots=True, kw_only=True)
class Expanded:
    """Result of :func:`expand` for one profile."""

    plugins: dict[str, tuple[PluginRef, ...]]
    score_weights: dict[str, int]


def expand(merged: Mapping[str, PluginSet], implements: ImplementsFn, path: str) -> Expanded:
    """Effective ordered plugins per extension point, and score weights.

    ``path`` is the profile's ``plugins`` field path, used in errors. Raises :class:`ConfigError`
    for what upstream's framework refuses at start-up: a plugin enabled twice at one point, a
    plugin enabled at a point it does not implement, and a weight sum that could overflow.
    """
    multi = merged[n.MULTI_POINT].enabled
    lists: dict[str, list[str]] = {}
    for ep in n.SPECIFIC_EXTENSION_POINTS:
        pset = merged[ep]
        explicit: list[str] = []
        for entry in pset.enabled:
            points = implements(entry.name)
            if points is not None and ep not in points:
                raise ConfigError(
                    f"{path}.{ep}", f'plugin "{entry.name}" does not implement the {ep} extension point'
                )
            if entry.name in explicit:
                raise ConfigError(f"{path}.{ep}", f'plugin "{entry.name}" is enabled more than once')
            explicit.append(entry.name)
        if "*" in pset.disabled:
            lists[ep] = explicit
            continue
        disabled = set(pset.disabled)
        overrides: list[str] = []
        from_multi: list[str] = []
        for entry in multi:
            points = implements(entry.name)
            if points is None or ep not in points or entry.name in disabled:
                continue
            if entry.name in explicit:
                overrides.append(entry.name)
            elif (entry.name, ep) in GATED_OFF:
                continue
            elif entry.name in from_multi:
                raise ConfigError(
                    f"{path}.{n.MULTI_POINT}", f'plugin "{entry.name}" is enabled more than once'
                )
            else:
                from_multi.append(entry.name)
        first = [name for name in explicit if name in overrides]
        rest = [name for name in explicit if name not in overrides]
        lists[ep] = first + from_multi + rest

    weights = score_weights(merged[n.SCORE].enabled, multi, set(lists[n.SCORE]), implements, path)
    plugins = {
        ep: tuple(PluginRef(name=name, weight=weights[name] if ep == n.SCORE else 0) for name in names)
        for ep, names in lists.items()
    }
    return Expanded(plugins=plugins, score_weights={name: weights[name] for name in lists[n.SCORE]})


def score_weights(
    score_enabled: Sequence[PluginEntry],
    multi_enabled: Sequence[PluginEntry],
    scoring: set[str],
    implements: ImplementsFn,
    path: str,
) -> dict[str, int]:
    """Upstream ``getScoreWeights``: explicit score weights win over MultiPoint ones, 0/unset is 1,
    and the weighted maximum (weight x 100 summed) must not overflow int64."""
    weights: dict[str, int] = {}
    total = 0
    for entry in (*score_enabled, *multi_enabled):
        points = implements(entry.name)
        is_scorer = entry.name in scoring or (points is not None and n.SCORE in points)
        if not is_scorer or entry.name in weights:
            continue
        weight = entry.weight or 1
        if weight * MAX_NODE_SCORE > MAX_TOTAL_SCORE - total:
            raise ConfigError(f"{path}.{n.SCORE}", "total score of Score plugins could overflow")
        weights[entry.name] = weight
        total += weight * MAX_NODE_SCORE
    return weights
