"""``af.trace()``: one context manager around NumPy and PyTorch code.

It runs the NumPy tracer (:class:`~.trace.Trace`) and, where PyTorch is installed, the
PyTorch tracer, and answers as one: ``findings()`` lists the NumPy findings and then
PyTorch's; every other attribute (``ops``, ``replay``, ``stream``, ``reuse``, ...) is the
PyTorch trace's, and ``t.numpy`` / ``t.torch`` are the two traces themselves.

For this round the two record separately (each its own op records over the same real
addresses: a write through ``torch.from_numpy(a)`` and a NumPy read of ``a`` meet by
address when both traces' records are analysed together).

What the NumPy side sees inside ``with af.trace():`` depends on whether the code was
rewritten (see :mod:`.trace`): code run by ``aliasflow trace`` or imported under the hook
is fully watched; code compiled before (the ``with`` block's own module, usually) is seen
only through the NumPy functions the trace wraps (``np.copyto``, ``np.concatenate(out=)``,
...), never its subscript stores, in-place operators, ufuncs or ndarray methods.
"""
from __future__ import annotations

import importlib.util

from .trace import Trace as NumpyTrace

# where PyTorch is installed, ``af.trace`` loads it (as it always did), so a trace started
# before the program's first torch call is ready for it
TorchTrace = None
if importlib.util.find_spec("torch") is not None:
    from ..torch_trace.tracer import Trace as TorchTrace


class Trace:
    def __init__(self, values: bool = True, pause_gc: bool = True):
        self.numpy = NumpyTrace()
        self.torch = None if TorchTrace is None else TorchTrace(values=values,
                                                                pause_gc=pause_gc)

    def __enter__(self):
        self.numpy.__enter__()
        if self.torch is not None:
            try:
                self.torch.__enter__()
            except BaseException:
                self.numpy.__exit__(None, None, None)
                raise
        return self

    def __exit__(self, *exc):
        try:
            if self.torch is not None:
                self.torch.__exit__(*exc)
        finally:
            self.numpy.__exit__(*exc)
        return False

    def findings(self, all: bool = False) -> list:
        """The NumPy findings (most serious first), then the PyTorch tracer's."""
        found = self.numpy.findings(all)
        if self.torch is not None:
            found = found + list(self.torch.findings())
        return found

    def __getattr__(self, name):
        torch = self.__dict__.get("torch")
        if torch is None:
            raise AttributeError(f"{name!r}: this trace has no PyTorch side (PyTorch is not "
                                 f"installed); the NumPy trace is .numpy")
        return getattr(torch, name)

    def __repr__(self) -> str:
        return f"Trace({self.numpy!r}, {self.torch!r})"


def trace(values: bool = True, pause_gc: bool = True) -> Trace:
    """Trace the NumPy and PyTorch program run inside ``with af.trace() as t:``."""
    return Trace(values, pause_gc)
