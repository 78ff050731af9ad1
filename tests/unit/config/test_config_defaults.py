"""Defaults of KubeSchedulerConfiguration v1.

Ported from upstream ``pkg/scheduler/apis/config/v1/defaults_test.go`` (``TestSchedulerDefaults``:
empty config, no scheduler name, two profiles, parallelism, profiling, backoff; and
``TestPluginArgsDefaults``) and ``default_plugins_test.go`` (``TestApplyFeatureGates`` with the
v1.35 default gates), checked against reference section 5.
"""

from __future__ import annotations

import pytest

from ksched.config import (
    DefaultPreemptionArgs,
    InterPodAffinityArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    PodTopologySpreadArgs,
    ResourceSpec,
    ScoringStrategy,
    VolumeBindingArgs,
    config_from_dict,
    default_config,
)
from ksched.config.defaults import DEFAULT_MULTI_POINT
from ksched.config.names import IN_TREE

HEAD = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
CPU_MEM = (ResourceSpec(name="cpu", weight=1), ResourceSpec(name="memory", weight=1))

EFFECTIVE = {
    "preEnqueue": ["SchedulingGates", "DynamicResources", "DefaultPreemption"],
    "queueSort": ["PrioritySort"],
    "preFilter": [
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
        "DynamicResources",
    ],
    "filter": [
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
        "DynamicResources",
    ],
    "postFilter": ["DynamicResources", "DefaultPreemption"],
    "preScore": [
        "TaintToleration",
        "NodeAffinity",
        "NodeResourcesFit",
        "PodTopologySpread",
        "InterPodAffinity",
        "NodeResourcesBalancedAllocation",
    ],
    "score": [
        "TaintToleration",
        "NodeAffinity",
        "NodeResourcesFit",
        "PodTopologySpread",
        "InterPodAffinity",
        "NodeResourcesBalancedAllocation",
        "ImageLocality",
    ],
    "reserve": ["VolumeBinding", "DynamicResources"],
    "permit": [],
    "preBind": ["VolumeBinding", "DynamicResources"],
    "bind": ["DefaultBinder"],
    "postBind": [],
}
WEIGHTS = {
    "TaintToleration": 3,
    "NodeAffinity": 2,
    "NodeResourcesFit": 1,
    "PodTopologySpread": 2,
    "InterPodAffinity": 2,
    "NodeResourcesBalancedAllocation": 1,
    "ImageLocality": 1,
}


def test_default_multi_point_list_with_v135_gates():
    assert [name for name, _ in DEFAULT_MULTI_POINT] == [
        "SchedulingGates",
        "PrioritySort",
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
        "DynamicResources",
        "DefaultPreemption",
        "NodeResourcesBalancedAllocation",
        "ImageLocality",
        "DefaultBinder",
    ]


def test_empty_config_scalars():
    cfg = default_config()
    assert cfg.parallelism == 16
    # ksched scores every feasible node unless the config sets a percentage (DESIGN.md §3).
    assert cfg.percentage_of_nodes_to_score is None
    assert (cfg.pod_initial_backoff_s, cfg.pod_max_backoff_s) == (1.0, 10.0)
    # Upstream's defaults: /debug is served, behind delegated authorization.
    assert (cfg.enable_profiling, cfg.enable_contention_profiling, cfg.delay_cache_until_active) == (
        True,
        True,
        False,
    )
    le = cfg.leader_election
    assert (le.leader_elect, le.lease_duration_s, le.renew_deadline_s, le.retry_period_s) == (
        True,
        15.0,
        10.0,
        2.0,
    )
    assert (le.resource_lock, le.resource_name, le.resource_namespace) == (
        "leases",
        "kube-scheduler",
        "kube-system",
    )
    cc = cfg.client_connection
    assert (cc.qps, cc.burst, cc.content_type) == (50.0, 100, "application/vnd.kubernetes.protobuf")
    assert cfg.extenders == ()


def test_empty_config_has_one_default_profile_with_effective_lists():
    cfg = default_config()
    assert [p.scheduler_name for p in cfg.profiles] == ["default-scheduler"]
    prof = cfg.profiles[0]
    assert prof.percentage_of_nodes_to_score is None
    assert {ep: [r.name for r in refs] for ep, refs in prof.plugins.items()} == EFFECTIVE
    assert {r.name: r.weight for r in prof.plugins["score"]} == WEIGHTS
    assert dict(prof.score_weights) == WEIGHTS
    assert 100 * sum(prof.score_weights.values()) == 1200


def test_empty_config_plugin_args_defaults():
    args = default_config().profiles[0].plugin_args
    assert args["NodeResourcesFit"] == NodeResourcesFitArgs(
        scoring_strategy=ScoringStrategy(type="LeastAllocated", resources=CPU_MEM)
    )
    assert args["NodeResourcesBalancedAllocation"] == NodeResourcesBalancedAllocationArgs(resources=CPU_MEM)
    assert args["InterPodAffinity"] == InterPodAffinityArgs(hard_pod_affinity_weight=1)
    assert args["PodTopologySpread"] == PodTopologySpreadArgs(defaulting_type="System")
    assert args["DefaultPreemption"] == DefaultPreemptionArgs(
        min_candidate_nodes_percentage=10, min_candidate_nodes_absolute=100
    )
    assert args["VolumeBinding"] == VolumeBindingArgs(bind_timeout_seconds=600)
    assert args["NodeAffinity"].added_affinity is None
    assert "ImageLocality" not in args  # no args type


