"""InterPodAffinity PreFilter / Filter, ported from upstream
``pkg/scheduler/framework/plugins/interpodaffinity/filtering_test.go``: TestRequiredAffinitySingleNode
(26 cases) and TestRequiredAffinityMultipleNodes (18 cases), as data.

Every case runs three ways (see ``interpodaffinity_support``): the plugin alone, a Framework with
only the plugin, and ``ksched explain`` with the default profile; the reason strings and codes must
be upstream's. Deviations, each marked in its case:

- upstream's parse errors read ``parsing pod: requiredAffinityTerms: values[0][service]: Invalid
  value: ...``; ksched's name the pod and the full field path (same code, UnschedulableAndUnresolvable);
- two upstream cases build terms without a ``topologyKey`` (the API server rejects such pods);
  upstream fails them at Filter with the affinity reason, ksched refuses them at PreFilter with a
  message naming the field (same code, UnschedulableAndUnresolvable), as the issue asks.
"""

from __future__ import annotations

from typing import Any

import pytest

from ksched.framework.interface import Code
from ksched.framework.plugins.interpodaffinity import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    NAME,
)
from ksched.model.pod import pod_from_dict
from tests.unit.framework.plugins.interpodaffinity_support import (
    NAMESPACES,
    affinity,
    build,
    explain_reasons,
    expr,
    framework_statuses,
    merge,
    plugin_of,
    statuses,
    term,
    xnode,
    xpod,
)

AFF, ANTI, EXISTING, SKIP = "aff", "anti", "existing", "skip"
EXPECTED = {
    AFF: (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_AFFINITY_RULES_NOT_MATCH,)),
    ANTI: (Code.UNSCHEDULABLE, (ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,)),
    EXISTING: (Code.UNSCHEDULABLE, (ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,)),
}


def reject(text: str) -> tuple[str, str]:
    """A PreFilter rejection (UnschedulableAndUnresolvable) whose message contains ``text``."""
    return ("reject", text)


def aff_in(key: str, tk: str, *values: str) -> dict[str, Any]:
    return affinity(req_aff=[term(expr(key, "In", *values), topology_key=tk)])


def aff_not_in(key: str, tk: str, *values: str) -> dict[str, Any]:
    return affinity(req_aff=[term(expr(key, "NotIn", *values), topology_key=tk)])


def aff_exists(key: str, tk: str) -> dict[str, Any]:
    return affinity(req_aff=[term(expr(key, "Exists"), topology_key=tk)])


def anti_in(key: str, tk: str, *values: str) -> dict[str, Any]:
    return affinity(req_anti=[term(expr(key, "In", *values), topology_key=tk)])


def anti_not_in(key: str, tk: str, *values: str) -> dict[str, Any]:
    return affinity(req_anti=[term(expr(key, "NotIn", *values), topology_key=tk)])


def anti_exists(key: str, tk: str) -> dict[str, Any]:
    return affinity(req_anti=[term(expr(key, "Exists"), topology_key=tk)])


PL = {"service": "securityscan"}
PL2 = {"security": "S1"}
NODE1 = ("node1", {"region": "r1", "zone": "z11"})
TEAM1 = {"matchExpressions": [expr("team", "In", "team1")]}
BAD = "{{.bad-value.}}"


def on1(**kw: Any) -> dict[str, Any]:
    return xpod(node="node1", **kw)


