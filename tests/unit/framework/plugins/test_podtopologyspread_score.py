"""PodTopologySpread PreScore / Score / NormalizeScore, ported from upstream
``pkg/scheduler/framework/plugins/podtopologyspread/scoring_test.go``: TestPodTopologySpreadScore
(every case) and TestPreScoreSkip, as data.

Upstream runs these with ``defaultingType: System`` (so a pod without constraints gets the system
defaults) and lists the candidate nodes apart from the "failed" ones, which still count. Here the
failed nodes are marked ``spec.unschedulable`` so that, through the framework and ``ksched explain``,
NodeUnschedulable rejects them while PodTopologySpread still counts their pods.

One case differs by design: "matchLabelKeys ignored when feature gate disabled" expects the scores
of a scheduler with MatchLabelKeysInPodTopologySpread off; v1.35 has it on, so the keys are merged
and no existing pod matches (every node scores 100). It is kept with that expectation.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ksched.config.types import PodTopologySpreadArgs
from ksched.framework.interface import Code, CycleState
from ksched.framework.plugins.podtopologyspread import new
from ksched.framework.registry import Handle
from ksched.model.pod import pod_from_dict
from ksched.model.workloads import replica_set_from_dict, service_from_dict
from tests.builders import cluster_of, make_pod
from tests.unit.framework.plugins.spread_support import (
    BAR,
    FOO,
    NULL,
    UNSCHEDULABLE_TAINT,
    bound,
    incoming,
    node,
    run_explain,
    sc,
)

HOST = "kubernetes.io/hostname"
ZONE_LABEL = "topology.kubernetes.io/zone"
SA = "ScheduleAnyway"


def hn(name: str, *, failed: bool = False, **labels: str) -> dict[str, Any]:
    """A node with the hostname label (and ``zone`` etc. from keyword arguments)."""
    return node(name, {**labels, HOST: name}, failed=failed)


def pods_on(spec: dict[str, int], labels: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """``{"node-a": 2}`` -> pods p-a1, p-a2 on node-a labelled ``foo: ""``."""
    out = []
    for node_name, count in spec.items():
        short = node_name.removeprefix("node-")
        out += [bound(f"p-{short}{i + 1}", node_name, labels or {"foo": ""}) for i in range(count)]
    return out


def service(selector: dict[str, str], name: str = "svc") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": {"selector": selector}}


def replica_set(selector: dict[str, Any], name: str = "rs1") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": selector},
    }


def owned_by_rs(raw: dict[str, Any], name: str) -> dict[str, Any]:
    raw["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": name, "uid": "u", "controller": True}
    ]
    return raw


MIXED = [
    bound("p-a1", "node-a", {"foo": ""}),
    bound("p-b1", "node-b", {"foo": "", "bar": ""}),
    bound("p-y1", "node-y", {"foo": ""}),
    bound("p-y2", "node-y", {"bar": ""}),
]
MIXED_C = [
    bound("p-a1", "node-a", {"foo": ""}),
    bound("p-b1", "node-b", {"foo": "", "bar": ""}),
    bound("p-y1", "node-c", {"foo": ""}),
    bound("p-y2", "node-c", {"bar": ""}),
]
ZONE4 = [
    hn("node-a", zone="zone1"),
    hn("node-b", zone="zone1"),
    hn("node-c", zone="zone2"),
    hn("node-d", zone="zone2"),
]
PLAIN3 = [
    node("node-a", {"node": "node-a"}),
    node("node-b", {"node": "node-b"}),
    node("node-c", {"node": "node-c"}),
]
FOO3 = [
    node("node-a", {"node": "node-a", "foo": ""}),
    node("node-b", {"node": "node-b", "foo": ""}),
    node("node-c", {"node": "node-c"}),
]
TAINT3 = [PLAIN3[0], PLAIN3[1], node("node-c", {"node": "node-c"}, [UNSCHEDULABLE_TAINT])]
AFF_FOO = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "foo", "operator": "In", "values": [""]}]}]
        }
    }
}

SCORE = [
    pytest.param(
        incoming({"foo": ""}, sc(1, HOST, SA, FOO)), [hn("node-a"), hn("node-b")], [], [],
        {"node-a": 100, "node-b": 100}, id="one constraint on node, no existing pods",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(1, HOST, SA, FOO)), [hn("node-a"), hn("node-b", failed=True)],
        pods_on({"node-a": 2, "node-b": 1}), [], {"node-a": 100},
        id="one constraint on node, only one node is candidate",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(1, HOST, SA, FOO)), [hn("node-a"), hn("node-b")],
        pods_on({"node-a": 1, "node-b": 1}), [], {"node-a": 100, "node-b": 100},
        id="one constraint on node, all nodes have the same number of matching pods",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(1, HOST, SA, FOO)), [hn(f"node-{c}") for c in "abcd"],
        pods_on({"node-a": 2, "node-b": 1, "node-d": 3}), [],
        {"node-a": 20, "node-b": 60, "node-c": 100, "node-d": 0},
        id="one constraint on node, all 4 nodes are candidates",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(1, HOST, SA, NULL)), [hn(f"node-{c}") for c in "abcd"],
        pods_on({"node-a": 2, "node-b": 1, "node-d": 3}), [],
        {"node-a": 100, "node-b": 100, "node-c": 100, "node-d": 100},
        id="one constraint on node, null selector",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(2, HOST, SA, FOO)), [hn(f"node-{c}") for c in "abcd"],
        pods_on({"node-a": 2, "node-b": 1, "node-d": 3}), [],
        {"node-a": 33, "node-b": 66, "node-c": 100, "node-d": 16},
        id="one constraint on node, all 4 nodes are candidates, maxSkew=2",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(3, HOST, SA, FOO)), [hn(f"node-{c}") for c in "abcd"],
        pods_on({"node-a": 4, "node-b": 3, "node-c": 2, "node-d": 1}), [],
        {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100},
        id="one constraint on node, all 4 nodes are candidates, maxSkew=3",
    ),
    pytest.param(
        make_pod("p", labels={"foo": ""}), [hn(f"node-{c}") for c in "abcd"],
        pods_on({"node-a": 4, "node-b": 3, "node-c": 2, "node-d": 1}), [service({"foo": ""})],
        {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100},
        id="system defaulting, nodes don't have zone, pods match service",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(1, HOST, SA, FOO)),
        [hn("node-a"), hn("node-b"), hn("node-x"), hn("node-y", failed=True)],
        pods_on({"node-a": 4, "node-b": 2, "node-x": 1, "node-y": 3}), [],
        {"node-a": 33, "node-b": 83, "node-x": 100},
        id="one constraint on node, 3 out of 4 nodes are candidates",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(1, HOST, SA, FOO)),
        [hn("node-a"), node("node-b", {"n": "node-b"}), hn("node-x"), hn("node-y", failed=True)],
        pods_on({"node-a": 4, "node-b": 2, "node-x": 1, "node-y": 3}), [],
        {"node-a": 16, "node-b": 0, "node-x": 100},
        id="one constraint on node, 3 out of 4 nodes are candidates, one node doesn't match topology key",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(1, "zone", SA, FOO)),
        [hn("node-a", zone="zone1"), hn("node-b", zone="zone1"), hn("node-x", zone="zone2"),
         hn("node-y", zone="zone2", failed=True)],
        pods_on({"node-a": 4, "node-b": 2, "node-x": 1, "node-y": 3}), [],
        {"node-a": 75, "node-b": 75, "node-x": 100},
        id="one constraint on zone, 3 out of 4 nodes are candidates",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(1, "zone", SA, FOO), sc(1, HOST, SA, FOO)),
        [hn("node-a", zone="zone1"), hn("node-x", zone="zone2"), hn("node-b", zone="zone1", failed=True),
         hn("node-y", zone="zone2", failed=True)],
        pods_on({"node-a": 2, "node-b": 1, "node-x": 2, "node-y": 4}), [],
        {"node-a": 100, "node-x": 63}, id="two Constraints on zone and node, 2 out of 4 nodes are candidates",
    ),
    pytest.param(
        incoming({"foo": "", "bar": ""}, sc(1, "zone", SA, FOO), sc(1, HOST, SA, BAR)),
        [hn("node-a", zone="zone1"), hn("node-b", zone="zone1"), hn("node-x", zone="zone2"),
         hn("node-y", zone="zone2")],
        MIXED, [], {"node-a": 60, "node-b": 20, "node-x": 100, "node-y": 60},
        id="two Constraints on zone and node, with different labelSelectors",
    ),
    pytest.param(
        incoming({"foo": "", "bar": ""}, sc(1, "zone", SA, FOO), sc(1, HOST, SA, BAR)),
        [hn("node-a", zone="zone1"), hn("node-b", zone="zone1"), hn("node-x", zone="zone2"),
         hn("node-y", zone="zone2")],
        [bound("p-b1", "node-b", {"bar": ""}), bound("p-x1", "node-x", {"foo": ""}),
         bound("p-y1", "node-y", {"foo": "", "bar": ""})],
        [], {"node-a": 100, "node-b": 60, "node-x": 40, "node-y": 0},
        id="two Constraints on zone and node, with different labelSelectors, some nodes have 0 pods",
    ),
    pytest.param(
        incoming({"foo": "", "bar": ""}, sc(1, "zone", SA, FOO), sc(1, HOST, SA, BAR)),
        [hn("node-a", zone="zone1"), hn("node-b", zone="zone1"), hn("node-x", zone="zone2"),
         hn("node-y", zone="zone2", failed=True)],
        MIXED, [], {"node-a": 50, "node-b": 25, "node-x": 100},
        id="two Constraints on zone and node, with different labelSelectors, 3 out of 4 nodes are candidates",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(1, HOST, SA, FOO)), [hn("node-a"), hn("node-b")],
        [bound("p-a1", "node-a", {"foo": ""}, namespace="ns1"),
         bound("p-a2", "node-a", {"foo": ""}), bound("p-b1", "node-b", {"foo": ""}),
         bound("p-b2", "node-b", {"foo": ""})],
        [], {"node-a": 100, "node-b": 33}, id="existing pods in a different namespace do not count",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(1, HOST, SA, FOO)), [hn("node-a"), hn("node-b")],
        [bound("p-a", "node-a", {"foo": ""}, terminating=True), bound("p-b", "node-b", {"foo": ""})],
        [], {"node-a": 100, "node-b": 0}, id="terminating Pods should be excluded",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(2, "node", SA, FOO, 10)), PLAIN3,
        pods_on({"node-a": 2, "node-b": 2, "node-c": 1}), [],
        {"node-a": 75, "node-b": 75, "node-c": 100}, id="minDomains has no effect when ScheduleAnyway",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(1, "node", SA, FOO), node_selector={"foo": ""}), FOO3,
        pods_on({"node-a": 2, "node-b": 1, "node-c": 1}), [],
        {"node-a": 0, "node-b": 33, "node-c": 100}, id="NodeAffinityPolicy honoed with labelSelectors",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(1, "node", SA, FOO, None, "Ignore"), node_selector={"foo": ""}), FOO3,
        pods_on({"node-a": 2, "node-b": 1, "node-c": 1}), [],
        {"node-a": 66, "node-b": 100, "node-c": 100}, id="NodeAffinityPolicy ignored with labelSelectors",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(1, "node", SA, FOO), affinity=AFF_FOO), FOO3,
        pods_on({"node-a": 2, "node-b": 1, "node-c": 1}), [],
        {"node-a": 0, "node-b": 33, "node-c": 100}, id="NodeAffinityPolicy honoed with nodeAffinity",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(1, "node", SA, FOO, None, "Ignore"), affinity=AFF_FOO), FOO3,
        pods_on({"node-a": 2, "node-b": 1, "node-c": 1}), [],
        {"node-a": 66, "node-b": 100, "node-c": 100}, id="NodeAffinityPolicy ignored with nodeAffinity",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(1, "node", SA, FOO, None, None, "Honor")), TAINT3,
        pods_on({"node-a": 2, "node-b": 1, "node-c": 1}), [],
        {"node-a": 0, "node-b": 33, "node-c": 100}, id="NodeTaintsPolicy honored",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(1, "node", SA, FOO)), TAINT3,
        pods_on({"node-a": 2, "node-b": 1, "node-c": 1}), [],
        {"node-a": 66, "node-b": 100, "node-c": 100}, id="NodeTaintsPolicy ignored",
    ),
    pytest.param(
        incoming({"foo": "", "bar": "", "baz": ""}, sc(1, "zone", SA, FOO, None, None, None, ["baz"]),
                 sc(1, HOST, SA, BAR, None, None, None, ["baz"])),
        ZONE4, MIXED_C, [], {"node-a": 100, "node-b": 100, "node-c": 100, "node-d": 100},
        id="matchLabelKeys ignored when feature gate disabled (gate on in v1.35: keys merged)",
    ),
    pytest.param(
        incoming({"foo": "", "bar": ""}, sc(1, "zone", SA, {}, None, None, None, ["foo"]),
                 sc(1, HOST, SA, {}, None, None, None, ["bar"])),
        ZONE4, MIXED_C, [], {"node-a": 60, "node-b": 20, "node-c": 60, "node-d": 100},
        id="matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
    ),
    pytest.param(
        incoming({"foo": "", "bar": "", "baz": ""}, sc(1, "zone", SA, FOO),
                 sc(1, HOST, SA, BAR, None, None, None, ["baz"])),
        ZONE4,
        [bound("p-a1", "node-a", {"foo": ""}), bound("p-b1", "node-b", {"foo": "", "bar": "", "baz": ""}),
         bound("p-c1", "node-c", {"foo": ""}), bound("p-c2", "node-c", {"bar": ""}),
         bound("p-d3", "node-c", {"bar": "", "baz": ""})],
        [], {"node-a": 60, "node-b": 20, "node-c": 60, "node-d": 100},
        id="matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
    ),
]  # fmt: skip


def _cluster(nodes: list[Any], pods: list[Any], objs: list[Any]) -> Any:
    cluster = cluster_of(nodes, pods)
    for o in objs:
        decode = service_from_dict if o["kind"] == "Service" else replica_set_from_dict
        cluster.selector_owners.upsert(decode(o))
    return cluster


def _plugin(defaulting: str = "System", constraints: tuple[dict[str, Any], ...] = ()) -> Any:
    return new(
        PodTopologySpreadArgs(default_constraints=constraints, defaulting_type=defaulting), Handle("p")
    )


@pytest.mark.parametrize(("pod_raw", "nodes", "pods", "objs", "want"), SCORE)
def test_score(
    path: str,
    pod_raw: dict[str, Any],
    nodes: list[Any],
    pods: list[Any],
    objs: list[Any],
    want: dict[str, int],
) -> None:
    cluster = _cluster(nodes, pods, objs)
    p = pod_from_dict(pod_raw)
    plugin = _plugin()
    feasible = np.zeros(cluster.nodes.n_rows, dtype=np.bool_)
    for name in want:
        feasible[cluster.nodes.row_of[name]] = True
    state = CycleState()
    assert plugin.pre_score(state, p, cluster, feasible).ok
    raw = plugin.score(state, p, cluster, feasible)
    got = plugin.normalize_score(state, p, raw, feasible)
    assert {name: int(got[cluster.nodes.row_of[name]]) for name in want} == want


@pytest.mark.parametrize(("pod_raw", "nodes", "pods", "objs", "want"), SCORE)
def test_score_through_explain(
    tmp_path: Path,
    pod_raw: dict[str, Any],
    nodes: list[Any],
    pods: list[Any],
    objs: list[Any],
    want: dict[str, int],
) -> None:
    report = run_explain(tmp_path, [*objs, *nodes, *pods], pod_raw, defaulting="System")
    scores = {e["name"]: e["scores"]["PodTopologySpread"] for e in report["nodes"] if e["feasible"]}
    assert scores == want
    assert report["selectedNode"] in [n for n, s in want.items() if s == max(want.values())]


SKIP = [
    pytest.param(make_pod("p"), "List", (), [], id="the pod doesn't have soft topology spread Constraints"),
    pytest.param(
        owned_by_rs(make_pod("p", labels={"foo": "bar", "baz": "sup"}), "rs2"),
        "List",
        ({"maxSkew": 2, "topologyKey": "planet", "whenUnsatisfiable": SA},),
        [replica_set({"matchExpressions": [{"key": "tar", "operator": "Exists"}]})],
        id="default constraints and a replicaset that doesn't match",
    ),
]


@pytest.mark.parametrize(("pod_raw", "defaulting", "constraints", "objs"), SKIP)
def test_pre_score_skip(
    pod_raw: dict[str, Any], defaulting: str, constraints: tuple[dict[str, Any], ...], objs: list[Any]
) -> None:
    nodes = [hn("node-a", planet="mars"), hn("node-b")]
    cluster = _cluster(nodes, [], objs)
    plugin = _plugin(defaulting, constraints)
    feasible = cluster.nodes.valid[: cluster.nodes.n_rows].copy()
    assert plugin.pre_score(CycleState(), pod_from_dict(pod_raw), cluster, feasible).code == Code.SKIP


def test_system_defaults_with_a_replicaset_count_zoneless_nodes_as_one_zone() -> None:
    """Upstream TestPreScoreStateEmptyNodes "system default constraints and a replicaset": nodes
    without a zone are not ignored; they form the zone "" (2 zones), hostname spans 4 nodes."""
    nodes = [
        node("node-a", {HOST: "node-a", ZONE_LABEL: "mars"}),
        node("node-b", {HOST: "node-b", ZONE_LABEL: "mars"}),
        node("node-c", {HOST: "node-c"}),
        node("node-d", {HOST: "node-d"}),
    ]
    pods = [bound("p-a1", "node-a", {"foo": "x"}), bound("p-c1", "node-c", {"foo": "y"})]
    rs = replica_set({"matchExpressions": [{"key": "foo", "operator": "Exists"}]})
    cluster = _cluster(nodes, pods, [rs])
    p = pod_from_dict(owned_by_rs(make_pod("p", labels={"foo": "tar", "baz": "sup"}), "rs1"))
    plugin = _plugin()
    feasible = cluster.nodes.valid[: cluster.nodes.n_rows].copy()
    state = CycleState()
    assert plugin.pre_score(state, p, cluster, feasible).ok
    raw = plugin.score(state, p, cluster, feasible)

    # hostname weight ln(4+2), zone weight ln(2+2); maxSkew 3 and 5 add 2 and 4.
    def expected(host_cnt: int, zone_cnt: int) -> int:
        return round(host_cnt * math.log(6) + 2 + zone_cnt * math.log(4) + 4)

    rows = cluster.nodes.row_of
    assert int(raw[rows["node-a"]]) == expected(1, 1)
    assert int(raw[rows["node-b"]]) == expected(0, 1)
    # node-c and node-d have no zone label: only the hostname constraint scores them.
    assert int(raw[rows["node-c"]]) == round(1 * math.log(6) + 2)
    assert int(raw[rows["node-d"]]) == round(0 * math.log(6) + 2)
