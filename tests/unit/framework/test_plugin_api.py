"""The public plugin API: its exported names, loading plugins by import path and entry point, the
config accepting them like in-tree plugins, the read-only cluster view, and registered events."""

from __future__ import annotations

import importlib.metadata
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ksched.framework
from ksched.cache.cluster import ClusterCache
from ksched.config import config_from_dict
from ksched.errors import ConfigError
from ksched.framework import api
from ksched.framework.guards import GuardedPlugin
from ksched.framework.loader import (
    ENTRY_POINT_GROUP,
    PluginRegistry,
    extension_points,
    load_factory,
    load_with_plugins,
    out_of_tree_registry,
)
from ksched.framework.profile import build_profiles
from ksched.framework.view import ClusterView
from ksched.model.node import node_from_dict
from ksched.scheduler.events_registry import (
    ASSIGNED_POD_DELETE,
    NODE_ADD,
    NODE_LABEL_CHANGE,
    ActionType,
    ClusterEvent,
    events_of_plugin,
    registry_for_profiles,
)
from tests import builders
from tests.builders import make_node

PUBLIC = {
    "ACTIONS",
    "ApiClient",
    "MAX_NODE_SCORE",
    "MAX_PERMIT_TIMEOUT_S",
    "MIN_NODE_SCORE",
    "NODE",
    "POD",
    "RESOURCES",
    "SKIP",
    "SUCCESS",
    "WILDCARD",
    "ClusterEventSpec",
    "ClusterReader",
    "ClusterView",
    "Code",
    "CycleState",
    "EnqueueExtensions",
    "Factory",
    "FilterPlugin",
    "FilterResult",
    "Handle",
    "Node",
    "NormalizeScorePlugin",
    "PendingPreBind",
    "PermitPlugin",
    "Plugin",
    "Pod",
    "PostBindPlugin",
    "PostFilterPlugin",
    "PostFilterResult",
    "PreBindPlugin",
    "PreBindPreFlightPlugin",
    "PreFilterPlugin",
    "PreFilterResult",
    "PreScorePlugin",
    "QueueingHint",
    "ReservePlugin",
    "ScorePlugin",
    "Scores",
    "Status",
    "WaitingPod",
    "cluster_event",
    "error",
    "unschedulable",
    "wait",
}


def test_public_names_are_pinned() -> None:
    assert set(api.__all__) == PUBLIC
    assert set(ksched.framework.__all__) == PUBLIC
    for name in PUBLIC:
        assert getattr(ksched.framework, name) is getattr(api, name)


def test_event_action_names_match_the_scheduler() -> None:
    from ksched.scheduler.events_registry import _ACTION_BY_NAME

    assert set(api.ACTIONS) == set(_ACTION_BY_NAME)


class Labeler:
    """Filter + Score; args: {"key": str}."""

    name = "Labeler"

    def __init__(self, args: dict[str, Any], handle: api.Handle) -> None:
        self.key = args.get("key", "tier")
        if not isinstance(self.key, str):
            raise ValueError(f"key: must be a string, got {self.key!r}")
        self.args = args

    def filter(self, state: api.CycleState, pod: api.Pod, cluster: api.ClusterView) -> api.FilterResult:
        return api.FilterResult(~cluster.has_label(self.key), (f"node(s) lack label {self.key}",))

    def score(self, state: Any, pod: Any, cluster: api.ClusterView, feasible: np.ndarray) -> np.ndarray:
        values, ok = cluster.label_int(self.key)
        return np.where(ok, np.clip(values, 0, 100), 0)

    def events_to_register(self) -> list[api.ClusterEventSpec]:
        return [api.cluster_event("Node", "Add", "UpdateNodeLabel")]


def new_labeler(args: dict[str, Any], handle: api.Handle) -> Labeler:
    return Labeler(args, handle)


def untyped_factory(args, handle):  # type: ignore[no-untyped-def]
    return Labeler(args, handle)


untyped_factory.name = "Untyped"  # type: ignore[attr-defined]


def doc(plugins: dict[str, Any], plugin_config: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    profile: dict[str, Any] = {"schedulerName": "default-scheduler", "plugins": plugins}
    if plugin_config is not None:
        profile["pluginConfig"] = plugin_config
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [profile],
    }


def test_load_factory_by_import_path_and_errors() -> None:
    loaded = load_factory("tests.unit.framework.test_plugin_api:Labeler")
    assert loaded.__qualname__ == "Labeler" and loaded.name == "Labeler"  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="expected module:factory"):
        load_factory("no_colon")
    with pytest.raises(ConfigError, match="cannot import module 'nope_not_a_module'"):
        load_factory("nope_not_a_module:X")
    with pytest.raises(ConfigError, match="has no attribute 'Missing'"):
        load_factory("tests.unit.framework.test_plugin_api:Missing")


