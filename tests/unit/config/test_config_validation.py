"""Validation of the whole configuration.

Ported from upstream ``pkg/scheduler/apis/config/validation/validation_test.go``
(``TestValidateKubeSchedulerConfigurationV1``: 21 scenarios, as data over a valid base config)
plus the framework start-up checks upstream makes later (unknown plugins, weight overflow).
"""

from __future__ import annotations

import copy

import pytest

from ksched.config import config_from_dict
from ksched.config.names import IN_TREE
from ksched.errors import ConfigError

KNOWN = {*IN_TREE, "CustomSort", "CustomBind", "AnotherSort"}

VALID = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "parallelism": 16,
    "clientConnection": {
        "acceptContentTypes": "application/json",
        "contentType": "application/json",
        "qps": 10,
        "burst": 10,
    },
    "leaderElection": {
        "resourceLock": "leases",
        "leaderElect": True,
        "leaseDuration": "30s",
        "renewDeadline": "15s",
        "retryPeriod": "5s",
        "resourceNamespace": "name",
        "resourceName": "name",
    },
    "podInitialBackoffSeconds": 1,
    "podMaxBackoffSeconds": 1,
    "profiles": [
        {
            "schedulerName": "me",
            "percentageOfNodesToScore": 35,
            "plugins": {
                "queueSort": {"enabled": [{"name": "CustomSort"}], "disabled": [{"name": "*"}]},
                "score": {"disabled": [{"name": "*"}]},
            },
            "pluginConfig": [
                {
                    "name": "DefaultPreemption",
                    "args": {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100},
                }
            ],
        },
        {
            "schedulerName": "other",
            "percentageOfNodesToScore": 35,
            "plugins": {
                "queueSort": {"enabled": [{"name": "CustomSort"}], "disabled": [{"name": "*"}]},
                "bind": {"enabled": [{"name": "CustomBind"}]},
            },
        },
    ],
    "extenders": [{"prioritizeVerb": "prioritize", "weight": 1}],
}


def mutate(fn):
    cfg = copy.deepcopy(VALID)
    fn(cfg)
    return cfg


def _set(path, value):
    def fn(cfg):
        node = cfg
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return fn


CASES = [
    pytest.param(VALID, None, id="good"),
    pytest.param(mutate(_set(["parallelism"], 0)), "parallelism", id="bad parallelism value"),
    pytest.param(
        mutate(_set(["leaderElection", "resourceLock"], "configmap")),
        "leaderElection.resourceLock",
        id="resource lock is not leases",
    ),
    pytest.param(
        mutate(_set(["leaderElection", "leaseDuration"], "10s")),
        "leaderElection.leaseDuration",
        id="lease duration not above renew deadline",
    ),
    pytest.param(
        mutate(_set(["leaderElection", "retryPeriod"], "13s")),
        "leaderElection.renewDeadline",
        id="renew deadline not above 1.2 times retry period",
    ),
    pytest.param(
        mutate(_set(["clientConnection", "burst"], -1)), "clientConnection.burst", id="negative burst"
    ),
    pytest.param(
        mutate(_set(["percentageOfNodesToScore"], 101)),
        "percentageOfNodesToScore",
        id="percentage of nodes to score above 100",
    ),
    pytest.param(
        mutate(_set(["percentageOfNodesToScore"], -1)),
        "percentageOfNodesToScore",
        id="negative percentage of nodes to score",
    ),
    pytest.param(
        mutate(_set(["profiles", 1, "schedulerName"], "")),
        "profiles[1].schedulerName",
        id="scheduler name not set",
    ),
    pytest.param(
        mutate(_set(["profiles", 0, "schedulerName"], "other")),
        "profiles[1].schedulerName",
        id="repeated scheduler name",
    ),
    pytest.param(
        mutate(_set(["profiles", 1, "percentageOfNodesToScore"], 101)),
        "profiles[1].percentageOfNodesToScore",
        id="profile percentage above 100",
    ),
    pytest.param(
        mutate(_set(["profiles", 1, "percentageOfNodesToScore"], -1)),
        "profiles[1].percentageOfNodesToScore",
        id="negative profile percentage",
    ),
    pytest.param(
        mutate(_set(["profiles", 1, "plugins", "queueSort", "enabled", 0, "name"], "AnotherSort")),
        "profiles[1].plugins.queueSort",
        id="different queue sort",
    ),
    pytest.param(
        mutate(lambda c: c["profiles"][0].pop("plugins")),
        "profiles[1].plugins.queueSort",
        id="one empty queue sort",
    ),
    pytest.param(
        mutate(_set(["extenders", 0, "weight"], -1)), "extenders[0].weight", id="extender negative weight"
    ),
    pytest.param(
        mutate(
            _set(
                ["extenders", 0, "managedResources"],
                [{"name": "example.com/foo"}, {"name": "example.com/foo"}],
            )
        ),
        "extenders[0].managedResources[1].name",
        id="extender duplicate managed resources",
    ),
    pytest.param(
        mutate(
            lambda c: c["extenders"].extend([{"bindVerb": "bar"}]) or c["extenders"][0].update(bindVerb="foo")
        ),
        "extenders",
        id="extender duplicate bind",
    ),
    pytest.param(
        mutate(_set(["profiles", 0, "pluginConfig", 0, "args", "minCandidateNodesPercentage"], 200)),
        "profiles[0].pluginConfig[0].args.minCandidateNodesPercentage",
        id="invalid node percentage",
    ),
    pytest.param(
        mutate(_set(["profiles", 0, "pluginConfig", 0, "args"], {"kind": "InterPodAffinityArgs"})),
        "profiles[0].pluginConfig[0].args",
        id="invalid plugin args",
    ),
    pytest.param(
        mutate(_set(["profiles", 0, "pluginConfig"], [{"name": "config"}, {"name": "config"}])),
        "profiles[0].pluginConfig[1]",
        id="duplicated plugin config",
    ),
    pytest.param(
        mutate(
            _set(
                ["profiles"],
                [
                    {
                        "schedulerName": "me",
                        "plugins": {
                            "queueSort": {"enabled": [{"name": "PrioritySort"}], "disabled": [{"name": "*"}]}
                        },
                        "pluginConfig": [{"name": "PrioritySort"}],
                    },
                    {
                        "schedulerName": "other",
                        "plugins": {
                            "queueSort": {"enabled": [{"name": "CustomSort"}], "disabled": [{"name": "*"}]}
                        },
                        "pluginConfig": [{"name": "CustomSort"}],
                    },
                ],
            )
        ),
        "profiles[1].plugins.queueSort",
        id="mismatch queue sort",
    ),
    pytest.param(
        mutate(
            lambda c: c["profiles"][0]["plugins"]["score"].update(
                enabled=[{"name": "PodTopologySpread", "weight": 2}]
            )
        ),
        None,
        id="valid plugins",
    ),
    pytest.param(
        mutate(_set(["podInitialBackoffSeconds"], 0)), "podInitialBackoffSeconds", id="initial backoff zero"
    ),
    pytest.param(
        mutate(_set(["podMaxBackoffSeconds"], 0)), "podMaxBackoffSeconds", id="max backoff below initial"
    ),
    pytest.param(
        mutate(lambda c: c["profiles"][0]["plugins"].update(filter={"enabled": [{"name": "EBSLimits"}]})),
        "profiles[0].plugins.filter.enabled[0]",
        id="plugin removed in v1",
    ),
]


