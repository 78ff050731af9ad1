"""Command-line values laid over a loaded configuration, with kube-scheduler's precedence.

``Options.ApplyTo`` in cmd/kube-scheduler/app/options/options.go:

- without ``--config``: the deprecated flags (``--profiling``, ``--contention-profiling``,
  ``--kubeconfig``, ``--kube-api-content-type``, ``--kube-api-qps``, ``--kube-api-burst``) and the
  leader-election flags override the defaults, each only when given;
- with ``--config``: only the leader-election flags override the file; the deprecated flags are
  ignored (ksched logs a warning naming each, where upstream is silent);
- ``--pod-max-in-unschedulable-pods-duration`` applies either way (it has no config field).

The result is validated again, as upstream validates after applying the flags.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

from ksched.config.types import ClientConnection, LeaderElection, SchedulerConfiguration
from ksched.config.validation import validate_client_connection, validate_leader_election
from ksched.errors import ConfigError

LEADER_FIELDS = {
    "leader-elect": "leader_elect",
    "leader-elect-lease-duration": "lease_duration_s",
    "leader-elect-renew-deadline": "renew_deadline_s",
    "leader-elect-retry-period": "retry_period_s",
    "leader-elect-resource-lock": "resource_lock",
    "leader-elect-resource-name": "resource_name",
    "leader-elect-resource-namespace": "resource_namespace",
}
"""Leader-election flag -> :class:`LeaderElection` field."""
CLIENT_FIELDS = {
    "kubeconfig": "kubeconfig",
    "kube-api-content-type": "content_type",
    "kube-api-qps": "qps",
    "kube-api-burst": "burst",
}
"""Deprecated client flag -> :class:`ClientConnection` field."""
PROFILING_FIELDS = {"profiling": "enable_profiling", "contention-profiling": "enable_contention_profiling"}
DEPRECATED_FLAGS = (*CLIENT_FIELDS, *PROFILING_FIELDS)


@dataclass(frozen=True, slots=True, kw_only=True)
class FlagOverrides:
    """The flags that were given (name -> parsed value), and whether ``--config`` was."""

    config_given: bool = False
    given: Mapping[str, object] = field(default_factory=dict)
    pod_max_in_unschedulable_pods_s: float | None = None

    def ignored(self) -> tuple[str, ...]:
        """The deprecated flags given alongside ``--config``, which upstream ignores."""
        return tuple(f for f in DEPRECATED_FLAGS if self.config_given and f in self.given)


def apply_overrides(config: SchedulerConfiguration, overrides: FlagOverrides) -> SchedulerConfiguration:
    """``config`` with the flags laid over it as kube-scheduler does; raises :class:`ConfigError`."""
    given = overrides.given
    le = _replace(config.leader_election, LEADER_FIELDS, given)
    cc, top = config.client_connection, {}
    if not overrides.config_given:
        cc = _replace(cc, CLIENT_FIELDS, given)
        top = {attr: bool(given[f]) for f, attr in PROFILING_FIELDS.items() if f in given}
    if overrides.pod_max_in_unschedulable_pods_s is not None:
        top["pod_max_in_unschedulable_pods_s"] = overrides.pod_max_in_unschedulable_pods_s
    errs: list[ConfigError] = []
    validate_leader_election(le, errs)
    validate_client_connection(cc, errs)
    if errs:
        first = errs[0]
        for other in errs[1:]:
            first.add_note(f"also: {other}")
        raise first
    return dataclasses.replace(config, leader_election=le, client_connection=cc, **top)  # type: ignore[arg-type]


def _replace(
    obj: LeaderElection | ClientConnection, fields: Mapping[str, str], given: Mapping[str, object]
) -> LeaderElection | ClientConnection:  # type: ignore[type-var]
    changes = {attr: given[flag] for flag, attr in fields.items() if flag in given}
    if "burst" in changes:
        changes["burst"] = int(changes["burst"])  # type: ignore[call-overload]
    return dataclasses.replace(obj, **changes) if changes else obj
