"""The effective configuration as a KubeSchedulerConfiguration v1 document (``--write-config-to``).

Field names and Go duration strings as upstream encodes them. Each profile is written with its
effective plugin list per extension point (``disabled: [{name: "*"}]`` first, then the enabled
plugins in order, with their score weights), and its args as ``pluginConfig``, so that loading the
written file gives back the same configuration (a test pins the round trip). Upstream writes the
``multiPoint`` form instead; both describe the same profile.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import yaml

from ksched.config import names as n
from ksched.config.defaults import API_VERSION, KIND
from ksched.config.durations import format_go_duration
from ksched.config.types import Profile, SchedulerConfiguration, ScoringStrategy


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _value(value: object) -> Any:
    if isinstance(value, ScoringStrategy):
        out: dict[str, Any] = {"type": value.type, "resources": _value(value.resources)}
        if value.shape:
            out["requestedToCapacityRatio"] = {"shape": _value(value.shape)}
        return out
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {}
        for f in dataclasses.fields(value):
            item = getattr(value, f.name)
            if item in (None, ()):
                continue
            if f.name.endswith("_s"):  # seconds as a float: a metav1.Duration in the file
                out[_camel(f.name[:-2])] = format_go_duration(item)
            else:
                out[_camel(f.name)] = _value(item)
        return out
    if isinstance(value, Mapping):
        return {k: _value(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_value(v) for v in value]
    return value


def _profile(profile: Profile) -> dict[str, Any]:
    plugins: dict[str, Any] = {}
    for ep in n.SPECIFIC_EXTENSION_POINTS:
        refs = profile.plugins.get(ep, ())
        enabled = [{"name": r.name, **({"weight": r.weight} if ep == n.SCORE else {})} for r in refs]
        plugins[ep] = {"enabled": enabled, "disabled": [{"name": "*"}]}
    out: dict[str, Any] = {"schedulerName": profile.scheduler_name, "plugins": plugins}
    if profile.percentage_of_nodes_to_score is not None:
        out["percentageOfNodesToScore"] = profile.percentage_of_nodes_to_score
    out["pluginConfig"] = [{"name": name, "args": _value(args)} for name, args in profile.plugin_args.items()]
    return out


def config_to_dict(config: SchedulerConfiguration) -> dict[str, Any]:
    """``config`` as the v1 document upstream's encoder writes (see the module docstring)."""
    le, cc = config.leader_election, config.client_connection
    doc: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "clientConnection": {
            "acceptContentTypes": cc.accept_content_types,
            "burst": cc.burst,
            "contentType": cc.content_type,
            "kubeconfig": cc.kubeconfig,
            "qps": cc.qps,
        },
        "enableContentionProfiling": config.enable_contention_profiling,
        "enableProfiling": config.enable_profiling,
        "leaderElection": {
            "leaderElect": le.leader_elect,
            "leaseDuration": format_go_duration(le.lease_duration_s),
            "renewDeadline": format_go_duration(le.renew_deadline_s),
            "resourceLock": le.resource_lock,
            "resourceName": le.resource_name,
            "resourceNamespace": le.resource_namespace,
            "retryPeriod": format_go_duration(le.retry_period_s),
        },
        "parallelism": config.parallelism,
        "podInitialBackoffSeconds": int(config.pod_initial_backoff_s),
        "podMaxBackoffSeconds": int(config.pod_max_backoff_s),
        "profiles": [_profile(p) for p in config.profiles],
        "delayCacheUntilActive": config.delay_cache_until_active,
    }
    if config.percentage_of_nodes_to_score is not None:
        doc["percentageOfNodesToScore"] = config.percentage_of_nodes_to_score
    if config.extenders:
        doc["extenders"] = [dict(e) for e in config.extenders]
    return doc


def config_to_yaml(config: SchedulerConfiguration) -> str:
    return yaml.safe_dump(config_to_dict(config), sort_keys=False)
