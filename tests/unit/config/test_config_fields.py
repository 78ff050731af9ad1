"""Every KubeSchedulerConfiguration v1 field (staging/src/k8s.io/kube-scheduler/config/v1/types.go
and types_pluginargs.go) is acted on or refused at load with a message naming its path.

One row per field: a config setting it, then either the attribute it lands in (acted on) or the
path and words of the refusal. ``extenders`` is tested with the extenders (not here).
"""

from __future__ import annotations

from typing import Any

import pytest

from ksched.config import config_from_dict
from ksched.errors import ConfigError

HEADER = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def _args(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "profiles": [{"schedulerName": "default-scheduler", "pluginConfig": [{"name": name, "args": args}]}]
    }


def _plugin_args(cfg: Any, name: str) -> Any:
    return cfg.profiles[0].plugin_args[name]


ACTED_ON = [
    pytest.param({"parallelism": 16}, lambda c: c.parallelism, 16, id="parallelism (the default)"),
    pytest.param(
        {"leaderElection": {"leaderElect": False}},
        lambda c: c.leader_election.leader_elect,
        False,
        id="leaderElection.leaderElect",
    ),
    pytest.param(
        {"leaderElection": {"leaseDuration": "30s"}},
        lambda c: c.leader_election.lease_duration_s,
        30.0,
        id="leaderElection.leaseDuration",
    ),
    pytest.param(
        {"leaderElection": {"renewDeadline": "5s"}},
        lambda c: c.leader_election.renew_deadline_s,
        5.0,
        id="leaderElection.renewDeadline",
    ),
    pytest.param(
        {"leaderElection": {"retryPeriod": "1s"}},
        lambda c: c.leader_election.retry_period_s,
        1.0,
        id="leaderElection.retryPeriod",
    ),
    pytest.param(
        {"leaderElection": {"resourceLock": "leases"}},
        lambda c: c.leader_election.resource_lock,
        "leases",
        id="leaderElection.resourceLock leases",
    ),
    pytest.param(
        {"leaderElection": {"resourceName": "x"}},
        lambda c: c.leader_election.resource_name,
        "x",
        id="leaderElection.resourceName",
    ),
    pytest.param(
        {"leaderElection": {"resourceNamespace": "y"}},
        lambda c: c.leader_election.resource_namespace,
        "y",
        id="leaderElection.resourceNamespace",
    ),
    pytest.param(
        {"clientConnection": {"kubeconfig": "/kc"}},
        lambda c: c.client_connection.kubeconfig,
        "/kc",
        id="clientConnection.kubeconfig",
    ),
    pytest.param(
        {"clientConnection": {"qps": 200}}, lambda c: c.client_connection.qps, 200, id="clientConnection.qps"
    ),
    pytest.param(
        {"clientConnection": {"burst": 300}},
        lambda c: c.client_connection.burst,
        300,
        id="clientConnection.burst",
    ),
    pytest.param(
        {"clientConnection": {"contentType": "application/json"}},
        lambda c: c.client_connection.content_type,
        "application/json",
        id="clientConnection.contentType",
    ),
    pytest.param(
        {"clientConnection": {"acceptContentTypes": "application/json"}},
        lambda c: c.client_connection.accept_content_types,
        "application/json",
        id="clientConnection.acceptContentTypes json",
    ),
    pytest.param({"enableProfiling": True}, lambda c: c.enable_profiling, True, id="enableProfiling"),
    pytest.param(
        {"enableProfiling": True, "enableContentionProfiling": False},
        lambda c: c.enable_contention_profiling,
        False,
        id="enableContentionProfiling",
    ),
    pytest.param(
        {"percentageOfNodesToScore": 30},
        lambda c: c.percentage_of_nodes_to_score,
        30,
        id="percentageOfNodesToScore",
    ),
    pytest.param(
        {"podInitialBackoffSeconds": 2}, lambda c: c.pod_initial_backoff_s, 2.0, id="podInitialBackoffSeconds"
    ),
    pytest.param(
        {"podMaxBackoffSeconds": 20}, lambda c: c.pod_max_backoff_s, 20.0, id="podMaxBackoffSeconds"
    ),
    pytest.param(
        {"delayCacheUntilActive": True},
        lambda c: c.delay_cache_until_active,
        True,
        id="delayCacheUntilActive (the runner starts a standby's informers on leading)",
    ),
    pytest.param(
        {"profiles": [{"schedulerName": "s1", "percentageOfNodesToScore": 10}]},
        lambda c: (c.profiles[0].scheduler_name, c.profiles[0].percentage_of_nodes_to_score),
        ("s1", 10),
        id="profiles[].schedulerName and percentageOfNodesToScore",
    ),
    pytest.param(
        {"profiles": [{"schedulerName": "s", "plugins": {"score": {"disabled": [{"name": "*"}]}}}]},
        lambda c: c.profiles[0].plugins["score"],
        (),
        id="profiles[].plugins",
    ),
    pytest.param(
        _args("DefaultPreemption", {"minCandidateNodesPercentage": 20, "minCandidateNodesAbsolute": 5}),
        lambda c: (
            _plugin_args(c, "DefaultPreemption").min_candidate_nodes_percentage,
            _plugin_args(c, "DefaultPreemption").min_candidate_nodes_absolute,
        ),
        (20, 5),
        id="DefaultPreemptionArgs",
    ),
    pytest.param(
        _args("InterPodAffinity", {"hardPodAffinityWeight": 5, "ignorePreferredTermsOfExistingPods": True}),
        lambda c: (
            _plugin_args(c, "InterPodAffinity").hard_pod_affinity_weight,
            _plugin_args(c, "InterPodAffinity").ignore_preferred_terms_of_existing_pods,
        ),
        (5, True),
        id="InterPodAffinityArgs",
    ),
    pytest.param(
        _args(
            "NodeResourcesFit",
            {
                "ignoredResources": ["a.io/x"],
                "ignoredResourceGroups": ["b.io"],
                "scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 2}]},
            },
        ),
        lambda c: (
            _plugin_args(c, "NodeResourcesFit").ignored_resources,
            _plugin_args(c, "NodeResourcesFit").ignored_resource_groups,
            _plugin_args(c, "NodeResourcesFit").scoring_strategy.type,
        ),
        (("a.io/x",), ("b.io",), "MostAllocated"),
        id="NodeResourcesFitArgs",
    ),
    pytest.param(
        _args("NodeResourcesBalancedAllocation", {"resources": [{"name": "memory", "weight": 1}]}),
        lambda c: _plugin_args(c, "NodeResourcesBalancedAllocation").resources[0].name,
        "memory",
        id="NodeResourcesBalancedAllocationArgs",
    ),
    pytest.param(
        _args("PodTopologySpread", {"defaultingType": "List", "defaultConstraints": []}),
        lambda c: _plugin_args(c, "PodTopologySpread").defaulting_type,
        "List",
        id="PodTopologySpreadArgs",
    ),
    pytest.param(
        _args("NodeAffinity", {"addedAffinity": {}}),
        lambda c: _plugin_args(c, "NodeAffinity").added_affinity,
        {},
        id="NodeAffinityArgs",
    ),
    pytest.param(
        _args("VolumeBinding", {"bindTimeoutSeconds": 30}),
        lambda c: _plugin_args(c, "VolumeBinding").bind_timeout_seconds,
        30,
        id="VolumeBindingArgs",
    ),
    pytest.param(
        _args("DynamicResources", {"filterTimeout": "0s"}),
        lambda c: _plugin_args(c, "DynamicResources").filter_timeout_s,
        0.0,
        id="DynamicResourcesArgs.filterTimeout 0s",
    ),
]


