"""``--compare`` on a synthetic pair of results files: a deliberate 2x slowdown must be flagged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from ksched.bench import report, workload
from ksched.cli import main


def _run(throughput: float, latency_ms: float, cpu_s: float) -> dict[str, Any]:
    samples = [throughput * f for f in (0.8, 0.9, 1.0, 1.1, 1.2)]
    return {
        "measured_pods": 1000,
        "bound": 1000,
        "unscheduled": 0,
        "expected_unschedulable": 0,
        "double_bindings": 0,
        "seconds": 1000 / throughput,
        "pods_per_second": throughput,
        "throughput": {
            "average": throughput,
            "p50": throughput,
            "p90": samples[3],
            "p95": samples[4],
            "p99": samples[4],
            "samples": samples,
        },
        "attempt_duration_ms": {
            "count": 1000,
            "total_s": 1.0,
            "mean_ms": latency_ms / 2,
            "p50_ms": latency_ms / 2,
            "p90_ms": latency_ms,
            "p99_ms": latency_ms,
        },
        "algorithm_duration_ms": {
            "count": 1000,
            "total_s": 0.1,
            "mean_ms": 0.1,
            "p50_ms": 0.1,
            "p90_ms": 0.1,
            "p99_ms": 0.1,
        },
        "attempts": {"scheduled": 1000, "unschedulable": 0, "error": 0},
        "e2e_latency_ms": {
            "average": latency_ms,
            "max": latency_ms * 2,
            "p50": latency_ms,
            "p90": latency_ms,
            "p95": latency_ms,
            "p99": latency_ms * 1.5,
        },
        "e2e_latency_cdf_ms": [latency_ms * i / 100 for i in range(101)],
        "processes": {
            "scheduler": {"cpu_s": cpu_s, "cpu_s_total": cpu_s + 1, "peak_rss_mb": 100.0},
            "sim": {"cpu_s": 1.0, "cpu_s_total": 2.0, "peak_rss_mb": 80.0},
        },
        "extension_points": {},
        "plugins": {},
        "preemption": {"attempts": 0, "victims": 0},
        "churn_objects": 0,
        "quality": {"nodes_used": 50},
        "profile": None,
        "init_pods": {"created": 0, "scheduled_by_scheduler": 0},
    }


def _write(path: Path, throughput: float, latency_ms: float, cpu_s: float) -> Path:
    w = workload.load("SchedulingBasic").scaled(nodes=50, pods=1000)
    results = report.build(w, [_run(throughput, latency_ms, cpu_s)])
    path.write_bytes(orjson.dumps(results))
    return path


@pytest.fixture
def before(tmp_path: Path) -> Path:
    return _write(tmp_path / "before.json", 1000.0, 20.0, 2.0)


def test_a_2x_slowdown_is_flagged(before: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    after = _write(tmp_path / "after.json", 500.0, 40.0, 4.0)
    text, regressed = report.compare(report.load_results(after), report.load_results(before))
    assert regressed
    assert "throughput_average" in text and "0.50×  REGRESSION" in text
    assert main(["bench", str(after), "--compare", str(before)]) == 1
    assert "REGRESSION" in capsys.readouterr().out


def test_same_or_faster_is_not_flagged(
    before: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    same = _write(tmp_path / "same.json", 1050.0, 19.0, 2.0)
    faster = _write(tmp_path / "faster.json", 2000.0, 10.0, 1.0)
    for path in (same, faster):
        text, regressed = report.compare(report.load_results(path), report.load_results(before))
        assert not regressed, text
        assert main(["bench", str(path), "--compare", str(before)]) == 0
    assert "REGRESSION" not in capsys.readouterr().out


def test_a_results_file_of_another_schema_is_refused(before: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.json"
    other.write_bytes(orjson.dumps({"schema": "something-else"}))
    assert main(["bench", str(before), "--compare", str(other)]) == 2


def test_markdown_has_the_table_row(before: Path) -> None:
    md = report.markdown(report.load_results(before))
    assert "| SchedulingBasic | 1,000.0 | 1,000.0 |" in md
    assert "| 680 | 1.47× |" in md
