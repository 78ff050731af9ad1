"""Benchmark setup: the repository root on sys.path, seeded clusters, and machine info in the JSON.

Run with ``python -m pytest benches/test_cycle.py --benchmark-only`` (add ``--benchmark-json=out.json``
to keep results); benches are not collected by the default ``pytest`` run.
"""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def pytest_benchmark_update_machine_info(config: Any, machine_info: dict[str, Any]) -> None:
    """Record what the numbers depend on: cores, library versions, whether kernels were compiled."""
    import Cython
    import numpy as np

    from ksched.framework import kernels

    machine_info["ksched"] = {
        "cpu_count": os.cpu_count(),
        "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cython": Cython.__version__,
        "compiled_kernels": kernels.compiled() is not None,
        "cython_debug": os.environ.get("KSCHED_CYTHON_DEBUG") == "1",
        "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
    }
