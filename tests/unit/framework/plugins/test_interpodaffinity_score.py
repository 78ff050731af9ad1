"""InterPodAffinity PreScore / Score / NormalizeScore, ported from upstream
``pkg/scheduler/framework/plugins/interpodaffinity/scoring_test.go``: TestPreferredAffinity (26 cases)
and TestPreferredAffinityWithHardPodAffinitySymmetricWeight (5 cases), as data.

Each case runs the plugin alone (PreScore, Score, NormalizeScore on every node, as upstream's loop),
then through a Framework holding only the plugin and through ``ksched explain`` with the default
profile, whose per-plugin ``InterPodAffinity`` score must be the same (absent when PreScore skips).
Upstream's "invalid Affinity fails PreScore" cases expect an Error whose message contains
``Invalid value: "{{.bad-value.}}"``; ksched's message names the pod and field instead.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ksched.explain import LoadedCluster, explain
from ksched.framework.interface import Code
from ksched.framework.runtime import Framework
from ksched.model.pod import pod_from_dict
from tests.unit.framework.plugins.interpodaffinity_support import (
    DEFAULT_NS,
    NAMESPACES,
    affinity,
    build,
    expr,
    plugin_of,
    scores,
    term,
    weighted,
    xnode,
    xpod,
)

MAX = 100
SKIP, ERROR = "skip", "error"
RG_CHINA = {"region": "China"}
RG_INDIA = {"region": "India"}
AZ1 = {"az": "az1"}
AZ2 = {"az": "az2"}
RG_CHINA_AZ1 = {"region": "China", "az": "az1"}
S1 = {"security": "S1"}
S2 = {"security": "S2"}
TEAM1 = {"matchExpressions": [expr("team", "In", "team1")]}


def sec_in(*values: str, tk: str, **kw: Any) -> dict[str, Any]:
    return term(expr("security", "In", *values), topology_key=tk, **kw)


STAY_WITH_S1_IN_REGION = affinity(pref_aff=[weighted(5, sec_in("S1", tk="region"))])
STAY_WITH_S2_IN_REGION = affinity(pref_aff=[weighted(6, sec_in("S2", tk="region"))])
AFFINITY3 = affinity(
    pref_aff=[
        weighted(
            8, term(expr("security", "NotIn", "S1"), expr("security", "In", "S2"), topology_key="region")
        ),
        weighted(
            2, term(expr("security", "Exists"), expr("wrongkey", "DoesNotExist"), topology_key="region")
        ),
    ]
)
HARD_AFFINITY = affinity(
    req_aff=[
        sec_in("S1", "value2", tk="region"),
        term(expr("security", "Exists"), expr("wrongkey", "DoesNotExist"), topology_key="region"),
    ]
)
AWAY_FROM_S1_IN_AZ = affinity(pref_anti=[weighted(5, sec_in("S1", tk="az"))])
AWAY_FROM_S2_IN_AZ = affinity(pref_anti=[weighted(5, sec_in("S2", tk="az"))])
STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ = affinity(
    pref_aff=[weighted(8, sec_in("S1", tk="region"))], pref_anti=[weighted(5, sec_in("S2", tk="az"))]
)
AFFINITY_NS_SELECTOR = affinity(
    pref_aff=[weighted(5, sec_in("S1", tk="region", namespaces=["subteam2.team2"], ns_selector=TEAM1))]
)
ANTI_AFFINITY_NS_SELECTOR = affinity(
    pref_anti=[weighted(5, sec_in("S1", tk="region", namespaces=["subteam2.team2"], ns_selector=TEAM1))]
)
INVALID_AFFINITY = affinity(pref_aff=[weighted(8, sec_in("{{.bad-value.}}", tk="region"))])
INVALID_ANTI_AFFINITY = affinity(pref_anti=[weighted(5, sec_in("{{.bad-value.}}", tk="az"))])


def on(
    node: str, labels: dict[str, str] | None = None, aff: dict[str, Any] | None = None, ns: str = DEFAULT_NS
) -> dict[str, Any]:
    return xpod(node=node, labels=labels, aff=aff, ns=ns)


def nodes(*specs: tuple[str, dict[str, str]]) -> list[tuple[str, dict[str, str]]]:
    return list(specs)


N3 = nodes(("node1", RG_CHINA), ("node2", RG_INDIA), ("node3", AZ1))
N5 = nodes(
    ("node1", RG_CHINA), ("node2", RG_INDIA), ("node3", RG_CHINA), ("node4", RG_CHINA), ("node5", RG_INDIA)
)

# (name, incoming pod kwargs, existing pods, nodes, ignorePreferredTermsOfExistingPods, expected)
PREFERRED: list[Any] = [
    ("all nodes are same priority as Affinity is nil", {"labels": S1}, [], N3, False, SKIP),
    (
        "Affinity: pod that matches topology key & pods in nodes will get high score comparing to "
        "otherswhich "
        "doesn't match either pods in nodes or in topology key",
        {"labels": S1, "aff": STAY_WITH_S1_IN_REGION},
        [on("node1", S1), on("node2", S2), on("node3", S1)],
        N3,
        False,
        [MAX, 0, 0],
    ),
    (
        "All the nodes that have the same topology key & label value with one of them has an existing pod "
        "that "
        "match the affinity rules, have the same score",
        {"aff": STAY_WITH_S1_IN_REGION},
        [on("node1", S1)],
        nodes(("node1", RG_CHINA), ("node2", RG_CHINA_AZ1), ("node3", RG_INDIA)),
        False,
        [MAX, MAX, 0],
    ),
    (
        "Affinity: nodes in one region has more matching pods comparing to other region, so the region "
        "which has "
        "more matches will get high score",
        {"labels": S1, "aff": STAY_WITH_S2_IN_REGION},
        [
            on("node1", S2),
            on("node1", S2),
            on("node2", S2),
            on("node3", S2),
            on("node4", S2),
            on("node5", S2),
        ],
        N5,
        False,
        [MAX, 0, MAX, MAX, 0],
    ),
    (
        "Affinity: different Label operators and values for pod affinity scheduling preference, including "
        "some "
        "match failures ",
        {"labels": S1, "aff": AFFINITY3},
        [on("node1", S1), on("node2", S2), on("node3", S1)],
        N3,
        False,
        [20, MAX, 0],
    ),
    (
        "Affinity symmetry: considered only the preferredDuringSchedulingIgnoredDuringExecution in pod "
        "affinity "
        "symmetry",
        {"labels": S2},
        [on("node1", S1, STAY_WITH_S1_IN_REGION), on("node2", S2, STAY_WITH_S2_IN_REGION)],
        N3,
        False,
        [0, MAX, 0],
    ),
    (
        "Affinity symmetry with namespace selector",
        {"ns": "subteam1.team1", "labels": S1},
        [on("node1", S1, AFFINITY_NS_SELECTOR), on("node2", S2, STAY_WITH_S2_IN_REGION)],
        N3,
        False,
        [MAX, 0, 0],
    ),
    (
        "AntiAffinity symmetry with namespace selector",
        {"ns": "subteam1.team1", "labels": S1},
        [on("node1", S1, ANTI_AFFINITY_NS_SELECTOR), on("node2", S2, STAY_WITH_S2_IN_REGION)],
        N3,
        False,
        [0, MAX, MAX],
    ),
    (
        "Affinity symmetry: considered RequiredDuringSchedulingIgnoredDuringExecution in pod affinity "
        "symmetry",
        {"labels": S1},
        [on("node1", S1, HARD_AFFINITY), on("node2", S2, HARD_AFFINITY)],
        N3,
        False,
        [MAX, MAX, 0],
    ),
    (
        "Anti Affinity: pod that does not match existing pods in node will get high score ",
        {"labels": S1, "aff": AWAY_FROM_S1_IN_AZ},
        [on("node1", S1), on("node2", S2)],
        nodes(("node1", AZ1), ("node2", RG_CHINA)),
        False,
        [0, MAX],
    ),
    (
        "Anti Affinity: pod that does not match topology key & match the pods in nodes will get higher score "
        "comparing to others ",
        {"labels": S1, "aff": AWAY_FROM_S1_IN_AZ},
        [on("node1", S1), on("node2", S1)],
        nodes(("node1", AZ1), ("node2", RG_CHINA)),
        False,
        [0, MAX],
    ),
    (
        "Anti Affinity: one node has more matching pods comparing to other node, so the node which has more "
        "unmatches will get high score",
        {"labels": S1, "aff": AWAY_FROM_S1_IN_AZ},
        [on("node1", S1), on("node1", S1), on("node2", S2)],
        nodes(("node1", AZ1), ("node2", RG_INDIA)),
        False,
        [0, MAX],
    ),
    (
        "Anti Affinity symmetry: the existing pods in node which has anti affinity match will get high score",
        {"labels": S2},
        [on("node1", S1, AWAY_FROM_S2_IN_AZ), on("node2", S2, AWAY_FROM_S1_IN_AZ)],
        nodes(("node1", AZ1), ("node2", AZ2)),
        False,
        [0, MAX],
    ),
    (
        "Affinity and Anti Affinity: considered only preferredDuringSchedulingIgnoredDuringExecution in "
        "both pod "
        "affinity & anti affinity",
        {"labels": S1, "aff": STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ},
        [on("node1", S1), on("node2", S1)],
        nodes(("node1", RG_CHINA), ("node2", AZ1)),
        False,
        [MAX, 0],
    ),
    (
        "Affinity and Anti Affinity: considering both affinity and anti-affinity, the pod to schedule and "
        "existing pods have the same labels",
        {"labels": S1, "aff": STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ},
        [
            on("node1", S1),
            on("node1", S1),
            on("node2", S1),
            on("node3", S1),
            on("node3", S1),
            on("node4", S1),
            on("node5", S1),
        ],
        nodes(
            ("node1", RG_CHINA_AZ1),
            ("node2", RG_INDIA),
            ("node3", RG_CHINA),
            ("node4", RG_CHINA),
            ("node5", RG_INDIA),
        ),
        False,
        [MAX, 0, MAX, MAX, 0],
    ),
    (
        "Affinity and Anti Affinity and symmetry: considered only "
        "preferredDuringSchedulingIgnoredDuringExecution "
        "in both pod affinity & anti affinity & symmetry",
        {"labels": S1, "aff": STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ},
        [
            on("node1", S1),
            on("node2", S2),
            on("node3", None, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
            on("node4", None, AWAY_FROM_S1_IN_AZ),
        ],
        nodes(("node1", RG_CHINA), ("node2", AZ1), ("node3", RG_INDIA), ("node4", AZ2)),
        False,
        [MAX, 0, MAX, 0],
    ),
    (
        "Avoid panic when partial nodes in a topology don't have pods with affinity",
        {"labels": S1},
        [on("node1", S1), on("node2", None, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ)],
        nodes(("node1", RG_CHINA), ("node2", RG_CHINA)),
        False,
        [0, 0],
    ),
    (
        "invalid Affinity fails PreScore",
        {"aff": INVALID_AFFINITY},
        [],
        nodes(("node1", RG_CHINA), ("node2", RG_CHINA)),
        False,
        ERROR,
    ),
    (
        "invalid AntiAffinity fails PreScore",
        {"aff": INVALID_ANTI_AFFINITY},
        [],
        nodes(("node1", RG_CHINA), ("node2", RG_CHINA)),
        False,
        ERROR,
    ),
    (
        "Affinity with pods matching NamespaceSelector",
        {"ns": "subteam1.team1", "labels": S1, "aff": AFFINITY_NS_SELECTOR},
        [
            on("node1", S1, ns="subteam1.team1"),
            on("node1", S1, ns="subteam1.team1"),
            on("node1", S1, ns="subteam1.team2"),
            on("node2", S1, ns="subteam2.team1"),
        ],
        nodes(("node1", RG_CHINA), ("node2", RG_INDIA)),
        False,
        [MAX, 0],
    ),
    (
        "Affinity with pods matching both NamespaceSelector and Namespaces fields",
        {"ns": "subteam1.team1", "labels": S1, "aff": AFFINITY_NS_SELECTOR},
        [
            on("node1", S1, ns="subteam1.team1"),
            on("node1", S1, ns="subteam1.team1"),
            on("node1", S1, ns="subteam2.team2"),
            on("node2", S1, ns="subteam2.team1"),
        ],
        nodes(("node1", RG_CHINA), ("node2", RG_INDIA)),
        False,
        [MAX, 0],
    ),
    (
        "Affinity with pods matching NamespaceSelector (anti-affinity)",
        {"ns": "subteam1.team1", "labels": S1, "aff": ANTI_AFFINITY_NS_SELECTOR},
        [
            on("node1", S1, ns="subteam1.team1"),
            on("node1", S1, ns="subteam1.team1"),
            on("node1", S1, ns="subteam1.team2"),
            on("node2", S1, ns="subteam2.team1"),
        ],
        nodes(("node1", RG_CHINA), ("node2", RG_INDIA)),
        False,
        [0, MAX],
    ),
    (
        "Affinity with pods matching both NamespaceSelector and Namespaces fields (anti-affinity)",
        {"ns": "subteam1.team1", "labels": S1, "aff": ANTI_AFFINITY_NS_SELECTOR},
        [
            on("node1", S1, ns="subteam1.team1"),
            on("node1", S1, ns="subteam1.team1"),
            on("node1", S1, ns="subteam2.team2"),
            on("node2", S1, ns="subteam2.team1"),
        ],
        nodes(("node1", RG_CHINA), ("node2", RG_INDIA)),
        False,
        [0, MAX],
    ),
    (
        "Ignore preferred terms of existing pods",
        {"labels": S2},
        [on("node1", S1, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ), on("node2", S2, STAY_WITH_S2_IN_REGION)],
        nodes(("node1", RG_CHINA), ("node2", RG_INDIA)),
        True,
        SKIP,
    ),
    (
        "Do not ignore preferred terms of existing pods",
        {"labels": S2},
        [on("node1", S1, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ), on("node2", S2, STAY_WITH_S2_IN_REGION)],
        nodes(("node1", RG_CHINA), ("node2", RG_INDIA)),
        False,
        [0, MAX],
    ),
    ("No nodes to score", {"labels": S2}, [], [], False, SKIP),
]

HARD_POD_AFFINITY = affinity(
    req_aff=[
        term(
            expr("service", "In", "S1"),
            topology_key="region",
            namespaces=[DEFAULT_NS, "subteam2.team2"],
            ns_selector=TEAM1,
        ),
    ]
)
SERVICE_S1 = {"service": "S1"}
HARD_PODS = [on("node1", None, HARD_POD_AFFINITY), on("node2", None, HARD_POD_AFFINITY)]

# (name, incoming pod kwargs, hardPodAffinityWeight, expected)
HARD_WEIGHT: list[Any] = [
    ("with default weight", {"labels": SERVICE_S1}, 1, [MAX, MAX, 0]),
    ("with zero weight", {"labels": SERVICE_S1}, 0, SKIP),
    ("with no matching namespace", {"ns": "subteam1.team2", "labels": SERVICE_S1}, 1, SKIP),
    ("with matching NamespaceSelector", {"ns": "subteam1.team1", "labels": SERVICE_S1}, 1, [MAX, MAX, 0]),
    ("with matching Namespaces", {"ns": "subteam2.team2", "labels": SERVICE_S1}, 1, [MAX, MAX, 0]),
]


def _check(
    incoming_kw: dict[str, Any],
    existing: list[dict[str, Any]],
    node_specs: list[Any],
    hard: int,
    ignore: bool,
    want: Any,
) -> None:
    names = [n for n, _ in node_specs]
    incoming = pod_from_dict(xpod(**incoming_kw))

    # The plugin alone, as upstream's loop.
    cache = build([xnode(n, labels) for n, labels in node_specs], existing, NAMESPACES)
    status, got = scores(plugin_of(hard, ignore), incoming, cache, names)
    if want == SKIP:
        assert status.code == Code.SKIP, status
    elif want == ERROR:
        assert status.code == Code.ERROR and "bad-value" in status.message, status
        assert status.message.startswith("parsing pod: Pod default/"), status
    else:
        assert status.ok and got == want, (status, got)
    if not names or want == ERROR:
        return  # a cycle without nodes never reaches PreScore; a parse error stops it at PreFilter

    # Through a Framework with the plugin as its only PreScore / Score plugin.
    plugin = plugin_of(hard, ignore)
    fw = Framework("p", pre_score=[plugin], scores=[(plugin, 1)], rng=np.random.default_rng(0))
    result = fw.schedule_pod(incoming, cache, explain=True)
    assert result.status.ok, result.status
    by_plugin = {ps.plugin: ps.scores for ps in result.scores}
    if want == SKIP:
        assert "InterPodAffinity" not in by_plugin
    else:
        arr = np.broadcast_to(np.asarray(by_plugin["InterPodAffinity"]), (cache.nodes.n_rows,))
        assert [int(arr[cache.nodes.row_of[n]]) for n in names] == want

    # ksched explain with the default profile (args as in the case).
    if hard != 1 or ignore:
        return  # explain takes the default config's args; the plugin-level runs cover these
    roomy = build([xnode(n, labels, roomy=True) for n, labels in node_specs], existing, NAMESPACES)
    report = explain(LoadedCluster(roomy, names), incoming)
    got_explain = [entry["scores"].get("InterPodAffinity") for entry in report["nodes"]]
    assert got_explain == ([None] * len(names) if want == SKIP else want)


@pytest.mark.parametrize(
    ("incoming", "existing", "node_specs", "ignore", "want"),
    [pytest.param(*c[1:], id=c[0]) for c in PREFERRED],
)
def test_preferred_affinity(
    incoming: dict[str, Any], existing: list[dict[str, Any]], node_specs: list[Any], ignore: bool, want: Any
) -> None:
    _check(incoming, existing, node_specs, 1, ignore, want)


@pytest.mark.parametrize(("incoming", "hard", "want"), [pytest.param(*c[1:], id=c[0]) for c in HARD_WEIGHT])
def test_preferred_affinity_with_hard_pod_affinity_symmetric_weight(
    incoming: dict[str, Any], hard: int, want: Any
) -> None:
    _check(incoming, HARD_PODS, [("node1", RG_CHINA), ("node2", RG_INDIA), ("node3", AZ1)], hard, False, want)
