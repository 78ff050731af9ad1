"""One plugin dialect: a plugin copied from an in-tree one runs unchanged in-tree and via --plugin.

CONTRIBUTING.md's "Add a plugin" says in-tree plugins are written against ``ksched.framework.api``
and read the cluster through a ``ClusterReader``, which is also what out-of-tree plugins receive.
This test holds it to that: it copies ``nodeunschedulable/plugin.py`` verbatim under a new name and
loads the copy both ways, as a built-in plugin (called directly on the cache) and as a ``--plugin``
(behind the result guards, on the read-only view), and both decide alike.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ksched.config import config_from_dict
from ksched.framework.guards import GuardedPlugin
from ksched.framework.loader import out_of_tree_registry
from ksched.framework.plugins.nodeunschedulable import plugin as original
from ksched.framework.plugins.nodeunschedulable.plugin import ERR_REASON_UNSCHEDULABLE
from ksched.framework.profile import build_profiles
from ksched.framework.registry import Registry
from ksched.framework.runtime import Framework
from tests.builders import cluster_of, make_node, pod

COPY = "CordonGuard"


@pytest.fixture
def copied_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """``nodeunschedulable/plugin.py`` as a module of its own, renamed: the only line changed."""
    source = Path(original.__file__).read_text()
    line = "NAME: Final = names.NODE_UNSCHEDULABLE"
    assert source.count(line) == 1
    (tmp_path / "cordon_guard.py").write_text(source.replace(line, f'NAME: Final = "{COPY}"'))
    monkeypatch.syspath_prepend(str(tmp_path))
    return "cordon_guard"


def _framework(registry: Registry, implements: Any = None) -> Framework:
    doc = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "plugins": {
                    "filter": {"enabled": [{"name": COPY}]},
                    "multiPoint": {"disabled": [{"name": "NodeUnschedulable"}]},
                },
            }
        ],
    }
    extra = {"implements": implements} if implements is not None else {}
    config = config_from_dict(doc, known_plugins=registry.names(), **extra)
    return build_profiles(config, registry=registry, seed=1)["default-scheduler"]


def _decisions(fw: Framework) -> tuple[str | None, str, str | None]:
    nodes = [make_node("open", pods=10), make_node("cordoned", pods=10, unschedulable=True)]
    mixed = fw.schedule_pod(pod("p"), cluster_of(nodes))
    cordoned_only = fw.schedule_pod(pod("p"), cluster_of(nodes[1:]))
    toleration = {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}
    tolerant = fw.schedule_pod(pod("t", tolerations=[toleration]), cluster_of(nodes[1:]))
    return mixed.selected_node, cordoned_only.message(), tolerant.selected_node


def test_the_copy_runs_in_tree_and_via_plugin_alike(copied_module: str) -> None:
    in_tree = _framework(Registry(in_tree={COPY: f"{copied_module}:new"}))
    loaded = out_of_tree_registry([f"{copied_module}:new"], entry_points=False)
    out_of_tree = _framework(loaded, loaded.implements)
    assert not isinstance(in_tree.plugins[COPY], GuardedPlugin)  # called directly, on the cache
    assert isinstance(out_of_tree.plugins[COPY], GuardedPlugin)  # behind the guards, on the view
    want = ("open", f"0/1 nodes are available: 1 {ERR_REASON_UNSCHEDULABLE}.", "cordoned")
    assert _decisions(in_tree) == want
    assert _decisions(out_of_tree) == want