# (name, incoming pod kwargs, existing pods, expected PreFilter (None / SKIP / reject) or per-node)
SINGLE: list[Any] = [
    (
        "A pod that has no required pod affinity scheduling rules can schedule onto a node with no existing "
        "pods",
        {},
        [],
        SKIP,
    ),
    (
        "satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In operator that "
        "matches the existing pod",
        {"labels": PL2, "aff": aff_in("service", "region", "securityscan", "value2")},
        [on1(labels=PL)],
        None,
    ),
    (
        "satisfies the pod with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using not in "
        "operator in labelSelector that matches the existing pod",
        {"labels": PL2, "aff": aff_not_in("service", "region", "securityscan3", "value3")},
        [on1(labels=PL)],
        None,
    ),
    # Deviation: no topologyKey (upstream: Filter fails with the affinity reason).
    (
        "Does not satisfy the PodAffinity with labelSelector because of diff Namespace",
        {
            "labels": PL2,
            "aff": affinity(
                req_aff=[
                    term(
                        expr("service", "In", "securityscan", "value2"),
                        topology_key="",
                        namespaces=["DiffNameSpace"],
                    )
                ]
            ),
        },
        [on1(ns="ns", labels=PL)],
        reject("topologyKey must not be empty"),
    ),
    # Deviation: no topologyKey (upstream: Filter fails with the affinity reason).
    (
        "Doesn't satisfy the PodAffinity because of unmatching labelSelector with the existing pod",
        {"labels": PL, "aff": aff_in("service", "", "antivirusscan", "value2")},
        [on1(labels=PL)],
        reject(
            "requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: topologyKey must not be empty"
        ),
    ),
    (
        "satisfies the PodAffinity with different label Operators in multiple "
        "RequiredDuringSchedulingIgnoredDuringExecution ",
        {
            "labels": PL2,
            "aff": affinity(
                req_aff=[
                    term(expr("service", "Exists"), expr("wrongkey", "DoesNotExist"), topology_key="region"),
                    term(
                        expr("service", "In", "securityscan"),
                        expr("service", "NotIn", "WrongValue"),
                        topology_key="region",
                    ),
                ]
            ),
        },
        [on1(labels=PL)],
        None,
    ),
    (
        "The labelSelector requirements(items of matchExpressions) are ANDed, the pod cannot schedule onto "
        "the "
        "node because one of the matchExpression item don't match.",
        {
            "labels": PL2,
            "aff": affinity(
                req_aff=[
                    term(expr("service", "Exists"), expr("wrongkey", "DoesNotExist"), topology_key="region"),
                    term(
                        expr("service", "In", "securityscan2"),
                        expr("service", "NotIn", "WrongValue"),
                        topology_key="region",
                    ),
                ]
            ),
        },
        [on1(labels=PL)],
        [AFF],
    ),
    (
        "satisfies the PodAffinity and PodAntiAffinity with the existing pod",
        {
            "labels": PL2,
            "aff": merge(
                aff_in("service", "region", "securityscan", "value2"),
                anti_in("service", "node", "antivirusscan", "value2"),
            ),
        },
        [on1(labels=PL)],
        None,
    ),
    (
        "satisfies the PodAffinity and PodAntiAffinity and PodAntiAffinity symmetry with the existing pod",
        {
            "labels": PL2,
            "aff": merge(
                aff_in("service", "region", "securityscan", "value2"),
                anti_in("service", "node", "antivirusscan", "value2"),
            ),
        },
        [on1(labels=PL, aff=anti_in("service", "node", "antivirusscan", "value2"))],
        None,
    ),
    (
        "satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod",
        {
            "labels": PL2,
            "aff": merge(
                aff_in("service", "region", "securityscan", "value2"),
                anti_in("service", "zone", "securityscan", "value2"),
            ),
        },
        [on1(labels=PL)],
        [ANTI],
    ),
    (
        "satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity symmetry with the "
        "existing pod",
        {
            "labels": PL,
            "aff": merge(
                aff_in("service", "region", "securityscan", "value2"),
                anti_in("service", "node", "antivirusscan", "value2"),
            ),
        },
        [on1(labels=PL, aff=anti_in("service", "zone", "securityscan", "value2"))],
        [EXISTING],
    ),
    (
        "pod matches its own Label in PodAffinity and that matches the existing pod Labels",
        {"labels": PL, "aff": aff_not_in("service", "region", "securityscan", "value2")},
        [xpod(labels=PL, node="node2")],
        [AFF],
    ),
    (
        "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity "
        "constraints. "
        "doesn't satisfy PodAntiAffinity symmetry with the existing pod",
        {"labels": PL},
        [on1(labels=PL, aff=anti_in("service", "zone", "securityscan", "value2"))],
        [EXISTING],
    ),
    (
        "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity "
        "constraints. "
        "satisfy PodAntiAffinity symmetry with the existing pod",
        {"labels": PL},
        [on1(labels=PL, aff=anti_not_in("service", "zone", "securityscan", "value2"))],
        SKIP,
    ),
    (
        "satisfies the PodAntiAffinity with existing pod but doesn't satisfy PodAntiAffinity symmetry with "
        "incoming pod",
        {"labels": PL, "aff": merge(anti_exists("service", "region"), anti_exists("security", "region"))},
        [on1(labels=PL2, aff=anti_exists("security", "zone"))],
        [ANTI],
    ),
    (
        "PodAntiAffinity symmetry check a1: incoming pod and existing pod partially match each other on "
        "AffinityTerms",
        {"labels": PL, "aff": merge(anti_exists("service", "zone"), anti_exists("security", "zone"))},
        [on1(labels=PL2, aff=anti_exists("security", "zone"))],
        [ANTI],
    ),
    (
        "PodAntiAffinity symmetry check a2: incoming pod and existing pod partially match each other on "
        "AffinityTerms",
        {"labels": PL2, "aff": anti_exists("security", "zone")},
        [on1(labels=PL, aff=merge(anti_exists("service", "zone"), anti_exists("security", "zone")))],
        [EXISTING],
    ),
    (
        "PodAntiAffinity symmetry check b1: incoming pod and existing pod partially match each other on "
        "AffinityTerms",
        {
            "labels": {"abc": "", "xyz": ""},
            "aff": merge(anti_exists("abc", "zone"), anti_exists("def", "zone")),
        },
        [
            on1(
                labels={"def": "", "xyz": ""},
                aff=merge(anti_exists("abc", "zone"), anti_exists("def", "zone")),
            )
        ],
        [ANTI],
    ),
    (
        "PodAntiAffinity symmetry check b2: incoming pod and existing pod partially match each other on "
        "AffinityTerms",
        {
            "labels": {"def": "", "xyz": ""},
            "aff": merge(anti_exists("abc", "zone"), anti_exists("def", "zone")),
        },
        [
            on1(
                labels={"abc": "", "xyz": ""},
                aff=merge(anti_exists("abc", "zone"), anti_exists("def", "zone")),
            )
        ],
        [ANTI],
    ),
    # Deviation in wording only: ksched names the pod and the field.
    (
        "PodAffinity fails PreFilter with an invalid affinity label syntax",
        {
            "labels": PL,
            "aff": merge(
                aff_in("service", "region", BAD), aff_in("service", "node", "antivirusscan", "value2")
            ),
        },
        [],
        reject(
            "requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions[0].values[0]"
        ),
    ),
    (
        "PodAntiAffinity fails PreFilter with an invalid antiaffinity label syntax",
        {"labels": PL, "aff": merge(aff_in("service", "region", "foo"), aff_in("service", "node", BAD))},
        [],
        reject(
            "requiredDuringSchedulingIgnoredDuringExecution[1].labelSelector.matchExpressions[0].values[0]"
        ),
    ),
    (
        "affinity with NamespaceSelector",
        {
            "labels": PL2,
            "aff": affinity(
                req_aff=[
                    term(
                        expr("service", "In", "securityscan", "value2"),
                        topology_key="region",
                        ns_selector=TEAM1,
                    )
                ]
            ),
        },
        [on1(ns="subteam1.team1", labels=PL)],
        None,
    ),
    (
        "affinity with non-matching NamespaceSelector",
        {
            "labels": PL2,
            "aff": affinity(
                req_aff=[
                    term(
                        expr("service", "In", "securityscan", "value2"),
                        topology_key="region",
                        ns_selector=TEAM1,
                    )
                ]
            ),
        },
        [on1(ns="subteam1.team2", labels=PL)],
        [AFF],
    ),
    (
        "anti-affinity with matching NamespaceSelector",
        {
            "ns": "subteam1.team1",
            "labels": PL2,
            "aff": affinity(
                req_anti=[
                    term(
                        expr("service", "In", "securityscan", "value2"),
                        topology_key="zone",
                        ns_selector=TEAM1,
                    )
                ]
            ),
        },
        [on1(ns="subteam2.team1", labels=PL)],
        [ANTI],
    ),
    (
        "anti-affinity with matching all NamespaceSelector",
        {
            "ns": "subteam1.team1",
            "labels": PL2,
            "aff": affinity(
                req_anti=[
                    term(expr("service", "In", "securityscan", "value2"), topology_key="zone", ns_selector={})
                ]
            ),
        },
        [on1(ns="subteam2.team1", labels=PL)],
        [ANTI],
    ),
    (
        "anti-affinity with non-matching NamespaceSelector",
        {
            "ns": "subteam1.team1",
            "labels": PL2,
            "aff": affinity(
                req_anti=[
                    term(
                        expr("service", "In", "securityscan", "value2"),
                        topology_key="zone",
                        ns_selector=TEAM1,
                    )
                ]
            ),
        },
        [on1(ns="subteam1.team2", labels=PL)],
        None,
    ),
]

