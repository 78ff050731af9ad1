"""The scheduling framework: extension points, the cycle's runtime, profiles and the plugins.

This package's namespace *is* the public plugin API (the names of :mod:`ksched.framework.api`,
pinned by a test of ``__all__``): write a custom plugin against these names only. Everything else
under ``ksched.framework`` (runtime, kernels, the in-tree plugins) is internal and may change.
"""

from ksched.framework.api import *  # noqa: F403
from ksched.framework.api import __all__ as _api_all

__all__ = list(_api_all)
