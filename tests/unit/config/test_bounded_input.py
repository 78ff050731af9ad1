"""Bombs and oversized configs (tests/corpus/bombs.yaml) are refused fast, cheaply and by name."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from ksched import bounded
from ksched.config.load import load_config
from ksched.errors import ConfigError
from tests.bounded_corpus import generate, recipes

BOMBS = [r for r in recipes("bombs.yaml") if r["where"] == "config"]
REPO = Path(__file__).resolve().parents[3]


def refused_cheaply(load: Any, path: Path, error: type[Exception]) -> str:
    """``load(path)``'s error message, checked to take < 2 s and < 200 MB of Python allocations."""
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(error) as info:
            load(path)
        elapsed = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert elapsed < 2.0, f"{path.name}: {elapsed:.2f} s"
    assert peak < 200 * bounded.MiB, f"{path.name}: {peak:,} bytes"
    return str(info.value)


@pytest.mark.parametrize("recipe", BOMBS, ids=[r["name"] for r in BOMBS])
def test_a_config_bomb_is_refused_with_the_file_and_the_limit(recipe: dict[str, Any], tmp_path: Path) -> None:
    path = generate(recipe, tmp_path)
    message = refused_cheaply(load_config, path, ConfigError)
    assert message.startswith(f"{path}: ")
    assert recipe["expect"] in message
    assert len(message) < 400


def test_run_refuses_a_bomb_without_a_traceback(tmp_path: Path) -> None:
    (recipe,) = [r for r in BOMBS if r["name"] == "billion-laughs-config"]
    path = generate(recipe, tmp_path)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "ksched", "run", "--config", str(path)],
        capture_output=True, text=True, env=env, timeout=60, cwd=tmp_path,
    )
    assert proc.returncode != 0
    assert recipe["expect"] in proc.stderr and str(path) in proc.stderr
    assert "Traceback" not in proc.stderr
    assert time.perf_counter() - started < 10  # interpreter start-up included


def test_an_anchor_used_sanely_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "anchors.yaml"
    path.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: &n a\n- schedulerName: b\n  percentageOfNodesToScore: 5\n"
    )
    assert [p.scheduler_name for p in load_config(path).profiles] == ["a", "b"]


def test_a_plain_file_takes_the_c_loader_without_an_event_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard costs a few string scans, not a second parse, for what kubectl writes."""
    def forbidden(*_: object) -> None:
        raise AssertionError("event scan on a plain file")

    monkeypatch.setattr(bounded, "_scan_events", forbidden)
    node = "- kind: Node\n  metadata:\n    name: n{i}\n    labels: {{a: b}}\n  spec:\n    taints: []\n"
    text = "kind: List\nitems:\n" + "".join(node.format(i=i) for i in range(200))
    assert len(bounded.load_yaml(text, "plain.yaml")["items"]) == 200


def test_depth_is_exact_at_the_limit() -> None:
    n = bounded.MAX_DEPTH
    assert bounded.load_yaml("[" * n + "]" * n, "ok.yaml") is not None
    assert bounded.load_json("[" * n + "]" * n, "ok.json") is not None
    for load in (bounded.load_yaml, bounded.load_json):
        with pytest.raises(bounded.LimitError, match="deeper than the 1,024-level limit"):
            load("[" * (n + 1) + "]" * (n + 1), "deep")


def test_json_integers_past_64_bits_stay_integers() -> None:
    assert bounded.load_json(b'{"a": -9223372036854775809, "b": 1}', "x") == {"a": -(2**63) - 1, "b": 1}


def test_a_preview_is_bounded_and_cheap() -> None:
    assert bounded.preview("x" * 1000) == repr("x" * 200) + "… (800 more)"
    big = [[list(range(10**4))] * 10**4] * 10**4  # 10**12 elements if walked
    assert len(bounded.preview(big)) < 260
    assert bounded.preview(10**5000) == "<16,610-bit integer>"
