"""Read a KubeSchedulerConfiguration v1 file into a :class:`SchedulerConfiguration`.

Pipeline, as upstream's ``kube-scheduler --config``: strict decode (unknown fields and wrong types
fail at once) -> defaults (``defaults.go``) -> plugin merge and MultiPoint expansion -> validation
(``validation.go`` plus the framework's start-up checks). All validation problems are collected;
the first is raised as a :class:`ConfigError` whose message starts with the source (the file
name), and the others are attached as exception notes. ``ConfigError.path``/``.problem`` never
contain the source.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Collection, Mapping
from types import MappingProxyType
from typing import Any

import yaml

from ksched.bounded import CONFIG_LIMIT, LimitError, load_yaml, preview, read_bytes
from ksched.config import _decode as d
from ksched.config import names as n
from ksched.config.defaults import (
    API_VERSION,
    DEFAULT_MULTI_POINT,
    DEFAULT_PARALLELISM,
    DEFAULT_POD_INITIAL_BACKOFF_S,
    DEFAULT_POD_MAX_BACKOFF_S,
    DEFAULT_SCHEDULER_NAME,
    KIND,
    default_plugin_args,
)
from ksched.config.extenders import decode_and_validate_extenders
from ksched.config.merge import PluginEntry, PluginSet, expand, in_tree_implements, merge_plugins
from ksched.config.pluginargs import decode_plugin_args, unsupported
from ksched.config.types import ClientConnection, LeaderElection, Profile, SchedulerConfiguration
from ksched.config.validation import (
    removed_problem,
    validate_client_connection,
    validate_common_queue_sort,
    validate_leader_election,
    validate_parallelism,
    validate_percentage,
    validate_plugin_names,
    validate_profile_plugins,
)
from ksched.errors import ConfigError

logger = logging.getLogger(__name__)

_TOP_FIELDS = (
    "apiVersion",
    "kind",
    "parallelism",
    "leaderElection",
    "clientConnection",
    "enableProfiling",
    "enableContentionProfiling",
    "percentageOfNodesToScore",
    "podInitialBackoffSeconds",
    "podMaxBackoffSeconds",
    "profiles",
    "extenders",
    "delayCacheUntilActive",
)
_LE_FIELDS = (
    "leaderElect",
    "leaseDuration",
    "renewDeadline",
    "retryPeriod",
    "resourceLock",
    "resourceName",
    "resourceNamespace",
)
_CC_FIELDS = ("kubeconfig", "acceptContentTypes", "contentType", "qps", "burst")
_PROFILE_FIELDS = ("schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig")

Errors = list[ConfigError]
Implements = Callable[[str], frozenset[str] | None]


def load_config(
    path: str | os.PathLike[str],
    *,
    known_plugins: Collection[str] | None = None,
    implements: Implements | None = None,
) -> SchedulerConfiguration:
    """Load, default and validate the YAML or JSON KubeSchedulerConfiguration at ``path``.

    ``known_plugins`` are the plugin names the caller can run (default: ``names.IN_TREE``);
    ``implements(name)`` says which extension points an out-of-tree plugin implements (see
    :mod:`ksched.config.merge`). Raises :class:`ConfigError` for a missing, unreadable or non-YAML
    file and for any invalid content; the message starts with the file name.
    """
    source = os.fspath(path)
    try:
        raw = read_bytes(source, CONFIG_LIMIT, "a scheduler configuration")
        data = load_yaml(raw.decode("utf-8"), source)
    except LimitError as exc:
        raise ConfigError("", str(exc)) from None
    except OSError as exc:
        raise ConfigError(source, f"cannot read config file: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(source, "config file is not UTF-8 text") from exc
    except ValueError as exc:  # an integer literal past Python's 4,300-digit conversion limit
        raise ConfigError(source, f"not a valid config file: {preview(str(exc))}") from exc
    except yaml.YAMLError as exc:
        where = ""
        mark = getattr(exc, "problem_mark", None)
        if mark is not None:
            where = f" at line {mark.line + 1}, column {mark.column + 1}"
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(source, f"not valid YAML or JSON{where}: {preview(problem)}") from exc
    if not isinstance(data, Mapping):
        raise ConfigError(
            source, f"not a KubeSchedulerConfiguration: expected an object, got {type(data).__name__}"
        )
    return config_from_dict(data, source=source, known_plugins=known_plugins, implements=implements)


def config_from_dict(
    data: Mapping[str, Any],
    *,
    source: str = "<config>",
    known_plugins: Collection[str] | None = None,
    implements: Implements | None = None,
) -> SchedulerConfiguration:
    """Like :func:`load_config` for an already-parsed document (which must carry apiVersion/kind)."""
    try:
        return _build(
            data,
            frozenset(known_plugins) if known_plugins is not None else n.IN_TREE,
            in_tree_implements(implements),
        )
    except ConfigError as exc:
        exc.args = (f"{source}: {exc.args[0]}",)
        raise


def default_config() -> SchedulerConfiguration:
    """The configuration kube-scheduler runs with when given no file."""
    return config_from_dict({"apiVersion": API_VERSION, "kind": KIND}, source="<defaults>")


def _raise_first(errs: Errors) -> None:
    if not errs:
        return
    first = errs[0]
    for other in errs[1:]:
        first.add_note(f"also: {other}")
    raise first


def _build(data: Mapping[str, Any], known: frozenset[str], implements: Implements) -> SchedulerConfiguration:
    root = d.mapping(data, "", _TOP_FIELDS)
    _check_type(root)
    errs: Errors = []
    le = _leader_election(root.get("leaderElection"))
    cc = _client_connection(root.get("clientConnection"))
    parallelism = d.integer(root, "parallelism", "", DEFAULT_PARALLELISM)
    # Absent means "score every feasible node" in ksched (DESIGN.md §3), unlike upstream's adaptive 0;
    # an explicit value, 0 included, is honoured exactly as upstream does.
    percentage = d.integer(root, "percentageOfNodesToScore", "", None)
    initial = d.integer(root, "podInitialBackoffSeconds", "", DEFAULT_POD_INITIAL_BACKOFF_S, bits=64)
    maximum = d.integer(root, "podMaxBackoffSeconds", "", DEFAULT_POD_MAX_BACKOFF_S, bits=64)
    # Upstream's defaults: /debug is served (behind delegated authorization, as ksched serves it).
    profiling = d.boolean(root, "enableProfiling", "", True)
    contention = d.boolean(root, "enableContentionProfiling", "", profiling)
    delay = d.boolean(root, "delayCacheUntilActive", "", False)

    validate_client_connection(cc, errs)
    validate_leader_election(le, errs)
    validate_parallelism(parallelism, errs)
    profiles = _profiles(root, known, implements, errs)
    validate_percentage("percentageOfNodesToScore", percentage, errs)
    _validate_backoff(initial, maximum, errs)
    extenders = decode_and_validate_extenders(d.seq(root, "extenders", ""), errs)
    _raise_first(errs)
    return SchedulerConfiguration(
        parallelism=parallelism,
        percentage_of_nodes_to_score=percentage,
        pod_initial_backoff_s=float(initial),
        pod_max_backoff_s=float(maximum),
        profiles=profiles,
        leader_election=le,
        client_connection=cc,
        enable_profiling=profiling,
        enable_contention_profiling=contention,
        delay_cache_until_active=delay,
        extenders=extenders,
    )


def _check_type(root: Mapping[str, Any]) -> None:
    """apiVersion and kind, which say whether this is a KubeSchedulerConfiguration at all."""
    api_version, kind = d.string(root, "apiVersion", ""), d.string(root, "kind", "")
    if api_version != API_VERSION:
        raise (
            unsupported("apiVersion", api_version, (API_VERSION,))
            if api_version
            else ConfigError(
                "apiVersion",
                f"required: this is not a KubeSchedulerConfiguration (want apiVersion {API_VERSION})",
            )
        )
    if kind != KIND:
        raise (
            unsupported("kind", kind, (KIND,))
            if kind
            else ConfigError("kind", f"required: this is not a KubeSchedulerConfiguration (want kind {KIND})")
        )


def _profiles(
    root: Mapping[str, Any], known: frozenset[str], implements: Implements, errs: Errors
) -> tuple[Profile, ...]:
    """Every profile (one default profile when none is given), with unique scheduler names and one
    queue sort across them."""
    raw_profiles = list(d.seq(root, "profiles", "")) or [{}]
    if (
        len(raw_profiles) == 1
        and isinstance(raw_profiles[0], Mapping)
        and "schedulerName" not in raw_profiles[0]
    ):
        raw_profiles[0] = {**raw_profiles[0], "schedulerName": DEFAULT_SCHEDULER_NAME}
    profiles: list[Profile] = []
    queue_sorts: list[PluginSet] = []
    configs: list[dict[str, tuple[int, object]]] = []
    seen_names: dict[str, int] = {}
    for i, raw in enumerate(raw_profiles):
        path = d.index("profiles", i)
        profile, queue_sort, config = _profile(raw, path, known, implements, errs)
        if profile.scheduler_name in seen_names:
            errs.append(
                ConfigError(
                    d.child(path, "schedulerName"),
                    f"duplicate value {d.quote(profile.scheduler_name)} "
                    f"(also profiles[{seen_names[profile.scheduler_name]}].schedulerName)",
                )
            )
        seen_names.setdefault(profile.scheduler_name, i)
        profiles.append(profile)
        queue_sorts.append(queue_sort)
        configs.append(config)
    validate_common_queue_sort(queue_sorts, configs, errs)
    return tuple(profiles)


def _validate_backoff(initial: int, maximum: int, errs: Errors) -> None:
    if initial <= 0:
        errs.append(
            ConfigError("podInitialBackoffSeconds", f"invalid value {initial}: must be greater than 0")
        )
    if maximum < initial:
        errs.append(
            ConfigError(
                "podMaxBackoffSeconds",
                f"invalid value {maximum}: must be greater than or equal to PodInitialBackoffSeconds",
            )
        )


def _leader_election(raw: object) -> LeaderElection:
    path = "leaderElection"
    m = d.mapping(raw if raw is not None else {}, path, _LE_FIELDS)
    base = LeaderElection()
    # component-base defaulting: a zero duration or empty string means "use the default".
    return LeaderElection(
        leader_elect=d.boolean(m, "leaderElect", path, base.leader_elect),
        lease_duration_s=d.duration(m, "leaseDuration", path, 0.0) or base.lease_duration_s,
        renew_deadline_s=d.duration(m, "renewDeadline", path, 0.0) or base.renew_deadline_s,
        retry_period_s=d.duration(m, "retryPeriod", path, 0.0) or base.retry_period_s,
        resource_lock=d.string(m, "resourceLock", path) or base.resource_lock,
        resource_name=d.string(m, "resourceName", path) or base.resource_name,
        resource_namespace=d.string(m, "resourceNamespace", path) or base.resource_namespace,
    )


def _client_connection(raw: object) -> ClientConnection:
    path = "clientConnection"
    m = d.mapping(raw if raw is not None else {}, path, _CC_FIELDS)
    base = ClientConnection()
    return ClientConnection(
        qps=d.number(m, "qps", path, 0.0) or base.qps,
        burst=d.integer(m, "burst", path, 0) or base.burst,
        content_type=d.string(m, "contentType", path) or base.content_type,
        accept_content_types=d.string(m, "acceptContentTypes", path),
        kubeconfig=d.string(m, "kubeconfig", path),
    )


def _plugin_sets(raw: object, path: str) -> tuple[dict[str, PluginSet], dict[str, list[str]]]:
    """The user's ``plugins`` section, and the field path of every enabled entry."""
    sets: dict[str, PluginSet] = {}
    paths: dict[str, list[str]] = {}
    if raw is None:
        return sets, paths
    plugins = d.mapping(raw, path, n.EXTENSION_POINTS)
    for ep, value in plugins.items():
        ep_path = d.child(path, ep)
        pset = d.mapping(value if value is not None else {}, ep_path, ("enabled", "disabled"))
        enabled, disabled = [], []
        paths[ep] = []
        for key, out in (("enabled", enabled), ("disabled", disabled)):
            for i, item in enumerate(d.seq(pset, key, ep_path)):
                p = d.index(d.child(ep_path, key), i)
                entry = d.mapping(item, p, ("name", "weight"))
                name = d.string(entry, "name", p)
                if key == "enabled":
                    out.append(PluginEntry(name=name, weight=d.integer(entry, "weight", p, None)))
                    paths[ep].append(p)
                else:
                    out.append(name)
        sets[ep] = PluginSet(enabled=tuple(enabled), disabled=tuple(disabled))
    return sets, paths


