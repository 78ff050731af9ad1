"""``ksched sim``: the README's main job, end to end on a small cluster (real subprocess, HTTP)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_sim_binds_every_pod_once_and_summarizes(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ksched",
            "sim",
            "--nodes",
            "50",
            "--pods",
            "300",
            "--json",
            "--keep-dir",
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr + (tmp_path / "scheduler.log").read_text()
    summary = json.loads(proc.stdout)
    assert summary["bound"] == summary["pods"] == 300
    assert summary["unscheduled"] == 0
    assert summary["double_bindings"] == 0
    assert summary["pods_per_second"] > 0
    assert (tmp_path / "kubeconfig").exists() and (tmp_path / "scheduler.log").exists()


def test_unknown_workload_is_a_clear_error() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "ksched", "sim", "--nodes", "1", "--pods", "1", "--workload", "nope"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "unknown workload 'nope'" in proc.stderr
    assert "Traceback" not in proc.stderr


def _sim(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "ksched", "sim", "--nodes", "20", "--pods", "40", "--json", *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=180)


def test_sim_passes_out_of_tree_plugins_to_the_scheduler() -> None:
    """The example plugins' config with their factories: the main job schedules with them."""
    config = "examples/plugins/config.yaml"
    plugins = ("node_cost:NodeCost", "system_reserve:SystemReserve", "gang:Gang")
    proc = _sim("--config", config, *(f"--plugin=examples.plugins.{p}" for p in plugins))
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["bound"] == 40 and summary["double_bindings"] == 0


def test_a_scheduler_that_refuses_its_config_is_reported_with_its_reason() -> None:
    proc = _sim("--config", "examples/plugins/config.yaml")
    assert proc.returncode == 2
    assert (
        "the scheduler exited with status 2: ksched run: error: examples/plugins/config.yaml" in proc.stderr
    )
    assert 'unknown plugin "NodeCost"' in proc.stderr