def test_extension_points_from_class_annotation_or_declaration() -> None:
    assert extension_points(Labeler) == {"filter", "score"}
    assert extension_points(new_labeler) == {"filter", "score"}
    assert extension_points(untyped_factory) is None

    def declared(args: Any, handle: Any) -> Any:
        return Labeler(args, handle)

    declared.extension_points = ["filter"]  # type: ignore[attr-defined]
    assert extension_points(declared) == {"filter"}


def test_multipoint_expands_into_the_points_the_plugin_implements_with_weight_and_args() -> None:
    registry = out_of_tree_registry(["tests.unit.framework.test_plugin_api:Labeler"], entry_points=False)
    config = config_from_dict(
        doc(
            {"multiPoint": {"enabled": [{"name": "Labeler", "weight": 7}]}},
            [{"name": "Labeler", "args": {"key": "gpu"}}],
        ),
        known_plugins=registry.names(),
        implements=registry.implements,
    )
    prof = config.profiles[0]
    assert "Labeler" in [p.name for p in prof.plugins["filter"]]
    assert "Labeler" in [p.name for p in prof.plugins["score"]]
    assert "Labeler" not in [p.name for p in prof.plugins["preFilter"]]
    assert prof.score_weights["Labeler"] == 7
    fw = build_profiles(config, registry=registry)["default-scheduler"]
    plugin = fw.plugins["Labeler"]
    assert isinstance(plugin, GuardedPlugin)
    assert plugin.inner.args == {"key": "gpu"}  # type: ignore[attr-defined]
    assert ("Labeler", 7) in [(p.name, w) for p, w in fw.score_plugins]


def test_no_plugin_config_means_empty_args_dict() -> None:
    registry = PluginRegistry({"Labeler": Labeler})
    config = config_from_dict(
        doc({"filter": {"enabled": [{"name": "Labeler"}]}}),
        known_plugins=registry.names(),
        implements=registry.implements,
    )
    fw = build_profiles(config, registry=registry)["default-scheduler"]
    assert fw.plugins["Labeler"].inner.args == {}  # type: ignore[attr-defined]


def test_unknown_plugin_fails_at_start_up() -> None:
    registry = PluginRegistry({"Labeler": Labeler})
    with pytest.raises(ConfigError, match='unknown plugin "Labelr"'):
        config_from_dict(
            doc({"filter": {"enabled": [{"name": "Labelr"}]}}),
            known_plugins=registry.names(),
            implements=registry.implements,
        )


def test_bad_args_fail_at_start_up_naming_the_plugin() -> None:
    registry = PluginRegistry({"Labeler": Labeler})
    config = config_from_dict(
        doc({"filter": {"enabled": [{"name": "Labeler"}]}}, [{"name": "Labeler", "args": {"key": 3}}]),
        known_plugins=registry.names(),
        implements=registry.implements,
    )
    with pytest.raises(ConfigError) as info:
        build_profiles(config, registry=registry)
    assert str(info.value) == (
        "profiles[0].pluginConfig[Labeler].args: plugin 'Labeler' rejected its args: "
        "ValueError: key: must be a string, got 3"
    )


def test_point_the_plugin_does_not_implement_is_rejected() -> None:
    registry = PluginRegistry({"Labeler": Labeler})
    with pytest.raises(ConfigError, match='plugin "Labeler" does not implement the permit extension point'):
        config_from_dict(
            doc({"permit": {"enabled": [{"name": "Labeler"}]}}),
            known_plugins=registry.names(),
            implements=registry.implements,
        )


def test_factory_whose_points_cannot_be_told_is_a_clear_error() -> None:
    registry = PluginRegistry({"Untyped": untyped_factory})
    with pytest.raises(ConfigError, match="cannot tell which extension points it implements"):
        config_from_dict(
            doc({"multiPoint": {"enabled": [{"name": "Untyped"}]}}),
            known_plugins=registry.names(),
            implements=registry.implements,
        )


def test_name_clashes_are_refused() -> None:
    class Fake:
        name = "NodeResourcesFit"

    sys.modules["tests_fake_plugins"] = type(sys)("tests_fake_plugins")
    sys.modules["tests_fake_plugins"].Fake = Fake  # type: ignore[attr-defined]
    sys.modules["tests_fake_plugins"].Labeler = Labeler  # type: ignore[attr-defined]
    try:
        with pytest.raises(ConfigError, match="is an in-tree plugin's"):
            out_of_tree_registry(["tests_fake_plugins:Fake"], entry_points=False)
        # The same factory twice is harmless; two factories under one name are not.
        out_of_tree_registry(["tests_fake_plugins:Labeler"] * 2, entry_points=False)
        with pytest.raises(ConfigError, match="already registered"):
            out_of_tree_registry(
                ["tests_fake_plugins:Labeler", "tests.unit.framework.test_plugin_api:Labeler"],
                entry_points=False,
            )
    finally:
        del sys.modules["tests_fake_plugins"]