def test_single_profile_without_name_gets_default_name():
    cfg = config_from_dict({**HEAD, "profiles": [{}]})
    assert cfg.profiles[0].scheduler_name == "default-scheduler"


def test_two_profiles_keep_custom_plugins_and_configs():
    cfg = config_from_dict(
        {
            **HEAD,
            "profiles": [
                {"schedulerName": "default-scheduler", "pluginConfig": [{"name": "FooPlugin"}]},
                {
                    "schedulerName": "custom-scheduler",
                    "plugins": {
                        "bind": {"enabled": [{"name": "BarPlugin"}], "disabled": [{"name": "DefaultBinder"}]}
                    },
                },
            ],
        },
        known_plugins={*IN_TREE, "BarPlugin"},
    )
    assert [r.name for r in cfg.profiles[1].plugins["bind"]] == ["BarPlugin"]
    assert "FooPlugin" not in cfg.profiles[0].plugin_args  # not enabled: ignored, as upstream
    assert cfg.profiles[1].plugin_args["NodeResourcesFit"] == cfg.profiles[0].plugin_args["NodeResourcesFit"]


@pytest.mark.parametrize(
    ("extra", "attr", "want"),
    [
        pytest.param({"parallelism": 16}, "parallelism", 16, id="the default parallelism, explicit"),
        pytest.param(
            {"enableProfiling": False},
            "enable_contention_profiling",
            False,
            id="contention profiling defaults to off when profiling is off",
        ),
        pytest.param(
            {"enableProfiling": False, "enableContentionProfiling": True},
            "enable_contention_profiling",
            True,
            id="contention profiling can be set without profiling",
        ),
        pytest.param(
            {"podInitialBackoffSeconds": 2, "podMaxBackoffSeconds": 5},
            "pod_max_backoff_s",
            5.0,
            id="backoff seconds are kept",
        ),
        pytest.param(
            {"percentageOfNodesToScore": 50},
            "percentage_of_nodes_to_score",
            50,
            id="percentage of nodes to score is kept",
        ),
        pytest.param(
            {"clientConnection": {"qps": 0, "burst": 0}},
            "client_connection",
            default_config().client_connection,
            id="zero qps and burst take the defaults",
        ),
    ],
)
def test_scalar_defaults(extra, attr, want):
    assert getattr(config_from_dict({**HEAD, **extra}), attr) == want


def test_leader_election_durations_are_parsed_and_zero_means_default():
    cfg = config_from_dict(
        {
            **HEAD,
            "leaderElection": {
                "leaseDuration": "1m30s",
                "renewDeadline": "0s",
                "retryPeriod": "500ms",
                "resourceName": "",
            },
        }
    )
    le = cfg.leader_election
    assert (le.lease_duration_s, le.renew_deadline_s, le.retry_period_s) == (90.0, 10.0, 0.5)
    assert le.resource_name == "kube-scheduler"


def profile_args(name, args):
    return {**HEAD, "profiles": [{"schedulerName": "s", "pluginConfig": [{"name": name, "args": args}]}]}


@pytest.mark.parametrize(
    ("name", "args", "want"),
    [
        pytest.param(
            "InterPodAffinity",
            {},
            InterPodAffinityArgs(hard_pod_affinity_weight=1),
            id="InterPodAffinityArgs empty",
        ),
        pytest.param(
            "InterPodAffinity",
            {"hardPodAffinityWeight": 5},
            InterPodAffinityArgs(hard_pod_affinity_weight=5),
            id="InterPodAffinityArgs explicit 5",
        ),
        pytest.param(
            "NodeResourcesBalancedAllocation",
            {"resources": [{"name": "example.com/gpu"}]},
            NodeResourcesBalancedAllocationArgs(resources=(ResourceSpec(name="example.com/gpu", weight=1),)),
            id="BalancedAllocation resource weight 0 becomes 1",
        ),
        pytest.param(
            "NodeResourcesFit",
            {"scoringStrategy": {"type": "MostAllocated"}},
            NodeResourcesFitArgs(scoring_strategy=ScoringStrategy(type="MostAllocated", resources=CPU_MEM)),
            id="NodeResourcesFit strategy without resources gets cpu and memory",
        ),
        pytest.param(
            "NodeResourcesFit",
            {"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 0}]}},
            NodeResourcesFitArgs(
                scoring_strategy=ScoringStrategy(
                    type="LeastAllocated", resources=(ResourceSpec(name="cpu", weight=1),)
                )
            ),
            id="NodeResourcesFit resource weight 0 becomes 1",
        ),
        pytest.param(
            "PodTopologySpread",
            {},
            PodTopologySpreadArgs(defaulting_type="System"),
            id="PodTopologySpreadArgs empty defaults to System",
        ),
        pytest.param(
            "DefaultPreemption",
            {"minCandidateNodesAbsolute": 50},
            DefaultPreemptionArgs(min_candidate_nodes_percentage=10, min_candidate_nodes_absolute=50),
            id="DefaultPreemptionArgs partial",
        ),
        pytest.param(
            "VolumeBinding",
            {"bindTimeoutSeconds": 0},
            VolumeBindingArgs(bind_timeout_seconds=0),
            id="VolumeBindingArgs zero timeout is kept",
        ),
    ],
)
def test_plugin_args_defaults(name, args, want):
    cfg = config_from_dict(profile_args(name, {"kind": f"{name}Args", **args}))
    assert cfg.profiles[0].plugin_args[name] == want
