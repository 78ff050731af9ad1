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
