"""Opportunistic batching: signatures, when stored results are reused or dropped, and exactness
(the same placements, and the same tie-break draws, with the gate on as off)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ksched.cache.cluster import ClusterCache
from ksched.config import default_config
from ksched.config.features import feature_gates
from ksched.errors import ConfigError
from ksched.framework import batching
from ksched.framework.profile import build_profiles
from ksched.framework.runtime import Framework
from ksched.model.node import node_from_dict
from ksched.model.pod import Pod, pod_from_dict
from tests import builders
from tests.builders import make_node, make_pod
from tests.differential.recording import Recording, first_difference
from tests.differential.replay import golden_path, replay

ZONE = "topology.kubernetes.io/zone"


def framework(on: bool = True, seed: int = 5) -> Framework:
    config = dataclasses.replace(default_config(), feature_gates=feature_gates({"OpportunisticBatching": on}))
    return build_profiles(config, seed=seed)["default-scheduler"]


def cluster(n: int = 40) -> ClusterCache:
    cache = ClusterCache()
    for i in range(n):
        taints = [builders.taint("dedicated", "gpu")] if i % 7 == 0 else []
        soft = [builders.taint("soft", "x", "PreferNoSchedule")] if i % 5 == 0 else []
        cache.add_node(
            node_from_dict(
                make_node(
                    f"n{i:03d}",
                    cpu=4 + 4 * (i % 3),
                    memory="32Gi",
                    pods=20,
                    labels={ZONE: f"z{i % 3}", "disk": "ssd" if i % 2 else "hdd"},
                    taints=taints + soft,
                    images=[(["img:1"], 300_000_000)] if i % 4 == 0 else [],
                )
            )
        )
    return cache


def shapes() -> list[Pod]:
    """Pod shapes that batching signs differently, one that never signs (pod anti-affinity)."""
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    preferred = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 5,
                    "preference": {
                        "matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]
                    },
                }
            ]
        }
    }
    return [
        pod_from_dict(make_pod("plain", requests={"cpu": "500m", "memory": "1Gi"})),
        pod_from_dict(make_pod("big", requests={"cpu": "2", "memory": "4Gi"}, node_selector={"disk": "ssd"})),
        pod_from_dict(make_pod("pref", requests={"cpu": "300m"}, affinity=preferred)),
        pod_from_dict(
            make_pod(
                "img", containers=[{"name": "c", "image": "img:1", "resources": {"requests": {"cpu": "1"}}}]
            )
        ),
        pod_from_dict(make_pod("anti", requests={"cpu": "100m"}, labels={"app": "a"}, affinity=anti)),
    ]


def run(on: bool, steps: int = 260, seed: int = 11) -> tuple[list[str], Framework]:
    """A seeded mix: runs of one shape and interleavings, a node write, a node removed, a pod deleted."""
    rng = np.random.default_rng(seed)
    cache, fw, kinds = cluster(), framework(on), shapes()
    placed: list[str] = []
    bound: list[Pod] = []
    kind = 0
    for i in range(steps):
        if rng.random() < 0.3:
            kind = int(rng.integers(len(kinds)))
        pod = dataclasses.replace(kinds[kind], uid=f"u{i}", name=f"p{i}")
        result = fw.schedule_pod(pod, cache)
        placed.append(result.selected_node or result.message())
        if result.selected_node:
            cache.assume(pod, result.selected_node)
            bound.append(dataclasses.replace(pod, node_name=result.selected_node))
        if i == 90:
            cache.add_node(node_from_dict(make_node("late", cpu=64, memory="256Gi", pods=50)))
        if i == 150:
            cache.remove_node("n001")
        if i % 37 == 0 and bound:
            cache.forget(bound.pop(0).uid)
    return placed, fw


@pytest.mark.parametrize("track_ties_from", [batching.TRACK_TIES_FROM, 0], ids=["scan", "kept-ties"])
def test_placements_and_draws_are_the_same_with_the_gate_on_and_off(
    track_ties_from: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(batching, "TRACK_TIES_FROM", track_ties_from)
    on, fw = run(True)
    off, _ = run(False)
    assert on == off
    assert fw.batch_outcomes["hint_used"] > 100  # the mix did batch
    assert fw.batch_outcomes["hint_not_used"] > 0  # and fell back (node writes, rows filling up)
    assert fw.batch_outcomes["no_hint"] > 0  # a shape seen first, or dropped


def test_the_differential_workload_gives_the_same_recording_with_the_gate_on_and_off() -> None:
    assert first_difference(replay("small", batching=False), replay("small", batching=True)) is None


@pytest.mark.slow
def test_the_large_differential_workload_with_the_gate_off_gives_the_golden_recording() -> None:
    """With the gate on (the default) ``tests/differential`` compares the same replay with the same
    golden recording: one replay here instead of two shows on and off agree at 5,000 nodes."""
    assert first_difference(Recording.load(golden_path("large")), replay("large", batching=False)) is None


def test_the_gate_off_never_batches() -> None:
    _, fw = run(False, steps=40)
    assert not fw.batch_outcomes


def test_the_gate_takes_both_values_and_unknown_gates_are_still_refused() -> None:
    assert feature_gates({"OpportunisticBatching": False}).enabled("OpportunisticBatching") is False
    assert feature_gates({}).enabled("OpportunisticBatching") is True
    with pytest.raises(ConfigError, match="unrecognized feature gate"):
        feature_gates({"OpportunisticBatchingX": True})


def test_signatures_follow_what_the_plugins_read() -> None:
    fw = framework()
    plain, _, _, img, _ = shapes()
    plan = fw._gates.plan(plain)
    same = dataclasses.replace(plain, uid="other", name="other", labels={"x": "y"})
    assert batching.sign(plan, plain) == batching.sign(
        plan, same
    )  # labels: only the skipped plugins read them
    more = dataclasses.replace(plain, requests={**plain.requests, "cpu": 501})
    assert batching.sign(plan, plain) != batching.sign(plan, more)
    assert batching.sign(plan, plain) != batching.sign(
        plan, dataclasses.replace(plain, node_selector={"a": "b"})
    )
    assert batching.sign(fw._gates.plan(img), img) != batching.sign(plan, plain)


def test_a_plugin_without_a_signature_makes_the_pod_unsignable() -> None:
    fw = framework()
    plain = shapes()[0]
    plan = fw._gates.plan(plain)

    class Unknown:
        name = "Unknown"

    class Refuses:
        name = "Refuses"

        def batch_sign(self, pod: Pod) -> object:
            return None

    for extra in (Unknown(), Refuses()):
        odd = dataclasses.replace(plan, pre_filter=[*plan.pre_filter, extra])  # type: ignore[list-item]
        assert batching.sign(odd, plain) is None


def test_inter_pod_affinity_that_does_not_skip_falls_back_to_the_full_cycle() -> None:
    cache, fw = cluster(), framework()
    anti = shapes()[4]
    for i in range(6):
        pod = dataclasses.replace(anti, uid=f"a{i}", name=f"a{i}")
        result = fw.schedule_pod(pod, cache)
        cache.assume(pod, result.selected_node)
    assert set(fw.batch_outcomes) == {"no_hint"}  # never stored: InterPodAffinity filtered
    assert not fw._stored


def test_a_node_write_or_a_nominated_pod_drops_to_the_full_cycle() -> None:
    cache, fw = cluster(), framework()
    plain = shapes()[0]

    def once(i: int, **kw: object) -> None:
        pod = dataclasses.replace(plain, uid=f"p{i}", name=f"p{i}")
        result = fw.schedule_pod(pod, cache, **kw)  # type: ignore[arg-type]
        cache.assume(pod, result.selected_node)

    once(0)
    once(1)
    assert fw.batch_outcomes == {"no_hint": 1, "hint_used": 1}
    cache.add_node(node_from_dict(make_node("new", cpu=8, memory="8Gi", pods=10)))
    once(2)
    assert fw.batch_outcomes == {"no_hint": 1, "hint_used": 1, "hint_not_used": 1}

    class Nominated:
        def __len__(self) -> int:
            return 1

        def pods_for_node(self, node_name: str) -> list[Pod]:
            return []

    before = dict(fw.batch_outcomes)
    once(3, nominated=Nominated())
    assert fw.batch_outcomes == before  # not even attempted
    once(4, explain=True)
    assert fw.batch_outcomes == before


def test_many_changed_rows_fall_back() -> None:
    cache, fw = cluster(batching.MAX_CHANGED_ROWS + 10), framework()
    plain = shapes()[0]
    pod = dataclasses.replace(plain, uid="first", name="first")
    cache.assume(pod, fw.schedule_pod(pod, cache).selected_node)
    for i in range(batching.MAX_CHANGED_ROWS + 1):
        other = dataclasses.replace(plain, uid=f"o{i}", name=f"o{i}")
        cache.assume(other, f"n{i:03d}")
    pod = dataclasses.replace(plain, uid="second", name="second")
    fw.schedule_pod(pod, cache)
    assert fw.batch_outcomes == {"no_hint": 1, "hint_not_used": 1}


def test_attempts_are_exported_as_upstream_names_them() -> None:
    from prometheus_client import generate_latest

    from ksched.metrics import FrameworkMetrics, Metrics

    metrics = Metrics()
    config = default_config()
    fw = build_profiles(config, seed=1, recorder=FrameworkMetrics(metrics))["default-scheduler"]
    cache, plain = cluster(), shapes()[0]
    for i in range(3):
        pod = dataclasses.replace(plain, uid=f"m{i}", name=f"m{i}")
        cache.assume(pod, fw.schedule_pod(pod, cache).selected_node)
    text = generate_latest(metrics.registry).decode()
    assert 'scheduler_batch_attempts_total{profile="default-scheduler",result="hint_used"} 2.0' in text
    assert 'scheduler_batch_attempts_total{profile="default-scheduler",result="no_hint"} 1.0' in text
