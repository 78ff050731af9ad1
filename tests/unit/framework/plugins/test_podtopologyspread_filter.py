"""PodTopologySpread Filter, ported from upstream
``pkg/scheduler/framework/plugins/podtopologyspread/filtering_test.go``: TestSingleConstraint (all
cases) and TestMultipleConstraints (all cases), as data.

Each case runs three ways: the plugin directly (PreFilter then Filter, numpy and compiled paths),
through the framework (a profile of PodTopologySpread alone, like upstream's tables, with List
defaulting), and through ``ksched explain``, which must report upstream's reason strings per node.
Upstream's expectations are status codes per node; the reason strings follow from the code:
Unschedulable is ``node(s) didn't match pod topology spread constraints`` and
UnschedulableAndUnresolvable adds `` (missing required label)``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ksched.framework.interface import Code, CycleState
from ksched.framework.plugins.podtopologyspread import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    PodTopologySpread,
)
from ksched.model.pod import pod_from_dict
from tests.builders import cluster_of
from tests.unit.framework.plugins.spread_support import (
    BAR,
    FOO,
    NULL,
    UNSCHEDULABLE_TAINT,
    bound,
    incoming,
    node,
    node_affinity_in,
    run_explain,
    sc,
    zn,
)

OK = Code.SUCCESS
U = Code.UNSCHEDULABLE
UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
DNS = "DoNotSchedule"

FOUR = [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2"), zn("node-y", "zone2")]
SPREAD_2103 = [
    bound("p-a1", "node-a", {"foo": ""}),
    bound("p-a2", "node-a", {"foo": ""}),
    bound("p-b1", "node-b", {"foo": ""}),
    bound("p-y1", "node-y", {"foo": ""}),
    bound("p-y2", "node-y", {"foo": ""}),
    bound("p-y3", "node-y", {"foo": ""}),
]
PLAIN_NODES = [node(f"node-{n}", {"node": f"node-{n}"}) for n in "abc"]
SPREAD_221 = [
    bound("p-a1", "node-a", {"foo": ""}),
    bound("p-a2", "node-a", {"foo": ""}),
    bound("p-b1", "node-b", {"foo": ""}),
    bound("p-b2", "node-b", {"foo": ""}),
    bound("p-c1", "node-c", {"foo": ""}),
]
SPREAD_21_ZONE = [
    bound("p-b1", "node-a", {"foo": ""}),
    bound("p-b2", "node-b", {"foo": ""}),
    bound("p-y1", "node-y", {"foo": ""}),
]
FOO_NODES = [
    node("node-a", {"node": "node-a", "foo": ""}),
    node("node-b", {"node": "node-b", "foo": ""}),
    node("node-x", {"node": "node-x", "foo": ""}),
    node("node-y", {"node": "node-y"}),
]
TAINTED_NODES = [*FOO_NODES[:3], node("node-y", {"node": "node-y"}, [UNSCHEDULABLE_TAINT])]


def codes(**by_node: Code) -> dict[str, Code]:
    return {k.replace("_", "-"): v for k, v in by_node.items()}


SINGLE = [
    pytest.param(
        incoming({"foo": ""}, sc(1, "zone", DNS, FOO)),
        FOUR,
        [],
        codes(node_a=OK, node_b=OK, node_x=OK, node_y=OK),
        id="no existing pods",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(1, "zone", DNS, BAR)),
        FOUR,
        [],
        codes(node_a=OK, node_b=OK, node_x=OK, node_y=OK),
        id="no existing pods, incoming pod doesn't match itself",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(1, "zone", DNS, FOO)),
        FOUR,
        [
            bound("p-a1", "node-a", {"foo": ""}, namespace="ns1"),
            bound("p-b1", "node-a", {"foo": ""}, namespace="ns2"),
            bound("p-x1", "node-x", {"foo": ""}),
            bound("p-y1", "node-y", {"foo": ""}),
        ],
        codes(node_a=OK, node_b=OK, node_x=U, node_y=U),
        id="existing pods in a different namespace do not count",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(1, "zone", DNS, NULL)),
        FOUR,
        [bound("p-x1", "node-x", {"foo": ""}), bound("p-y1", "node-y", {"foo": ""})],
        codes(node_a=OK, node_b=OK, node_x=OK, node_y=OK),
        id="existing pods do not match null selector",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(1, "zone", DNS, FOO)),
        FOUR,
        SPREAD_2103,
        codes(node_a=OK, node_b=OK, node_x=OK, node_y=OK),
        id="pods spread across zones as 3/3, all nodes fit",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(1, "zone", DNS, FOO)),
        [FOUR[0], node("node-b", {"zon": "zone1", "node": "node-b"}), FOUR[2], FOUR[3]],
        [
            bound("p-a1", "node-a", {"foo": ""}),
            bound("p-b1", "node-b", {"foo": ""}),
            bound("p-x1", "node-x", {"foo": ""}),
            bound("p-y1", "node-y", {"foo": ""}),
        ],
        codes(node_a=OK, node_b=UU, node_x=U, node_y=U),
        id="pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(1, "rack", DNS, FOO)),
        [FOUR[0], FOUR[2]],
        [],
        codes(node_a=UU, node_x=UU),
        id="pod cannot be scheduled as all nodes don't have label 'rack'",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(1, "node", DNS, FOO)),
        FOUR,
        SPREAD_2103,
        codes(node_a=U, node_b=U, node_x=OK, node_y=U),
        id="pods spread across nodes as 2/1/0/3, only node-x fits",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(2, "node", DNS, FOO)),
        FOUR,
        SPREAD_2103,
        codes(node_a=U, node_b=OK, node_x=OK, node_y=U),
        id="pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
    ),
    pytest.param(
        incoming({"bar": ""}, sc(1, "node", DNS, FOO)),
        FOUR,
        SPREAD_2103,
        codes(node_a=U, node_b=OK, node_x=OK, node_y=U),
        id="pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
    ),
    pytest.param(
        incoming(
            {"foo": ""}, sc(1, "node", DNS, FOO), affinity=node_affinity_in("node", ["node-a", "node-y"])
        ),
        FOUR,
        SPREAD_2103,
        codes(node_a=OK, node_b=OK, node_x=OK, node_y=U),
        id="incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(1, "node", DNS, FOO)),
        [node("node-a", {"node": "node-a"}), node("node-b", {"node": "node-b"})],
        [bound("p-a", "node-a", {"foo": ""}, terminating=True), bound("p-b", "node-b", {"foo": ""})],
        codes(node_a=OK, node_b=U),
        id="terminating Pods should be excluded",
    ),
    pytest.param(
        incoming(
            {"foo": ""}, sc(1, "zone", DNS, FOO), affinity=node_affinity_in("node", ["node-b"], "NotIn")
        ),
        FOUR,
        [
            bound("p-b1", "node-b", {"foo": ""}),
            bound("p-b2", "node-b", {"foo": ""}),
            bound("p-y1", "node-y", {"foo": ""}),
        ],
        codes(node_a=OK, node_b=OK, node_x=U, node_y=U),
        id="incoming pod has nodeAffinity, pods spread as 0/~2~/0/1, hence node-a fits",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(2, "node", DNS, FOO, 4)),
        PLAIN_NODES,
        SPREAD_221,
        codes(node_a=U, node_b=U, node_c=OK),
        id="pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains < minDomains, "
        "then the third node fits",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(2, "node", DNS, FOO, 2)),
        PLAIN_NODES,
        SPREAD_221,
        codes(node_a=OK, node_b=OK, node_c=OK),
        id="pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains > minDomains, "
        "then the all nodes fit",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(2, "zone", DNS, FOO, 3)),
        FOUR,
        SPREAD_21_ZONE,
        codes(node_a=U, node_b=U, node_x=OK, node_y=OK),
        id="pods spread across zone as 2/1, maxSkew is 2 and the number of domains < minDomains, "
        "then the third and fourth nodes fit",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(2, "zone", DNS, FOO, 1)),
        FOUR,
        SPREAD_21_ZONE,
        codes(node_a=OK, node_b=OK, node_x=OK, node_y=OK),
        id="pods spread across zone as 2/1, maxSkew is 2 and the number of domains > minDomains, "
        "then the all nodes fit",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(1, "node", DNS, FOO), node_selector={"foo": ""}),
        FOO_NODES,
        SPREAD_21_ZONE,
        codes(node_a=U, node_b=U, node_x=OK, node_y=OK),
        id="NodeAffinityPolicy honored with labelSelectors",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(1, "node", DNS, FOO, None, "Ignore"), node_selector={"foo": ""}),
        FOO_NODES,
        SPREAD_21_ZONE,
        codes(node_a=U, node_b=U, node_x=OK, node_y=U),
        id="NodeAffinityPolicy ignored with labelSelectors",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(1, "node", DNS, FOO), affinity=node_affinity_in("foo", [""])),
        FOO_NODES,
        SPREAD_21_ZONE,
        codes(node_a=U, node_b=U, node_x=OK, node_y=OK),
        id="NodeAffinityPolicy honored with nodeAffinity",
    ),
    pytest.param(
        incoming(
            {"foo": ""}, sc(1, "node", DNS, FOO, None, "Ignore"), affinity=node_affinity_in("foo", [""])
        ),
        FOO_NODES,
        SPREAD_21_ZONE,
        codes(node_a=U, node_b=U, node_x=OK, node_y=U),
        id="NodeAffinityPolicy ignored with nodeAffinity",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(1, "node", DNS, FOO, None, None, "Honor")),
        TAINTED_NODES,
        SPREAD_21_ZONE,
        codes(node_a=U, node_b=U, node_x=OK, node_y=OK),
        id="NodeTaintsPolicy honored",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(1, "node", DNS, FOO)),
        TAINTED_NODES,
        SPREAD_21_ZONE,
        codes(node_a=U, node_b=U, node_x=OK, node_y=U),
        id="NodeTaintsPolicy ignored",
    ),
]

ZONE_FOO = [
    node("node-a", {"zone": "zone1", "node": "node-a", "foo": ""}),
    node("node-b", {"zone": "zone1", "node": "node-b", "foo": ""}),
    node("node-x", {"zone": "zone2", "node": "node-x", "foo": ""}),
    node("node-y", {"zone": "zone2", "node": "node-y"}),
]
ZONE_FOO_TAINTED = [
    node("node-a", {"zone": "zone1", "node": "node-a", "foo": ""}),
    node("node-b", {"zone": "zone1", "node": "node-b"}),
    node("node-x", {"zone": "zone2", "node": "node-x", "foo": ""}),
    node("node-y", {"zone": "zone2", "node": "node-y", "foo": ""}, [UNSCHEDULABLE_TAINT]),
]
PODS_ABY = [
    bound("p-a1", "node-a", {"foo": ""}),
    bound("p-b1", "node-b", {"foo": ""}),
    bound("p-y1", "node-y", {"foo": ""}),
]

MULTIPLE = [
    pytest.param(
        incoming({"foo": ""}, sc(1, "zone", DNS, FOO), sc(1, "node", DNS, FOO)),
        FOUR,
        SPREAD_2103,
        codes(node_a=U, node_b=U, node_x=OK, node_y=U),
        id="two Constraints on zone and node, spreads = [3/3, 2/1/0/3]",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(1, "zone", DNS, FOO), sc(1, "node", DNS, FOO)),
        FOUR,
        [*SPREAD_2103, bound("p-y4", "node-y", {"foo": ""})],
        codes(node_a=U, node_b=U, node_x=U, node_y=U),
        id="two Constraints on zone and node, spreads = [3/4, 2/1/0/4]",
    ),
    pytest.param(
        incoming({"foo": "", "bar": ""}, sc(1, "zone", DNS, FOO), sc(1, "node", DNS, BAR)),
        FOUR,
        [bound("p-a1", "node-a", {"foo": ""}), bound("p-y1", "node-y", {"bar": ""})],
        codes(node_a=U, node_b=U, node_x=OK, node_y=U),
        id="Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]",
    ),
    # (The rest of upstream's TestMultipleConstraints.)
    pytest.param(
        incoming({"foo": "", "bar": ""}, sc(1, "zone", DNS, FOO), sc(1, "node", DNS, BAR)),
        FOUR,
        [
            bound("p-a1", "node-a", {"foo": ""}),
            bound("p-x1", "node-x", {"bar": ""}),
            bound("p-y1", "node-y", {"bar": ""}),
        ],
        codes(node_a=U, node_b=U, node_x=U, node_y=U),
        id="Constraints hold different labelSelectors, spreads = [1/0, 0/0/1/1]",
    ),
    pytest.param(
        incoming({"foo": "", "bar": ""}, sc(1, "zone", DNS, FOO), sc(1, "node", DNS, BAR)),
        FOUR,
        [
            bound("p-a1", "node-a", {"foo": ""}),
            bound("p-a2", "node-a", {"foo": "", "bar": ""}),
            bound("p-y1", "node-y", {"foo": ""}),
            bound("p-y2", "node-y", {"foo": "", "bar": ""}),
            bound("p-y3", "node-y", {"foo": ""}),
        ],
        codes(node_a=U, node_b=OK, node_x=U, node_y=U),
        id="Constraints hold different labelSelectors, spreads = [2/3, 1/0/0/1]",
    ),
    pytest.param(
        incoming({"bar": ""}, sc(1, "zone", DNS, FOO), sc(1, "node", DNS, BAR)),
        FOUR,
        [
            bound("p-a1", "node-a", {"foo": ""}),
            bound("p-x1", "node-x", {"bar": ""}),
            bound("p-y1", "node-y", {"bar": ""}),
        ],
        codes(node_a=OK, node_b=OK, node_x=U, node_y=U),
        id="Constraints hold different labelSelectors but pod doesn't match itself on 'zone' constraint",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(1, "zone", DNS, FOO), sc(1, "node", DNS, FOO)),
        [FOUR[0], FOUR[1], node("node-x", {"zone": "zone2"}), FOUR[3]],
        [bound("p-a1", "node-a", {"foo": ""}), bound("p-y3", "node-y", {"foo": ""})],
        codes(node_a=U, node_b=OK, node_x=UU, node_y=U),
        id="two Constraints on zone and node, absence of label 'node' on node-x, spreads = [1/1, 1/0/0/1]",
    ),
    pytest.param(
        incoming(
            {"foo": ""},
            sc(1, "zone", DNS, FOO),
            sc(1, "node", DNS, FOO, None, "Ignore"),
            node_selector={"foo": ""},
        ),
        ZONE_FOO,
        PODS_ABY,
        codes(node_a=U, node_b=U, node_x=OK, node_y=U),
        id="two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(1, "zone", DNS, FOO, None, None, "Honor"), sc(1, "node", DNS, FOO)),
        [*ZONE_FOO[:3], node("node-y", {"zone": "zone2", "node": "node-y"}, [UNSCHEDULABLE_TAINT])],
        PODS_ABY,
        codes(node_a=U, node_b=U, node_x=OK, node_y=U),
        id="two node inclusion Constraints, zone: honor/honor, node: honor/ignore",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(1, "zone", DNS, FOO), sc(1, "node", DNS, FOO), node_selector={"foo": ""}),
        ZONE_FOO_TAINTED,
        PODS_ABY,
        codes(node_a=U, node_b=OK, node_x=OK, node_y=U),
        id="two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
    ),
    pytest.param(
        incoming(
            {"foo": ""},
            sc(1, "zone", DNS, FOO, None, None, "Honor"),
            sc(1, "node", DNS, FOO, None, "Ignore"),
            node_selector={"foo": ""},
        ),
        ZONE_FOO_TAINTED,
        PODS_ABY,
        codes(node_a=U, node_b=U, node_x=OK, node_y=U),
        id="two node inclusion Constraints, zone: honor/honor, node: ignore/ignore",
    ),
]

REASON = {U: ERR_REASON_CONSTRAINTS_NOT_MATCH, UU: ERR_REASON_NODE_LABEL_NOT_MATCH}


def _check_plugin(pod_raw: dict[str, Any], nodes: list[Any], pods: list[Any], want: dict[str, Code]) -> None:
    cluster = cluster_of(nodes, pods)
    p = pod_from_dict(pod_raw)
    plugin = PodTopologySpread()
    state = CycleState()
    _, status = plugin.pre_filter(state, p, cluster)
    assert status.ok
    result = plugin.filter(state, p, cluster)
    for name, code in want.items():
        reasons, got = result.reasons_at(cluster.nodes.row_of[name])
        if code == OK:
            assert reasons == [], name
        else:
            assert (reasons, got) == ([REASON[code]], code), name


@pytest.mark.parametrize(("pod_raw", "nodes", "pods", "want"), SINGLE + MULTIPLE)
def test_filter(
    path: str, pod_raw: dict[str, Any], nodes: list[Any], pods: list[Any], want: dict[str, Code]
) -> None:
    _check_plugin(pod_raw, nodes, pods, want)


@pytest.mark.parametrize(("pod_raw", "nodes", "pods", "want"), SINGLE + MULTIPLE)
def test_filter_through_explain(
    tmp_path: Path, pod_raw: dict[str, Any], nodes: list[Any], pods: list[Any], want: dict[str, Code]
) -> None:
    report = run_explain(tmp_path, [*nodes, *pods], pod_raw)
    by_name = {e["name"]: e for e in report["nodes"]}
    for name, code in want.items():
        entry = by_name[name]
        if code == OK:
            assert entry["feasible"], (name, entry)
        else:
            assert not entry["feasible"], name
            assert entry["plugin"] == "PodTopologySpread"
            assert entry["reasons"] == [REASON[code]]
            assert entry.get("detail")
    if all(c != OK for c in want.values()):
        assert report["selectedNode"] is None
        assert report["message"].startswith(f"0/{len(nodes)} nodes are available: ")
    else:
        assert want[report["selectedNode"]] == OK


def test_reason_strings_are_upstreams() -> None:
    assert ERR_REASON_CONSTRAINTS_NOT_MATCH == "node(s) didn't match pod topology spread constraints"
    assert ERR_REASON_NODE_LABEL_NOT_MATCH == (
        "node(s) didn't match pod topology spread constraints (missing required label)"
    )


def test_failure_message_counts_both_reasons(tmp_path: Path) -> None:
    """The FitError message groups nodes by reason, as upstream's does."""
    nodes = [FOUR[0], node("node-b", {"zon": "zone1", "node": "node-b"}), FOUR[2], FOUR[3]]
    pods = [bound("p-a1", "node-a", {"foo": ""}), bound("p-a2", "node-a", {"foo": ""})]
    p = incoming({"foo": ""}, sc(1, "zone", DNS, FOO))
    report = run_explain(tmp_path, [*nodes, *pods], p)
    assert report["selectedNode"] in ("node-x", "node-y")
    squeezed = incoming({"foo": ""}, sc(1, "rack", DNS, FOO))
    report = run_explain(tmp_path, [*nodes, *pods], squeezed)
    assert report["message"] == (
        "0/4 nodes are available: "
        "4 node(s) didn't match pod topology spread constraints (missing required label)."
    )
