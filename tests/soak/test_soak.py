"""Soak: 30 minutes of churn on 1,000 nodes; the scheduler's RSS and per-cycle latency must stay flat.

Opt-in (not part of CI): ``pytest -m soak tests/soak -s``. ``KSCHED_SOAK_MINUTES`` (default 30)
sets the length, ``KSCHED_SOAK_OUT`` the directory for ``soak.png`` and ``soak.json`` (default: the
test's tmp dir; the path is printed).

Why it exists: a scheduler that leaks a few bytes per pod (a memo keyed by uid, an interned name
never released, an event never dropped) passes every short test and dies after a week. The run seeds
8,000 pods on 1,000 nodes, starts ``ksched run`` as a process, waits until they are bound, then every
second creates ``RATE`` new pods and deletes the ``RATE`` oldest, and every 30 s adds 5 nodes and
removes 5 (deleting their pods first, as the pod garbage collector would). Once a minute it samples the
RSS of the process and its bind worker (``/proc/<pid>/status``) and, from ``/metrics``, the mean
duration of a scheduling cycle (``scheduler_scheduling_algorithm_duration_seconds``) over that minute;
the mean attempt duration, which also holds the binding round trip to the API server, is recorded and
plotted but not judged (it measures the embedded API server and the machine as much as ksched). The
verdict fits a line through the samples after a two-minute warm-up: the fitted growth over the run must
stay within 10 % for RSS and for the cycle.
"""

from __future__ import annotations

import collections
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from png import write_chart
from sched_harness import KschedProcess, metric_value, write_config

from ksched.bench.procs import children
from ksched.sim import SimCluster, SimConfig
from ksched.sim.workloads import make_nodes, make_pods, pod_template
from tests.integration.support import wait_until

pytestmark = [pytest.mark.soak, pytest.mark.slow]

NODES = 1000
POPULATION = 8000
RATE = 20
"""Pods created (and deleted) per second."""
NODE_CHURN_EVERY_S = 30.0
NODE_CHURN = 5
WARMUP_MIN = 2
MAX_GROWTH = 0.10
ATTEMPT = "scheduler_scheduling_attempt_duration_seconds"
ALGORITHM = "scheduler_scheduling_algorithm_duration_seconds"
METRIC_SERIES = (f"{ATTEMPT}_sum", f"{ATTEMPT}_count", f"{ALGORITHM}_sum", f"{ALGORITHM}_count")


@pytest.fixture
def sim() -> Iterator[SimCluster]:
    cluster = SimCluster(
        SimConfig(history_window=20_000, running_delay_s=0.05, grace_scale=0.0, seed=3)
    )
    cluster.add_nodes(NODES, zones=4)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    raise AssertionError(f"no VmRSS for pid {pid}")


def _tree_rss_mib(pid: int) -> float:
    """The scheduler's RSS plus its bind worker's (a child process that lives as long as it does)."""
    return _rss_mib(pid) + sum(_rss_mib(child) for child in children(pid))


def _growth(xs: list[float], ys: list[float]) -> float:
    """Relative growth of the least-squares line over the sampled span: fit(end) / fit(start) - 1."""
    if len(xs) < 3:
        return ys[-1] / ys[0] - 1.0 if ys[0] > 0 else 0.0
    slope, icpt = np.polyfit(np.asarray(xs), np.asarray(ys), 1)
    start = slope * xs[0] + icpt
    return float((slope * xs[-1] + icpt) / start - 1.0) if start > 0 else 0.0


def _pods(n: int, start: int) -> list[dict]:
    return make_pods(n, pod_template(cpu="100m", memory="200Mi"), "default", "soak-", start=start)


