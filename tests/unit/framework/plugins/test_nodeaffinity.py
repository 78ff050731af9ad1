"""NodeAffinity, ported from upstream ``pkg/scheduler/framework/plugins/nodeaffinity/node_affinity_test.go``:
TestNodeAffinity (31 cases: PreFilter status and result, then Filter, incl. Gt, matchFields and
addedAffinity) and TestNodeAffinityPriority (9 cases incl. PreScore Skip and the broken-affinity
error). Also a hypothesis cross-check of the vectorized filter against the plain-Python reference
matchers in :mod:`ksched.model.selectors`, and cases where upstream's parsing (which ksched follows)
is stricter than those reference matchers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ksched.config.types import NodeAffinityArgs
from ksched.errors import ConfigError
from ksched.framework.interface import Code, CycleState, PreFilterResult
from ksched.framework.plugins.nodeaffinity import (
    ERR_REASON_CONFLICT,
    ERR_REASON_ENFORCED,
    ERR_REASON_POD,
    NodeAffinity,
    new,
)
from ksched.framework.registry import Handle
from ksched.framework.runtime import Framework
from ksched.model.selectors import required_matches, term_matches
from tests import builders
from tests.builders import cluster_of, make_node, pod

HANDLE = Handle("default-scheduler")
SKIP, CONFLICT = "skip", "conflict"


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, "values": list(values)}


def name_field(op: str, *values: str) -> dict[str, Any]:
    return {"key": "metadata.name", "operator": op, "values": list(values)}


def term(exprs: tuple[dict[str, Any], ...] = (), fields: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    return {"matchExpressions": list(exprs), "matchFields": list(fields)}


def node_affinity(
    *terms: dict[str, Any], preferred: list[tuple[int, dict[str, Any]]] | None = None
) -> dict[str, Any]:
    """A raw ``nodeAffinity``; no terms and no ``preferred`` means no required part either."""
    out: dict[str, Any] = {}
    if terms:
        out["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": list(terms)}
    if preferred is not None:
        out["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": w, "preference": t} for w, t in preferred
        ]
    return out


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeAffinity": node_affinity(*terms)}


def plugin_with(added: Mapping[str, Any] | None) -> NodeAffinity:
    return new(NodeAffinityArgs(added_affinity=added), HANDLE)


ADDED_NODE2 = node_affinity(term(fields=(name_field("In", "node2"),)))

# (pod kwargs, node labels, node name, filter reason, prefilter status, prefilter names, added, run prefilter)
FILTER_CASES = [
    pytest.param(
        {"node_selector": {"foo": "bar"}}, {}, "", ERR_REASON_POD, None, None, None, True, id="missing labels"
    ),
    pytest.param(
        {"node_selector": {"foo": "bar"}}, {"foo": "bar"}, "", None, None, None, None, True, id="same labels"
    ),
    pytest.param(
        {"node_selector": {"foo": "bar"}},
        {"foo": "bar", "baz": "blah"},
        "",
        None,
        None,
        None,
        None,
        True,
        id="node labels are superset",
    ),
    pytest.param(
        {"node_selector": {"foo": "bar", "baz": "blah"}},
        {"foo": "bar"},
        "",
        ERR_REASON_POD,
        None,
        None,
        None,
        True,
        id="node labels are subset",
    ),
    pytest.param(
        {"affinity": required(term((expr("foo", "In", "bar", "value2"),)))},
        {"foo": "bar"},
        "",
        None,
        None,
        None,
        None,
        True,
        id="Pod with matchExpressions using In operator that matches the existing node",
    ),
    pytest.param(
        {"affinity": required(term((expr("kernel-version", "Gt", "0204"),)))},
        {"kernel-version": "0206"},
        "",
        None,
        None,
        None,
        None,
        True,
        id="Pod with matchExpressions using Gt operator that matches the existing node",
    ),
    pytest.param(
        {"affinity": required(term((expr("mem-type", "NotIn", "DDR", "DDR2"),)))},
        {"mem-type": "DDR3"},
        "",
        None,
        None,
        None,
        None,
        True,
        id="Pod with matchExpressions using NotIn operator that matches the existing node",
    ),
    pytest.param(
        {"affinity": required(term((expr("GPU", "Exists"),)))},
        {"GPU": "NVIDIA-GRID-K1"},
        "",
        None,
        None,
        None,
        None,
        True,
        id="Pod with matchExpressions using Exists operator that matches the existing node",
    ),
    pytest.param(
        {"affinity": required(term((expr("foo", "In", "value1", "value2"),)))},
        {"foo": "bar"},
        "",
        ERR_REASON_POD,
        None,
        None,
        None,
        True,
        id="Pod with affinity that don't match node's labels won't schedule onto the node",
    ),
    pytest.param(
        {"affinity": required(term())},
        {"foo": "bar"},
        "",
        ERR_REASON_POD,
        None,
        None,
        None,
        True,
        id="Pod with empty MatchExpressions is not a valid value will match no objects and won't schedule "
        "onto the node",
    ),
    pytest.param(
        {},
        {"foo": "bar"},
        "",
        None,
        SKIP,
        None,
        None,
        True,
        id="Pod with no Affinity will schedule onto a node",
    ),
    pytest.param(
        {"affinity": {"nodeAffinity": {}}},
        {"foo": "bar"},
        "",
        None,
        SKIP,
        None,
        None,
        True,
        id="Pod with Affinity but nil NodeSelector will schedule onto a node",
    ),
    pytest.param(
        {"affinity": required(term((expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER"))))},
        {"GPU": "NVIDIA-GRID-K1"},
        "",
        None,
        None,
        None,
        None,
        True,
        id="Pod with multiple matchExpressions ANDed that matches the existing node",
    ),
    pytest.param(
        {"affinity": required(term((expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER"))))},
        {"GPU": "NVIDIA-GRID-K1"},
        "",
        ERR_REASON_POD,
        None,
        None,
        None,
        True,
        id="Pod with multiple matchExpressions ANDed that doesn't match the existing node",
    ),
    pytest.param(
        {
            "affinity": required(
                term((expr("foo", "In", "bar", "value2"),)), term((expr("diffkey", "In", "wrong", "value2"),))
            )
        },
        {"foo": "bar"},
        "",
        None,
        None,
        None,
        None,
        True,
        id="Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels and will "
        "schedule onto the node",
    ),
    pytest.param(
        {"node_selector": {"foo": "bar"}, "affinity": required(term((expr("foo", "Exists"),)))},
        {"foo": "bar"},
        "",
        None,
        None,
        None,
        None,
        True,
        id="Pod with an Affinity and a PodSpec.NodeSelector(the old thing that we are deprecating) both are "
        "satisfied, will schedule onto the node",
    ),
    pytest.param(
        {"node_selector": {"foo": "bar"}, "affinity": required(term((expr("foo", "Exists"),)))},
        {"foo": "barrrrrr"},
        "",
        ERR_REASON_POD,
        None,
        None,
        None,
        True,
        id="Pod with an Affinity matches node's labels but the PodSpec.NodeSelector(the old thing that we "
        "are deprecating) is not satisfied, won't schedule onto the node",
    ),
    pytest.param(
        {"affinity": required(term((expr("foo", "NotIn", "invalid value: ___@#$%^"),)))},
        {"foo": "bar"},
        "",
        ERR_REASON_POD,
        None,
        None,
        None,
        True,
        id="Pod with an invalid value in Affinity term won't be scheduled onto the node",
    ),
    pytest.param(
        {"affinity": required(term(fields=(name_field("In", "node1"),)))},
        {},
        "node1",
        None,
        None,
        frozenset({"node1"}),
        None,
        True,
        id="Pod with matchFields using In operator that matches the existing node",
    ),
    pytest.param(
        {"affinity": required(term(fields=(name_field("In", "node1"),)))},
        {},
        "node2",
        ERR_REASON_POD,
        None,
        frozenset({"node1"}),
        None,
        True,
        id="Pod with matchFields using In operator that does not match the existing node",
    ),
    pytest.param(
        {
            "affinity": required(
                term(fields=(name_field("In", "node1"), name_field("In", "node2"))),
                term((expr("foo", "In", "bar"),)),
            )
        },
        {"foo": "bar"},
        "node2",
        None,
        None,
        None,
        None,
        True,
        id="Pod with two terms: matchFields does not match, but matchExpressions matches",
    ),
    pytest.param(
        {"affinity": required(term((expr("foo", "In", "bar"),), (name_field("In", "node1"),)))},
        {"foo": "bar"},
        "node2",
        ERR_REASON_POD,
        None,
        frozenset({"node1"}),
        None,
        True,
        id="Pod with one term: matchFields does not match, but matchExpressions matches",
    ),
    pytest.param(
        {"affinity": required(term((expr("foo", "In", "bar"),), (name_field("In", "node1"),)))},
        {"foo": "bar"},
        "node1",
        None,
        None,
        frozenset({"node1"}),
        None,
        True,
        id="Pod with one term: both matchFields and matchExpressions match",
    ),
    pytest.param(
        {
            "affinity": required(
                term(fields=(name_field("In", "node1"),)), term((expr("foo", "In", "not-match-to-bar"),))
            )
        },
        {"foo": "bar"},
        "node2",
        ERR_REASON_POD,
        None,
        None,
        None,
        True,
        id="Pod with two terms: both matchFields and matchExpressions do not match",
    ),
    pytest.param(
        {
            "affinity": required(
                term(fields=(name_field("In", "node1"),)), term(fields=(name_field("In", "node2"),))
            )
        },
        {},
        "node2",
        None,
        None,
        frozenset({"node1", "node2"}),
        None,
        True,
        id="Pod with two terms of node.Name affinity",
    ),
    pytest.param(
        {"affinity": required(term(fields=(name_field("In", "node1"), name_field("In", "node2"))))},
        {"foo": "bar"},
        "node2",
        ERR_REASON_POD,
        CONFLICT,
        None,
        None,
        True,
        id="Pod with two conflicting mach field requirements",
    ),
    pytest.param(
        {"affinity": required(term((expr("zone", "In", "foo"),)))},
        {"zone": "foo"},
        "node2",
        None,
        None,
        None,
        ADDED_NODE2,
        True,
        id="Matches added affinity and Pod's node affinity",
    ),
    pytest.param(
        {"affinity": required(term((expr("zone", "In", "bar"),)))},
        {"zone": "foo"},
        "node2",
        ERR_REASON_POD,
        None,
        None,
        ADDED_NODE2,
        True,
        id="Matches added affinity but not Pod's node affinity",
    ),
    pytest.param(
        {},
        {"zone": "foo"},
        "node2",
        ERR_REASON_ENFORCED,
        None,
        None,
        node_affinity(term((expr("zone", "In", "bar"),))),
        True,
        id="Doesn't match added affinity",
    ),
    pytest.param(
        {"node_selector": {"foo": "bar"}},
        {"foo": "bar", "baz": "blah"},
        "",
        None,
        None,
        None,
        None,
        False,
        id="Matches node selector correctly even if PreFilter is not called",
    ),
    pytest.param(
        {"affinity": required(term((expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER"))))},
        {"GPU": "NVIDIA-GRID-K1"},
        "",
        None,
        None,
        None,
        None,
        False,
        id="Matches node affinity correctly even if PreFilter is not called",
    ),
]


@pytest.mark.parametrize(
    ("pod_kwargs", "labels", "node_name", "want_reason", "want_pre_status", "want_names", "added", "run_pre"),
    FILTER_CASES,
)
def test_node_affinity(
    pod_kwargs: dict[str, Any],
    labels: dict[str, str],
    node_name: str,
    want_reason: str | None,
    want_pre_status: str | None,
    want_names: frozenset[str] | None,
    added: Mapping[str, Any] | None,
    run_pre: bool,
) -> None:
    cluster = cluster_of([make_node(node_name or "node", labels=labels)])
    p = pod(**pod_kwargs)
    plugin = plugin_with(added)
    state = CycleState()
    if run_pre:
        pfr, status = plugin.pre_filter(state, p, cluster)
        if want_pre_status == SKIP:
            assert status.code == Code.SKIP
        elif want_pre_status == CONFLICT:
            assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            assert status.reasons == (ERR_REASON_CONFLICT,) == ("pod affinity terms conflict",)
        else:
            assert status.ok
        assert pfr == (PreFilterResult(want_names) if want_names is not None else None)
    result = plugin.filter(state, p, cluster)
    reasons, code = result.reasons_at(0)
    if want_reason is None:
        assert reasons == []
    else:
        assert reasons == [want_reason]
        assert code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_reason_strings_are_upstreams() -> None:
    assert ERR_REASON_POD == "node(s) didn't match Pod's node affinity/selector"
    assert ERR_REASON_ENFORCED == "node(s) didn't match scheduler-enforced node affinity"


LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL3 = {"az": "az1"}
LABEL4 = {"abc": "az11", "def": "az22"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}
AFFINITY1 = node_affinity(preferred=[(2, term((expr("foo", "In", "bar"),)))])
AFFINITY2 = node_affinity(
    preferred=[
        (2, term((expr("foo", "In", "bar"),))),
        (4, term((expr("key", "In", "value"),))),
        (5, term((expr("foo", "In", "bar"), expr("key", "In", "value"), expr("az", "In", "az1")))),
    ]
)
BROKEN_KEY_MESSAGE = (
    '[0].matchExpressions[0].key: Invalid value: "invalid key": name part must consist of alphanumeric '
    "characters, '-', '_' or '.', and must start and end with an alphanumeric character "
    "(e.g. 'MyName',  or 'my.name',  or '123-abc', "
    "regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)

# (pod nodeAffinity, nodes, expected scores, added, run prescore, prescore (code, message))
PRIORITY_CASES = [
    pytest.param(
        None,
        [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL3)],
        {"node1": 0, "node2": 0, "node3": 0},
        None,
        False,
        None,
        id="all nodes are same priority as NodeAffinity is nil",
    ),
    pytest.param(
        None,
        [("node1", LABEL1)],
        None,
        None,
        True,
        (Code.SKIP, ""),
        id="Skip is returned in PreScore when NodeAffinity is nil",
    ),
    pytest.param(
        node_affinity(preferred=[(2, term((expr("invalid key", "In", "bar"),)))]),
        [("node1", LABEL1)],
        None,
        None,
        True,
        (Code.ERROR, BROKEN_KEY_MESSAGE),
        id="PreScore returns error when an incoming Pod has a broken affinity",
    ),
    pytest.param(
        AFFINITY1,
        [("node1", LABEL4), ("node2", LABEL2), ("node3", LABEL3)],
        {"node1": 0, "node2": 0, "node3": 0},
        None,
        True,
        None,
        id="no node matches preferred scheduling requirements in NodeAffinity of pod so all nodes' priority "
        "is zero",
    ),
    pytest.param(
        AFFINITY1,
        [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL3)],
        {"node1": 100, "node2": 0, "node3": 0},
        None,
        True,
        None,
        id="only node1 matches the preferred scheduling requirements of pod",
    ),
    pytest.param(
        AFFINITY2,
        [("node1", LABEL1), ("node5", LABEL5), ("node2", LABEL2)],
        {"node1": 18, "node5": 100, "node2": 36},
        None,
        True,
        None,
        id="all nodes matches the preferred scheduling requirements of pod but with different priorities ",
    ),
    pytest.param(
        None,
        [("node1", LABEL1), ("node2", LABEL2)],
        {"node1": 100, "node2": 0},
        AFFINITY1,
        True,
        None,
        id="added affinity",
    ),
    pytest.param(
        AFFINITY1,
        [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL5)],
        {"node1": 40, "node2": 60, "node3": 100},
        node_affinity(preferred=[(3, term((expr("key", "In", "value"),)))]),
        True,
        None,
        id="added affinity and pod has default affinity",
    ),
    pytest.param(
        AFFINITY2,
        [("node1", LABEL1), ("node5", LABEL5), ("node2", LABEL2)],
        {"node1": 18, "node5": 100, "node2": 36},
        None,
        True,
        None,
        id="calculate the priorities correctly even if PreScore is not called",
    ),
]


def _node_scores(plugin: NodeAffinity, state: CycleState, p: Any, cluster: Any) -> dict[str, int]:
    feasible = cluster.nodes.valid[: cluster.nodes.n_rows].copy()
    raw = plugin.score(state, p, cluster, feasible)
    out = plugin.normalize_score(state, p, raw, feasible)
    return {
        cluster.nodes.nodes[r].name: int(out[r]) if isinstance(out, np.ndarray) else int(out)
        for r in np.flatnonzero(feasible)
    }


@pytest.mark.parametrize(("affinity", "nodes", "expected", "added", "run_pre", "want_pre"), PRIORITY_CASES)
def test_node_affinity_priority(
    affinity: dict[str, Any] | None,
    nodes: list[tuple[str, dict[str, str]]],
    expected: dict[str, int] | None,
    added: Mapping[str, Any] | None,
    run_pre: bool,
    want_pre: tuple[Code, str] | None,
) -> None:
    cluster = cluster_of([make_node(name, labels=labels) for name, labels in nodes])
    p = pod(affinity={"nodeAffinity": affinity} if affinity is not None else None)
    plugin = plugin_with(added)
    state = CycleState()
    if run_pre:
        feasible = cluster.nodes.valid[: cluster.nodes.n_rows].copy()
        status = plugin.pre_score(state, p, cluster, feasible)
        if want_pre is not None:
            assert (status.code, status.message) == want_pre
            return
        assert status.ok
    assert _node_scores(plugin, state, p, cluster) == expected


# --------------------------------------------------------------------------- beyond upstream's tables
@pytest.mark.parametrize(
    ("requirement", "label", "matches"),
    [
        pytest.param(expr("v", "Gt", "5"), "10", True, id="Gt on a plain integer label"),
        pytest.param(expr("v", "Gt", "5"), "007", True, id="leading zeros parse like Go"),
        pytest.param(
            expr("v", "Gt", "5"), "1_0", False, id="Go ParseInt rejects underscores that Python int takes"
        ),
        pytest.param(
            expr("v", "Gt", "-1"), "3", False, id="a value that is not a valid label value breaks the term"
        ),
        pytest.param(expr("v", "Gt", "x"), "3", False, id="a non-integer Gt value breaks the term"),
        pytest.param(
            expr("v", "Lt", "99999999999999999999"), "3", False, id="a value beyond int64 breaks the term"
        ),
        pytest.param(expr("v", "Exists", "a"), "3", False, id="Exists with values breaks the term"),
        pytest.param(expr("v", "NotIn"), "3", False, id="NotIn without values breaks the term"),
        pytest.param(
            expr("v", "In", "3", "bad value"), "3", False, id="one invalid In value breaks the term"
        ),
    ],
)
def test_requirement_parsing_follows_upstream(requirement: dict[str, Any], label: str, matches: bool) -> None:
    cluster = cluster_of([make_node("n", labels={"v": label})])
    p = pod(affinity=required(term((requirement,))))
    reasons, _ = NodeAffinity().filter(CycleState(), p, cluster).reasons_at(0)
    assert (reasons == []) == matches


def test_broken_term_does_not_hide_a_matching_one() -> None:
    cluster = cluster_of([make_node("n", labels={"zone": "a"})])
    p = pod(affinity=required(term((expr("zone", "In", "bad value"),)), term((expr("zone", "In", "a"),))))
    assert NodeAffinity().filter(CycleState(), p, cluster).failed is None


def test_field_requirement_with_two_values_matches_nothing_but_still_names_nodes() -> None:
    cluster = cluster_of([make_node("node1"), make_node("node2")])
    p = pod(affinity=required(term(fields=(name_field("In", "node1", "node2"),))))
    plugin = NodeAffinity()
    state = CycleState()
    pfr, status = plugin.pre_filter(state, p, cluster)
    assert status.ok and pfr == PreFilterResult(frozenset({"node1", "node2"}))
    result = plugin.filter(state, p, cluster)
    assert result.failed is not None and result.failed.tolist() == [1, 1]


def test_added_affinity_is_checked_before_the_pod() -> None:
    cluster = cluster_of([make_node("a", labels={"pool": "x"}), make_node("b", labels={"pool": "y"})])
    plugin = plugin_with(node_affinity(term((expr("pool", "In", "x"),))))
    p = pod(node_selector={"pool": "y"})
    result = plugin.filter(CycleState(), p, cluster)
    assert result.reasons_at(0)[0] == [ERR_REASON_POD]
    assert result.reasons_at(1)[0] == [ERR_REASON_ENFORCED]
    assert plugin.explain_row(p, cluster, 1) == "no term of the scheduler's addedAffinity matches the node"
    assert plugin.explain_row(p, cluster, 0) == "nodeSelector pool='y' not matched (node label pool is 'x')"


def test_added_affinity_only_required_keeps_prefilter_running() -> None:
    plugin = plugin_with(node_affinity(term((expr("pool", "In", "x"),))))
    _, status = plugin.pre_filter(CycleState(), pod(), cluster_of([make_node("a")]))
    assert status.ok


def test_invalid_added_affinity_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"addedAffinity\.requiredDuringScheduling"):
        plugin_with(node_affinity(term((expr("bad key", "In", "x"),))))
    with pytest.raises(ConfigError, match=r"addedAffinity\.preferredDuringScheduling"):
        plugin_with(node_affinity(preferred=[(3, term((expr("k", "Gt", "x"),)))]))


def test_zero_weight_and_empty_preferred_terms_are_ignored() -> None:
    cluster = cluster_of([make_node("a", labels={"k": "v"}), make_node("b")])
    aff = node_affinity(preferred=[(0, term((expr("k", "Exists"),))), (5, term())])
    p = pod(affinity={"nodeAffinity": aff})
    plugin = NodeAffinity()
    state = CycleState()
    assert plugin.pre_score(state, p, cluster, np.ones(2, dtype=np.bool_)).ok
    assert _node_scores(plugin, state, p, cluster) == {"a": 0, "b": 0}


def test_row_holes_and_label_updates() -> None:

    cluster = cluster_of(
        [make_node("a", labels={"z": "1"}), make_node("b", labels={"z": "2"}), make_node("c")]
    )
    cluster.remove_node("a")
    cluster.add_node(builders.node("c", labels={"z": "1"}))
    p = pod(node_selector={"z": "1"})
    result = NodeAffinity().filter(CycleState(), p, cluster)
    assert result.reasons_at(cluster.nodes.row_of["b"])[0] == [ERR_REASON_POD]
    assert result.reasons_at(cluster.nodes.row_of["c"])[0] == []


# --------------------------------------------------------------------------- reference cross-check
KEYS = ("a", "b", "c")
VALUES = ("1", "2", "10", "07", "x")
NODE_NAMES = tuple(f"n{i}" for i in range(6))

labels_st = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3)
expr_st = st.one_of(
    st.builds(
        lambda k, op, vs: expr(k, op, *vs),
        st.sampled_from(KEYS),
        st.sampled_from(("In", "NotIn")),
        st.lists(st.sampled_from(VALUES), min_size=1, max_size=3),
    ),
    st.builds(lambda k, op: expr(k, op), st.sampled_from(KEYS), st.sampled_from(("Exists", "DoesNotExist"))),
    st.builds(
        lambda k, op, v: expr(k, op, v),
        st.sampled_from(KEYS),
        st.sampled_from(("Gt", "Lt")),
        st.sampled_from(("0", "1", "2", "5", "9", "x")),
    ),
)
field_st = st.builds(
    lambda op, v: name_field(op, v), st.sampled_from(("In", "NotIn")), st.sampled_from((*NODE_NAMES, "nope"))
)
term_st = st.builds(
    lambda e, f: term(tuple(e), tuple(f)),
    st.lists(expr_st, max_size=3),
    st.lists(field_st, max_size=1),
)


@settings(max_examples=100, deadline=None)
@given(
    node_labels=st.lists(labels_st, min_size=1, max_size=len(NODE_NAMES)),
    terms=st.one_of(st.none(), st.lists(term_st, max_size=3)),
    selector=st.one_of(
        st.just({}), st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=2)
    ),
    preferred=st.lists(st.tuples(st.integers(0, 100), term_st), max_size=3),
    removed=st.one_of(st.none(), st.integers(0, len(NODE_NAMES) - 1)),
)
def test_filter_and_score_match_reference(
    node_labels: list[dict[str, str]],
    terms: list[dict[str, Any]] | None,
    selector: dict[str, str],
    preferred: list[tuple[int, dict[str, Any]]],
    removed: int | None,
) -> None:
    """Filter == ``required_matches`` and nodeSelector; raw score == Σ weights of ``term_matches``."""
    cluster = cluster_of([make_node(NODE_NAMES[i], labels=lab) for i, lab in enumerate(node_labels)])
    if removed is not None and removed < len(node_labels):
        cluster.remove_node(NODE_NAMES[removed])
    raw_affinity: dict[str, Any] = {}
    if terms is not None:
        raw_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": terms}
    if preferred:
        raw_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": w, "preference": t} for w, t in preferred
        ]
    p = builders.pod(node_selector=selector, affinity={"nodeAffinity": raw_affinity})
    plugin = NodeAffinity()
    state = CycleState()
    plugin.pre_filter(state, p, cluster)
    result = plugin.filter(state, p, cluster)
    feasible = cluster.nodes.valid[: cluster.nodes.n_rows].copy()
    req = p.node_affinity.required if p.node_affinity is not None else None
    pref = p.node_affinity.preferred if p.node_affinity is not None else ()
    status = plugin.pre_score(state, p, cluster, feasible)
    # A used preferred term that does not parse (here only ``Gt x``) fails the cycle upstream;
    # the reference matcher just lets it not match, so scores are only compared when it parses.
    broken = any(
        t.weight > 0
        and any(r.operator in ("Gt", "Lt") and r.values == ("x",) for r in t.term.match_expressions)
        for t in pref
    )
    assert (status.code == Code.ERROR) == broken
    assert status.code != Code.SKIP or not pref
    scores = 0 if broken or not pref else plugin.score(state, p, cluster, feasible)
    for row in cluster.nodes.rows():
        node = cluster.nodes.node(int(row))
        want = required_matches(req, node.labels, node.name) and all(
            node.labels.get(k) == v for k, v in selector.items()
        )
        got = result.failed is None or int(result.failed[row]) == 0
        assert got == want, (node.name, node.labels)
        if broken:
            continue
        want_score = sum(t.weight for t in pref if term_matches(t.term, node.labels, node.name))
        got_score = int(scores[row]) if isinstance(scores, np.ndarray) else int(scores)
        assert got_score == want_score, (node.name, node.labels)


# --------------------------------------------------------------------------- through the framework
def test_framework_run() -> None:
    plugin = plugin_with(None)
    fw = Framework(
        "default-scheduler", pre_filter=[plugin], filters=[plugin], pre_score=[plugin], scores=[(plugin, 2)]
    )
    cluster = cluster_of(
        [
            make_node("a", labels={"zone": "z1", "disk": "hdd"}),
            make_node("b", labels={"zone": "z1", "disk": "ssd"}),
            make_node("c", labels={"zone": "z2", "disk": "ssd"}),
        ]
    )
    aff = node_affinity(
        term((expr("zone", "In", "z1"),)),
        preferred=[(10, term((expr("disk", "In", "ssd"),)))],
    )
    assert fw.schedule_pod(pod(affinity={"nodeAffinity": aff}), cluster).selected_node == "b"

    pinned = pod(affinity=required(term(fields=(name_field("In", "c"),))))
    assert fw.schedule_pod(pinned, cluster).selected_node == "c"

    conflict = pod(affinity=required(term(fields=(name_field("In", "a"), name_field("In", "b")))))
    failed = fw.schedule_pod(conflict, cluster)
    assert failed.selected_node is None
    assert failed.message() == "0/3 nodes are available: pod affinity terms conflict."

    nowhere = pod(node_selector={"zone": "z9"})
    assert fw.schedule_pod(nowhere, cluster).message() == (
        "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."
    )