def _profile(
    raw: object, path: str, known: frozenset[str], implements: Implements, errs: Errors
) -> tuple[Profile, PluginSet, dict[str, tuple[int, object]]]:
    prof = d.mapping(raw, path, _PROFILE_FIELDS)
    name = d.string(prof, "schedulerName", path)
    if not name:
        errs.append(
            ConfigError(d.child(path, "schedulerName"), "required: every profile needs a schedulerName")
        )
    percentage = d.integer(prof, "percentageOfNodesToScore", path, None)
    validate_percentage(d.child(path, "percentageOfNodesToScore"), percentage, errs)

    plugins_path = d.child(path, "plugins")
    custom, entry_paths = _plugin_sets(prof.get("plugins"), plugins_path)
    validate_plugin_names(plugins_path, custom, entry_paths, known, errs)
    merged = merge_plugins(
        {
            n.MULTI_POINT: PluginSet(
                enabled=tuple(PluginEntry(name=p, weight=w) for p, w in DEFAULT_MULTI_POINT)
            )
        },
        custom,
    )

    config: dict[str, tuple[int, object]] = {}
    for i, item in enumerate(d.seq(prof, "pluginConfig", path)):
        p = d.index(d.child(path, "pluginConfig"), i)
        entry = d.mapping(item, p, ("name", "args"))
        plugin = d.string(entry, "name", p)
        if plugin in config:
            errs.append(
                ConfigError(
                    p,
                    f"duplicate value {d.quote(plugin)}: "
                    f"pluginConfig[{config[plugin][0]}] already configures this plugin",
                )
            )
            continue
        if plugin in n.REMOVED_IN_V1:
            errs.append(ConfigError(p, removed_problem(plugin)))
            continue
        config[plugin] = (i, decode_plugin_args(plugin, entry.get("args"), d.child(p, "args"), errs))

    try:
        expanded = expand(merged, implements, plugins_path)
    except ConfigError as exc:
        errs.append(exc)
        empty = {ep: () for ep in n.SPECIFIC_EXTENSION_POINTS}
        return (
            Profile(
                scheduler_name=name,
                percentage_of_nodes_to_score=percentage,
                plugins=empty,
                plugin_args={},
                score_weights={},
            ),
            merged[n.QUEUE_SORT],
            config,
        )
    validate_profile_plugins(path, name, expanded.plugins, errs)

    needed = [e.name for ep in n.EXTENSION_POINTS for e in merged[ep].enabled]
    args: dict[str, object] = {}
    for plugin in dict.fromkeys(needed):
        value = config[plugin][1] if plugin in config else default_plugin_args(plugin)
        if value is not None:
            args[plugin] = value
    for plugin in config.keys() - args.keys():
        logger.info("profile %s: pluginConfig for plugin %s, which is not enabled, is ignored", name, plugin)
    profile = Profile(
        scheduler_name=name,
        percentage_of_nodes_to_score=percentage,
        plugins=MappingProxyType(expanded.plugins),
        plugin_args=MappingProxyType(args),
        score_weights=MappingProxyType(expanded.score_weights),
    )
    return profile, merged[n.QUEUE_SORT], config
