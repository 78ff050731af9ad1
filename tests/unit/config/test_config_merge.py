"""mergePluginSet and MultiPoint expansion.

Ported from upstream ``pkg/scheduler/apis/config/v1/default_plugins_test.go`` (``TestMergePlugins``,
all 13 cases, as data) plus expansion cases that follow ``expandMultiPointPlugins`` in
``pkg/scheduler/framework/runtime/framework.go`` (ordering, overrides, disabling, weights).
"""

from __future__ import annotations

import pytest

from ksched.config import config_from_dict
from ksched.config.merge import PluginEntry, PluginSet, merge_plugin_set
from ksched.config.names import IN_TREE
from ksched.errors import ConfigError


def ps(enabled=(), disabled=()):
    """PluginSet from ``"Name"`` or ``("Name", weight)`` items."""
    entries = tuple(
        PluginEntry(name=e, weight=None) if isinstance(e, str) else PluginEntry(name=e[0], weight=e[1])
        for e in enabled
    )
    return PluginSet(enabled=entries, disabled=tuple(disabled))


D12 = ps(["DefaultPlugin1", "DefaultPlugin2"])
P123 = ps(["Plugin1", "Plugin2", "Plugin3"])

MERGE_CASES = [
    pytest.param(
        D12,
        ps(["CustomPlugin"]),
        ps(["DefaultPlugin1", "DefaultPlugin2", "CustomPlugin"]),
        id="a custom plugin is appended after the defaults",
    ),
    pytest.param(
        D12,
        ps(["CustomPlugin", "DefaultPlugin2"], ["DefaultPlugin2"]),
        ps(["DefaultPlugin1", "CustomPlugin", "DefaultPlugin2"], ["DefaultPlugin2"]),
        id="disabling a default and re-enabling it moves it after a custom plugin",
    ),
    pytest.param(
        D12,
        ps(["CustomPlugin", "DefaultPlugin1", "DefaultPlugin2"], ["*"]),
        ps(["CustomPlugin", "DefaultPlugin1", "DefaultPlugin2"], ["*"]),
        id="disabling star and re-enabling inserts before all defaults",
    ),
    pytest.param(
        D12,
        ps(["DefaultPlugin2", "DefaultPlugin1"], ["*"]),
        ps(["DefaultPlugin2", "DefaultPlugin1"], ["*"]),
        id="disabling star and re-enabling reorders the defaults",
    ),
    pytest.param(D12, PluginSet(), D12, id="no custom plugins keeps the defaults"),
    pytest.param(
        P123,
        ps([("Plugin1", 2), ("Plugin3", 3)]),
        ps([("Plugin1", 2), "Plugin2", ("Plugin3", 3)]),
        id="a custom plugin with a default's name overrides it in place",
    ),
    pytest.param(
        P123,
        ps([("Plugin2", 2), ("Plugin1", 1)]),
        ps([("Plugin1", 1), ("Plugin2", 2), "Plugin3"]),
        id="overrides keep the default order",
    ),
    pytest.param(
        P123,
        ps(["Plugin1", ("Plugin2", 2), "Plugin3", ("Plugin2", 4)]),
        ps(["Plugin1", ("Plugin2", 4), "Plugin3", ("Plugin2", 2)]),
        id="a repeated custom plugin: the last replaces the default, the first is appended",
    ),
    pytest.param(
        D12,
        ps(["CustomPlugin"]),
        ps(["DefaultPlugin1", "DefaultPlugin2", "CustomPlugin"]),
        id="a custom MultiPoint plugin is appended",
    ),
    pytest.param(
        D12,
        ps(["CustomPlugin", "CustomPlugin2"], ["DefaultPlugin2"]),
        ps(["DefaultPlugin1", "CustomPlugin", "CustomPlugin2"], ["DefaultPlugin2"]),
        id="a disabled default MultiPoint plugin is dropped",
    ),
    pytest.param(
        ps(["DefaultPlugin"]),
        ps([("DefaultPlugin", 5)]),
        ps([("DefaultPlugin", 5)]),
        id="a default MultiPoint plugin is overridden with a custom weight",
    ),
    pytest.param(
        ps(["DefaultPlugin"], ["DefaultPlugin2"]),
        ps(["CustomPlugin"]),
        ps(["DefaultPlugin", "CustomPlugin"], ["DefaultPlugin2"]),
        id="disabled plugins of the default set are kept in the merged set",
    ),
    pytest.param(
        ps(["DefaultPlugin"]),
        ps([], ["DefaultPlugin"]),
        ps([], ["DefaultPlugin"]),
        id="a set with only disabled plugins is merged",
    ),
]


@pytest.mark.parametrize(("default", "custom", "want"), MERGE_CASES)
def test_merge_plugin_set(default, custom, want):
    assert merge_plugin_set(default, custom) == want


def doc(**plugins):
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "s", "plugins": plugins}],
    }


def names(cfg, ep):
    return [p.name for p in cfg.profiles[0].plugins[ep]]


def test_score_weight_override_via_score_enabled():
    cfg = config_from_dict(doc(score={"enabled": [{"name": "TaintToleration", "weight": 7}]}))
    prof = cfg.profiles[0]
    assert prof.score_weights["TaintToleration"] == 7
    # explicitly enabled at score: ordered before the MultiPoint entries
    assert names(cfg, "score")[0] == "TaintToleration"
    assert len(names(cfg, "score")) == 7


def test_score_weight_override_via_multi_point_keeps_order():
    cfg = config_from_dict(doc(multiPoint={"enabled": [{"name": "ImageLocality", "weight": 9}]}))
    assert names(cfg, "score")[-1] == "ImageLocality"
    assert cfg.profiles[0].score_weights["ImageLocality"] == 9


