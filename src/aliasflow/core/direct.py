"""Writing a big elementwise ufunc's result straight into its output.

``Operation.execute`` computes a value into a new array, then copies it into each output. For
a big elementwise op that copy (and the new array) is about half the work: 4M float32 ``sin``
takes 4.2 ms into a given array, 6.3 ms into a new one plus the copy (this machine). Passing
the output as the ufunc's ``out=`` avoids both, but only where the two ways are
indistinguishable. :func:`ufunc_into` takes that way only when all of these hold, and
otherwise answers False (the caller then goes the general way):

- **Same bits.** A ufunc's inner loop picks its SIMD or scalar path from its operands'
  dtypes, steps, alignment and memory overlap (NumPy's ``loops_*.dispatch`` sources). Here
  every operand is C-contiguous, aligned, in native byte order, of the output's shape, and of
  exactly the loop dtypes NumPy resolves for the inputs (no cast, no buffering), and the
  output shares no memory with an input. So the loop runs once over the whole length with
  element-sized steps and no overlap, as it does into a new array; the loops' remaining
  alignment tests only choose between paths of IEEE-exact arithmetic (``+``, ``*``, ``/``,
  ``sqrt``, comparisons), whose results do not depend on the path.
- **An op that fails writes nothing.** The general way raises before writing. A ufunc
  given ``out=`` raises a floating-point error (``np.seterr(all="raise")``, or a
  ``RuntimeWarning`` a warnings filter turns into an error) only after writing. So this
  way is taken only while no floating-point error can raise: ``np.geterr()`` says
  ``ignore``, ``warn`` or ``print`` for every kind, and, where one says ``warn``, no
  warnings filter has the ``error`` action. Loops that raise on values midway (integer
  ``power`` of a negative exponent, writing some of ``out`` first) and loops of
  non-numeric dtypes (objects run Python code) never go this way.
- **Big.** Below :data:`MIN_SIZE` elements the copy costs less than these checks.
"""
from __future__ import annotations

import warnings

import numpy as np

MIN_SIZE = 1 << 14  # elements; tests lower it to run small ops this way too
_QUIET = frozenset(("ignore", "warn", "print"))


def ufunc_into(fn, inputs: list, out: np.ndarray) -> bool:
    """Run ``fn(*inputs, out=out)`` if that is indistinguishable from computing ``fn(*inputs)``
    and copying it into ``out`` (see the module docstring); answer whether it ran."""
    if out.size < MIN_SIZE or type(fn) is not np.ufunc or fn.nout != 1 \
            or fn.nin != len(inputs) or fn.signature is not None:
        return False
    for arr in (out, *inputs):
        if type(arr) is not np.ndarray or arr.shape != out.shape or not arr.dtype.isnative:
            return False
        flags = arr.flags
        if not (flags.c_contiguous and flags.aligned):
            return False
    dtypes = tuple(arr.dtype for arr in inputs)
    try:
        loop = fn.resolve_dtypes(dtypes + (None,))
    except (TypeError, ValueError):  # no loop: the general way raises the kernel's own error
        return False
    if loop != dtypes + (out.dtype,) or not all(
            dt.kind in ("fc" if fn is np.power else "biufc") for dt in loop):
        return False
    if not _errors_cannot_raise():
        return False
    if any(np.may_share_memory(out, arr) for arr in inputs):  # exact for contiguous arrays
        return False
    fn(*inputs, out=out)
    return True


def _errors_cannot_raise() -> bool:
    modes = np.geterr().values()
    if not _QUIET.issuperset(modes):
        return False
    return "warn" not in modes or all(entry[0] != "error" for entry in warnings.filters)
