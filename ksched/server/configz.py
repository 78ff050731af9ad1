"""``/configz``: ``{"componentconfig": <the effective KubeSchedulerConfiguration>}``, as upstream's
configz registers ``cc.ComponentConfig`` under the name ``componentconfig``.

Encoded here from the loaded :class:`~ksched.config.types.SchedulerConfiguration` with upstream's
field names and Go durations. Profiles carry their scheduler name, percentage and enabled plugins
per extension point with weights; plugin args are not encoded (``pluginConfig`` lists the plugin
names only), because ksched keeps them as typed objects whose upstream encoding belongs to the
configuration layer.
"""

from __future__ import annotations

from typing import Any

from ksched.config.types import SchedulerConfiguration

API_VERSION = "kubescheduler.config.k8s.io/v1"


def go_duration(seconds: float) -> str:
    """A metav1.Duration as Go prints it for whole or fractional seconds (15s, 1.5s, 1m30s)."""
    if seconds >= 60 and float(seconds).is_integer():
        minutes, rest = divmod(int(seconds), 60)
        hours, minutes = divmod(minutes, 60)
        out = (f"{hours}h" if hours else "") + f"{minutes}m{rest}s"
        return out
    return f"{seconds:g}s"


def _profile(p: Any) -> dict[str, Any]:
    plugins = {
        point: {"enabled": [{"name": r.name, "weight": r.weight} for r in refs]}
        for point, refs in p.plugins.items()
    }
    out: dict[str, Any] = {"schedulerName": p.scheduler_name, "plugins": plugins}
    if p.percentage_of_nodes_to_score is not None:
        out["percentageOfNodesToScore"] = p.percentage_of_nodes_to_score
    out["pluginConfig"] = [{"name": name} for name in p.plugin_args]
    return out


def componentconfig(config: SchedulerConfiguration) -> dict[str, Any]:
    le, cc = config.leader_election, config.client_connection
    out: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": "KubeSchedulerConfiguration",
        "parallelism": config.parallelism,
        "leaderElection": {
            "leaderElect": le.leader_elect,
            "leaseDuration": go_duration(le.lease_duration_s),
            "renewDeadline": go_duration(le.renew_deadline_s),
            "retryPeriod": go_duration(le.retry_period_s),
            "resourceLock": le.resource_lock,
            "resourceName": le.resource_name,
            "resourceNamespace": le.resource_namespace,
        },
        "clientConnection": {
            "kubeconfig": cc.kubeconfig,
            "acceptContentTypes": cc.accept_content_types,
            "contentType": cc.content_type,
            "qps": cc.qps,
            "burst": cc.burst,
        },
        "enableProfiling": config.enable_profiling,
        "enableContentionProfiling": config.enable_contention_profiling,
        "podInitialBackoffSeconds": int(config.pod_initial_backoff_s),
        "podMaxBackoffSeconds": int(config.pod_max_backoff_s),
        "profiles": [_profile(p) for p in config.profiles],
        "extenders": [dict(e) for e in config.extenders],
        "delayCacheUntilActive": config.delay_cache_until_active,
    }
    if config.percentage_of_nodes_to_score is not None:
        out["percentageOfNodesToScore"] = config.percentage_of_nodes_to_score
    return out
