"""Build only the compiled kernels; everything else is in pyproject.toml.

One directive table for every extension. ``KSCHED_CYTHON_DEBUG=1`` turns bounds and wraparound
checks back on (CI builds it once that way), so a kernel indexing out of range fails loudly there.
"""

import os
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("KSCHED_CYTHON_DEBUG") == "1"
DIRECTIVES = {
    "language_level": "3",
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": True,
    "nonecheck": False,
    "embedsignature": True,
}

extensions = [
    Extension(
        f"ksched._fast.{pyx.stem}",
        [str(pyx)],
        include_dirs=[np.get_include(), "ksched/_fast"],
        depends=[str(h) for h in Path("ksched/_fast").glob("*.h")],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        extra_compile_args=["-O0", "-g"] if DEBUG else ["-O3"],
    )
    for pyx in sorted(Path("ksched/_fast").glob("*.pyx"))
]

setup(ext_modules=cythonize(extensions, compiler_directives=DIRECTIVES))
