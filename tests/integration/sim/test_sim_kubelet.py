"""The kubelet stand-in: bound pods start (unless ``start_pods`` is off); graceful deletes always complete."""

from __future__ import annotations

import argparse
import time

from ksched.sim import SimCluster, SimConfig
from ksched.sim.cli import add_serve_parser, config_from_args
from tests.integration.support import wait_until


def _bind(sim: SimCluster, name: str, node: str = "node-0") -> None:
    sim.store.mutate(
        "pods",
        name,
        "default",
        lambda p: {**p, "spec": {**p["spec"], "nodeName": node}},
        subresource="binding",
    )


def _phase(sim: SimCluster, name: str) -> str | None:
    pod = sim.store.get("pods", name, "default")
    return None if pod is None else pod["status"]["phase"]


def test_bound_pods_become_running_by_default() -> None:
    with SimCluster(SimConfig(running_delay_s=0.01)) as sim:
        sim.add_pods(300)
        for i in range(300):  # from this thread, not the loop's: the sweep is armed across threads
            _bind(sim, f"pod-{i}", f"node-{i % 7}")
        wait_until(
            lambda: all(_phase(sim, f"pod-{i}") == "Running" for i in range(300)),
            timeout_s=5.0,
            interval_s=0.01,
            what="all 300 bound pods Running",
        )
        pod = sim.store.get("pods", "pod-0", "default")
        assert pod is not None
        assert pod["status"]["podIP"].startswith("10.244.")
        conds = {c["type"]: c["status"] for c in pod["status"]["conditions"]}
        assert conds == {"Initialized": "True", "Ready": "True", "ContainersReady": "True"}
        assert pod["status"]["containerStatuses"][0]["state"]["running"]["startedAt"]
        assert _phase(sim, "pod-1") == "Running"


def test_unbound_pods_are_not_started() -> None:
    with SimCluster(SimConfig(running_delay_s=0.0)) as sim:
        sim.add_pods(2)
        _bind(sim, "pod-0")
        wait_until(
            lambda: _phase(sim, "pod-0") == "Running", timeout_s=5.0, interval_s=0.01, what="pod-0 Running"
        )
        assert _phase(sim, "pod-1") == "Pending"


def test_without_start_pods_bound_pods_stay_pending_and_graceful_deletes_complete() -> None:
    config = SimConfig(start_pods=False, running_delay_s=0.0, grace_scale=0.01)
    with SimCluster(config) as sim:
        sim.add_pods(3)
        for i in range(3):
            _bind(sim, f"pod-{i}")
        rv = sim.store.rv
        time.sleep(0.2)
        assert [_phase(sim, f"pod-{i}") for i in range(3)] == ["Pending"] * 3
        assert sim.store.rv == rv  # no status writes at all
        deleted = sim.store.delete("pods", "pod-1", "default", grace_period_s=30)
        assert deleted["metadata"]["deletionTimestamp"]  # 30 s x 0.01: removed after ~0.3 s
        assert _phase(sim, "pod-1") == "Pending"
        wait_until(lambda: _phase(sim, "pod-1") is None, timeout_s=5.0, interval_s=0.01, what="pod-1 removed")
        assert _phase(sim, "pod-0") == "Pending" and _phase(sim, "pod-2") == "Pending"


def test_a_stopped_kubelet_starts_nothing_more() -> None:
    with SimCluster(SimConfig(running_delay_s=0.3)) as sim:
        sim.add_pods(1)
        _bind(sim, "pod-0")
        sim.kubelet.detach()
        time.sleep(0.5)
        assert _phase(sim, "pod-0") == "Pending"


def _serve_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_serve_parser(parser.add_subparsers())
    return parser.parse_args(["serve", *argv])


def test_serve_flag_turns_starting_off() -> None:
    assert config_from_args(_serve_args()).start_pods is True
    config = config_from_args(_serve_args("--no-start-pods", "--history-window", "77"))
    assert config.start_pods is False and config.history_window == 77
