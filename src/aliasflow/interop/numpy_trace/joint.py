"""``af.trace()`` and ``aliasflow trace``: one tracer for NumPy and PyTorch code.

It runs the NumPy tracer (:class:`~.trace.NumpyTrace`) and, where PyTorch is installed, the
PyTorch tracer, and answers as one: ``findings()`` lists the NumPy findings and then
PyTorch's; every other attribute (``ops``, ``raw``, ``replay``, ``stream``, ``reuse``,
``races``, ...) is the PyTorch trace's, and ``t.numpy`` / ``t.torch`` are the two traces.

As ``af.trace()`` (a context manager around code already compiled) the NumPy side sees only
the NumPy functions it wraps (``np.copyto``, ``np.concatenate(out=)``, ...: see
:mod:`.trace`); code imported under the hook while it records is fully watched. Given to
the command line's runner (``interop/script.py``), its ``run_path``/``run_module`` run the
program with its own code rewritten (:mod:`.hook`): the script or module, the modules it
imports from its own directory and the packages named in ``include``. There, with
``lazy_torch``, the PyTorch tracer starts only when the program imports torch (a NumPy
program does not pay for importing it).

For this round the two record separately, each its own op records over the same real
addresses (a write through ``torch.from_numpy(a)`` and a NumPy read of ``a`` meet by address
when both traces' records are analysed together).
"""
from __future__ import annotations

import importlib.util
import os
import sys

from . import hook, runtime
from .rewrite import rewrite_tree
from .trace import NumpyTrace


def _torch_installed() -> bool:
    if sys.modules.get("torch") is not None:   # imported, so installed (no finder search)
        return True
    if "torch" in sys.modules:   # None there: its import is blocked, as if not installed
        return False
    try:
        return importlib.util.find_spec("torch") is not None
    except Exception:  # noqa: BLE001 - a finder that refuses torch: not installed, for us
        return False


def _torch_trace(values, pause_gc):
    from ..torch_trace.tracer import Trace as TorchTrace
    return TorchTrace(values=values, pause_gc=pause_gc)


