"""Build of the compiled core (the rest of the metadata is in pyproject.toml).

Six hand-written CPython C-API modules in C++17, each beside the pure-Python reference it
must agree with: ``aliasflow.solver._native`` (exact overlap), ``aliasflow.analysis._walker``
(the dependency walk; it compiles the solver's header too),
``aliasflow.execution._ready`` (the parallel runner's ready queue),
``aliasflow.interop.numpy_trace._fastpath`` (the NumPy tracer's per-operation layouts),
``aliasflow.interop.torch_trace._frames`` (the PyTorch tracer's search for the user's frame)
and ``aliasflow.interop.torch_trace._hot`` (the PyTorch tracer's per-call path, beside
``Trace._call``); and, where PyTorch is installed before aliasflow, a seventh compiled against
PyTorch's headers, ``aliasflow.interop.torch_trace._reader`` (a tensor's facts read in one
call, for the per-call path). A hand-written module is the cheapest route to build (one compiler call,
nothing but setuptools at build time) and to call (no binding layer between Python and it). ``pip install .`` and ``pip install -e .`` compile them; for
development: ``python setup.py build_ext --inplace``. ``AF_NATIVE_SANITIZE=1`` builds them
with AddressSanitizer and UBSan (see fuzz/README.md).
"""

import json
import os
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

SRC = "src/aliasflow/solver/_native_src"
WALK = "src/aliasflow/analysis/_native_src"
READY = "src/aliasflow/execution/_native_src"
COMMON = "src/aliasflow/_native_src"  # what the modules share at their boundary
NPTRACE = "src/aliasflow/interop/numpy_trace/_native_src"
TTRACE = "src/aliasflow/interop/torch_trace/_native_src"
SANITIZE = bool(os.environ.get("AF_NATIVE_SANITIZE"))
compile_args = ["-std=c++17", "-O2", "-fvisibility=hidden", "-Wall", "-Wextra"]
link_args = []
if SANITIZE:
    san = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined",
           "-fno-omit-frame-pointer", "-fno-wrapv", "-g", "-O1"]
    compile_args += san
    link_args += san


def extension(name: str, source: str, depends=(), include_dirs=()) -> Extension:
    # A failed build leaves a working pure-Python install; the test suite then fails
    # (tests/solver/test_native.py) unless AF_PURE=1 asks for pure Python.
    return Extension(name, sources=[source], depends=list(depends), language="c++",
                     extra_compile_args=compile_args, extra_link_args=link_args,
                     include_dirs=list(include_dirs), optional=not SANITIZE)


def numpy_headers():
    """NumPy's C headers (the tracer's fast path reads the array struct), or nothing: that
    one module then fails to build and the pure-Python reference is used."""
    try:
        import numpy
    except ImportError:
        return []
    return [numpy.get_include()]


def torch_build():
    """How to build against the PyTorch of the environment being installed into: (include
    dirs, library dir, compile flags, the version among them), asked of that environment's interpreter (an
    isolated build hides its packages from this one), or None where it has no PyTorch."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONNOUSERSITE")}
    code = ("import json, os, torch; d = os.path.dirname(torch.__file__); "
            "print(json.dumps([[os.path.join(d, 'include'), "
            "os.path.join(d, 'include', 'torch', 'csrc', 'api', 'include')], "
            "os.path.join(d, 'lib'), int(torch._C._GLIBCXX_USE_CXX11_ABI), torch.__version__]))")
    try:
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, timeout=300)
        includes, libdir, abi, version = json.loads(out.stdout.strip().splitlines()[-1])
    except (OSError, ValueError, IndexError, subprocess.SubprocessError):
        return None
    if not all(os.path.isdir(d) for d in includes + [libdir]):
        return None
    flags = [f"-D_GLIBCXX_USE_CXX11_ABI={abi}", f'-DAF_TORCH_VERSION="{version}"',
             "-Wno-unused-parameter"]
    return includes, libdir, flags


def torch_reader():
    """The PyTorch tracer's reader, where PyTorch is installed before aliasflow (it is
    compiled against PyTorch's headers); without it the tracer reads tensors through their
    Python accessors, with the same records."""
    found = torch_build()
    if found is None:
        return []
    includes, libdir, flags = found
    return [Extension("aliasflow.interop.torch_trace._reader", sources=[f"{TTRACE}/reader.cpp"],
                      depends=[f"{TTRACE}/reader_api.h"], language="c++",
                      # (PyTorch's headers are C++20)
                      extra_compile_args=[a.replace("c++17", "c++20") for a in compile_args] +
                      flags, include_dirs=includes,
                      library_dirs=[libdir], libraries=["torch_python", "torch", "c10"],
                      extra_link_args=link_args,
                      optional=True)]


NOT_BUILT = ("aliasflow: the compiled core was not built ({}); aliasflow works in pure "
             "Python with the same answers, but overlap checks, dependency walks and parallel "
             "runs are slower (the 'pure' columns of benchmarks/RESULTS.md). Install a C++17 "
             "compiler and Python's headers, then reinstall, to build it.")


READER_NOT_BUILT = ("aliasflow: the PyTorch tracer's reader was not built against the "
                    "PyTorch installed here (a C++20 compiler is needed); the tracer reads "
                    "tensors through their Python accessors instead: the same records, a "
                    "slower trace.")


class BuildExt(build_ext):
    """Builds the optional extensions; when any fails, says so in one line at the end."""

    def run(self):
        self.failed = []
        super().run()
        reader = [n for n in self.failed if n.endswith("._reader")]
        core = [n for n in self.failed if n not in reader]
        messages = ([NOT_BUILT.format(", ".join(core))] if core else []) + \
            ([READER_NOT_BUILT] if reader else [])
        for message in messages:
            self.announce(message, level=3)
            print(message, file=sys.stderr)

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception:
            self.failed.append(ext.name)
            raise   # setuptools skips an optional extension that fails


setup(
    cmdclass={"build_ext": BuildExt},
    ext_modules=[
        extension("aliasflow.solver._native", f"{SRC}/module.cpp",
                  [f"{SRC}/overlap.hpp", f"{SRC}/radix.hpp", f"{SRC}/arith.hpp",
                   f"{COMMON}/boundary.hpp"]),
        extension("aliasflow.analysis._walker", f"{WALK}/walker.cpp",
                  [f"{WALK}/walk.hpp", f"{WALK}/index.hpp", f"{SRC}/overlap.hpp",
                   f"{SRC}/radix.hpp", f"{SRC}/arith.hpp", f"{COMMON}/boundary.hpp"]),
        extension("aliasflow.execution._ready", f"{READY}/ready.cpp", [f"{COMMON}/boundary.hpp"]),
        extension("aliasflow.interop.numpy_trace._fastpath", f"{NPTRACE}/fastpath.cpp",
                  [f"{COMMON}/boundary.hpp"], numpy_headers()),
        extension("aliasflow.interop.torch_trace._frames", f"{TTRACE}/frames.cpp",
                  [f"{COMMON}/boundary.hpp"]),
        extension("aliasflow.interop.torch_trace._hot", f"{TTRACE}/hot.cpp",
                  [f"{COMMON}/boundary.hpp", f"{TTRACE}/reader_api.h"]),
    ] + torch_reader(),
)