RG_CHINA = {"region": "China"}
RG_CHINA_AZ1 = {"region": "China", "az": "az1"}
RG_INDIA = {"region": "India"}


def rzh(zone: str, host: str) -> dict[str, str]:
    return {"region": "r1", "zone": zone, "hostname": host}


NODES_ABC = [("nodeA", RG_CHINA), ("nodeB", RG_CHINA_AZ1), ("nodeC", RG_INDIA)]
NODES_AB_SAME_ZONE = [("nodeA", rzh("z1", "nodeA")), ("nodeB", rzh("z1", "nodeB"))]
NODES_AB = [("nodeA", rzh("z1", "nodeA")), ("nodeB", rzh("z2", "nodeB"))]

# (name, incoming pod kwargs, existing pods, nodes, expected PreFilter SKIP or per-node outcomes)
MULTIPLE: list[Any] = [
    (
        "A pod can be scheduled onto all the nodes that have the same topology key & label value with one of "
        "them has an existing pod that matches the affinity rules",
        {"aff": aff_in("foo", "region", "bar")},
        [xpod(node="node1", labels={"foo": "bar"})],
        [("node1", RG_CHINA), ("node2", RG_CHINA_AZ1), ("node3", RG_INDIA)],
        [None, None, AFF],
    ),
    (
        "The affinity rule is to schedule all of the pods of this collection to the same zone. The first "
        "pod of "
        "the collection should not be blocked from being scheduled onto any node, even there's no existing "
        "pod "
        "that matches the rule anywhere.",
        {
            "labels": {"foo": "bar", "service": "securityscan"},
            "aff": merge(aff_in("foo", "zone", "bar"), aff_in("service", "zone", "securityscan")),
        },
        [xpod(node="nodeA", labels={"foo": "bar"})],
        [("nodeA", {"zone": "az1", "hostname": "h1"}), ("nodeB", {"zone": "az2", "hostname": "h2"})],
        [None, None],
    ),
    (
        "The first pod of the collection can only be scheduled on nodes labelled with the requested "
        "topology keys",
        {
            "labels": {"foo": "bar", "service": "securityscan"},
            "aff": merge(aff_in("foo", "zone", "bar"), aff_in("service", "zone", "securityscan")),
        },
        [xpod(node="nodeA", labels={"foo": "bar"})],
        [
            ("nodeA", {"zoneLabel": "az1", "hostname": "h1"}),
            ("nodeB", {"zoneLabel": "az2", "hostname": "h2"}),
        ],
        [AFF, AFF],
    ),
    (
        "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the "
        "inter "
        "pod affinity rule. The pod can not be scheduled onto nodeA and nodeB.",
        {"aff": anti_in("foo", "region", "abc")},
        [xpod(node="nodeA", labels={"foo": "abc"})],
        [("nodeA", {"region": "r1", "hostname": "nodeA"}), ("nodeB", {"region": "r1", "hostname": "nodeB"})],
        [ANTI, ANTI],
    ),
    (
        "This test ensures that anti-affinity matches a pod when any term of the anti-affinity rule matches "
        "a pod.",
        {"aff": merge(anti_in("foo", "region", "abc"), anti_in("service", "zone", "securityscan"))},
        [xpod(node="nodeA", labels={"foo": "abc", "service": "securityscan"})],
        [("nodeA", rzh("z1", "nodeA")), ("nodeB", rzh("z2", "nodeB"))],
        [ANTI, ANTI],
    ),
    (
        "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the "
        "inter "
        "pod affinity rule. The pod can not be scheduled onto nodeA and nodeB but can be scheduled onto "
        "nodeC",
        {"aff": anti_in("foo", "region", "abc")},
        [xpod(node="nodeA", labels={"foo": "abc"})],
        NODES_ABC,
        [ANTI, ANTI, None],
    ),
    (
        "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the "
        "inter "
        "pod affinity rule. The pod can not be scheduled onto nodeA, nodeB, but can be scheduled onto nodeC "
        "(NodeC has an existing pod that match the inter pod affinity rule but in different namespace)",
        {"ns": "NS1", "labels": {"foo": "123"}, "aff": anti_in("foo", "region", "bar")},
        [
            xpod(node="nodeA", ns="NS1", labels={"foo": "bar"}),
            xpod(node="nodeC", ns="NS2", aff=anti_in("foo", "region", "123")),
        ],
        NODES_ABC,
        [ANTI, ANTI, None],
    ),
    (
        "Test existing pod's anti-affinity: if an existing pod has a term with invalid topologyKey, "
        "labelSelector "
        "of the term is firstly checked, and then topologyKey of the term is also checked",
        {"labels": {"foo": ""}},
        [xpod(node="nodeA", aff=anti_exists("foo", "invalid-node-label"))],
        NODES_AB_SAME_ZONE,
        SKIP,
    ),
    # Upstream's incoming pod also names nodeA in spec.nodeName; left out (it only matters to NodeName).
    (
        "Test incoming pod's anti-affinity: even if labelSelector matches, we still check if topologyKey "
        "matches",
        {"aff": anti_exists("foo", "invalid-node-label")},
        [xpod(node="nodeA", labels={"foo": ""})],
        NODES_AB_SAME_ZONE,
        [None, None],
    ),
    (
        "Test existing pod's anti-affinity: incoming pod wouldn't considered as a fit as it violates each "
        "existingPod's terms on all nodes",
        {"labels": {"foo": "", "bar": ""}},
        [
            xpod(node="nodeA", aff=anti_exists("foo", "zone")),
            xpod(node="nodeA", aff=anti_exists("bar", "region")),
        ],
        NODES_AB,
        [EXISTING, EXISTING],
    ),
    (
        "Test incoming pod's anti-affinity: incoming pod wouldn't considered as a fit as it at least "
        "violates one "
        "anti-affinity rule of existingPod",
        {"aff": merge(anti_exists("foo", "zone"), anti_exists("bar", "region"))},
        [xpod(node="nodeA", labels={"foo": ""}), xpod(node="nodeB", labels={"bar": ""})],
        NODES_AB,
        [ANTI, ANTI],
    ),
    (
        "Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's "
        "counted as a "
        "single term match - case when one term has invalid topologyKey",
        {"labels": {"foo": "", "bar": ""}},
        [xpod(node="nodeA", aff=merge(anti_exists("foo", "invalid-node-label"), anti_exists("bar", "zone")))],
        NODES_AB,
        [EXISTING, None],
    ),
    (
        "Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's "
        "counted as a "
        "single term match - case when one term has invalid topologyKey",
        {"aff": merge(anti_exists("foo", "invalid-node-label"), anti_exists("bar", "zone"))},
        [xpod(node="nodeA", labels={"foo": "", "bar": ""}, name="podA")],
        NODES_AB,
        [ANTI, None],
    ),
    (
        "Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's "
        "counted as a "
        "single term match - case when all terms have valid topologyKey",
        {"labels": {"foo": "", "bar": ""}},
        [xpod(node="nodeA", aff=merge(anti_exists("foo", "region"), anti_exists("bar", "zone")))],
        NODES_AB,
        [EXISTING, EXISTING],
    ),
    (
        "Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's "
        "counted as a "
        "single term match - case when all terms have valid topologyKey",
        {"aff": merge(anti_exists("foo", "region"), anti_exists("bar", "zone"))},
        [xpod(node="nodeA", labels={"foo": "", "bar": ""})],
        NODES_AB,
        [ANTI, ANTI],
    ),
    (
        "Test existing pod's anti-affinity: existingPod on nodeA and nodeB has at least one anti-affinity "
        "term "
        "matches incoming pod, so incoming pod can only be scheduled to nodeC",
        {"labels": {"foo": "", "bar": ""}},
        [
            xpod(node="nodeA", aff=merge(anti_exists("foo", "zone"), anti_exists("labelA", "zone"))),
            xpod(node="nodeB", aff=merge(anti_exists("bar", "zone"), anti_exists("labelB", "zone"))),
        ],
        [*NODES_AB, ("nodeC", rzh("z3", "nodeC"))],
        [EXISTING, EXISTING, None],
    ),
    (
        "Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all "
        "topologyKeys match",
        {"aff": merge(aff_exists("foo", "region"), aff_exists("bar", "zone"))},
        [xpod(name="pod1", node="nodeA", labels={"foo": "", "bar": ""})],
        NODES_AB_SAME_ZONE,
        [None, None],
    ),
    (
        "Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all "
        "topologyKeys match, and the match logic should be satisfied on the same pod",
        {"aff": merge(aff_exists("foo", "region"), aff_exists("bar", "zone"))},
        [
            xpod(name="pod1", node="nodeA", labels={"foo": ""}),
            xpod(name="pod2", node="nodeB", labels={"bar": ""}),
        ],
        NODES_AB,
        [AFF, AFF],
    ),
]


