"""Validation of a decoded KubeSchedulerConfiguration, with upstream's rules and field paths.

Sources: ``pkg/scheduler/apis/config/validation/validation.go`` (``ValidateKubeSchedulerConfiguration``),
``staging/src/k8s.io/component-base/config/validation/validation.go`` (leader election, client
connection), plus the checks upstream only makes when it builds the framework or the leader
elector (unknown plugins, one queue sort, a bind plugin, ``renewDeadline > 1.2 x retryPeriod``):
ksched makes them at load time so a bad file fails before anything starts.

Functions append :class:`ConfigError` objects to ``errs`` instead of raising, so one load reports
every problem; the loader raises the first and attaches the rest as exception notes. Args of
in-tree plugins are validated in :mod:`ksched.config.pluginargs`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Final

from ksched.config import _decode as d
from ksched.config import names as n
from ksched.config.defaults import API_VERSION, DEFAULT_PARALLELISM, LEADER_ELECTION_JITTER_FACTOR
from ksched.config.merge import PluginSet
from ksched.config.pluginargs import invalid
from ksched.config.types import ClientConnection, LeaderElection, PluginRef
from ksched.errors import ConfigError

Errors = list[ConfigError]


def _secs(value: float) -> str:
    return f"{value:g}s"


def validate_leader_election(le: LeaderElection, errs: Errors) -> None:
    """component-base ``ValidateLeaderElectionConfiguration`` + the scheduler's leases-only rule
    + client-go's ``NewLeaderElector`` timing rule."""
    if not le.leader_elect:
        return
    path = "leaderElection"
    for key, value in (
        ("leaseDuration", le.lease_duration_s),
        ("renewDeadline", le.renew_deadline_s),
        ("retryPeriod", le.retry_period_s),
    ):
        if value <= 0:
            errs.append(invalid(d.child(path, key), _secs(value), "must be greater than zero"))
    if le.lease_duration_s <= le.renew_deadline_s:
        errs.append(
            invalid(
                d.child(path, "leaseDuration"),
                _secs(le.lease_duration_s),
                f"must be greater than renewDeadline ({_secs(le.renew_deadline_s)})",
            )
        )
    if le.renew_deadline_s <= LEADER_ELECTION_JITTER_FACTOR * le.retry_period_s:
        errs.append(
            invalid(
                d.child(path, "renewDeadline"),
                _secs(le.renew_deadline_s),
                f"must be greater than retryPeriod*JitterFactor ({_secs(le.retry_period_s)} x "
                f"{LEADER_ELECTION_JITTER_FACTOR})",
            )
        )
    if le.resource_lock != "leases":
        errs.append(
            invalid(d.child(path, "resourceLock"), le.resource_lock, 'resourceLock value must be "leases"')
        )


JSON: Final = "application/json"
PROTOBUF: Final = "application/vnd.kubernetes.protobuf"
_CONTENT_TYPES: Final = (JSON, PROTOBUF)


def validate_client_connection(cc: ClientConnection, errs: Errors) -> None:
    """component-base's burst rule, plus what ksched's JSON-only client can honour."""
    if cc.burst < 0:
        errs.append(invalid("clientConnection.burst", cc.burst, "must be non-negative"))
    if cc.content_type not in _CONTENT_TYPES:
        errs.append(
            invalid(
                "clientConnection.contentType",
                cc.content_type,
                f"ksched sends {JSON} (or accepts {PROTOBUF}, upstream's default, and sends JSON)",
            )
        )
    for part in (p.strip().split(";")[0] for p in cc.accept_content_types.split(",") if p.strip()):
        if part not in _CONTENT_TYPES:
            errs.append(
                invalid(
                    "clientConnection.acceptContentTypes",
                    cc.accept_content_types,
                    f"ksched decodes {JSON} only; the value may list only {JSON} and {PROTOBUF}",
                )
            )
            break