def test_zero_weight_becomes_one():
    cfg = config_from_dict(doc(score={"enabled": [{"name": "NodeAffinity", "weight": 0}]}))
    assert cfg.profiles[0].score_weights["NodeAffinity"] == 1


def test_disable_star_at_score_drops_all_default_scores():
    cfg = config_from_dict(doc(score={"disabled": [{"name": "*"}]}))
    assert names(cfg, "score") == []
    assert cfg.profiles[0].score_weights == {}
    assert "TaintToleration" in names(cfg, "filter")  # other points untouched


def test_disable_star_then_enable_one_at_score():
    cfg = config_from_dict(
        doc(score={"disabled": [{"name": "*"}], "enabled": [{"name": "ImageLocality", "weight": 5}]})
    )
    assert names(cfg, "score") == ["ImageLocality"]
    assert cfg.profiles[0].score_weights == {"ImageLocality": 5}


def test_disable_star_at_multi_point_drops_every_default():
    cfg = config_from_dict(
        doc(
            multiPoint={
                "disabled": [{"name": "*"}],
                "enabled": [{"name": "PrioritySort"}, {"name": "DefaultBinder"}],
            }
        )
    )
    assert names(cfg, "queueSort") == ["PrioritySort"]
    assert names(cfg, "bind") == ["DefaultBinder"]
    assert names(cfg, "filter") == []
    assert cfg.profiles[0].plugin_args == {}


def test_plugin_disabled_at_one_point_is_not_expanded_there():
    cfg = config_from_dict(doc(preScore={"disabled": [{"name": "NodeAffinity"}]}))
    assert "NodeAffinity" not in names(cfg, "preScore")
    assert "NodeAffinity" in names(cfg, "score")
    assert "NodeAffinity" in names(cfg, "filter")


def test_plugin_disabled_at_multi_point_is_gone_everywhere():
    cfg = config_from_dict(doc(multiPoint={"disabled": [{"name": "NodeAffinity"}]}))
    for ep, refs in cfg.profiles[0].plugins.items():
        assert "NodeAffinity" not in [r.name for r in refs], ep
    assert "NodeAffinity" not in cfg.profiles[0].plugin_args


def test_explicit_filter_plugin_runs_before_multi_point_plugins():
    cfg = config_from_dict(doc(filter={"enabled": [{"name": "NodePorts"}]}))
    got = names(cfg, "filter")
    assert got[0] == "NodePorts"
    assert got.count("NodePorts") == 1


def test_volume_binding_can_be_enabled_at_score_explicitly():
    cfg = config_from_dict(doc(score={"enabled": [{"name": "VolumeBinding"}]}))
    assert names(cfg, "score")[0] == "VolumeBinding"
    assert cfg.profiles[0].score_weights["VolumeBinding"] == 1


def test_out_of_tree_multi_point_plugin_uses_implements():
    def implements(name):
        return frozenset({"filter", "score"}) if name == "Custom" else None

    cfg = config_from_dict(
        doc(multiPoint={"enabled": [{"name": "Custom", "weight": 4}]}),
        known_plugins={
            "Custom",
            "PrioritySort",
            "DefaultBinder",
            *IN_TREE,
        },
        implements=implements,
    )
    assert names(cfg, "filter")[-1] == "Custom"
    assert cfg.profiles[0].score_weights["Custom"] == 4
    assert "Custom" not in cfg.profiles[0].plugin_args


def test_out_of_tree_multi_point_plugin_without_implements_expands_nowhere():
    from ksched.config.names import IN_TREE

    cfg = config_from_dict(
        doc(multiPoint={"enabled": [{"name": "Custom"}]}), known_plugins={*IN_TREE, "Custom"}
    )
    for refs in cfg.profiles[0].plugins.values():
        assert "Custom" not in [r.name for r in refs]


@pytest.mark.parametrize(
    ("plugins", "path", "problem"),
    [
        pytest.param(
            {"filter": {"enabled": [{"name": "ImageLocality"}]}},
            "profiles[0].plugins.filter",
            'plugin "ImageLocality" does not implement the filter extension point',
            id="a plugin enabled at a point it does not implement",
        ),
        pytest.param(
            {"filter": {"enabled": [{"name": "NodePorts"}, {"name": "NodePorts"}]}},
            "profiles[0].plugins.filter",
            'plugin "NodePorts" is enabled more than once',
            id="a plugin enabled twice at one point",
        ),
        pytest.param(
            {"multiPoint": {"enabled": [{"name": "NodePorts"}, {"name": "NodePorts"}]}},
            "profiles[0].plugins.multiPoint",
            'plugin "NodePorts" is enabled more than once',
            id="a plugin enabled twice in MultiPoint",
        ),
        pytest.param(
            {"queueSort": {"disabled": [{"name": "*"}]}},
            "profiles[0].plugins.queueSort",
            'only one queue sort plugin required for profile with scheduler name "s", but got 0',
            id="no queue sort plugin",
        ),
        pytest.param(
            {"bind": {"disabled": [{"name": "DefaultBinder"}]}},
            "profiles[0].plugins.bind",
            'at least one bind plugin is needed for profile with scheduler name "s"',
            id="no bind plugin",
        ),
    ],
)
def test_framework_start_up_errors(plugins, path, problem):
    with pytest.raises(ConfigError) as info:
        config_from_dict(doc(**plugins))
    assert (info.value.path, info.value.problem) == (path, problem)
