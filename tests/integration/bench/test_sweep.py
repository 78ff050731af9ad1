"""``ksched bench --sweep`` at two tiny sizes, through the command as a user runs it, and its table rows.

Two sizes of two child processes each: a few seconds. No timing is asserted, only that every size ran as
a plain bench does and the curve, its table and the figures-table rows are well-formed.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from ksched.bench import sweep, table
from ksched.bench.errors import WorkloadError
from ksched.cli import main


def test_sweep_runs_each_size_and_writes_the_curve(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["bench", "SchedulingBasic", "--sweep", "nodes=30,60", "--pods", "40", "--out", str(tmp_path)]
    assert main([*argv, "--no-progress", "--stall-seconds", "10"]) == 0
    out = capsys.readouterr().out
    assert "| 30 | 40 |" in out and "| 60 | 40 |" in out

    data = sweep.load(tmp_path / "sweep.json")
    assert data["workload"] == "SchedulingBasic"
    assert [p["nodes"] for p in data["points"]] == [30, 60]
    for p in data["points"]:
        assert p["measuredPods"] == 40 and p["runs"] == 1
        assert p["throughput_average"] and p["scheduler_cpu_ms_per_pod"]
        assert p["scheduler_peak_rss_mb"] and p["cycle_mean_ms"]
        results = orjson.loads(Path(p["results"]).read_bytes())
        assert results["workload"]["nodes"] == p["nodes"]
        assert results["runs"][0]["bound"] == 40
    assert (tmp_path / "sweep.md").read_text().count("\n| ") == 4  # header, rule, two sizes

    rendered = table.render([tmp_path / "sweep.json"])
    rows = [line for line in rendered.splitlines() if "--sweep" in line]
    assert len(rows) == 2 and "30 nodes" in rows[0] and "60 nodes" in rows[1]


@pytest.mark.parametrize("spec", ["nodes", "pods=3", "nodes=", "nodes=10,x", "nodes=0"])
def test_a_malformed_sweep_is_refused(spec: str) -> None:
    with pytest.raises(WorkloadError):
        sweep.parse(spec)


def test_sweep_sizes_keep_their_order() -> None:
    assert sweep.parse("nodes=5000,15000,50000,130000") == [5000, 15000, 50000, 130000]


def test_sweep_refuses_nodes_beside_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "SchedulingBasic", "--sweep", "nodes=30", "--nodes", "30"]) == 2