def test_entry_points_are_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    ep = importlib.metadata.EntryPoint(
        name="Labeler", value="tests.unit.framework.test_plugin_api:new_labeler", group=ENTRY_POINT_GROUP
    )

    def fake_entry_points(**kw: Any) -> list[importlib.metadata.EntryPoint]:
        assert kw == {"group": ENTRY_POINT_GROUP}
        return [ep]

    monkeypatch.setattr(importlib.metadata, "entry_points", fake_entry_points)
    registry = out_of_tree_registry()
    assert registry.out_of_tree == {"Labeler"}
    assert registry.implements("Labeler") == {"filter", "score"}


def test_load_with_plugins_reads_a_config_file(tmp_path: Path) -> None:
    path = tmp_path / "cfg.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            apiVersion: kubescheduler.config.k8s.io/v1
            kind: KubeSchedulerConfiguration
            profiles:
            - schedulerName: default-scheduler
              plugins:
                multiPoint:
                  enabled: [{name: Labeler}]
            """
        )
    )
    config, _ = load_with_plugins(
        str(path), ["tests.unit.framework.test_plugin_api:Labeler"], entry_points=False
    )
    assert "Labeler" in [p.name for p in config.profiles[0].plugins["filter"]]
    with pytest.raises(ConfigError, match='unknown plugin "Labeler"'):
        load_with_plugins(str(path), [], entry_points=False)


def test_cluster_view_is_read_only_and_row_aligned() -> None:
    cache = ClusterCache()
    cache.add_node(builders.node("a", cpu="2", memory="1Gi", labels={"tier": "7"}))
    cache.add_node(
        node_from_dict(
            make_node(
                "b", cpu="4", memory="2Gi", taints=[{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]
            )
        )
    )
    view = ClusterView(cache)
    assert view.n_rows == 2 and view.num_nodes == 2
    assert view.allocatable("cpu").tolist() == [2000, 4000]
    assert view.allocatable("example.com/unknown").tolist() == [0, 0]
    assert view.free("cpu").tolist() == [2000, 4000]
    assert view.label_equals("tier", "7").tolist() == [True, False]
    assert view.label_in("tier", ["7", "8"]).tolist() == [True, False]
    assert view.label_int("tier")[0].tolist() == [7, 0]
    assert view.has_taint("gpu").tolist() == [False, True]
    assert view.has_taint("gpu", effect="NoExecute").tolist() == [False, False]
    assert view.node_name(view.row_of("b") or 0) == "b"
    for arr in (
        view.allocatable("cpu"),
        view.requested("cpu"),
        view.label("tier"),
        view.pod_count,
        view.valid,
    ):
        with pytest.raises(ValueError, match="read-only"):
            arr[0] = 1


def test_registered_events_drive_requeueing() -> None:
    plugin = GuardedPlugin(Labeler({}, api.Handle("p")), "Labeler")
    assert events_of_plugin(plugin) == (ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_LABEL),)

    class Fw:
        def __init__(self) -> None:
            self.plugins = {"Labeler": plugin, "Silent": object()}

    registry = registry_for_profiles([Fw()])
    assert registry.plugin_interested("Labeler", NODE_ADD)
    assert registry.plugin_interested("Labeler", NODE_LABEL_CHANGE)
    assert not registry.plugin_interested("Labeler", ASSIGNED_POD_DELETE)
    assert registry.plugin_interested("Silent", ASSIGNED_POD_DELETE)  # registers nothing: every event


def test_cluster_event_validates_names() -> None:
    assert api.cluster_event("Pod", "Delete") == api.ClusterEventSpec("Pod", ("Delete",))
    with pytest.raises(ValueError, match="unknown event resource 'Nodes'"):
        api.cluster_event("Nodes", "Add")
    with pytest.raises(ValueError, match="unknown event action 'Added'"):
        api.cluster_event("Node", "Added")
    with pytest.raises(ValueError, match="at least one action"):
        api.cluster_event("Node")


def test_bad_event_registration_fails_at_start_up() -> None:
    class Typo(Labeler):
        name = "Typo"

        def events_to_register(self) -> list[api.ClusterEventSpec]:
            return [api.cluster_event("Node", "Added")]

    class Fw:
        def __init__(self) -> None:
            self.plugins = {"Typo": GuardedPlugin(Typo({}, api.Handle("p")), "Typo")}

    with pytest.raises(ConfigError, match="plugin 'Typo': events_to_register: unknown event action 'Added'"):
        registry_for_profiles([Fw()])