def test_soak_rss_and_latency_stay_flat(sim: SimCluster, tmp_path: Path) -> None:
    minutes = float(os.environ.get("KSCHED_SOAK_MINUTES", "30"))
    out = Path(os.environ.get("KSCHED_SOAK_OUT", str(tmp_path)))
    out.mkdir(parents=True, exist_ok=True)
    store = sim.store
    live: collections.deque[str] = collections.deque()
    store.bulk_create("pods", _pods(POPULATION, 0), namespace="default")
    live.extend(f"soak-{i}" for i in range(POPULATION))
    next_pod = POPULATION
    kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig")
    config = write_config(tmp_path / "ksched.yaml", leader_elect=False)
    proc = KschedProcess("soak", kubeconfig, config, tmp_path, leader_elect=False)
    try:
        def bound() -> int:
            assert proc.proc.poll() is None, f"ksched exited:\n{proc.log()[-3000:]}"
            return sum(1 for p in store.list("pods") if (p.get("spec") or {}).get("nodeName"))

        wait_until(lambda: bound() == POPULATION, timeout_s=300, interval_s=1.0, what="the seed pods to bind")
        node_names = collections.deque(n["metadata"]["name"] for n in store.list("nodes"))
        next_node = NODES
        samples: list[dict[str, float]] = []
        t0 = time.monotonic()
        last_text = proc.get("/metrics")[1]
        next_sample = t0 + 60.0
        next_churn = t0 + NODE_CHURN_EVERY_S
        created = deleted = nodes_added = nodes_removed = 0
        tick = t0
        while True:
            tick += 1.0
            time.sleep(max(0.0, tick - time.monotonic()))
            now = time.monotonic()
            assert proc.proc.poll() is None, f"ksched exited:\n{proc.log()[-3000:]}"
            store.bulk_create("pods", _pods(RATE, next_pod), namespace="default")
            live.extend(f"soak-{i}" for i in range(next_pod, next_pod + RATE))
            next_pod += RATE
            created += RATE
            while len(live) > POPULATION:
                name = live.popleft()
                if store.get("pods", name, "default") is not None:
                    store.delete("pods", name, "default", grace_period_s=0)
                    deleted += 1
            if now >= next_churn:
                next_churn += NODE_CHURN_EVERY_S
                gone = {node_names.popleft() for _ in range(NODE_CHURN)}
                for p in store.list("pods"):
                    if (p.get("spec") or {}).get("nodeName") in gone:
                        store.delete("pods", p["metadata"]["name"], "default", grace_period_s=0)
                        deleted += 1
                for name in gone:
                    store.delete("nodes", name)
                nodes_removed += len(gone)
                fresh = make_nodes(NODE_CHURN, None, 4, name_prefix="node-", start=next_node)
                next_node += NODE_CHURN
                store.bulk_create("nodes", fresh)
                node_names.extend(n["metadata"]["name"] for n in fresh)
                nodes_added += NODE_CHURN
            if now >= next_sample:
                next_sample += 60.0
                status, text = proc.get("/metrics")
                if status != 200:  # a busy machine: skip this sample rather than record zeros
                    print(f"soak: /metrics answered {status}: {text[:200]}", flush=True)
                    continue
                d_sum, d_cnt, a_sum, a_cnt = (
                    metric_value(text, name) - metric_value(last_text, name)
                    for name in METRIC_SERIES
                )
                last_text = text
                sample = {
                    "minute": round((now - t0) / 60.0, 2),
                    "rss_mib": _tree_rss_mib(proc.proc.pid),
                    "cycle_ms": 1000.0 * a_sum / a_cnt if a_cnt else 0.0,
                    "attempt_ms": 1000.0 * d_sum / d_cnt if d_cnt else 0.0,
                    "attempts": d_cnt,
                    "pending": metric_value(text, "scheduler_pending_pods"),
                }
                samples.append(sample)
                print(f"soak {json.dumps(sample)}", flush=True)
            if now - t0 >= minutes * 60.0 and samples:
                break
        steady = [s for s in samples if s["minute"] > WARMUP_MIN] or samples
        xs = [s["minute"] for s in steady]
        rss_growth = _growth(xs, [s["rss_mib"] for s in steady])
        lat_growth = _growth(xs, [s["cycle_ms"] for s in steady])
        summary = {
            "minutes": minutes,
            "nodes": NODES,
            "pods_created": POPULATION + created,
            "pods_deleted": deleted,
            "nodes_added": nodes_added,
            "nodes_removed": nodes_removed,
            "rss_start_mib": steady[0]["rss_mib"],
            "rss_end_mib": steady[-1]["rss_mib"],
            "rss_growth": rss_growth,
            "cycle_ms_start": steady[0]["cycle_ms"],
            "cycle_ms_end": steady[-1]["cycle_ms"],
            "cycle_growth": lat_growth,
            "attempt_ms_start": steady[0]["attempt_ms"],
            "attempt_ms_end": steady[-1]["attempt_ms"],
            "attempt_growth": _growth(xs, [s["attempt_ms"] for s in steady]),
            "double_binds": len(sim.audit.double_bindings()),
            "samples": samples,
        }
        (out / "soak.json").write_text(json.dumps(summary, indent=1))
        png = write_chart(
            out / "soak.png",
            [
                ([s["minute"] for s in samples], [s["rss_mib"] for s in samples], (30, 90, 200)),
                ([s["minute"] for s in samples], [s["cycle_ms"] for s in samples], (200, 40, 40)),
                ([s["minute"] for s in samples], [s["attempt_ms"] for s in samples], (40, 150, 40)),
            ],
        )
        print(f"soak summary {json.dumps({k: v for k, v in summary.items() if k != 'samples'})}")
        print(f"soak chart {png} (RSS MiB; ms per cycle; ms per attempt incl. binding; x: minutes)")
        assert proc.proc.poll() is None, "the scheduler died during the soak"
        assert summary["double_binds"] == 0
        assert rss_growth <= MAX_GROWTH, f"RSS grew {rss_growth:.1%} over the run: {samples}"
        assert lat_growth <= MAX_GROWTH, f"per-cycle latency grew {lat_growth:.1%} over the run: {samples}"
    finally:
        proc.close()
