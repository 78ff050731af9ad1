"""``ksched bench --extender``: SchedulingBasic at 50 nodes with the example extender on loopback,
reporting the extenders' calls and their share of the scheduling attempts."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from ksched.cli import main


@pytest.mark.parametrize("verbs", ["filter,prioritize", "filter,prioritize,nodecache"])
def test_bench_with_an_extender(verbs: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "bench",
        "SchedulingBasic",
        "--nodes",
        "50",
        "--pods",
        "100",
        "--out",
        str(tmp_path),
        "--no-progress",
        "--stall-seconds",
        "10",
        "--extender",
        verbs,
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    (run,) = orjson.loads((tmp_path / "results.json").read_bytes())["runs"]
    assert run["bound"] == run["measured_pods"] == 100
    ext = run["extenders"]
    assert ext["verbs"]["filter"]["calls"] >= 100 and ext["verbs"]["filter"]["errors"] == 0
    assert ext["verbs"]["prioritize"]["calls"] >= 100
    assert 0 < ext["share_of_attempts"] < 1
    assert "- extender requests: filter" in out


def test_bench_refuses_unknown_verbs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "SchedulingBasic", "--extender", "bind"]) == 2
    assert "--extender 'bind'" in capsys.readouterr().err
