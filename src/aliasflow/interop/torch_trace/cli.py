"""``aliasflow trace script.py [args...]``: run a script under the tracers, report findings.

The script runs under the NumPy tracer (its code rewritten at import, see
``interop/numpy_trace``) and, once it imports torch, the PyTorch tracer; the report has both.
"""
from __future__ import annotations

import contextlib
import json
import sys


def run_script(script, argv, as_json, html, console, errors, include=()) -> int:
    """Run ``script`` with ``argv`` under the tracers; print and write the report. Returns the
    exit code: 0 when the script ran, the script's own code (1 for an exception) if not."""
    if not script.is_file():
        errors.print(f"[bold red]error:[/] no such script: {script}", highlight=False)
        return 2
    from ..numpy_trace.cli import run_traced, uses_arrays
    # with --json the script's own prints go to stderr, so stdout is only the JSON
    quiet = contextlib.redirect_stdout(sys.stderr) if as_json else contextlib.nullcontext()
    with quiet:
        code, np_trace, t = run_traced(script=str(script), argv=argv, include=include)
    if as_json:
        data = t.to_json() if t is not None else {"aten_calls": 0, "findings": []}
        numpy_part = np_trace.to_json()
        data["findings"] = numpy_part.pop("findings") + data["findings"]
        data["numpy"] = numpy_part
        print(json.dumps(data, indent=2))
    elif not uses_arrays(np_trace, t):
        console.print(f"aliasflow: {script} used neither NumPy nor PyTorch: nothing to trace",
                      highlight=False, markup=False, soft_wrap=True)
    else:
        from ..numpy_trace.report import to_text as numpy_text
        if t is not None:
            from .report import to_text
            console.print(to_text(t), highlight=False, markup=False)
        console.print(numpy_text(np_trace), highlight=False, markup=False, soft_wrap=True)
    if html is not None:
        if t is None:
            errors.print("--html: the page shows PyTorch traces; this program imported no "
                         "torch", highlight=False)
            return code
        from ...viz.report import write_html
        write_html(t, html)
        if not as_json:
            console.print(f"report written to {html}", highlight=False)
    return code
