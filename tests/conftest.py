"""Shared test setup.

- The repository root goes on sys.path so ``tests.builders`` imports.
- Every what-if overlay checks that it put the cache back exactly (``KSCHED_CHECK_OVERLAY``), so
  a dry run or nominated-pods pass that leaves a trace fails the test that ran it.
- The compiled-kernel tests skip when the extension was never built (a source checkout); in CI
  (``CI`` set, as ``.ci/run`` runs) a missing extension module (any ``ksched/_fast/*.pyx``) stops
  the session instead, so those skips can never hide the comparisons the issues ask CI to run.
"""

import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("KSCHED_CHECK_OVERLAY", "1")

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def pytest_sessionstart(session: pytest.Session) -> None:
    if not os.environ.get("CI"):
        return
    from ksched.framework import kernels

    missing = ["kernels"] if kernels.compiled() is None else []
    missing += [
        pyx.stem
        for pyx in sorted((ROOT / "ksched" / "_fast").glob("*.pyx"))
        if pyx.stem != "kernels" and kernels.extra_module(pyx.stem) is None
    ]
    if missing:
        raise pytest.UsageError(
            f"CI is set but ksched._fast.{{{', '.join(missing)}}} is not built: the compiled-vs-numpy "
            "tests would be skipped. Install with `pip install -e '.[test]'`."
        )
