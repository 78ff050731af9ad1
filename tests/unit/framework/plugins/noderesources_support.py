"""Helpers shared by the ``test_noderesources_upstream_*`` modules (upstream's table tests as data).

They mirror upstream's ``pkg/scheduler/framework/plugins/noderesources`` test helpers:
``defaultResources`` / ``extendedRes`` / ``extendedResourceSet`` and ``makeNode`` from ``test_util.go``,
the ``st.MakeNode()`` / ``st.MakePod()`` builders, and the loop each ``*_test.go`` runs (PreScore, then
Score of every node). The strategy-specific pieces take the strategy name (``LeastAllocated``,
``MostAllocated``, ``RequestedToCapacityRatio``) as their first argument.

Inputs are copied literally: ``st.MakeNode().Capacity({"cpu": "4000"})`` is 4000 *cores* and a
``Req({"cpu": "1000"})`` 1000 cores, exactly as upstream's quantities parse. The ``conftest.py`` next to
this file registers it for pytest's assertion rewriting, so its asserts report like a test module's.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from ksched.config.pluginargs import decode_plugin_args
from ksched.config.types import NodeResourcesFitArgs, ResourceSpec, ScoringStrategy, UtilizationShapePoint
from ksched.errors import ConfigError
from ksched.framework.interface import CycleState
from ksched.framework.plugins.noderesources import new_fit
from ksched.framework.registry import Handle
from ksched.framework.runtime import Framework
from ksched.model.pod import pod_from_dict
from tests.builders import cluster_of, container, make_node, make_pod

DEFAULT_RESOURCES = (("cpu", 1), ("memory", 1))  # defaultResources
EXTENDED_RES = "abc.com/xyz"  # extendedRes
EXTENDED_RESOURCE_SET = (("cpu", 1), ("memory", 1), (EXTENDED_RES, 1))  # extendedResourceSet
MAX = 100  # fwk.MaxNodeScore
MIN = 0  # fwk.MinNodeScore

# Capacities and requests the upstream tables (and fit_test.go's TestFitScore) use again and again.
N4_10 = {"cpu": "4000", "memory": "10000"}
N6_10 = {"cpu": "6000", "memory": "10000"}
N10_20 = {"cpu": "10000", "memory": "20000"}
REQ_1_2 = {"cpu": "1000", "memory": "2000"}
REQ_2_3 = {"cpu": "2000", "memory": "3000"}

_names = itertools.count()


def node(name: str, capacity: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``st.MakeNode().Name(name).Capacity(capacity)``: capacity and allocatable alike."""
    return make_node(name, allocatable=dict(capacity or {}))


def make_node_ext(
    name: str, milli_cpu: int, memory: int, extended: Mapping[str, int] | None = None
) -> dict[str, Any]:
    """Upstream ``test_util.go`` ``makeNode(node, milliCPU, memory, extendedResource)``."""
    alloc = {k: str(v) for k, v in (extended or {}).items()}
    alloc.update({"cpu": f"{milli_cpu}m", "memory": str(memory)})
    return make_node(name, allocatable=alloc)


def pod(*reqs: Mapping[str, str] | None, node_name: str = "") -> dict[str, Any]:
    """``st.MakePod().Node(node_name).Req(r1).Req(r2)...``: one container per ``Req``, none without;
    a ``None`` is ``Container("container")``, a container without requests."""
    return make_pod(
        f"pod{next(_names)}",
        node_name=node_name,
        containers=[container(f"c{i}", requests=r) for i, r in enumerate(reqs)],
    )


def fit_args(
    strategy: str, resources: tuple[tuple[str, int], ...], shape: tuple[tuple[int, int], ...] = ()
) -> NodeResourcesFitArgs:
    """NodeResourcesFit args scoring with ``strategy`` over ``resources`` (name, weight); ``shape``
    (utilization, score) points only for RequestedToCapacityRatio."""
    return NodeResourcesFitArgs(
        scoring_strategy=ScoringStrategy(
            type=strategy,
            resources=tuple(ResourceSpec(name=n, weight=w) for n, w in resources),
            shape=tuple(UtilizationShapePoint(utilization=u, score=s) for u, s in shape),
        )
    )


