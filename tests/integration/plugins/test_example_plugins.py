"""The example plugins of ``examples/plugins/``, in process: loaded by import path from the example
config, run by the real runtime and scheduling loop (recording outbox, no HTTP)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ksched.cache.cluster import ClusterCache
from ksched.errors import ConfigError
from ksched.framework.loader import load_with_plugins
from ksched.framework.profile import build_profiles
from ksched.framework.runtime import Framework
from ksched.kube import events as kev
from ksched.model.node import node_from_dict
from ksched.model.pod import Pod, pod_from_dict
from ksched.scheduler.inbox import BindDone
from ksched.scheduler.loop import Scheduler
from ksched.scheduler.queue.factory import queue_for
from tests import builders
from tests.builders import make_node, make_pod

ROOT = Path(__file__).resolve().parents[3]
CONFIG = ROOT / "examples" / "plugins" / "config.yaml"
PLUGINS = (
    "examples.plugins.node_cost:NodeCost",
    "examples.plugins.system_reserve:SystemReserve",
    "examples.plugins.gang:Gang",
)
COST = "example.com/hourly-cost"


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


class Outbox:
    def __init__(self) -> None:
        self.binds: list[tuple[Pod, str]] = []
        self.patches: list[tuple[str, dict[str, Any]]] = []

    def bind(self, pod: Pod, node: str) -> None:
        self.binds.append((pod, node))

    def patch_status(self, pod: Any, patch: dict[str, Any]) -> None:
        self.patches.append((pod.name, patch))

    def event(self, body: dict[str, Any]) -> None:
        pass

    def message(self, name: str) -> str:
        for pod, patch in reversed(self.patches):
            if pod == name:
                return str(patch["status"]["conditions"][0]["message"])
        return ""


def load(config: Path = CONFIG) -> tuple[Any, Any]:
    return load_with_plugins(str(config), PLUGINS, entry_points=False)


def nodes(cache: ClusterCache, costs: dict[str, str | None], cpu: str = "4") -> None:
    for name, cost in costs.items():
        labels = {COST: cost} if cost is not None else {}
        cache.add_node(builders.node(name, cpu=cpu, memory="16Gi", pods=110, labels=labels))


def framework() -> Framework:
    config, registry = load()
    return build_profiles(config, registry=registry, seed=0)["default-scheduler"]


# ------------------------------------------------------------------------------------ NodeCost
def test_node_cost_prefers_the_cheapest_node_and_normalizes_to_0_100() -> None:
    cache = ClusterCache()
    nodes(cache, {"a": "30", "b": "10", "c": "20", "d": None, "e": "oops"})
    fw = framework()
    result = fw.schedule_pod(builders.pod("p", requests={"cpu": "100m"}), cache, explain=True)
    assert result.selected_node == "b"
    scores = {ps.plugin: ps for ps in result.scores}["NodeCost"]
    assert scores.weight == 5
    by_row = {cache.nodes.node(r).name: int(scores.scores[r]) for r in range(cache.nodes.n_rows)}  # type: ignore[index]
    assert by_row == {"a": 0, "b": 100, "c": 50, "d": 0, "e": 0}


def test_node_cost_args_are_validated_at_start_up(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(CONFIG.read_text().replace("labelKey: example.com/hourly-cost", "labelKey: 7"))
    config, registry = load(bad)
    with pytest.raises(
        ConfigError, match=r"pluginConfig\[NodeCost\]\.args: .*labelKey: must be a non-empty string"
    ):
        build_profiles(config, registry=registry)


# ------------------------------------------------------------------------------------ SystemReserve
def test_system_reserve_keeps_a_share_for_system_pods() -> None:
    cache = ClusterCache()
    nodes(cache, {"a": "10", "b": "20"})
    fw = framework()
    big = builders.pod("big", requests={"cpu": "3700m"})
    result = fw.schedule_pod(big, cache)
    assert result.selected_node is None
    assert (
        result.message()
        == "0/2 nodes are available: 2 node(s) would use the 10% of cpu kept for system pods."
    )
    system = builders.pod("big", namespace="kube-system", requests={"cpu": "3700m"})
    assert fw.schedule_pod(system, cache).selected_node == "a"
    fits = builders.pod("fits", requests={"cpu": "3600m"})
    assert fw.schedule_pod(fits, cache).selected_node == "a"


def test_system_reserve_reports_each_resource_with_its_own_reason() -> None:
    cache = ClusterCache()
    nodes(cache, {"a": "10"})
    fw = framework()
    pod = builders.pod("p", requests={"cpu": "3900m", "memory": "15Gi"})
    result = fw.schedule_pod(pod, cache)
    assert result.first_failure(0) == (
        "SystemReserve",
        [
            "node(s) would use the 10% of cpu kept for system pods",
            "node(s) would use the 10% of memory kept for system pods",
        ],
        result.first_failure(0)[2],  # type: ignore[index]
    )


# ------------------------------------------------------------------------------------ Gang
def loop() -> tuple[Scheduler, Outbox, Clock]:
    config, registry = load()
    profiles = build_profiles(config, registry=registry, seed=0)
    clock = Clock()
    outbox = Outbox()
    queue = queue_for(config, profiles, clock=clock)
    sched = Scheduler(
        profiles=profiles, cache=ClusterCache(), queue=queue, outbox=outbox, clock=clock, wall_clock=clock
    )
    for kind in ("nodes", "pods"):
        sched.inbox.put(kev.Synced(kind))
    for i in range(3):
        node = make_node(f"n{i}", cpu="4", memory="16Gi", pods=110, labels={COST: str(10 * (i + 1))})
        sched.inbox.put(kev.Upserted("nodes", node_from_dict(node)))
    return sched, outbox, clock


def member(name: str, size: int = 3, gang: str = "g1") -> Pod:
    labels = {"example.com/gang": gang, "example.com/gang-size": str(size)}
    return builders.pod(name, requests={"cpu": "1"}, labels=labels)


def drain(sched: Scheduler) -> None:
    sched.run(until=lambda s: len(s.inbox) == 0 and s.queue.pending()["active"] == 0)


def test_gang_binds_all_members_only_when_the_last_one_arrives() -> None:
    sched, outbox, _ = loop()
    for name in ("m1", "m2"):
        sched.inbox.put(kev.Upserted("pods", member(name)))
    sched.inbox.put(kev.Upserted("pods", builders.pod("solo", requests={"cpu": "1"})))
    drain(sched)
    assert [p.name for p, _ in outbox.binds] == ["solo"]  # members wait; others are not held up
    assert sched.binding_cycle.waiting == 2
    sched.inbox.put(kev.Upserted("pods", member("m3")))
    drain(sched)
    assert sorted(p.name for p, _ in outbox.binds) == ["m1", "m2", "m3", "solo"]
    assert sched.binding_cycle.waiting == 0


def test_incomplete_gang_times_out_and_frees_its_nodes() -> None:
    sched, outbox, clock = loop()
    for name in ("m1", "m2"):
        sched.inbox.put(kev.Upserted("pods", member(name)))
    drain(sched)
    assert sched.cache.assumed_count == 2
    clock.t += 31
    sched.binding_cycle.expire(clock.t)
    drain(sched)
    assert outbox.binds == []
    assert sched.cache.assumed_count == 0
    assert (
        outbox.message("m1")
        == "0/1 nodes are available: rejected due to timeout after waiting 30s at plugin Gang."
    )
    # m2 was rejected either by its own timeout or by m1's Unreserve: never bound.
    assert outbox.message("m2").startswith("0/1 nodes are available: ")


def test_a_member_failing_to_bind_rejects_the_waiting_rest() -> None:
    sched, outbox, _ = loop()
    for name in ("m1", "m2"):
        sched.inbox.put(kev.Upserted("pods", member(name, size=2)))
    drain(sched)
    assert sorted(p.name for p, _ in outbox.binds) == ["m1", "m2"]
    # A three-member gang: two wait; then the bind of a member of gang g1 fails -> no effect on g2.
    for name in ("x1", "x2"):
        sched.inbox.put(kev.Upserted("pods", member(name, size=3, gang="g2")))
    drain(sched)
    assert sched.binding_cycle.waiting == 2
    pod, node = outbox.binds[0]
    sched.inbox.put(BindDone(pod, node, RuntimeError("conflict")))
    drain(sched)
    assert sched.binding_cycle.waiting == 2
    # A g2 member whose Permit is rejected outright (bad size label) unreserves: the waiting ones go.
    bad = pod_from_dict(
        make_pod("x3", requests={"cpu": "1"}, labels={"example.com/gang": "g2", "example.com/gang-size": "x"})
    )
    sched.inbox.put(kev.Upserted("pods", bad))
    drain(sched)
    assert sched.binding_cycle.waiting == 0
    assert outbox.message("x1") == "0/1 nodes are available: gang g2: member x3 could not be placed."
    assert sched.cache.assumed_count == 1  # only m2 of g1, whose bind is still in flight
