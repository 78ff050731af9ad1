"""The bench's arithmetic and its workload format, without processes."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import pytest

from ksched.bench import promtext, stats, workload
from ksched.bench.command import add_bench_parser
from ksched.bench.errors import WorkloadError
from ksched.bench.procs import sim_command


def test_percentiles_are_upstreams_nearest_rank() -> None:
    values = [float(v) for v in range(1, 11)]
    assert stats.upstream_percentile(values, 50) == 5.0
    assert stats.upstream_percentile(values, 90) == 9.0
    assert stats.upstream_percentile(values, 99) == 10.0
    assert stats.upstream_percentile([], 50) == 0.0


def test_throughput_samples_as_upstreams_collector() -> None:
    # Ticks at 1, 2, 3, 4 s; the first tick that sees bound pods (1 s) is the baseline and is not
    # sampled; the last, partial second (after 4 s) is not sampled either.
    binds = [0.5] * 100 + [1.5] * 300 + [2.5] * 200 + [3.5] * 50 + [4.2] * 7
    assert stats.throughput_samples(binds, start=0.0) == [300.0, 200.0, 50.0]
    summary = stats.throughput_summary([300.0, 200.0, 50.0])
    assert summary["average"] == pytest.approx(550 / 3) and summary["p50"] == 200.0
    assert summary["p99"] == 300.0


def test_throughput_ticks_before_the_first_binding_and_empty_ticks() -> None:
    # Nothing bound by the 1 s tick: the 2 s tick is the baseline. No binding between the 3 s
    # and 4 s ticks: the 5 s tick's sample spans two intervals and counts twice.
    binds = [1.5] * 10 + [2.5] * 40 + [4.5] * 60 + [5.1]
    assert stats.throughput_samples(binds, start=0.0) == [40.0, 30.0, 30.0]


def test_short_runs_have_one_sample() -> None:
    assert stats.throughput_samples([0.1, 0.2, 0.25], start=0.0) == pytest.approx([12.0])
    # Under two seconds: the pods bound after the baseline tick over the time since it.
    assert stats.throughput_samples([0.5] * 100 + [1.5] * 300, start=0.0) == pytest.approx([600.0])


def test_histogram_quantile_interpolates_within_the_bucket() -> None:
    buckets = [(0.001, 0.0), (0.002, 10.0), (0.004, 20.0), (math.inf, 20.0)]
    assert stats.histogram_quantile(0.5, buckets) == pytest.approx(0.002)
    assert stats.histogram_quantile(0.75, buckets) == pytest.approx(0.003)
    assert math.isnan(stats.histogram_quantile(0.5, []))


SCRAPE = """# TYPE scheduler_scheduling_attempt_duration_seconds histogram
scheduler_scheduling_attempt_duration_seconds_bucket{profile="p",result="scheduled",le="0.001"} %d
scheduler_scheduling_attempt_duration_seconds_bucket{profile="p",result="scheduled",le="0.002"} %d
scheduler_scheduling_attempt_duration_seconds_bucket{profile="p",result="scheduled",le="+Inf"} %d
scheduler_scheduling_attempt_duration_seconds_sum{profile="p",result="scheduled"} %f
scheduler_scheduling_attempt_duration_seconds_count{profile="p",result="scheduled"} %d
# TYPE scheduler_schedule_attempts_total counter
scheduler_schedule_attempts_total{profile="p",result="scheduled"} %d
"""


def test_two_scrapes_differ_by_the_measured_phase() -> None:
    before = promtext.parse(SCRAPE % (5, 5, 5, 0.004, 5, 5))
    after = promtext.parse(SCRAPE % (5, 15, 25, 0.104, 25, 25))
    delta = after.minus(before)
    h = delta.hist("scheduler_scheduling_attempt_duration_seconds", result="scheduled")
    assert h.count == 20 and h.sum == pytest.approx(0.1)
    assert h.quantile(0.25) == pytest.approx(0.0015)
    assert delta.value("scheduler_schedule_attempts_total", result="scheduled") == 20


def test_scaling_keeps_density_and_exact_totals() -> None:
    w = workload.load("PreemptionAsync")
    small = w.scaled(nodes=50)
    assert small.node_count == 50
    assert sum(g.count for g in small.init_pods) == 200
    assert small.measured_count == 50
    assert w.scaled(nodes=50, pods=7).measured_count == 7
    mixed = workload.load("mixed").scaled(pods=101)
    assert mixed.measured_count == 101


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        pytest.param({"nodes": [{"count": 1}], "measuredPods": [{"count": 1}]}, "name", id="no name"),
        pytest.param({"name": "x", "nodes": [], "measuredPods": [{"count": 1}]}, "nodes", id="no nodes"),
        pytest.param(
            {"name": "x", "nodes": [{"count": -1}], "measuredPods": [{"count": 1}]},
            "nodes[0].count",
            id="negative count",
        ),
        pytest.param(
            {"name": "x", "nodes": [{"count": 1}], "measuredPods": [{"count": 1, "template": {"cpus": 1}}]},
            "measuredPods[0].template.cpus",
            id="unknown template field",
        ),
        pytest.param(
            {"name": "x", "nodes": [{"count": 1}], "measuredPods": [{"count": 1, "bound": True}]},
            "measuredPods[0].bound",
            id="measured pods cannot be pre-bound",
        ),
        pytest.param(
            {
                "name": "x",
                "nodes": [{"count": 1}],
                "initPods": [{"count": 1, "bound": True, "skipWaitToCompletion": True}],
                "measuredPods": [{"count": 1}],
            },
            "initPods[0].skipWaitToCompletion",
            id="bound pods are never waited for anyway",
        ),
        pytest.param(
            {
                "name": "x",
                "nodes": [{"count": 1}],
                "measuredPods": [{"count": 1}],
                "churn": [{"kind": "service"}],
            },
            "churn[0].kind",
            id="unknown churn kind",
        ),
    ],
)
def test_invalid_workloads_name_the_field(doc: dict[str, object], field: str) -> None:
    with pytest.raises(WorkloadError) as info:
        workload.parse(doc, "w.yaml")
    assert info.value.field == field
    assert str(info.value).startswith(f"w.yaml: {field}: ")


def test_unknown_workload_lists_the_shipped_ones() -> None:
    with pytest.raises(WorkloadError, match="SchedulingBasic"):
        workload.load("NoSuchWorkload")


def test_the_cluster_leaves_bound_pods_pending_unless_asked(tmp_path: Path) -> None:
    """As upstream's scheduler_perf, which has no kubelets; ``--start-pods`` brings them back."""
    cmd = sim_command(tmp_path, history_window=1000)
    assert cmd[-1] == "--no-start-pods" and "serve" in cmd
    assert "--no-start-pods" not in sim_command(tmp_path, history_window=1000, start_pods=True)
    parser = argparse.ArgumentParser()
    add_bench_parser(parser.add_subparsers())
    assert parser.parse_args(["bench", "SchedulingBasic"]).start_pods is False
    assert parser.parse_args(["bench", "SchedulingBasic", "--start-pods"]).start_pods is True
