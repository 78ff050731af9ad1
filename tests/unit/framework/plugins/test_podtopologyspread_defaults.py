"""PodTopologySpread defaulting, plugin args, bad input and the PreFilter state.

- The defaulting cases of upstream's TestPreFilterState (``filtering_test.go``: "default constraints
  and a service", "... that doesn't match", "... but pod has constraints", "default soft constraints
  and a service") and of ``helper.DefaultSelector`` (``helper/spread.go``): Services merged, the
  controlling RC / ReplicaSet / StatefulSet added, anything else ignored.
- A few PreFilter-state cases of TestPreFilterState, checked on ksched's per-domain counts.
- Bad input: an empty topologyKey, maxSkew 0, an invalid selector operator, an invalid
  whenUnsatisfiable each give an Error status naming the pod and the field, through the plugin,
  the framework and ``ksched explain``; nothing raises.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ksched.config.types import PodTopologySpreadArgs
from ksched.errors import ConfigError
from ksched.framework.interface import Code, CycleState
from ksched.framework.plugins.podtopologyspread import new
from ksched.framework.registry import Handle
from ksched.framework.runtime import Framework
from ksched.model.pod import pod_from_dict
from ksched.model.selectors import LabelSelector, Requirement
from ksched.model.workloads import DECODERS
from tests import builders
from tests.builders import cluster_of, make_pod
from tests.unit.framework.plugins.spread_support import FOO, bound, incoming, run_explain, sc, zn

DNS = "DoNotSchedule"
SA = "ScheduleAnyway"


def plugin(defaulting: str = "List", *constraints: dict[str, Any]) -> Any:
    return new(
        PodTopologySpreadArgs(default_constraints=constraints, defaulting_type=defaulting), Handle("p")
    )


def obj(kind: str, name: str, selector: Any, namespace: str = "default") -> dict[str, Any]:
    api = "apps/v1" if kind in ("ReplicaSet", "StatefulSet") else "v1"
    meta = {"name": name, "namespace": namespace}
    return {"apiVersion": api, "kind": kind, "metadata": meta, "spec": {"selector": selector}}


def owned(raw: dict[str, Any], kind: str, name: str, api: str | None = None) -> dict[str, Any]:
    api = api or ("v1" if kind == "ReplicationController" else "apps/v1")
    raw["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Node", "name": "x", "uid": "0"},  # not a controller: ignored
        {"apiVersion": api, "kind": kind, "name": name, "uid": "1", "controller": True},
    ]
    return raw


def with_objects(*objs: dict[str, Any], nodes: list[Any] | None = None, pods: list[Any] | None = None) -> Any:
    cluster = cluster_of(nodes or [], pods or [])
    for o in objs:
        cluster.selector_owners.upsert(DECODERS[o["kind"]](o))
    return cluster


# ----------------------------------------------------------------------------- upstream TestPreFilterState
def test_default_constraints_and_a_service() -> None:
    p = builders.pod("p", labels={"foo": "bar", "baz": "kar"})
    pl = plugin(
        "List",
        {"maxSkew": 3, "topologyKey": "node", "whenUnsatisfiable": DNS},
        {"maxSkew": 2, "topologyKey": "node", "whenUnsatisfiable": SA},
        {"maxSkew": 5, "topologyKey": "rack", "whenUnsatisfiable": DNS},
    )
    cluster = with_objects(obj("Service", "s", {"foo": "bar"}))
    hard = pl.constraints(p, cluster, hard=True)
    assert [(c.max_skew, c.topology_key) for c in hard] == [(3, "node"), (5, "rack")]
    assert all(c.selector == LabelSelector((("foo", "bar"),), ()) for c in hard)
    assert all(c.min_domains == 1 and c.honor_affinity and not c.honor_taints for c in hard)
    state = CycleState()
    _, status = pl.pre_filter(state, p, cluster)
    assert status.ok


def test_default_constraints_and_a_service_that_doesnt_match() -> None:
    p = builders.pod("p", labels={"foo": "bar"})
    pl = plugin("List", {"maxSkew": 3, "topologyKey": "node", "whenUnsatisfiable": DNS})
    cluster = with_objects(obj("Service", "s", {"baz": "kep"}))
    assert pl.pre_filter(CycleState(), p, cluster)[1].code == Code.SKIP


def test_default_constraints_and_a_service_but_pod_has_constraints() -> None:
    raw = make_pod(
        "p",
        labels={"foo": "bar", "baz": "tar"},
        topologySpreadConstraints=[
            sc(1, "zone", DNS, {"matchLabels": {"baz": "tar"}}),
            sc(2, "planet", SA, {"matchLabels": {"fot": "rok"}}),
        ],
    )
    pl = plugin("List", {"maxSkew": 2, "topologyKey": "node", "whenUnsatisfiable": DNS})
    cluster = with_objects(obj("Service", "s", {"foo": "bar"}))
    hard = pl.constraints(pod_from_dict(raw), cluster, hard=True)
    assert [(c.max_skew, c.topology_key, c.selector) for c in hard] == [
        (1, "zone", LabelSelector((("baz", "tar"),), ()))
    ]


def test_default_soft_constraints_and_a_service() -> None:
    p = builders.pod("p", labels={"foo": "bar"})
    pl = plugin("List", {"maxSkew": 2, "topologyKey": "node", "whenUnsatisfiable": SA})
    cluster = with_objects(obj("Service", "s", {"foo": "bar"}))
    assert pl.pre_filter(CycleState(), p, cluster)[1].code == Code.SKIP
    assert len(pl.constraints(p, cluster, hard=False)) == 1


FOUR = [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2"), zn("node-y", "zone2")]
SIX = [*FOUR, zn("node-o", "zone3"), zn("node-p", "zone3")]
FIVE_FOO = [
    bound("p-a1", "node-a", {"foo": ""}),
    bound("p-a2", "node-a", {"foo": ""}),
    bound("p-b1", "node-b", {"foo": ""}),
    bound("p-y1", "node-y", {"foo": ""}),
    bound("p-y2", "node-y", {"foo": ""}),
]
SEVEN_FOO = [*FIVE_FOO, bound("p-y3", "node-y", {"foo": ""}), bound("p-y4", "node-y", {"foo": ""})]

STATE = [
    pytest.param(
        incoming({"foo": ""}, sc(5, "zone", DNS, {"matchLabels": {"foo": "bar"}})),
        FOUR,
        [],
        [({"zone1": 0, "zone2": 0}, 2, 0)],
        id="clean cluster with one spreadConstraint",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(1, "zone", DNS, FOO)),
        FOUR,
        FIVE_FOO,
        [({"zone1": 3, "zone2": 2}, 2, 2)],
        id="normal case with one spreadConstraint",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(1, "zone", DNS, None)),
        FOUR,
        FIVE_FOO,
        [({"zone1": 0, "zone2": 0}, 2, 0)],
        id="normal case with null label selector",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(1, "zone", DNS, FOO)),
        SIX,
        FIVE_FOO,
        [({"zone1": 3, "zone2": 2, "zone3": 0}, 3, 0)],
        id="normal case with one spreadConstraint, on a 3-zone cluster",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(1, "zone", DNS, FOO)),
        FOUR,
        [
            bound("p-a1", "node-a", {"foo": ""}),
            bound("p-a2", "node-a", {"foo": ""}, namespace="ns1"),
            bound("p-b1", "node-b", {"foo": ""}),
            bound("p-y1", "node-y", {"foo": ""}, namespace="ns2"),
            bound("p-y2", "node-y", {"foo": ""}),
        ],
        [({"zone1": 2, "zone2": 1}, 2, 1)],
        id="namespace mismatch doesn't count",
    ),
    pytest.param(
        incoming({"foo": ""}, sc(1, "zone", DNS, FOO), sc(1, "node", DNS, FOO)),
        FOUR,
        SEVEN_FOO,
        [({"zone1": 3, "zone2": 4}, 2, 3), ({"node-a": 2, "node-b": 1, "node-x": 0, "node-y": 4}, 4, 0)],
        id="normal case with two spreadConstraints",
    ),
    pytest.param(
        incoming(
            {"foo": ""},
            sc(1, "zone", SA, FOO),
            sc(1, "zone", DNS, FOO),
            sc(1, "node", SA, FOO),
            sc(1, "node", DNS, FOO),
        ),
        [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-y", "zone2")],
        SEVEN_FOO,
        [({"zone1": 3, "zone2": 4}, 2, 3), ({"node-a": 2, "node-b": 1, "node-y": 4}, 3, 1)],
        id="soft spreadConstraints should be bypassed",
    ),
]


@pytest.mark.parametrize(("pod_raw", "nodes", "pods", "want"), STATE)
def test_pre_filter_state(
    path: str, pod_raw: dict[str, Any], nodes: list[Any], pods: list[Any], want: list[Any]
) -> None:
    """Per constraint: matching pods per domain, the number of domains, and the global minimum."""
    cluster = cluster_of(nodes, pods)
    pl = plugin()
    state = CycleState()
    assert pl.pre_filter(state, pod_from_dict(pod_raw), cluster)[1].ok
    states = state.read("PreFilterPodTopologySpread")
    values = cluster.nodes.label_values
    assert len(states) == len(want)
    for s, (domains, count, low) in zip(states, want, strict=True):
        got = {v: int(s.sums[values.lookup(v)]) for v in domains}
        assert got == domains
        assert (s.domains, s.min_match) == (count, low)


# ----------------------------------------------------------------------------- helper.DefaultSelector
SELECTORS = [
    pytest.param(
        {"app": "web", "tier": "fe"},
        None,
        [
            obj("Service", "a", {"app": "web"}),
            obj("Service", "b", {"tier": "fe"}),
            obj("Service", "c", {"x": "y"}),
        ],
        LabelSelector((("app", "web"), ("tier", "fe")), ()),
        id="services that select the pod are merged",
    ),
    pytest.param(
        {"app": "web"},
        None,
        [obj("Service", "a", {"app": "web"}, namespace="other")],
        None,
        id="a service in another namespace does not count",
    ),
    pytest.param(
        {"app": "web"},
        None,
        [obj("Service", "a", {})],
        None,
        id="a service with an empty selector selects nothing",
    ),
    pytest.param(
        {"app": "web", "rc": "1"},
        ("ReplicationController", "rc1"),
        [obj("Service", "a", {"app": "web"}), obj("ReplicationController", "rc1", {"rc": "1"})],
        LabelSelector((("app", "web"), ("rc", "1")), ()),
        id="the controlling replication controller's map is merged",
    ),
    pytest.param(
        {"app": "web"},
        ("ReplicaSet", "rs1"),
        [obj("ReplicaSet", "rs1", {"matchExpressions": [{"key": "app", "operator": "Exists"}]})],
        LabelSelector((), (Requirement("app", "Exists", ()),)),
        id="the controlling replica set's requirements are added",
    ),
    pytest.param(
        {"app": "web"},
        ("StatefulSet", "ss1"),
        [obj("Service", "a", {"app": "web"}), obj("StatefulSet", "ss1", {"matchLabels": {"app": "web"}})],
        LabelSelector((("app", "web"),), ()),
        id="the controlling stateful set's requirements are added",
    ),
    pytest.param(
        {"app": "web"},
        ("ReplicaSet", "missing"),
        [obj("ReplicaSet", "rs1", {"matchLabels": {"app": "web"}})],
        None,
        id="a controller that is not in the cache adds nothing",
    ),
    pytest.param(
        {"app": "web"},
        ("ReplicaSet", "rs1"),
        [obj("ReplicaSet", "rs1", None)],
        None,
        id="a replica set with a nil selector adds nothing",
    ),
    pytest.param(
        {"app": "web"},
        ("Deployment", "d1"),
        [obj("ReplicaSet", "d1", {"matchLabels": {"app": "web"}})],
        None,
        id="an unsupported controller kind adds nothing",
    ),
]


@pytest.mark.parametrize(("labels", "controller", "objs", "want"), SELECTORS)
def test_default_selector(
    labels: dict[str, str], controller: tuple[str, str] | None, objs: list[Any], want: LabelSelector | None
) -> None:
    raw = make_pod("p", labels=labels)
    if controller is not None:
        raw = owned(raw, *controller)
    p = pod_from_dict(raw)
    cluster = with_objects(*objs)
    assert cluster.selector_owners.default_selector(p.namespace, p.labels, p.controller) == want


def test_wrong_api_version_of_the_controller_is_ignored() -> None:
    p = pod_from_dict(owned(make_pod("p", labels={"a": "b"}), "ReplicaSet", "rs1", api="extensions/v1beta1"))
    cluster = with_objects(obj("ReplicaSet", "rs1", {"matchLabels": {"a": "b"}}))
    assert cluster.selector_owners.default_selector(p.namespace, p.labels, p.controller) is None


def test_default_selector_follows_object_changes() -> None:
    """The memo is dropped when a Service appears, changes or goes away."""
    cluster = with_objects()
    owners = cluster.selector_owners
    svc = DECODERS["Service"](obj("Service", "s", {"app": "web"}))
    labels = {"app": "web"}
    assert owners.default_selector("default", labels, None) is None
    owners.upsert(svc)
    assert owners.default_selector("default", labels, None) == LabelSelector((("app", "web"),), ())
    owners.upsert(DECODERS["Service"](obj("Service", "s", {"app": "other"})))
    assert owners.default_selector("default", labels, None) is None
    owners.replace("Service", [svc])
    assert owners.default_selector("default", labels, None) is not None
    owners.delete(svc)
    assert owners.default_selector("default", labels, None) is None
    assert len(owners) == 0


def test_system_defaulting_scores_pods_of_a_service_and_skips_others() -> None:
    nodes = [zn("node-a", "zone1"), zn("node-b", "zone2")]
    for n in nodes:
        n["metadata"]["labels"]["kubernetes.io/hostname"] = n["metadata"]["name"]
    pods = [bound("w1", "node-a", {"app": "web"}), bound("w2", "node-a", {"app": "web"})]
    cluster = with_objects(obj("Service", "s", {"app": "web"}), nodes=nodes, pods=pods)
    pl = plugin("System")
    feasible = cluster.nodes.valid[: cluster.nodes.n_rows].copy()
    web = builders.pod("new", labels={"app": "web"})
    state = CycleState()
    assert pl.pre_filter(state, web, cluster)[1].code == Code.SKIP  # system defaults never filter
    assert pl.pre_score(state, web, cluster, feasible).ok
    scores = pl.normalize_score(state, web, pl.score(state, web, cluster, feasible), feasible)
    rows = cluster.nodes.row_of
    assert scores[rows["node-b"]] == 100 and scores[rows["node-a"]] < 100
    lone = builders.pod("lone", labels={"app": "db"})
    assert pl.pre_score(CycleState(), lone, cluster, feasible).code == Code.SKIP


# ----------------------------------------------------------------------------- args
def test_args_system_with_constraints_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="defaultingType"):
        plugin("System", {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": DNS})


def test_list_without_constraints_skips_pods_without_constraints_for_free() -> None:
    assert plugin("List").skips_pods_without == "topology_spread_constraints"
    assert not hasattr(plugin("System"), "skips_pods_without")


def test_args_from_a_config_file_reach_the_plugin(tmp_path: Path) -> None:
    nodes = [zn("node-a", "zone1"), zn("node-b", "zone2")]
    pods = [bound("w1", "node-a", {"app": "web"})]
    svc = obj("Service", "s", {"app": "web"})
    # List defaulting with no constraints: a pod without constraints is not spread at all.
    report = run_explain(tmp_path, [svc, *nodes, *pods], make_pod("new", labels={"app": "web"}))
    assert {e["name"]: e["scores"] for e in report["nodes"]} == {
        "node-a": {},
        "node-b": {},
    }


# ----------------------------------------------------------------------------- bad input
BAD = [
    pytest.param(
        sc(1, "", DNS, FOO), "spec.topologySpreadConstraints[0].topologyKey", id="an empty topologyKey"
    ),
    pytest.param(sc(0, "zone", DNS, FOO), "spec.topologySpreadConstraints[0].maxSkew", id="maxSkew 0"),
    pytest.param(
        sc(1, "zone", DNS, {"matchExpressions": [{"key": "foo", "operator": "Bogus"}]}),
        "spec.topologySpreadConstraints[0].labelSelector.matchExpressions[0].operator",
        id="an invalid selector operator",
    ),
    pytest.param(
        sc(1, "zone", "Sometimes", FOO),
        "spec.topologySpreadConstraints[0].whenUnsatisfiable",
        id="an invalid whenUnsatisfiable",
    ),
    pytest.param(
        sc(1, "zone", SA, FOO, None, "Maybe"),
        "spec.topologySpreadConstraints[0].nodeAffinityPolicy",
        id="an invalid nodeAffinityPolicy",
    ),
]


@pytest.mark.parametrize(("constraint", "field"), BAD)
def test_bad_constraint_is_an_error_naming_pod_and_field(
    tmp_path: Path, constraint: dict[str, Any], field: str
) -> None:
    nodes = [zn("node-a", "zone1"), zn("node-b", "zone2")]
    raw = incoming({"foo": ""}, constraint, name="bad")
    p = pod_from_dict(raw)
    cluster = cluster_of(nodes)
    pl = plugin()
    _, status = pl.pre_filter(CycleState(), p, cluster)
    assert status.code == Code.ERROR
    assert status.message.startswith("get constraints from pod: Pod default/bad: ")
    assert field in status.message
    feasible = np.ones(cluster.nodes.n_rows, dtype=np.bool_)
    assert pl.pre_score(CycleState(), p, cluster, feasible).code == Code.ERROR

    fw = Framework("default-scheduler", pre_filter=[pl], filters=[pl], pre_score=[pl], scores=[(pl, 2)])
    result = fw.schedule_pod(p, cluster)
    assert result.selected_node is None
    assert result.status.code == Code.ERROR and field in result.status.message

    report = run_explain(tmp_path, nodes, raw)
    assert report["selectedNode"] is None
    assert all(e["plugin"] == "PodTopologySpread" and field in e["reasons"][0] for e in report["nodes"])
