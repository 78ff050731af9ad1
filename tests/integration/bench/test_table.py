"""``python -m ksched.bench.table``: the figures table rendered from saved results, written between
the README's markers, and refusals that name the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from ksched.bench import report, table, workload
from tests.integration.bench.test_compare import _run


def _bench_results(tmp_path: Path, throughput: float) -> Path:
    results = report.build(workload.load("SchedulingBasic"), [_run(throughput, 100.0, 2.0)])
    json_path, _ = report.write(results, tmp_path / "SchedulingBasic")
    return json_path


def _pytest_benchmark(tmp_path: Path) -> Path:
    data: dict[str, Any] = {
        "machine_info": {"cpu": {"count": 2}},
        "datetime": "2030-01-02T03:04:05.000000",
        "benchmarks": [
            {
                "group": "cycle-5000",
                "name": "test_cycle[compiled-default-plain-5000]",
                "fullname": "benches/test_micro_cycle.py::test_cycle[compiled-default-plain-5000]",
                "stats": {"median": 31.9e-6, "mean": 40e-6},
            },
            {
                "group": None,
                "name": "test_x",
                "fullname": "benches/test_x.py::test_x",
                "stats": {"median": 0.25},
            },
        ],
    }
    path = tmp_path / "cycle.json"
    path.write_bytes(orjson.dumps(data))
    return path


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        pytest.param(31.9e-6, "31.9 µs", id="microseconds"),
        pytest.param(467e-6, "467 µs", id="hundreds of microseconds"),
        pytest.param(0.0114, "11.4 ms", id="milliseconds"),
        pytest.param(2.3, "2.30 s", id="seconds"),
        pytest.param(850e-9, "850 ns", id="nanoseconds"),
    ],
)
def test_durations_keep_three_figures(seconds: float, text: str) -> None:
    assert table.duration(seconds) == text


def test_rows_follow_the_files_in_order(tmp_path: Path) -> None:
    bench = _bench_results(tmp_path, 1000.0)
    micro = _pytest_benchmark(tmp_path)
    lines = table.render([micro, bench.parent]).splitlines()
    assert lines[:2] == list(table.HEADER)
    assert lines[2] == (
        "| cycle-5000: `test_cycle[compiled-default-plain-5000]` (benches/test_micro_cycle.py) "
        "| 31.9 µs median | – | 2 CPUs |"
    )
    assert lines[3].startswith("| `test_x` (benches/test_x.py) | 250 ms median |")
    row = lines[4]
    assert row.startswith(
        "| `ksched bench SchedulingBasic`: 5,000 nodes, 10,000 measured pods | 1,000 pods/s"
    )
    assert "| 680 (1.5×) |" in row and "median of 1 |" in row
    assert len(lines) == 5


def test_readme_table_is_replaced_between_the_markers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = _bench_results(tmp_path, 2000.0)
    readme = tmp_path / "README.md"
    readme.write_text(f"# Benchmarks\n\nBefore.\n\n{table.BEGIN}\n| stale |\n{table.END}\n\nAfter.\n")
    assert table.main(["--readme", str(readme), str(bench)]) == 0
    text = readme.read_text()
    assert "| stale |" not in text and "2,000 pods/s" in text
    assert text.startswith("# Benchmarks\n\nBefore.\n\n") and text.endswith(f"{table.END}\n\nAfter.\n")
    assert table.main(["--readme", str(readme), str(bench)]) == 0
    assert readme.read_text() == text  # the same files give the same table
    assert "wrote the figures table" in capsys.readouterr().out


def test_the_shipped_readme_has_the_markers() -> None:
    text = (Path(__file__).parents[3] / "benches" / "README.md").read_text()
    assert text.count(table.BEGIN) == 1 and text.count(table.END) == 1


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        pytest.param(b"{", "cannot read results", id="not JSON"),
        pytest.param(b'{"schema": "other/1"}', "neither", id="another schema"),
    ],
)
def test_refusals_name_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, problem: str
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    assert table.main([str(bad)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and problem in err


def test_a_readme_without_markers_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# no markers\n")
    assert table.main(["--readme", str(readme), str(_bench_results(tmp_path, 1.0))]) == 2
    assert "needs the marker lines" in capsys.readouterr().err
    assert readme.read_text() == "# no markers\n"