@pytest.mark.parametrize(("doc", "read", "want"), ACTED_ON)
def test_acted_on(doc: dict[str, Any], read: Any, want: Any) -> None:
    assert read(config_from_dict({**HEADER, **doc})) == want


REFUSED = [
    pytest.param({"parallelism": 8}, "parallelism", "one vectorized pass", id="parallelism other than 16"),
    pytest.param({"parallelism": 0}, "parallelism", "greater than zero", id="parallelism 0 (upstream)"),
    pytest.param(
        {"leaderElection": {"resourceLock": "endpointsleases"}},
        "leaderElection.resourceLock",
        'resourceLock value must be "leases"',
        id="resourceLock other than leases",
    ),
    pytest.param(
        {"clientConnection": {"contentType": "application/cbor"}},
        "clientConnection.contentType",
        "ksched sends application/json",
        id="contentType other than json/protobuf",
    ),
    pytest.param(
        {"clientConnection": {"acceptContentTypes": "application/yaml"}},
        "clientConnection.acceptContentTypes",
        "decodes application/json only",
        id="acceptContentTypes",
    ),
    pytest.param(
        {"podMaxInUnschedulablePodsDuration": "1m"},
        "podMaxInUnschedulablePodsDuration",
        "unknown field",
        id="podMaxInUnschedulablePodsDuration is a flag, not a v1 field",
    ),
    pytest.param(
        {"healthzBindAddress": "0.0.0.0:10251"},
        "healthzBindAddress",
        "unknown field",
        id="a v1beta field removed in v1",
    ),
    pytest.param({"x": 1}, "x", "unknown field", id="an unknown top-level field"),
    pytest.param(
        {"leaderElection": {"x": 1}}, "leaderElection.x", "unknown field", id="unknown nested field"
    ),
    pytest.param(
        _args("NodeName", {"x": 1}),
        "profiles[0].pluginConfig[0].args",
        "takes no args",
        id="args for a plugin without args",
    ),
    pytest.param(
        _args("DynamicResources", {"filterTimeout": "5s"}),
        "profiles[0].pluginConfig[0].args.filterTimeout",
        "has no timer",
        id="DynamicResourcesArgs.filterTimeout other than 0s/10s",
    ),
    pytest.param(
        _args("DynamicResources", {"bindingTimeout": "5s"}),
        "profiles[0].pluginConfig[0].args.bindingTimeout",
        "DRADeviceBindingConditions",
        id="DynamicResourcesArgs.bindingTimeout",
    ),
    pytest.param(
        _args("VolumeBinding", {"shape": [{"utilization": 0, "score": 0}]}),
        "profiles[0].pluginConfig[0].args.shape",
        "StorageCapacityScoring",
        id="VolumeBindingArgs.shape",
    ),
    pytest.param(
        _args("DefaultPreemption", {"y": 1}),
        "profiles[0].pluginConfig[0].args.y",
        "unknown field",
        id="unknown args field",
    ),
]


@pytest.mark.parametrize(("doc", "path", "words"), REFUSED)
def test_refused(doc: dict[str, Any], path: str, words: str) -> None:
    with pytest.raises(ConfigError) as err:
        config_from_dict({**HEADER, **doc})
    assert err.value.path == path
    assert words in err.value.problem
