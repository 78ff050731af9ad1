"""The full chaos run is opt-in: a test marked both ``chaos`` and ``slow`` is skipped unless the run
selected it with ``-m chaos`` (``pytest -m chaos tests/chaos``). The short variant is marked ``chaos``
only and runs in every plain ``pytest`` (CI).

The scheduler's harness (``sched_harness``) lives next to the process tests and is put on sys.path here.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HARNESS_DIR = str(Path(__file__).resolve().parents[1] / "integration" / "scheduler")


def pytest_configure(config: pytest.Config) -> None:
    if HARNESS_DIR not in sys.path:
        sys.path.insert(0, HARNESS_DIR)


def pytest_runtest_setup(item: pytest.Item) -> None:
    full = item.get_closest_marker("chaos") and item.get_closest_marker("slow")
    if full and "chaos" not in (item.config.option.markexpr or ""):
        pytest.skip("full chaos run: opt in with `pytest -m chaos`")
