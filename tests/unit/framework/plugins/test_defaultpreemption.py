"""DefaultPreemption in ksched: the real default profile, the cache left untouched, bad input,
and the batched (row-local) dry run agreeing with the one-node-at-a-time one."""

from __future__ import annotations

import logging
import random
from typing import Any

import numpy as np
import pytest

from ksched.cache.cluster import ClusterCache
from ksched.config import default_config
from ksched.errors import HandleNotReady
from ksched.framework.interface import Code, CycleState, FilterResult
from ksched.framework.messages import fit_error_message
from ksched.framework.plugins.defaultpreemption import DefaultPreemption
from ksched.framework.plugins.defaultpreemption.pick import Candidate, pick_one
from ksched.framework.profile import build_profiles
from ksched.framework.runtime import Framework
from ksched.model.pdb import PodDisruptionBudget
from ksched.model.pod import Pod, pod_from_dict
from tests.builders import container, make_node
from tests.unit.framework.plugins.preemption_support import (
    HIGH,
    LOW,
    MID,
    NEG,
    cluster,
    fit_framework,
    pdb,
    vpod,
)
from tests.unit.framework.test_nominated_filter import assert_same, snapshot


def default_fw() -> tuple[Framework, DefaultPreemption]:
    fw = build_profiles(default_config(), seed=0)["default-scheduler"]
    plugin = fw.plugins["DefaultPreemption"]
    assert isinstance(plugin, DefaultPreemption) and plugin.handle is fw.handle
    return fw, plugin


def taint(key: str) -> dict[str, str]:
    return {"key": key, "value": "x", "effect": "NoSchedule"}


def test_reference_example_message_end_to_end() -> None:
    """Reference §9's example, produced by a real cycle plus PostFilter on the default profile."""
    nodes = [make_node(f"n{i}", cpu="1", memory="1Gi", pods=10) for i in range(2)]
    nodes += [make_node(f"t{i}", cpu="1", memory="1Gi", pods=10, taints=[taint("k")]) for i in range(3)]
    pods = [vpod(f"r{i}", f"n{i}", priority=HIGH, req={"cpu": "800m"}) for i in range(2)]
    cache = cluster(nodes, pods)
    fw, _ = default_fw()
    p = pod_from_dict(vpod("p", priority=HIGH, req={"cpu": "500m"}))
    result = fw.schedule_pod(p, cache)
    assert result.selected_node is None
    pf = fw.run_post_filter(p, cache, result)
    assert pf is not None and pf.status.code == Code.UNSCHEDULABLE and pf.nominated_node == ""
    assert fit_error_message(result, pf.status.message) == (
        "0/5 nodes are available: 2 Insufficient cpu, 3 node(s) had untolerated taint(s). preemption: "
        "0/5 nodes are available: 2 No preemption victims found for incoming pod, "
        "3 Preemption is not helpful for scheduling."
    )


def busy_cluster(n_nodes: int = 6, *, ports: bool = False, seed: int = 1) -> ClusterCache:
    rnd = random.Random(seed)
    nodes = [make_node(f"n{i}", cpu="4", memory="8Gi", pods=20) for i in range(n_nodes)]
    pods: list[dict[str, Any]] = []
    for i in range(n_nodes):
        for j in range(rnd.randint(1, 5)):
            req = {"cpu": f"{rnd.choice([250, 500, 1000])}m", "memory": f"{rnd.choice([256, 512])}Mi"}
            extra: dict[str, Any] = {}
            if ports and j == 0 and i % 2 == 0:
                extra["containers"] = [container(requests=req, host_ports=[("TCP", "", 8080)])]
            pods.append(
                vpod(
                    f"v{i}-{j}",
                    f"n{i}",
                    priority=rnd.choice([NEG, LOW, MID]),
                    req=req,
                    start=rnd.randint(0, 50),
                    labels={"app": rnd.choice(["a", "b"])},
                    **extra,
                )
            )
    cache = cluster(nodes, pods, [pdb("a", {"app": "a"}, 1)])
    cache.assume(pod_from_dict(vpod("assumed", priority=LOW, req={"cpu": "250m"})), "n1")
    return cache


@pytest.mark.parametrize("ports", [False, True])
def test_post_filter_leaves_the_cache_bit_for_bit_unchanged(ports: bool) -> None:
    cache = busy_cluster(ports=ports)
    fw, _ = default_fw()
    extra: dict[str, Any] = {}
    if ports:
        extra["containers"] = [container(requests={"cpu": "3900m"}, host_ports=[("TCP", "", 8080)])]
        p = pod_from_dict(vpod("p", priority=HIGH, **extra))
    else:
        p = pod_from_dict(vpod("p", priority=HIGH, req={"cpu": "3900m"}))
    before = snapshot(cache)
    result = fw.schedule_pod(p, cache)
    assert result.selected_node is None
    pf = fw.run_post_filter(p, cache, result)
    assert pf is not None and pf.status.code == Code.SUCCESS and pf.victims
    assert_same(before, snapshot(cache))