def _check(
    incoming_kw: dict[str, Any],
    existing: list[dict[str, Any]],
    nodes: list[tuple[str, dict[str, str]]],
    namespaces: dict[str, dict[str, str]],
    want: Any,
) -> None:
    names = [n for n, _ in nodes]
    incoming = pod_from_dict(xpod(**incoming_kw))
    for run in ("plugin", "framework", "explain"):
        cache = build([xnode(n, labels, roomy=run == "explain") for n, labels in nodes], existing, namespaces)
        if run == "explain":
            got_explain = explain_reasons(incoming, cache, names)
            if isinstance(want, tuple):
                assert all(g is not None and g[0] == NAME and want[1] in g[1] for g in got_explain), (
                    got_explain
                )
            elif want == SKIP or want is None:
                assert got_explain == [None] * len(names)
            else:
                assert got_explain == [None if w is None else (NAME, *EXPECTED[w][1]) for w in want]
            continue
        pre, per_node = (statuses if run == "plugin" else framework_statuses)(
            plugin_of(), incoming, cache, names
        )
        if isinstance(want, tuple):
            assert per_node is None and pre[0] == Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (run, pre)
            assert len(pre[1]) == 1 and want[1] in pre[1][0] and pre[1][0].startswith("parsing pod: Pod "), (
                pre
            )
        elif want == SKIP:
            if run == "plugin":
                assert pre == (Code.SKIP, ())
            else:
                assert pre is None and per_node == [None] * len(names)
        elif want is None:
            assert pre is None and per_node == [None] * len(names), (run, per_node)
        else:
            assert pre is None, (run, pre)
            assert per_node == [None if w is None else EXPECTED[w] for w in want], run


@pytest.mark.parametrize(("incoming", "existing", "want"), [pytest.param(*c[1:], id=c[0]) for c in SINGLE])
def test_required_affinity_single_node(
    incoming: dict[str, Any], existing: list[dict[str, Any]], want: Any
) -> None:
    _check(incoming, existing, [NODE1], NAMESPACES, want)


@pytest.mark.parametrize(
    ("incoming", "existing", "nodes", "want"), [pytest.param(*c[1:], id=c[0]) for c in MULTIPLE]
)
def test_required_affinity_multiple_nodes(
    incoming: dict[str, Any], existing: list[dict[str, Any]], nodes: list[Any], want: Any
) -> None:
    _check(incoming, existing, nodes, {"NS1": {}}, want)


def test_reason_strings_are_upstreams() -> None:
    assert ERR_REASON_AFFINITY_RULES_NOT_MATCH == "node(s) didn't match pod affinity rules"
    assert ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH == "node(s) didn't match pod anti-affinity rules"
    assert ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH == (
        "node(s) didn't satisfy existing pods anti-affinity rules"
    )