class JointTrace:
    """What ``af.trace()`` returns: the NumPy trace (``numpy``) and the PyTorch trace
    (``torch``, None until there is one) recording together; see the module's text."""

    _OWN = frozenset({"numpy", "torch", "include", "not_rewritten", "_torch_args", "_lazy",
                      "_entered_torch", "_entered_numpy"})

    def __init__(self, values: bool = True, pause_gc: bool = True, lazy_torch: bool = False,
                 include=()):
        self._entered_numpy = False
        self.numpy = NumpyTrace()
        self.torch = None
        self.include = tuple(include)
        self.not_rewritten: set = set()
        self._torch_args = (values, pause_gc)
        self._lazy = lazy_torch and _torch_installed()
        self._entered_torch = False
        if not lazy_torch and _torch_installed():
            self.torch = _torch_trace(values, pause_gc)

    # ---- recording ---------------------------------------------------------------------------
    def __enter__(self):
        # NumPy traces do not nest (one runtime, one table): inside another one, this trace's
        # NumPy side stays empty and the outer trace goes on recording
        if runtime._recorder is None:
            self.numpy.__enter__()
            self._entered_numpy = True
        try:
            if self._lazy and sys.modules.get("torch") is not None:
                self.torch = _torch_trace(*self._torch_args)
            if self.torch is not None:
                self.torch.__enter__()
                self._entered_torch = True
        except BaseException:
            self._exit_numpy()
            raise
        return self

    def __exit__(self, *exc):
        try:
            if self._entered_torch:
                self._entered_torch = False
                self.torch.__exit__(*exc)
        finally:
            self._exit_numpy(*exc)
        return False

    def _exit_numpy(self, *exc):
        if self._entered_numpy:
            self._entered_numpy = False
            self.numpy.__exit__(*(exc or (None, None, None)))

    def _start_torch(self):
        """The program imported torch: the PyTorch tracer starts now (its first op next)."""
        if self.torch is None and self._entered_numpy:
            self.torch = _torch_trace(*self._torch_args)
            self.torch.__enter__()
            self._entered_torch = True

    # ---- running a program with its code rewritten ----------------------------------------------
    def run_path(self, path, run_name="__main__"):
        root = os.path.dirname(os.path.abspath(os.fspath(path)))
        with self._finder([root]):
            return hook.run_path(path, run_name, on_main=self.numpy.modules.append)

    def run_module(self, mod_name, run_name="__main__", alter_sys=True):
        spec = importlib.util.find_spec(mod_name)
        origin = getattr(spec, "origin", None) if spec is not None else None
        roots = [os.path.dirname(os.path.abspath(origin))] if origin else []
        with self._finder(roots):
            return hook.run_module(mod_name, run_name, alter_sys,
                                   on_main=self.numpy.modules.append)

    def watching(self, roots=()):
        """A context manager: while it is open, modules first imported from under ``roots``
        and the ``include`` packages are rewritten, and (``lazy_torch``) the PyTorch tracer
        starts when the program imports torch. Open it inside ``with trace:``."""
        return self._finder([os.fspath(r) for r in roots])

    def rewrite_cell(self, tree, source: str, path: str):
        """A notebook cell's module AST (parsed from ``source``, compiled as ``path``),
        rewritten as an imported module's code is, so that its NumPy writes are watched (a
        cell is never imported: IPython hands its AST to transformers before compiling)."""
        runtime.install()
        tree, summary = rewrite_tree(tree, source, path, runtime.register_site)
        self.numpy.modules.append(summary)
        return tree

    def _finder(self, roots):
        on_import = {"torch": self._start_torch} if self._lazy and self.torch is None else {}
        return _Installed(hook.RewritingFinder(roots, self.include,
                                               on_module=self.numpy.modules.append,
                                               on_import=on_import), self)

    # ---- results -----------------------------------------------------------------------------
    def findings(self, all: bool = False) -> list:
        """The NumPy findings (most serious first), then the PyTorch tracer's."""
        found = self.numpy.findings(all)
        if self.torch is not None:
            found = found + list(self.torch.findings(all))
        return found

    def __len__(self) -> int:
        """The PyTorch trace's length (its aten calls, as ``info(k)`` indexes them) when
        there is a PyTorch side, else the NumPy operations recorded. (Python looks special
        methods up on the class, so ``len`` does not reach ``__getattr__``.)"""
        return len(self.torch) if self.torch is not None else len(self.numpy)

    def html_model(self, all: bool = False) -> dict:  # noqa: A002
        """The HTML report's page model: NumPy's findings and PyTorch's (see
        :func:`.report.html_model`)."""
        from .report import html_model
        return html_model(self, all)

    def _repr_html_(self) -> str:
        """Jupyter shows the trace as a table of its findings, NumPy's and PyTorch's."""
        from ...reporting.html import trace_html   # Jupyter only: the report layer draws it
        return trace_html(self)

    def uses_arrays(self) -> bool:
        """Did the program use NumPy or PyTorch (operations seen, or imports in its watched
        modules)?"""
        if len(self.numpy) or self.torch is not None:
            return True
        return any(s.imports & {"numpy", "torch"} for s in self.numpy.modules)

    def __setattr__(self, name, value):
        torch = self.__dict__.get("torch")
        if name not in self._OWN and torch is not None and hasattr(torch, name):
            setattr(torch, name, value)   # the PyTorch trace's own attribute
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        torch = self.__dict__.get("torch")
        if torch is None:
            raise AttributeError(f"{name!r}: this trace has no PyTorch side (PyTorch is not "
                                 f"installed, or the program did not import it); the NumPy "
                                 f"trace is .numpy")
        return getattr(torch, name)

    def __repr__(self) -> str:
        return f"JointTrace({self.numpy!r}, {self.torch!r})"


class _Installed:
    """The finder installed for a run. Afterwards the trace learns which packages the
    watched code imported without their code being rewritten (what ``--include`` would add)."""

    def __init__(self, finder, trace):
        self.finder, self.trace = finder, trace

    def __enter__(self):
        self.finder.install()

    def __exit__(self, *exc):
        self.finder.remove()
        stdlib = getattr(sys, "stdlib_module_names", frozenset())
        imported = set().union(*(s.imports for s in self.trace.numpy.modules))
        self.trace.not_rewritten |= {
            m for m in imported - self.finder.owned - stdlib
            if m in sys.modules and m not in ("numpy", "torch", "aliasflow")}
        self.trace.numpy.not_rewritten = self.trace.not_rewritten
        return False


def trace(values: bool = True, pause_gc: bool = True) -> JointTrace:
    """Trace the NumPy and PyTorch program run inside ``with af.trace() as t:``."""
    return JointTrace(values, pause_gc)
