"""Fixtures of the plugin tests.

``path`` runs a test once on the compiled kernels and once on the numpy ones (skipping the compiled
run when the extension is not built), and puts the compiled path back afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ksched.framework import kernels

# Before any test module imports it: its asserts (run_cases, the config checks) get pytest's messages.
pytest.register_assert_rewrite("tests.unit.framework.plugins.noderesources_support")


@pytest.fixture(params=["compiled", "numpy"])
def path(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "compiled" and kernels.compiled() is None:
        pytest.skip("compiled kernels are not built (python setup.py build_ext --inplace)")
    kernels.use_compiled(request.param == "compiled")
    yield request.param
    kernels.use_compiled(True)