def by_node(cluster: Any, scores: Any, names: list[str]) -> list[int]:
    arr = np.broadcast_to(np.asarray(scores), (cluster.nodes.n_rows,))
    rows = {cluster.nodes.node(r).name: r for r in range(cluster.nodes.n_rows)}
    return [int(arr[rows[name]]) for name in names]


def run_cases(
    args: NodeResourcesFitArgs,
    requested: dict[str, Any],
    nodes: list[dict[str, Any]],
    existing: list[dict[str, Any]],
    *,
    run_pre_score: bool = True,
) -> list[int]:
    """Upstream's loop: (PreScore,) then Score of every node, in the order of ``nodes``."""
    cluster = cluster_of(nodes, existing)
    fit = new_fit(args, Handle("p"))
    incoming = pod_from_dict(requested)
    names = [n["metadata"]["name"] for n in nodes]
    if run_pre_score:
        fw = Framework("p", pre_score=[fit], scores=[(fit, 1)], rng=np.random.default_rng(0))
        result = fw.schedule_pod(incoming, cluster, explain=True)
        assert result.status.ok, result.status
        assert bool(np.all(result.feasible))
        assert [s.plugin for s in result.scores] == ["NodeResourcesFit"]
        return by_node(cluster, result.scores[0].scores, names)
    feasible = np.ones(cluster.nodes.n_rows, dtype=np.bool_)
    return by_node(cluster, fit.score(CycleState(), incoming, cluster, feasible), names)


def fit_score_without_pre_score(args: NodeResourcesFitArgs, requested: dict[str, Any]) -> list[int]:
    """``fit_test.go`` ``TestFitScore``'s cluster for the "... if PreScore is not called" cases: Score
    straight after construction, no PreScore, on node1 (4000/10000) and node2 (6000/10000)."""
    return run_cases(
        args,
        requested,
        [node("node1", N4_10), node("node2", N6_10)],
        [
            pod({"cpu": "2000", "memory": "4000"}, node_name="node1"),
            pod({"cpu": "1000", "memory": "2000"}, node_name="node2"),
        ],
        run_pre_score=False,
    )


def weight_errors(strategy: str, resources: list[dict[str, Any]]) -> tuple[list[str], NodeResourcesFitArgs]:
    """Decode v1 args of ``strategy`` with these ``resources``: the fields in error and the args."""
    errs: list[ConfigError] = []
    raw = {"scoringStrategy": {"type": strategy, "resources": resources}}
    decoded = decode_plugin_args("NodeResourcesFit", raw, "", errs)
    assert isinstance(decoded, NodeResourcesFitArgs)
    return [e.path for e in errs], decoded


def check_resources_not_set(strategy: str) -> None:
    """Upstream "Resources not set, pods scheduled with error": ``NewFit`` accepts an empty
    resource list and every Score returns an Error status (score 0). ksched refuses it when the
    plugin is built instead (still an error, earlier); a real config never gets there, since v1
    defaulting (``SetDefaults_NodeResourcesFitArgs``) fills in cpu and memory, as ksched's decoder
    does."""
    with pytest.raises(ValueError, match="lists no resources"):
        new_fit(fit_args(strategy, ()), Handle("p"))
    errs: list[ConfigError] = []
    decoded = decode_plugin_args("NodeResourcesFit", {"scoringStrategy": {"type": strategy}}, "", errs)
    assert errs == []
    assert isinstance(decoded, NodeResourcesFitArgs)
    assert [(r.name, r.weight) for r in decoded.scoring_strategy.resources] == list(DEFAULT_RESOURCES)


def check_resource_with_zero_weight(strategy: str) -> None:
    """Upstream "resource with zero weight" expects Invalid at ``scoringStrategy.resources[1].weight``
    because it hands *internal* args to ``NewFit``, skipping defaulting. Through a v1 config (the
    only way ksched, or kube-scheduler, receives args) ``SetDefaults_NodeResourcesFitArgs`` first
    turns weight 0 into 1, so the config is valid: ksched's decoder matches that path."""
    fields, decoded = weight_errors(strategy, [{"name": "memory", "weight": 1}, {"name": "cpu", "weight": 0}])
    assert fields == []
    assert [(r.name, r.weight) for r in decoded.scoring_strategy.resources] == [("memory", 1), ("cpu", 1)]
