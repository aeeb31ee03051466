"""Build of the compiled solver core (the rest of the metadata is in pyproject.toml).

``aliasflow.solver._native`` is a hand-written CPython C-API module in C++17
(src/aliasflow/solver/_native_src/): the cheapest route to build (one compiler call, nothing
but setuptools at build time) and to call (~30 ns per call). ``pip install .`` and
``pip install -e .`` compile it; for development: ``python setup.py build_ext --inplace``.
``AF_NATIVE_SANITIZE=1`` builds it with AddressSanitizer and UBSan (see fuzz/README.md).
"""

import os

from setuptools import Extension, setup

SRC = "src/aliasflow/solver/_native_src"
compile_args = ["-std=c++17", "-O2", "-fvisibility=hidden", "-Wall", "-Wextra"]
link_args = []
if os.environ.get("AF_NATIVE_SANITIZE"):
    san = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined",
           "-fno-omit-frame-pointer", "-fno-wrapv", "-g", "-O1"]
    compile_args += san
    link_args += san

setup(
    ext_modules=[
        Extension(
            "aliasflow.solver._native",
            sources=[f"{SRC}/module.cpp"],
            depends=[f"{SRC}/overlap.hpp", f"{SRC}/arith.hpp"],
            language="c++",
            extra_compile_args=compile_args,
            extra_link_args=link_args,
            # a failed build leaves a working pure-Python install; the test suite then fails
            # (tests/test_native.py::test_extension_built) unless AF_PURE=1 asks for that
            optional=not os.environ.get("AF_NATIVE_SANITIZE"),
        )
    ],
)
