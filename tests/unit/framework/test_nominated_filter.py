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
from ksched.framework.plugins.noderesources import new_fit
from ksched.framework.profile import build_profiles
from ksched.framework.registry import Handle
from ksched.framework.runtime import Framework
from ksched.model.pod import Pod
from ksched.scheduler.queue_nominator import Nominator
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
    result = _fit_fw().run(incoming, c, explain=True, nominated=nom)
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
    r = fw.run(incoming, c, explain=True, nominated=_nominator((big, "n1")))
    assert not r.feasible[c.nodes.row_of["n1"]]
    higher = pod(name="in", uid="in", requests={"cpu": "1"}, priority=51)
    r = fw.run(higher, c, explain=True, nominated=_nominator((big, "n1")))
    assert r.feasible[c.nodes.row_of["n1"]]
    # The pod's own nomination never blocks it.
    r = fw.run(incoming, c, explain=True, nominated=_nominator((incoming, "n1"), (big, "n2")))
    assert r.feasible[c.nodes.row_of["n1"]] and not r.feasible[c.nodes.row_of["n2"]]


def test_no_nominations_change_nothing_and_message_counts_the_reason() -> None:
    c = _cluster()
    fw = _fit_fw()
    incoming = pod(name="in", uid="in", requests={"cpu": "1800m"}, priority=0)
    plain = fw.run(incoming, c)
    with_empty = fw.run(incoming, c, nominated=Nominator())
    assert plain.selected_node is not None and with_empty.selected_node is not None
    big = pod(name="big", uid="big", requests={"cpu": "1"}, priority=10)
    nom = _nominator((big, "n1"), (pod(name="b2", uid="b2", requests={"cpu": "1"}, priority=10), "n2"))
    r = fw.run(incoming, c, nominated=nom)
    assert r.selected_node is None
    assert r.message() == "0/3 nodes are available: 3 Insufficient cpu."


def test_a_nominated_pod_already_in_the_cache_is_not_counted_twice() -> None:
    c = _cluster()
    big = pod(name="big", uid="big", requests={"cpu": "1"}, priority=100)
    c.assume(big, "n1")
    incoming = pod(name="in", uid="in", requests={"cpu": "1"}, priority=50)
    r = _fit_fw().run(incoming, c, explain=True, nominated=_nominator((big, "n1")))
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
    r = fw.run(incoming, c, explain=True, nominated=_nominator((a, "n1"), (b, "n2")))
    assert r.feasible_count == 3
    three = _nominator((a, "n1"), (b, "n1"))
    r = fw.run(incoming, c, explain=True, nominated=three)
    assert not r.feasible[c.nodes.row_of["n1"]] and r.feasible_count == 2


def test_default_profile_with_nominated_pods_leaves_the_cache_unchanged() -> None:
    c = _cluster()
    fw = build_profiles(default_config(), seed=0)["default-scheduler"]
    big = pod(name="big", uid="big", requests={"cpu": "1500m"}, priority=100)
    incoming = pod(name="in", uid="in", requests={"cpu": "1"}, priority=50)
    before = snapshot(c)
    r = fw.run(incoming, c, nominated=_nominator((big, "n2")))  # "big" holds n2
    assert r.selected_node in {"n0", "n1"}
    r = fw.run(incoming, c, explain=True, nominated=_nominator((big, "n2")))
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
    r = fw.run(incoming, c, explain=True, nominated=_nominator((holder, "n2")))
    assert not r.feasible[c.nodes.row_of["n2"]] and r.feasible_count == 2
    failure = r.first_failure(c.nodes.row_of["n2"])
    assert failure is not None and failure[0] == "NodePorts"
    after = snapshot(c)
    width = before["requested"].shape[1]
    assert np.array_equal(after["requested"][:, :width], before["requested"])  # a new column may appear
    assert not after["requested"][:, width:].any()
    assert np.array_equal(after["pod_count"], before["pod_count"])
    assert after["ports"] == before["ports"] and after["pods"] == before["pods"]
