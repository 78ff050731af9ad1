"""InterPodAffinity beyond upstream's tables: bad input, existing pods with broken terms, term parsing,
the explain detail, and a full default-profile cycle.

Bad input in an *incoming* pod's terms (an operator ``LabelSelectorAsSelector`` rejects, a bad label
value, an empty ``topologyKey``, a field of the wrong type) rejects the pod at PreFilter with
UnschedulableAndUnresolvable and a message naming the pod and the field; nothing raises. In an
*existing* pod the category that fails to parse contributes nothing (upstream's ``PodInfo`` leaves it
nil), and the other pods schedule as before.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ksched.config import default_config
from ksched.explain import LoadedCluster, explain
from ksched.framework.interface import Code
from ksched.framework.plugins.interpodaffinity import ERR_REASON_AFFINITY_RULES_NOT_MATCH, NAME
from ksched.framework.profile import build_profiles
from ksched.framework.runtime import Framework
from ksched.model.pod import pod_from_dict
from ksched.model.pod_affinity import parse_pod_affinity_terms
from tests.unit.framework.plugins.interpodaffinity_support import (
    affinity,
    build,
    expr,
    plugin_of,
    term,
    weighted,
    xnode,
    xpod,
)

ZONES = [("n1", {"zone": "a", "host": "n1"}), ("n2", {"zone": "b", "host": "n2"})]
REQ = "requiredDuringSchedulingIgnoredDuringExecution"
PREF = "preferredDuringSchedulingIgnoredDuringExecution"

BAD_INPUT = [
    pytest.param(
        affinity(req_aff=[term(expr("app", "Bogus", "x"), topology_key="zone")]),
        f"spec.affinity.podAffinity.{REQ}[0].labelSelector.matchExpressions[0].operator: "
        "'Bogus' is not a valid label selector operator",
        id="invalid selector operator",
    ),
    pytest.param(
        affinity(req_anti=[term(expr("app", "In", "x"), topology_key="")]),
        f"spec.affinity.podAntiAffinity.{REQ}[0].topologyKey: topologyKey must not be empty",
        id="empty topologyKey",
    ),
    pytest.param(
        affinity(pref_anti=[weighted(3, term(expr("app", "In", "x"), topology_key=""))]),
        f"spec.affinity.podAntiAffinity.{PREF}[0].podAffinityTerm.topologyKey: topologyKey must not be empty",
        id="empty topologyKey in a preferred term",
    ),
    pytest.param(
        affinity(
            pref_aff=[
                weighted(
                    3,
                    term(
                        expr("app", "In", "x"),
                        topology_key="zone",
                        ns_selector={"matchExpressions": [expr("team", "Exists", "x")]},
                    ),
                )
            ]
        ),
        f"spec.affinity.podAffinity.{PREF}[0].podAffinityTerm.namespaceSelector.matchExpressions[0].values: "
        "values set must be empty for operator Exists",
        id="bad namespaceSelector",
    ),
    pytest.param(
        {"podAffinity": {REQ: {"not": "a list"}}},
        f"spec.affinity.podAffinity.{REQ}: expected a list",
        id="wrong type",
    ),
    pytest.param(
        affinity(pref_aff=[weighted(101, term(expr("app", "In", "x"), topology_key="zone"))]),
        f"spec.affinity.podAffinity.{PREF}[0].weight: 101 is out of range [0, 100]",
        id="weight out of range",
    ),
]


@pytest.mark.parametrize(("aff", "field_and_problem"), BAD_INPUT)
def test_bad_input_is_a_clear_rejection(aff: dict[str, Any], field_and_problem: str) -> None:
    incoming = pod_from_dict(xpod(name="bad", ns="team", aff=aff))
    want_prefix = "parsing pod: Pod team/bad: "
    cache = build([xnode(n, labels, roomy=True) for n, labels in ZONES])
    plugin = plugin_of()
    fw = Framework("p", pre_filter=[plugin], filters=[plugin], pre_score=[plugin], scores=[(plugin, 1)])
    result = fw.schedule_pod(incoming, cache)
    assert result.selected_node is None
    assert result.status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert result.status.plugin == NAME
    (message,) = result.status.reasons
    assert message.startswith(want_prefix + field_and_problem), message
    assert result.message().startswith(f"0/2 nodes are available: {want_prefix}")
    report = explain(LoadedCluster(cache, ["n1", "n2"]), incoming)
    assert report["selectedNode"] is None
    assert all(e["plugin"] == NAME and e["reasons"][0].startswith(want_prefix) for e in report["nodes"])


def test_existing_pod_with_broken_terms_is_ignored_not_fatal() -> None:
    broken = xpod(
        node="n1",
        labels={"app": "x"},
        aff={
            "podAntiAffinity": {REQ: [term(expr("app", "Bogus", "x"), topology_key="zone")]},
            "podAffinity": {PREF: [weighted(5, term(expr("app", "In", "x"), topology_key="zone"))]},
        },
    )
    cache = build([xnode(n, labels, roomy=True) for n, labels in ZONES], [broken])
    index = cache.affinity_terms
    assert [len(index.terms(k)) for k in range(4)] == [0, 0, 1, 0]  # the good category stays
    fw = build_profiles(default_config(), seed=0)["default-scheduler"]
    result = fw.schedule_pod(pod_from_dict(xpod(labels={"app": "x"})), cache)
    assert result.status.ok and result.selected_node == "n1"  # its preferred term still scores


def test_parsing_keeps_namespaces_and_ignores_match_label_keys() -> None:
    raw = affinity(
        req_aff=[
            {**term(expr("app", "In", "x"), topology_key="zone"), "matchLabelKeys": ["pod-template-hash"]},
            term(expr("app", "In", "x"), topology_key="zone", namespaces=["a"]),
            term(expr("app", "In", "x"), topology_key="zone", ns_selector={}),
            term(topology_key="zone", selector=None),
        ]
    )
    raw["podAffinity"][REQ][3].pop("labelSelector")
    terms = parse_pod_affinity_terms(raw, "mine", "Pod mine/p")
    own, listed, selected, nil = terms.required_affinity
    assert own.namespaces == frozenset({"mine"}) and own.namespace_selector is None
    assert own.matches(
        "mine", {"app": "x", "pod-template-hash": "other"}, {}
    )  # matchLabelKeys: API server's job
    assert listed.namespaces == frozenset({"a"}) and not listed.matches("mine", {"app": "x"}, {})
    assert selected.namespaces == frozenset() and selected.matches("anywhere", {"app": "x"}, {})
    assert nil.selector is None and not nil.matches("mine", {"app": "x"}, {})
    assert terms.errors == () and terms.empty_topology_keys == ()


def test_incoming_terms_are_parsed_once_per_pod_record(monkeypatch: pytest.MonkeyPatch) -> None:
    from ksched.framework.plugins.interpodaffinity import _incoming

    calls = []
    real = _incoming.parse_pod_affinity_terms

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(_incoming, "parse_pod_affinity_terms", counting)
    cache = build([xnode(n, labels) for n, labels in ZONES], [xpod(node="n1", labels={"app": "x"})])
    incoming = pod_from_dict(xpod(aff=affinity(req_aff=[term(expr("app", "In", "x"), topology_key="zone")])))
    plugin = plugin_of()
    fw = Framework("p", pre_filter=[plugin], filters=[plugin], pre_score=[plugin], scores=[(plugin, 1)])
    for _ in range(3):
        assert fw.schedule_pod(incoming, cache).selected_node == "n1"
    assert len(calls) == 1


def test_explain_names_missing_topology_keys() -> None:
    cache = build([xnode("n1", {"zone": "a"}, roomy=True), xnode("n2", {"rack": "r"}, roomy=True)])
    incoming = pod_from_dict(
        xpod(labels={"app": "x"}, aff=affinity(req_aff=[term(expr("app", "In", "x"), topology_key="zone")]))
    )
    report = explain(LoadedCluster(cache, ["n1", "n2"]), incoming)
    assert report["selectedNode"] == "n1"  # the first pod of its group
    n2 = report["nodes"][1]
    assert n2["plugin"] == NAME and n2["reasons"] == [ERR_REASON_AFFINITY_RULES_NOT_MATCH]
    assert n2["detail"] == "node lacks topology key(s) zone of the pod's required affinity"


def test_default_profile_spreads_a_group_with_anti_affinity() -> None:
    """Scheduling a group with hostname anti-affinity one by one puts one pod on each node, then stops."""
    nodes = [
        xnode(f"n{i}", {"kubernetes.io/hostname": f"n{i}", "zone": f"z{i % 2}"}, roomy=True) for i in range(4)
    ]
    cache = build(nodes)
    fw = build_profiles(default_config(), seed=1)["default-scheduler"]
    anti = affinity(req_anti=[term(expr("app", "In", "web"), topology_key="kubernetes.io/hostname")])
    placed = []
    for i in range(5):
        p = pod_from_dict(xpod(name=f"web-{i}", labels={"app": "web"}, aff=anti))
        result = fw.schedule_pod(p, cache)
        if result.selected_node is None:
            assert i == 4
            assert result.message() == (
                "0/4 nodes are available: 4 node(s) didn't match pod anti-affinity rules."
            )
            break
        placed.append(result.selected_node)
        cache.assume(p, result.selected_node)
    assert sorted(placed) == ["n0", "n1", "n2", "n3"]
    assert int(np.count_nonzero(cache.nodes.pod_count)) == 4


def test_missing_affinity_extension_falls_back_to_numpy() -> None:
    """Only ``ksched._fast.affinity`` missing (an old build): numpy totals, one warning, same answers."""
    from ksched.framework import kernels

    if kernels.compiled() is None:
        pytest.skip("compiled kernels are not built: the numpy path is the only one anyway")
    import os
    import subprocess
    import sys
    import textwrap
    from pathlib import Path

    root = Path(__file__).resolve().parents[4]
    script = textwrap.dedent(
        """
        import logging, sys
        sys.modules["ksched._fast.affinity"] = None
        logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
        import numpy as np
        from ksched.framework import kernels
        col = np.array([0, 1, 0, -1, 1], dtype=np.int32)
        w = np.array([1, 2, 3, 4, 5], dtype=np.int64)
        for _ in range(2):
            assert kernels.affinity_domain_totals(col, w).tolist() == [4, 7, 4, 0, 7]
        assert kernels.extra_module("affinity") is None
        """
    )
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=root, env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("compiled affinity kernels unavailable") == 1, proc.stderr
