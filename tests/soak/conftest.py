"""Soak runs are opt-in: a test marked ``soak`` is skipped unless the run selected it with ``-m soak``.

The plain ``pytest`` of CI therefore collects them and reports them as skipped; run
``pytest -m soak tests/soak`` (30 minutes; ``KSCHED_SOAK_MINUTES`` shortens it for a trial).
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
    if item.get_closest_marker("soak") and "soak" not in (item.config.option.markexpr or ""):
        pytest.skip("soak run: opt in with `pytest -m soak`")