@pytest.mark.parametrize(("doc", "want_path"), CASES)
def test_validate_configuration(doc, want_path):
    if want_path is None:
        config_from_dict(doc, known_plugins=KNOWN)
        return
    with pytest.raises(ConfigError) as info:
        config_from_dict(doc, known_plugins=KNOWN)
    assert info.value.path == want_path


def base(**profile):
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "s", **profile}],
    }


def error(doc, **kw):
    with pytest.raises(ConfigError) as info:
        config_from_dict(doc, **kw)
    return info.value


def test_unsupported_scoring_strategy_type_message_is_exact():
    doc = base(
        pluginConfig=[
            {"name": "DefaultPreemption", "args": {}},
            {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "Foo"}}},
        ]
    )
    err = error(doc)
    want = 'profiles[0].pluginConfig[1].args.scoringStrategy.type: unsupported value "Foo"'
    assert f"{err.path}: {err.problem}" == want
    assert str(err) == f"<config>: {want}"
    assert any("LeastAllocated" in note for note in err.__notes__)


def test_unknown_plugin_name():
    err = error(base(plugins={"score": {"enabled": [{"name": "ImageLocality"}, {"name": "Foo"}]}}))
    assert str(err) == '<config>: profiles[0].plugins.score.enabled[1].name: unknown plugin "Foo"'


def test_unknown_plugin_in_multi_point():
    err = error(base(plugins={"multiPoint": {"enabled": [{"name": "Foo"}]}}))
    assert err.path == "profiles[0].plugins.multiPoint.enabled[0].name"


def test_known_plugins_parameter_accepts_out_of_tree_names():
    cfg = config_from_dict(
        base(plugins={"filter": {"enabled": [{"name": "Foo"}]}}), known_plugins={*IN_TREE, "Foo"}
    )
    assert [r.name for r in cfg.profiles[0].plugins["filter"]][
        -1
    ] == "Foo"  # explicit, not in MultiPoint: last


@pytest.mark.parametrize(
    "weight",
    [pytest.param(2**31, id="weight above int32"), pytest.param(-(2**31) - 1, id="weight below int32")],
)
def test_score_weight_out_of_range(weight):
    err = error(base(plugins={"score": {"enabled": [{"name": "ImageLocality", "weight": weight}]}}))
    assert err.path == "profiles[0].plugins.score.enabled[0].weight"
    assert "out of range" in err.problem


def test_largest_int32_weight_is_accepted_as_upstream():
    cfg = config_from_dict(
        base(plugins={"score": {"enabled": [{"name": "ImageLocality", "weight": 2**31 - 1}]}})
    )
    assert cfg.profiles[0].score_weights["ImageLocality"] == 2**31 - 1


def test_negative_weight_is_accepted_as_upstream():
    cfg = config_from_dict(base(plugins={"score": {"enabled": [{"name": "ImageLocality", "weight": -3}]}}))
    assert cfg.profiles[0].score_weights["ImageLocality"] == -3


def test_all_problems_are_reported():
    doc = base(percentageOfNodesToScore=101)
    doc["parallelism"] = 0
    err = error(doc)
    assert err.path == "parallelism"
    assert any("percentageOfNodesToScore" in note for note in err.__notes__)


def test_plugin_config_for_a_disabled_plugin_is_validated_but_ignored():
    doc = base(
        plugins={"multiPoint": {"disabled": [{"name": "InterPodAffinity"}]}},
        pluginConfig=[{"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 5}}],
    )
    assert "InterPodAffinity" not in config_from_dict(doc).profiles[0].plugin_args
    doc["profiles"][0]["pluginConfig"][0]["args"]["hardPodAffinityWeight"] = 500
    assert error(doc).path == "profiles[0].pluginConfig[0].args.hardPodAffinityWeight"


def test_leader_election_checks_are_skipped_when_not_electing():
    doc = base()
    doc["leaderElection"] = {"leaderElect": False, "leaseDuration": "1s", "renewDeadline": "5s"}
    assert config_from_dict(doc).leader_election.leader_elect is False
