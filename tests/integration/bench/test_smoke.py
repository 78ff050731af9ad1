"""Every shipped workload at 50 nodes, through ``ksched bench`` exactly as a user runs it.

Two child processes per workload (the embedded cluster and the scheduler), so this is the slow part of
the bench tests (about 3 s per workload). No timing is asserted: only that the run completes, the report
is well-formed, every measured pod is bound once, and the placement figures respect the workload's rules.
"""

from __future__ import annotations

import os
import pstats
from pathlib import Path

import orjson
import pytest

from ksched.bench import chart, report, workload
from ksched.cli import main

WORKLOADS = workload.available()


def test_every_upstream_shape_is_shipped() -> None:
    names = set(WORKLOADS)
    for expected in (
        "SchedulingBasic",
        "SchedulingNodeAffinity",
        "SchedulingPodAffinity",
        "SchedulingPodAntiAffinity",
        "TopologySpreading",
        "PreferredTopologySpreading",
        "PreemptionAsync",
        "Unschedulable",
        "SchedulingWithMixedChurn",
        "mixed",
    ):
        assert expected in names
    for name in WORKLOADS:
        w = workload.load(name)
        assert w.node_count == 5000, name
        assert w.name == name


@pytest.mark.parametrize("name", WORKLOADS)
def test_workload_runs_at_50_nodes(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    profile = name == "SchedulingBasic"
    argv = ["bench", name, "--nodes", "50", "--out", str(tmp_path), "--no-progress", "--stall-seconds", "10"]
    assert main(argv + (["--profile"] if profile else [])) == 0
    out = capsys.readouterr().out

    results = orjson.loads((tmp_path / "results.json").read_bytes())
    assert results["schema"] == report.SCHEMA
    assert results["workload"]["name"] == name
    assert results["workload"]["nodes"] == 50
    (run,) = results["runs"]
    w = workload.load(name).scaled(nodes=50)
    assert run["measured_pods"] == w.measured_count
    # Every measured pod is bound, except one that churn's preemptor deleted before it was bound.
    assert run["pending_at_end"] == 0, f"{name}: {run['pending_at_end']} measured pods still pending"
    assert run["bound"] + run["deleted_before_bound"] == run["measured_pods"]
    if not w.churn:
        assert run["bound"] == run["measured_pods"]
    assert run["double_bindings"] == 0
    assert run["throughput"]["average"] > 0
    assert set(run["throughput"]) >= {"average", "p50", "p90", "p95", "p99", "samples"}
    assert run["attempt_duration_ms"]["count"] >= run["bound"]
    assert run["e2e_latency_ms"]["p99"] >= run["e2e_latency_ms"]["p50"] > 0
    # ksched run posts bindings from a child process when it may use a second CPU (--bind-worker auto)
    worker = {"bind worker"} if len(os.sched_getaffinity(0)) >= 2 else set()
    assert set(run["processes"]) == {"scheduler", "sim", "driver"} | worker
    assert run["processes"]["scheduler"]["peak_rss_mb"] > 0
    assert "PreFilter" in run["extension_points"]  # every cycle reports its extension points
    assert set(w.quality.figures) <= set(run["quality"])
    if "max_skew" in run["quality"] and name == "TopologySpreading":
        assert run["quality"]["max_skew"] <= 5
    if "colocated" in run["quality"] and name == "SchedulingPodAntiAffinity":
        assert run["quality"]["colocated"] == 0
    assert (tmp_path / "results.md").read_text().startswith(f"# ksched bench: {name}")
    assert f"| {name} |" in out
    assert (tmp_path / "results.png").exists() == chart.available()
    if not chart.available():
        assert "chart skipped" in out
    if profile:
        path = Path(run["profile"]["path"])
        stats = pstats.Stats(str(path))
        assert stats.total_calls > 0  # type: ignore[attr-defined]
        assert "top 15 by cumulative" in out and "top 15 by own time" in out
        assert run["profile"]["by_cumulative"][0]["function"] in out


def test_pinned_command_runs_the_command_on_those_cpus_only() -> None:
    import subprocess
    import sys

    from ksched.simrun import pinned_command

    probe = [sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"]
    assert pinned_command(probe, None) == probe and pinned_command(probe, frozenset()) == probe
    first = min(os.sched_getaffinity(0))
    out = subprocess.run(pinned_command(probe, frozenset({first})), capture_output=True, check=True)
    assert out.stdout.decode().strip() == f"[{first}]"


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="--pin needs 2 CPUs")
def test_pin_gives_the_scheduler_a_cpu_of_its_own(tmp_path: Path) -> None:
    before = os.sched_getaffinity(0)
    argv = ["bench", "SchedulingBasic", "--nodes", "50", "--out", str(tmp_path), "--no-progress", "--pin"]
    assert main(argv) == 0
    (run,) = orjson.loads((tmp_path / "results.json").read_bytes())["runs"]
    cpus = sorted(before)
    assert run["pinned"] == {"scheduler": cpus[:1], "sim_and_driver": cpus[1:]}
    assert run["bound"] == run["measured_pods"] and run["double_bindings"] == 0
    assert os.sched_getaffinity(0) == before  # the driver gave its CPUs back
    assert "pinned (--pin): scheduler on CPU" in (tmp_path / "results.md").read_text()
