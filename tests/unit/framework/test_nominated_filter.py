"""Filter with nominated pods (upstream ``RunFilterPluginsWithNominatedPods``, reference §3.6).

A node with pods nominated to it whose priority is at least the incoming pod's passes only if the
incoming pod fits both with them counted as running there and without them; lower-priority
nominations and the pod's own do not count. The cache must come out of the cycle unchanged.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from ksched.cache.cluster import ClusterCache
from ksched.config import default_config
from ksched.framework.interface import Code, CycleState, FilterResult
from ksched.framework.plugins import interpodaffinity, podtopologyspread
from ksched.framework.plugins.noderesources import new_fit
from ksched.framework.profile import build_profiles
from ksched.framework.registry import Handle
from ksched.framework.runtime import Framework
from ksched.model.pod import Pod
from ksched.scheduler.queue.nominator import Nominator
from tests.builders import cluster_of, container, make_node, make_pod, pod


def _cluster() -> ClusterCache:
    nodes = [make_node(f"n{i}", cpu="2", memory="4Gi", pods=10) for i in range(3)]
    return cluster_of(nodes, [make_pod("run", node_name="n0", requests={"cpu": "500m"})])


def _fit_fw() -> Framework:
    f = new_fit(None, Handle("p"))
    return Framework("p", pre_filter=[f], filters=[f])


def _nominator(*entries: tuple[Pod, str]) -> Nominator:
    nom = Nominator()
    for p, node in entries:
        nom.add(p, node)
    return nom


def snapshot(c: ClusterCache) -> dict[str, Any]:
    n = c.nodes
    return {
        "requested": n.requested.copy(),
        "nonzero": n.nonzero_requested.copy(),
        "pod_count": n.pod_count.copy(),
        "ports": copy.deepcopy(c.ports._use),
        "pods": {uid: (e.pod, e.node_name, e.row, e.assumed) for uid, e in c.pods.items()},
    }


def assert_same(a: dict[str, Any], b: dict[str, Any]) -> None:
    for key in ("requested", "nonzero", "pod_count"):
        assert np.array_equal(a[key], b[key]), key
    assert a["ports"] == b["ports"]
    assert a["pods"] == b["pods"]


def test_higher_priority_nomination_reserves_the_node() -> None:
    c = _cluster()
    big = pod(name="big", uid="big", requests={"cpu": "1500m"}, priority=100)
    nom = _nominator((big, "n1"))
    incoming = pod(name="in", uid="in", requests={"cpu": "1"}, priority=50)
    before = snapshot(c)
    result = _fit_fw().schedule_pod(incoming, c, explain=True, nominated=nom)
    rows = {c.nodes.node(r).name for r in np.flatnonzero(result.feasible)}
    assert rows == {"n0", "n2"}  # n1 keeps its room for "big"
    failure = result.first_failure(c.nodes.row_of["n1"])
    assert failure is not None and failure[1] == ["Insufficient cpu"] and failure[2] == Code.UNSCHEDULABLE
    assert_same(before, snapshot(c))


def test_equal_priority_counts_lower_does_not_and_the_pod_itself_does_not() -> None:
    c = _cluster()
    big = pod(name="big", uid="big", requests={"cpu": "1500m"}, priority=50)
    incoming = pod(name="in", uid="in", requests={"cpu": "1"}, priority=50)
    fw = _fit_fw()
    r = fw.schedule_pod(incoming, c, explain=True, nominated=_nominator((big, "n1")))
    assert not r.feasible[c.nodes.row_of["n1"]]
    higher = pod(name="in", uid="in", requests={"cpu": "1"}, priority=51)
    r = fw.schedule_pod(higher, c, explain=True, nominated=_nominator((big, "n1")))
    assert r.feasible[c.nodes.row_of["n1"]]
    # The pod's own nomination never blocks it.
    r = fw.schedule_pod(incoming, c, explain=True, nominated=_nominator((incoming, "n1"), (big, "n2")))
    assert r.feasible[c.nodes.row_of["n1"]] and not r.feasible[c.nodes.row_of["n2"]]


def test_no_nominations_change_nothing_and_message_counts_the_reason() -> None:
    c = _cluster()
    fw = _fit_fw()
    incoming = pod(name="in", uid="in", requests={"cpu": "1800m"}, priority=0)
    plain = fw.schedule_pod(incoming, c)
    with_empty = fw.schedule_pod(incoming, c, nominated=Nominator())
    assert plain.selected_node is not None and with_empty.selected_node is not None
    big = pod(name="big", uid="big", requests={"cpu": "1"}, priority=10)
    nom = _nominator((big, "n1"), (pod(name="b2", uid="b2", requests={"cpu": "1"}, priority=10), "n2"))
    r = fw.schedule_pod(incoming, c, nominated=nom)
    assert r.selected_node is None
    assert r.message() == "0/3 nodes are available: 3 Insufficient cpu."


def test_a_nominated_pod_already_in_the_cache_is_not_counted_twice() -> None:
    c = _cluster()
    big = pod(name="big", uid="big", requests={"cpu": "1"}, priority=100)
    c.assume(big, "n1")
    incoming = pod(name="in", uid="in", requests={"cpu": "1"}, priority=50)
    r = _fit_fw().schedule_pod(incoming, c, explain=True, nominated=_nominator((big, "n1")))
    assert r.feasible[c.nodes.row_of["n1"]]


class GlobalCount:
    """A filter that is not row-local: every node fails once the cluster holds more than ``limit`` pods."""

    name = "GlobalCount"

    def __init__(self, limit: int) -> None:
        self.limit = limit

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterCache) -> FilterResult:
        n = cluster.nodes.n_rows
        fails = np.full(n, len(cluster.pods) > self.limit)
        return FilterResult.from_mask(fails, "too many pods in the cluster", Code.UNSCHEDULABLE)


def test_non_row_local_filters_check_each_node_on_its_own() -> None:
    c = _cluster()  # one pod running
    fw = Framework("p", filters=[GlobalCount(limit=2)])
    a = pod(name="a", uid="a", priority=10)
    b = pod(name="b", uid="b", priority=10)
    incoming = pod(name="in", uid="in", priority=0)
    # One at a time, each node's own nominated pod brings the count to 2 (passes); all at once it would be 3.
    r = fw.schedule_pod(incoming, c, explain=True, nominated=_nominator((a, "n1"), (b, "n2")))
    assert r.feasible_count == 3
    three = _nominator((a, "n1"), (b, "n1"))
    r = fw.schedule_pod(incoming, c, explain=True, nominated=three)
    assert not r.feasible[c.nodes.row_of["n1"]] and r.feasible_count == 2


def test_default_profile_with_nominated_pods_leaves_the_cache_unchanged() -> None:
    c = _cluster()
    fw = build_profiles(default_config(), seed=0)["default-scheduler"]
    big = pod(name="big", uid="big", requests={"cpu": "1500m"}, priority=100)
    incoming = pod(name="in", uid="in", requests={"cpu": "1"}, priority=50)
    before = snapshot(c)
    r = fw.schedule_pod(incoming, c, nominated=_nominator((big, "n2")))  # "big" holds n2
    assert r.selected_node in {"n0", "n1"}
    r = fw.schedule_pod(incoming, c, explain=True, nominated=_nominator((big, "n2")))
    assert not r.feasible[c.nodes.row_of["n2"]]
    assert_same(before, snapshot(c))


def test_nominated_host_ports_and_new_resources_are_counted_and_undone() -> None:
    c = _cluster()
    fw = build_profiles(default_config(), seed=0)["default-scheduler"]
    holder = pod(
        name="holder",
        uid="holder",
        priority=100,
        containers=[
            container(requests={"cpu": "100m", "example.com/dongle": "1"}, host_ports=[("TCP", "", 80)])
        ],
    )
    incoming = pod(name="in", uid="in", priority=0, containers=[container(host_ports=[("TCP", "", 80)])])
    before = snapshot(c)
    r = fw.schedule_pod(incoming, c, explain=True, nominated=_nominator((holder, "n2")))
    assert not r.feasible[c.nodes.row_of["n2"]] and r.feasible_count == 2
    failure = r.first_failure(c.nodes.row_of["n2"])
    assert failure is not None and failure[0] == "NodePorts"
    after = snapshot(c)
    width = before["requested"].shape[1]
    assert np.array_equal(after["requested"][:, :width], before["requested"])  # a new column may appear
    assert not after["requested"][:, width:].any()
    assert np.array_equal(after["pod_count"], before["pod_count"])
    assert after["ports"] == before["ports"] and after["pods"] == before["pods"]


# ---------------------------------------------------------------------- batching past inter-pod filters
def _anti(app: str, key: str = "kubernetes.io/hostname", **term: Any) -> dict[str, Any]:
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key, **term}
            ]
        }
    }


def _spread(app: str, when: str = "DoNotSchedule") -> list[dict[str, Any]]:
    return [
        {
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": {"app": app}},
        }
    ]


def test_inter_pod_affinity_relevance() -> None:
    c = _cluster()
    ipa = interpodaffinity.new(None, Handle("p"))
    incoming = pod(name="in", uid="in", labels={"app": "web"}, affinity=_anti("db"))
    check = ipa.relevance(incoming, c)
    assert check(pod(name="x", uid="x", labels={"app": "db"}))  # its anti-affinity term selects it
    assert not check(pod(name="x", uid="x", labels={"app": "cache"}))
    assert not check(pod(name="x", uid="x", namespace="other", labels={"app": "db"}))  # the term's namespace
    # An existing pod's required anti-affinity that selects the incoming pod counts; preferred does not.
    assert check(pod(name="x", uid="x", labels={"app": "cache"}, affinity=_anti("web")))
    assert not check(pod(name="x", uid="x", labels={"app": "cache"}, affinity=_anti("other")))
    preferred = {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 1,
                    "podAffinityTerm": _anti("web")["podAntiAffinity"][
                        "requiredDuringSchedulingIgnoredDuringExecution"
                    ][0],
                }
            ]
        }
    }
    assert not check(pod(name="x", uid="x", labels={"app": "cache"}, affinity=preferred))
    # A term over every namespace (empty namespaceSelector) selects pods of other namespaces too.
    everywhere = pod(name="in", uid="in", affinity=_anti("db", namespaceSelector={}))
    assert ipa.affected_by(everywhere, pod(name="x", uid="x", namespace="other", labels={"app": "db"}), c)
    # Without terms of its own, only other pods' anti-affinity matters.
    plain = pod(name="in", uid="in", labels={"app": "web"})
    assert not ipa.affected_by(plain, pod(name="x", uid="x", labels={"app": "db"}), c)
    assert ipa.affected_by(plain, pod(name="x", uid="x", affinity=_anti("web")), c)


def test_pod_topology_spread_relevance() -> None:
    c = _cluster()
    pts = podtopologyspread.new(None, Handle("p"))  # system defaulting: ScheduleAnyway defaults only
    hard = pod(name="in", uid="in", labels={"app": "web"}, topologySpreadConstraints=_spread("web"))
    assert pts.affected_by(hard, pod(name="x", uid="x", labels={"app": "web"}), c)
    assert not pts.affected_by(hard, pod(name="x", uid="x", labels={"app": "db"}), c)
    assert not pts.affected_by(hard, pod(name="x", uid="x", namespace="other", labels={"app": "web"}), c)
    soft = pod(name="in", uid="in", topologySpreadConstraints=_spread("web", "ScheduleAnyway"))
    assert pts.relevance(soft, c) is None  # Filter counts nothing for it
    assert pts.relevance(pod(name="in", uid="in", labels={"app": "web"}), c) is None


class CountingFit:
    """NodeResourcesFit that counts its Filter calls (row-local, like the plugin it wraps)."""

    row_local = True

    def __init__(self) -> None:
        self.inner = new_fit(None, Handle("p"))
        self.name = self.inner.name
        self.calls = 0

    def pre_filter(self, state: CycleState, pod: Pod, cluster: ClusterCache) -> Any:
        return self.inner.pre_filter(state, pod, cluster)

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterCache) -> FilterResult:
        self.calls += 1
        return self.inner.filter(state, pod, cluster)  # type: ignore[no-any-return]


def test_nominated_pods_irrelevant_to_inter_pod_filters_share_one_pass() -> None:
    nodes = [
        make_node(f"n{i}", cpu="2", memory="4Gi", pods=10, labels={"kubernetes.io/hostname": f"n{i}"})
        for i in range(3)
    ]
    c = cluster_of(nodes, [make_pod("run", node_name="n0", requests={"cpu": "500m"})])
    fit = CountingFit()
    ipa = interpodaffinity.new(None, Handle("p"))
    fw = Framework("p", pre_filter=[fit, ipa], filters=[fit, ipa])
    incoming = pod(
        name="in", uid="in", requests={"cpu": "1"}, priority=0, labels={"app": "web"}, affinity=_anti("db")
    )
    big = pod(name="big", uid="big", requests={"cpu": "1500m"}, priority=10, labels={"app": "cache"})
    small = pod(name="small", uid="small", requests={"cpu": "100m"}, priority=10, labels={"app": "cache"})
    before = snapshot(c)
    r = fw.schedule_pod(incoming, c, explain=True, nominated=_nominator((big, "n1"), (small, "n2")))
    assert fit.calls == 2  # the cycle's pass and one for both nominated rows
    assert {c.nodes.node(int(x)).name for x in np.flatnonzero(r.feasible)} == {"n0", "n2"}
    # A nominated pod the incoming pod's anti-affinity selects needs its own pass: it blocks its node.
    db = pod(name="db", uid="db", requests={"cpu": "100m"}, priority=10, labels={"app": "db"})
    fit.calls = 0
    r = fw.schedule_pod(
        incoming, c, explain=True, nominated=_nominator((big, "n1"), (small, "n2"), (db, "n0"))
    )
    assert fit.calls == 3  # the cycle's pass, one for n1 and n2, one for n0
    assert {c.nodes.node(int(x)).name for x in np.flatnonzero(r.feasible)} == {"n2"}
    failure = r.first_failure(c.nodes.row_of["n0"])
    assert failure is not None and failure[0] == interpodaffinity.NAME
    assert_same(before, snapshot(c))


def test_a_plugin_skipped_in_the_cycle_stays_skipped_in_the_nominated_pass() -> None:
    """Upstream reuses the cycle's state for the nominated-pods pass (``RunPreFilterExtensionAddPod``
    and ``RunFilterPlugins`` leave skipped plugins out), so a nominated pod with required
    anti-affinity against the incoming pod does not bring InterPodAffinity back for it."""
    nodes = [
        make_node(f"n{i}", cpu="2", memory="4Gi", pods=10, labels={"kubernetes.io/hostname": f"n{i}"})
        for i in range(3)
    ]
    c = cluster_of(nodes, [])
    fw = build_profiles(default_config(), seed=0)["default-scheduler"]
    guard = pod(name="guard", uid="guard", priority=100, labels={"app": "db"}, affinity=_anti("web"))
    # A hard spread constraint keeps a non-row-local filter active, so n1 gets a pass of its own.
    incoming = pod(
        name="in",
        uid="in",
        priority=0,
        labels={"app": "web"},
        requests={"cpu": "100m"},
        topologySpreadConstraints=_spread("other"),
    )
    # Were the guard running on n1, InterPodAffinity would reject the incoming pod there.
    c.assume(guard, "n1")
    assert not fw.schedule_pod(incoming, c, explain=True).feasible[c.nodes.row_of["n1"]]
    c.forget("guard")
    before = snapshot(c)
    r = fw.schedule_pod(incoming, c, explain=True, nominated=_nominator((guard, "n1")))
    assert r.feasible[c.nodes.row_of["n1"]] and r.feasible_count == 3
    assert_same(before, snapshot(c))
