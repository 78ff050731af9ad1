"""Compiled kernels (Cython). Knows nothing of Kubernetes; only :mod:`ksched.framework.kernels` imports it.

``kernels`` holds typed-memoryview loops over node-table rows; ``_types.pxd`` the C types and
``kernels.pxd`` the contract. The extension is optional: without it the numpy references run.
"""
