"""Without the compiled extension ksched still schedules, on numpy, and says so once."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_missing_extension_falls_back_and_warns_once() -> None:
    script = textwrap.dedent(
        """
        import logging, sys
        sys.modules["ksched._fast.kernels"] = None  # as if the extension was never built
        logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
        from ksched.framework import kernels
        from ksched.framework.profile import build_profiles
        from ksched.config import default_config
        from tests.builders import cluster_of, make_node, pod
        cache = cluster_of([make_node(f"n{i}", cpu=4, memory="8Gi", pods=10) for i in range(5)])
        fw = build_profiles(default_config(), seed=1)["default-scheduler"]
        for _ in range(3):
            assert fw.schedule_pod(pod(requests={"cpu": "1"}), cache).selected_node is not None
        assert kernels.compiled() is None
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=ROOT, env=env
    )
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if "compiled kernels unavailable" in line]
    assert len(warnings) == 1, proc.stderr
