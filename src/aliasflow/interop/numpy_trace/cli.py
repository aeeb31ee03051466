"""Running a program under the NumPy tracer (and the PyTorch tracer once it imports torch),
with the program's own output, exceptions and exit code unchanged."""
from __future__ import annotations

import importlib.util
import os
import sys

from .hook import RewritingFinder, run_main
from .trace import Trace


def torch_available() -> bool:
    return importlib.util.find_spec("torch") is not None


def _torch_trace():
    from ..torch_trace.tracer import trace
    return trace()


def run_traced(script=None, module=None, argv=(), include=(), with_torch=True):
    """Run ``script`` (a path) or ``module`` (``-m``) with ``argv`` as ``__main__``.

    Returns ``(exit code, numpy trace, torch trace or None)``. The exit code is the
    program's: 0, its ``SystemExit`` code, 1 after an uncaught exception (printed as Python
    prints it, through ``sys.excepthook``, from the program's first frame). The PyTorch
    tracer starts when the program imports torch (at once if torch is already imported)."""
    np_trace = Trace()
    torch_traces = []

    def start_torch():
        t = _torch_trace()
        t.__enter__()
        torch_traces.append(t)

    on_import = {}
    if with_torch and torch_available():
        if "torch" in sys.modules:
            start_torch()
        else:
            on_import["torch"] = start_torch
    if script is not None:
        roots = [os.path.dirname(os.path.abspath(script))]
    else:
        spec = importlib.util.find_spec(module)
        origin = getattr(spec, "origin", None) if spec is not None else None
        roots = [os.path.dirname(os.path.abspath(origin))] if origin else []
    finder = RewritingFinder(roots, include, on_module=np_trace.modules.append,
                             on_import=on_import).install()
    hook_before = sys.excepthook   # the runner's (typer installs one); the script may set its
    code = 0
    try:
        try:
            with np_trace:
                run_main(script, module, argv, on_main=np_trace.modules.append)
        finally:
            for t in reversed(torch_traces):
                t.__exit__(None, None, None)
            finder.remove()
    except SystemExit as exc:
        code = _exit_code(exc)
    except KeyboardInterrupt as exc:
        _print_uncaught(exc, hook_before)
        code = 130
    except BaseException as exc:  # noqa: BLE001 - the program's own failure, as Python shows it
        _print_uncaught(exc, hook_before)
        code = 1
    stdlib = getattr(sys, "stdlib_module_names", frozenset())
    np_trace.not_rewritten = {m for m in finder.not_owned
                              if m not in stdlib and m not in ("numpy", "torch", "aliasflow")
                              and not m.startswith("_")}
    return code, np_trace, (torch_traces[0] if torch_traces else None)


def _exit_code(exc: SystemExit) -> int:
    c = exc.code
    if c is None:
        return 0
    if isinstance(c, int):
        return c
    print(c, file=sys.stderr)
    return 1


_HERE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _print_uncaught(exc: BaseException, hook_before) -> None:
    """Python's report of an uncaught exception: the traceback from the program's first
    frame (the runner's frames left out), through the program's ``sys.excepthook`` if it
    set one, else Python's own."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename.startswith(_HERE + os.sep):
        tb = tb.tb_next
    exc.__traceback__ = tb
    sys.stdout.flush()
    hook = sys.excepthook if sys.excepthook is not hook_before else sys.__excepthook__
    hook(type(exc), exc, tb)


def uses_arrays(np_trace, torch_trace) -> bool:
    """Did the program use NumPy or PyTorch at all (imports in its watched modules, or
    operations seen)?"""
    if len(np_trace) or torch_trace is not None:
        return True
    return any(summary.imports & {"numpy", "torch"} for summary in np_trace.modules)