def test_host_port_holder_is_a_victim_even_when_resources_suffice() -> None:
    nodes = [make_node("n0", cpu="4", memory="8Gi", pods=10)]
    holder = vpod(
        "holder",
        "n0",
        priority=LOW,
        containers=[container(requests={"cpu": "100m"}, host_ports=[("TCP", "", 80)])],
    )
    other = vpod("other", "n0", priority=LOW, req={"cpu": "100m"})
    cache = cluster(nodes, [holder, other])
    fw, _ = default_fw()
    p = pod_from_dict(
        vpod(
            "p", priority=HIGH, containers=[container(requests={"cpu": "100m"}, host_ports=[("TCP", "", 80)])]
        )
    )
    result = fw.schedule_pod(p, cache)
    pf = fw.run_post_filter(p, cache, result)
    assert pf is not None and pf.nominated_node == "n0"
    assert [v.name for v in pf.victims] == ["holder"]


def test_invalid_pdb_selector_is_logged_and_ignored(caplog: pytest.LogCaptureFixture) -> None:
    bad = PodDisruptionBudget("default", "bad", "u", {"matchLabels": {"bad key!": "x"}}, 0)
    cache = cluster(
        [make_node("n0", cpu="1", memory="1Gi", pods=10)],
        [vpod("v", "n0", priority=LOW, req={"cpu": "1"}, labels={"a": "b"})],
    )
    cache.pdbs[bad.key] = bad
    cache.pdbs["default/nil"] = PodDisruptionBudget("default", "nil", "u2", None, 0)
    cache.pdbs["default/empty"] = PodDisruptionBudget("default", "empty", "u3", {}, 0)
    fw, _ = default_fw()
    p = pod_from_dict(vpod("p", priority=HIGH, req={"cpu": "1"}))
    with caplog.at_level(logging.WARNING):
        pf = fw.run_post_filter(p, cache, fw.schedule_pod(p, cache))
        again = fw.run_post_filter(p, cache, fw.schedule_pod(p, cache))
    assert pf is not None and pf.nominated_node == "n0" and again is not None
    warnings = [r for r in caplog.records if "default/bad" in r.getMessage()]
    assert len(warnings) == 1  # once per record, not once per cycle
    # nil and empty selectors match nothing in preemption (upstream), so the victim violates no budget.
    plugin = fw.plugins["DefaultPreemption"]
    assert isinstance(plugin, DefaultPreemption)
    cands, _, _ = plugin.find_candidates(p, cache, fw.schedule_pod(p, cache))
    assert [c.num_pdb_violations for c in cands] == [0]


def test_negative_priorities() -> None:
    nodes = [make_node(f"n{i}", cpu="1", memory="1Gi", pods=10) for i in range(2)]
    pods = [
        vpod("a1", "n0", priority=-5, req={"cpu": "500m"}),
        vpod("a2", "n0", priority=-5, req={"cpu": "500m"}),
        vpod("b1", "n1", priority=-3, req={"cpu": "1"}),
    ]
    cache = cluster(nodes, pods)
    fw, _ = default_fw()
    p = pod_from_dict(vpod("p", priority=-1, req={"cpu": "1"}))
    pf = fw.run_post_filter(p, cache, fw.schedule_pod(p, cache))
    # n1: one victim at -3; n0: two at -5 (lower highest priority wins: criterion 2).
    assert pf is not None and pf.nominated_node == "n0" and sorted(v.name for v in pf.victims) == ["a1", "a2"]
    lowest = pod_from_dict(vpod("q", priority=-(2**31), req={"cpu": "1"}))
    pf = fw.run_post_filter(lowest, cache, fw.schedule_pod(lowest, cache))
    assert pf is not None and pf.nominated_node == "" and "No preemption victims found" in pf.status.message


def test_pick_one_shifts_priorities_before_summing() -> None:
    def pods(*prios: int) -> tuple[Pod, ...]:
        return tuple(pod_from_dict(vpod(f"x{i}", "n", priority=pr)) for i, pr in enumerate(prios))

    # Same highest victim; a node with more negative-priority victims must not win on the sum.
    a = Candidate("a", pods(0, -100, -100), 0)
    b = Candidate("b", pods(0, -100), 0)
    assert pick_one([a, b]) is b
    assert pick_one([Candidate("v", pods(0), 1), Candidate("w", pods(10, 10), 0)]).node == "w"  # type: ignore[union-attr]
    assert pick_one([]) is None


def test_never_policy_and_terminating_victims_keep_the_nomination() -> None:
    cache = cluster(
        [make_node("n0", cpu="1", memory="1Gi", pods=10)],
        [vpod("v", "n0", priority=LOW, req={"cpu": "1"}, terminating=True, preempted=True)],
    )
    fw, _ = default_fw()
    never = pod_from_dict(vpod("p", priority=HIGH, req={"cpu": "1"}, policy="Never"))
    pf = fw.run_post_filter(never, cache, fw.schedule_pod(never, cache))
    assert (
        pf is not None
        and pf.keep_nomination
        and pf.status.message == "not eligible due to preemptionPolicy=Never."
    )
    waiting = pod_from_dict(vpod("p", priority=HIGH, req={"cpu": "1"}, nominated="n0"))
    pf = fw.run_post_filter(waiting, cache, fw.schedule_pod(waiting, cache))
    assert pf is not None and pf.keep_nomination
    assert pf.status.message == "not eligible due to a terminating pod on the nominated node."