def validate_parallelism(parallelism: int, errs: Errors) -> None:
    """Upstream's > 0 rule; then ksched's: no worker pool to size, so only the default."""
    if parallelism <= 0:
        errs.append(invalid("parallelism", parallelism, "should be an integer value greater than zero"))
    elif parallelism != DEFAULT_PARALLELISM:
        errs.append(
            invalid(
                "parallelism",
                parallelism,
                f"ksched evaluates every node in one vectorized pass on the scheduling thread and has "
                f"no worker pool to size; remove the field or set it to {DEFAULT_PARALLELISM}",
            )
        )


def validate_percentage(path: str, value: int | None, errs: Errors) -> None:
    if value is not None and not 0 <= value <= 100:
        errs.append(invalid(path, value, "not in valid range [0-100]"))


def removed_problem(name: str) -> str:
    return (
        f"invalid value {d.quote(name)}: was invalid in version {d.quote(API_VERSION)} "
        f"(KubeSchedulerConfiguration is version {d.quote(API_VERSION)})"
    )


def validate_plugin_names(
    plugins_path: str,
    custom: Mapping[str, PluginSet],
    paths: Mapping[str, Sequence[str]],
    known: Collection[str],
    errs: Errors,
) -> None:
    """Every user-enabled plugin name must be known (upstream: ``... "Foo" does not exist`` at
    framework start-up; removed plugins get validation.go's "was invalid in version" message).

    ``paths[ep][i]`` is the field path of ``custom[ep].enabled[i]``.
    """
    for ep in n.EXTENSION_POINTS:
        for entry, path in zip(custom.get(ep, PluginSet()).enabled, paths.get(ep, ()), strict=True):
            if entry.name in n.REMOVED_IN_V1:
                errs.append(ConfigError(path, removed_problem(entry.name)))
            elif entry.name not in known:
                err = ConfigError(d.child(path, "name"), f"unknown plugin {d.quote(entry.name)}")
                err.add_note("known plugins: " + ", ".join(sorted(known)))
                errs.append(err)


def validate_profile_plugins(
    path: str, scheduler_name: str, plugins: Mapping[str, tuple[PluginRef, ...]], errs: Errors
) -> None:
    """What upstream's NewFramework insists on: exactly one QueueSort plugin, at least one Bind."""
    queue_sort = plugins[n.QUEUE_SORT]
    who = f"profile with scheduler name {d.quote(scheduler_name)}"
    if len(queue_sort) != 1:
        errs.append(
            ConfigError(
                d.child(d.child(path, "plugins"), n.QUEUE_SORT),
                f"only one queue sort plugin required for {who}, but got {len(queue_sort)}",
            )
        )
    if not plugins[n.BIND]:
        errs.append(
            ConfigError(
                d.child(d.child(path, "plugins"), n.BIND),
                f"at least one bind plugin is needed for {who}",
            )
        )


def validate_common_queue_sort(
    queue_sorts: Sequence[PluginSet], plugin_configs: Sequence[Mapping[str, tuple[int, object]]], errs: Errors
) -> None:
    """Upstream ``validateCommonQueueSort``: every profile's (merged) queueSort set, and the args of
    the first profile's queue sort plugin, must be the same.

    ``plugin_configs[i]`` maps a plugin name to (pluginConfig index, decoded args) for profile i.
    """
    canon = queue_sorts[0]
    name = canon.enabled[0].name if canon.enabled else ""
    canon_args = plugin_configs[0].get(name, (0, None))[1] if name else None
    for i in range(1, len(queue_sorts)):
        if queue_sorts[i] != canon:
            errs.append(ConfigError(f"profiles[{i}].plugins.queueSort", "must be the same for all profiles"))
        if name and name in plugin_configs[i]:
            j, args = plugin_configs[i][name]
            if args != canon_args:
                errs.append(
                    ConfigError(
                        f"profiles[{i}].pluginConfig[{j}].args", "queueSort must be the same for all profiles"
                    )
                )
