"""percentageOfNodesToScore: how many feasible nodes a cycle keeps, which ones, and where the next
cycle's search starts, against upstream (``pkg/scheduler/schedule_one.go``).

Ported from ``schedule_one_test.go``: ``TestNumFeasibleNodesToFind`` (upstream's "not set" is an
explicit 0 here: ksched scores every node when the field is absent) and ``TestFairEvaluationForNodes``.
The rest compares the framework with a per-node reference of upstream's walk (one worker), cycle after
cycle, over a zoned cluster whose nodes come and go.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from ksched.cache.cluster import ClusterCache
from ksched.config.load import config_from_dict
from ksched.framework.interface import (
    SUCCESS,
    Code,
    CycleState,
    FilterResult,
    PreFilterResult,
    Status,
)
from ksched.framework.profile import build_profiles
from ksched.framework.result import num_feasible_nodes_to_find
from ksched.framework.runtime import Framework, StartIndex
from ksched.model.pod import Pod
from tests.builders import node, pod, pod_status

ZONE = "topology.kubernetes.io/zone"


NUM_FEASIBLE_CASES = [
    # (upstream's name, global percentage, profile percentage or None, nodes, nodes to find)
    ("not set percentageOfNodesToScore and nodes number not more than 100", 0, None, 10, 10),
    ("set profile percentageOfNodesToScore and nodes number not more than 100", 0, 40, 10, 10),
    ("not set percentageOfNodesToScore and nodes number more than 100", 0, None, 1000, 420),
    ("set profile percentageOfNodesToScore and nodes number more than 100", 0, 40, 1000, 400),
    ("set global and profile percentageOfNodesToScore and nodes number more than 100", 100, 40, 1000, 400),
    ("set global percentageOfNodesToScore and nodes number more than 100", 40, None, 1000, 400),
    ("not set profile percentageOfNodesToScore and nodes number more than 6000", 0, None, 6000, 300),
    ("set profile percentageOfNodesToScore and nodes number more than 6000", 0, 40, 6000, 2400),
    ("100 percent: every node", 100, None, 1000, 1000),
]


@pytest.mark.parametrize(
    ("global_pct", "profile_pct", "nodes", "want"),
    [pytest.param(*case, id=name) for name, *case in NUM_FEASIBLE_CASES],
)
def test_num_feasible_nodes_to_find(global_pct: int, profile_pct: int | None, nodes: int, want: int) -> None:
    profile: dict[str, Any] = {"schedulerName": "default-scheduler"}
    if profile_pct is not None:
        profile["percentageOfNodesToScore"] = profile_pct
    config = config_from_dict(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "percentageOfNodesToScore": global_pct,
            "profiles": [profile],
        }
    )
    fw = build_profiles(config)["default-scheduler"]
    assert fw.percentage_of_nodes_to_score is not None
    assert num_feasible_nodes_to_find(nodes, fw.percentage_of_nodes_to_score) == want


# ------------------------------------------------------------------------------------ test plugins
@dataclass
class FailSet:
    """Filter: fails the nodes named in ``names`` (the test changes them between cycles)."""

    name: str = "FailSet"
    names: set[str] = field(default_factory=set)

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterCache) -> FilterResult:
        fails = np.zeros(cluster.nodes.n_rows, dtype=np.bool_)
        for n in self.names:
            row = cluster.nodes.row_of.get(n)
            if row is not None:
                fails[row] = True
        return FilterResult.from_mask(fails, "failed", Code.UNSCHEDULABLE)


@dataclass
class Allow:
    """PreFilter: allows only ``names`` when set (a PreFilterResult), every node otherwise."""

    name: str = "Allow"
    names: frozenset[str] | None = None

    def pre_filter(
        self, state: CycleState, pod: Pod, cluster: ClusterCache
    ) -> tuple[PreFilterResult | None, Status]:
        return (PreFilterResult(self.names) if self.names is not None else None), SUCCESS


@dataclass
class Scored:
    """Score: every node 1, and remembers which nodes it was asked to score."""

    name: str = "Scored"
    seen: set[str] = field(default_factory=set)

    def score(self, state: CycleState, pod: Pod, cluster: ClusterCache, feasible: np.ndarray) -> int:
        by_row = {row: name for name, row in cluster.nodes.row_of.items()}
        self.seen = {by_row[int(r)] for r in np.flatnonzero(feasible)}
        return 1


def test_fair_evaluation_for_nodes() -> None:
    """Upstream's TestFairEvaluationForNodes: 500 nodes at 30%, every node passes."""
    cache = ClusterCache()
    for i in range(500):
        cache.add_node(node(str(i), cpu=1))
    scored = Scored()
    fw = Framework("p", filters=[FailSet()], scores=[(scored, 1)], percentage_of_nodes_to_score=30)
    to_find = num_feasible_nodes_to_find(500, 30)
    assert to_find == 150
    for i in range(2 * (500 // to_find + 1)):
        assert fw.schedule_pod(pod(), cache).selected_node is not None
        assert len(scored.seen) == to_find
        assert fw.start_index.value == (i + 1) * to_find % 500


def test_absent_percentage_scores_every_feasible_node() -> None:
    cache = ClusterCache()
    for i in range(500):
        cache.add_node(node(f"n{i}", cpu=1))
    scored = Scored()
    fw = Framework("p", filters=[FailSet(names={"n3"})], scores=[(scored, 1)])
    fw.schedule_pod(pod(), cache)
    assert len(scored.seen) == 499
    assert fw.start_index.value == 0


def test_no_score_plugin_finds_one_node() -> None:
    """Without scoring upstream looks for one feasible node: the first from the start index."""
    cache = ClusterCache()
    for i in range(200):
        cache.add_node(node(f"n{i}", cpu=1))
    fw = Framework("p", filters=[FailSet(names={"n0", "n1"})], percentage_of_nodes_to_score=50)
    assert fw.schedule_pod(pod(), cache).selected_node == "n2"
    assert fw.start_index.value == 3  # n0, n1 failed, n2 kept
    assert fw.schedule_pod(pod(), cache).selected_node == "n3"


# ------------------------------------------------------------------------------ reference walk
class ReferenceTree:
    """Upstream's nodeTree and the snapshot's list of it, kept apart from ksched's."""

    def __init__(self) -> None:
        self.zones: dict[str, list[str]] = {}
        self.zone_of: dict[str, str] = {}
        self.listed: list[str] = []

    def add(self, name: str, zone: str) -> None:
        self.zone_of[name] = zone
        self.zones.setdefault(zone, []).append(name)

    def remove(self, name: str) -> None:
        zone = self.zone_of.pop(name)
        self.zones[zone].remove(name)
        if not self.zones[zone]:
            del self.zones[zone]

    def snapshot(self) -> list[str]:
        if set(self.listed) != set(self.zone_of):
            out: list[str] = []
            i = 0
            while len(out) < len(self.zone_of):
                out += [names[i] for names in self.zones.values() if i < len(names)]
                i += 1
            self.listed = out
        return self.listed


def reference_cycle(
    listed: list[str],
    feasible: set[str],
    start: int,
    percentage: int,
    nominated: str | None,
    allowed: frozenset[str] | None,
) -> tuple[set[str], int]:
    """Upstream's findNodesThatFitPod with one worker: (the feasible nodes it keeps, the next start)."""
    statuses: set[str] = set()
    if nominated is not None:
        # Upstream filters the nominated node even outside a PreFilter result; ksched's Filter pass
        # starts from that result, so such a node fails here (PreFilter and Filter agree in practice).
        if nominated in feasible and (allowed is None or nominated in allowed):
            return {nominated}, start
        statuses.add(nominated)
    nodes = listed if allowed is None else [n for n in listed if n in allowed]
    to_find = num_feasible_nodes_to_find(len(nodes), percentage)
    found: list[str] = []
    for i in range(len(nodes)):
        name = nodes[(start + i) % len(nodes)]
        if name in feasible:
            if len(found) == to_find:
                break  # one more than needed: the search is cancelled, that node not counted
            found.append(name)
        else:
            statuses.add(name)
    return set(found), (start + len(found) + len(statuses)) % len(listed)


def test_search_matches_upstreams_walk_cycle_after_cycle() -> None:
    rng = np.random.default_rng(7)
    cache, ref = ClusterCache(), ReferenceTree()
    names: list[str] = []
    serial = 0

    def add_node(zone: int) -> None:
        nonlocal serial
        name = f"n{serial}"
        serial += 1
        labels = {ZONE: f"z{zone}"} if zone >= 0 else {}
        cache.add_node(node(name, cpu=1, labels=labels))
        ref.add(name, f":\x00:z{zone}" if zone >= 0 else "")
        names.append(name)

    for _ in range(260):
        add_node(int(rng.integers(-1, 3)))
    fail, allow, scored = FailSet(), Allow(), Scored()
    start_index = StartIndex()
    fws = {
        pct: Framework(
            f"p{pct}",
            pre_filter=[allow],
            filters=[fail],
            scores=[(scored, 1)],
            percentage_of_nodes_to_score=pct,
            start_index=start_index,  # one index for every profile, as upstream's scheduler has
        )
        for pct in (0, 5, 30, 50, 100)
    }
    expected_start = 0
    seen = {"cut": 0, "nominated kept": 0, "nominated failed": 0, "narrowed": 0}
    for cycle in range(300):
        for _ in range(int(rng.integers(0, 3))):  # nodes come and go between cycles
            if rng.random() < 0.5 and len(names) > 150:
                gone = names.pop(int(rng.integers(len(names))))
                cache.remove_node(gone)
                ref.remove(gone)
            else:
                add_node(int(rng.integers(-1, 4)))
        failing = float(rng.choice([0.05, 0.5, 0.97]))
        fail.names = {n for n in names if rng.random() < failing}
        allow.names = frozenset(n for n in names if rng.random() < 0.6) if rng.random() < 0.2 else None
        nominated = str(rng.choice(names)) if rng.random() < 0.3 else None
        pct = int(rng.choice(list(fws)))
        p = pod(status=pod_status(nominated_node_name=nominated or ""))
        feasible = set(names) - fail.names
        want, expected_start = reference_cycle(
            ref.snapshot(), feasible, expected_start, pct, nominated, allow.names
        )
        scored.seen = set()
        result = fws[pct].schedule_pod(p, cache)
        got = scored.seen or ({result.selected_node} if result.selected_node else set())
        assert got == want, f"cycle {cycle}"
        assert start_index.value == expected_start, f"cycle {cycle}"
        allowed = feasible if allow.names is None else feasible & allow.names
        seen["cut"] += len(want) < len(allowed) and want != {nominated}
        seen["nominated kept"] += nominated is not None and want == {nominated}
        seen["nominated failed"] += nominated is not None and want != {nominated}
        seen["narrowed"] += allow.names is not None
    assert min(seen.values()) >= 10, seen  # every case came up often