class Raising:
    name = "Raising"
    row_local = True

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterCache) -> FilterResult:
        if cluster.nodes.pod_count[0] < 3:
            raise RuntimeError("boom")
        return FilterResult.all_pass()


def test_filter_errors_during_the_dry_run_restore_the_cache() -> None:
    cache = cluster(
        [make_node("n0", cpu="1", memory="1Gi", pods=10)],
        [vpod(f"v{i}", "n0", priority=LOW, req={"cpu": "300m"}) for i in range(3)],
    )
    fw, _ = fit_framework([Raising()])
    p = pod_from_dict(vpod("p", priority=HIGH, req={"cpu": "1"}))
    before = snapshot(cache)
    pf = fw.run_post_filter(p, cache, fw.schedule_pod(p, cache))
    assert pf is not None and pf.status.code == Code.ERROR and pf.keep_nomination
    assert_same(before, snapshot(cache))


def test_a_plugin_whose_handle_has_no_framework_says_so() -> None:
    plugin = DefaultPreemption()
    cache = cluster([make_node("n0", cpu="1")], [vpod("r", "n0", priority=LOW, req={"cpu": "1"})])
    p = pod_from_dict(vpod("p", priority=HIGH, req={"cpu": "1"}))
    fw, _ = fit_framework()
    with pytest.raises(HandleNotReady, match="framework is not built yet"):
        plugin.post_filter(CycleState(), p, cache, fw.schedule_pod(p, cache), None)


class NotLocal:
    """Passes everywhere but is not declared row-local: forces the one-node-at-a-time dry run."""

    name = "NotLocal"

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterCache) -> FilterResult:
        return FilterResult.all_pass()


@pytest.mark.parametrize("seed", range(12))
def test_batched_dry_run_equals_node_by_node(seed: int) -> None:
    cache = busy_cluster(n_nodes=8, ports=seed % 2 == 1, seed=seed)
    rnd = random.Random(seed)
    prio = rnd.choice([LOW, MID, HIGH])
    p = pod_from_dict(vpod("p", priority=prio, req={"cpu": f"{rnd.choice([1, 2, 3, 4])}", "memory": "1Gi"}))
    fast, fast_plugin = fit_framework(offsets=[seed % 8])
    slow, slow_plugin = fit_framework([NotLocal()], offsets=[seed % 8])
    r1, r2 = fast.schedule_pod(p, cache), slow.schedule_pod(p, cache)
    before = snapshot(cache)
    got_fast = fast_plugin.find_candidates(p, cache, r1)
    got_slow = slow_plugin.find_candidates(p, cache, r2)
    assert_same(before, snapshot(cache))

    def key(res: tuple[list[Candidate], Any, Any]) -> Any:
        cands, statuses, errors = res
        return [(c.node, [v.uid for v in c.victims], c.num_pdb_violations) for c in cands], statuses, errors

    assert key(got_fast) == key(got_slow)
    assert np.array_equal(r1.feasible, r2.feasible)


def test_explain_reports_what_preemption_would_do(tmp_path: Any) -> None:
    import json

    from ksched.explain import explain, load_cluster, render_text

    objs: list[dict[str, Any]] = [make_node(f"n{i}", cpu="1", memory="1Gi", pods=10) for i in range(3)]
    objs += [
        vpod("low", "n0", priority=LOW, req={"cpu": "800m"}, labels={"app": "x"}),
        vpod("mid", "n1", priority=MID, req={"cpu": "800m"}),
        vpod("high", "n2", priority=HIGH, req={"cpu": "800m"}),
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "x", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "x"}}},
            "status": {"disruptionsAllowed": 0},
        },
    ]
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(objs))
    loaded = load_cluster(path)
    assert "default/x" in loaded.cache.pdbs
    before = snapshot(loaded.cache)
    report = explain(loaded, pod_from_dict(vpod("p", priority=HIGH, req={"cpu": "500m"})))
    assert_same(before, snapshot(loaded.cache))
    # n0's victim would violate the budget, n1's would not: n1 wins (fewest PDB violations).
    assert report["preemption"] == {"node": "n1", "victims": ["default/mid"]}
    assert report["message"] == "0/3 nodes are available: 3 Insufficient cpu."
    assert "preempt:   n1 (evicting default/mid)" in render_text(report)
    big = explain(loaded, pod_from_dict(vpod("q", priority=HIGH, req={"cpu": "2"})))
    assert big["preemption"] == {"node": None, "victims": []}
    assert big["message"] == (
        "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: "
        "3 Preemption is not helpful for scheduling."
    )
