"""Run a user's script or module the way ``python script.py`` / ``python -m module`` would,
inside a tracer: same ``sys.argv``, ``sys.path[0]``, ``__main__``, exit status and
traceback (the frames of this runner left out). The tracer is any context manager; this
module imports none (so no framework) itself."""
from __future__ import annotations

import contextlib
import importlib.util
import os
import runpy
import sys
import traceback
from pathlib import Path

from ..core.errors import AliasflowError


class TargetError(AliasflowError):
    """The script or module to run does not exist."""


def check_target(target: str, module: bool) -> None:
    """Refuse a missing script (or a directory), or a module that cannot be found, before
    anything runs."""
    if module:
        saved = list(sys.path)
        sys.path.insert(0, os.getcwd())
        try:
            spec = importlib.util.find_spec(target)
        except (ImportError, ValueError) as exc:
            raise TargetError(f"no module named {target!r}: {exc}") from None
        finally:
            sys.path[:] = saved
        if spec is None:
            raise TargetError(f"no module named {target!r}")
        return
    path = Path(target)
    if not path.exists():
        raise TargetError(f"no such script: {target}")
    if not path.is_file():
        raise TargetError(f"not a file: {target}")


def exit_status(code) -> int:
    """The process exit status Python gives ``SystemExit(code)`` (a message: 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF   # what the operating system keeps of it (-1: 255)
    print(code, file=sys.stderr)
    return 1


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _print_exception(exc: BaseException) -> None:
    """Print the traceback as Python would for the script: from its first frame on (the
    runner's, runpy's and a tracer's own run_path/run_module frames left out)."""
    tb = exc.__traceback__
    ours = {__file__, runpy.__file__, "<frozen runpy>"}
    while tb is not None and (tb.tb_frame.f_code.co_filename in ours or
                              tb.tb_frame.f_code.co_filename.startswith(_PACKAGE)):
        tb = tb.tb_next
    traceback.print_exception(type(exc), exc, tb)


def run_target(target: str, argv: list, tracer, module: bool = False,
               stdout_to_stderr: bool = False) -> int:
    """Run ``target`` (a script path, or a module name when ``module``) with ``argv``
    inside ``tracer`` (entered and left here; a tracer that must see the program's own code,
    as one rewriting it at import does, may bring ``run_path``/``run_module`` with runpy's
    signatures, used instead of runpy's); returns the exit status the program would
    have had: 0, its ``SystemExit`` code, 1 after an uncaught exception (its traceback on
    stderr), 130 after Ctrl-C. ``stdout_to_stderr`` sends the program's prints to stderr
    (when stdout carries a machine-readable report)."""
    saved_argv, saved_path = sys.argv, list(sys.path)
    if module:
        sys.argv = [target] + list(argv)   # run_module puts the module's file in argv[0]
        sys.path.insert(0, os.getcwd())
    else:
        sys.argv = [target] + list(argv)
        sys.path.insert(0, str(Path(target).resolve().parent))
    quiet = contextlib.redirect_stdout(sys.stderr) if stdout_to_stderr \
        else contextlib.nullcontext()
    status = 0
    try:
        with quiet:
            try:
                with tracer:
                    if module:
                        run = getattr(tracer, "run_module", None) or runpy.run_module
                        run(target, run_name="__main__", alter_sys=True)
                    else:
                        run = getattr(tracer, "run_path", None) or runpy.run_path
                        run(target, run_name="__main__")
            except SystemExit as exc:
                status = exit_status(exc.code)
            except KeyboardInterrupt as exc:
                _print_exception(exc)
                status = 130
            except BaseException as exc:  # noqa: BLE001 - the program's own failure
                _print_exception(exc)
                status = 1
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        sys.stdout.flush()
        sys.stderr.flush()
    return status
