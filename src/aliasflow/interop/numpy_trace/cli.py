"""Running a program under the NumPy tracer (and the PyTorch tracer once it imports torch)
the way the command line does, with the program's own output, exceptions and exit status."""
from __future__ import annotations

from ..script import run_target
from .joint import JointTrace


def run_traced(script=None, module=None, argv=(), include=(), with_torch=True):
    """Run ``script`` (a path) or ``module`` (``-m``) with ``argv`` as ``__main__``, its
    code rewritten, through the command line's runner (``interop/script.py``).

    Returns ``(exit status, numpy trace, torch trace or None)``: the program's status (0,
    its ``SystemExit`` code, 1 after an uncaught exception, printed as Python prints it)."""
    t = JointTrace(lazy_torch=True, include=include) if with_torch else \
        _numpy_only(include)
    status = run_target(script if script is not None else module, list(argv), t,
                        module=module is not None)
    return status, t.numpy, t.torch


def _numpy_only(include):
    t = JointTrace(lazy_torch=True, include=include)
    t._lazy = False
    return t
