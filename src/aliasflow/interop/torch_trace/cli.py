"""``aliasflow trace script.py [args...]``: run a script under the tracer, report findings."""
from __future__ import annotations

import contextlib
import json
import runpy
import sys
import traceback


def run_script(script, argv, as_json, html, console, errors, all=False,  # noqa: A002
               timings=False) -> int:
    """Run ``script`` with ``argv`` under a trace; print and write the report. Returns the
    exit code: 0 when the script ran, the script's own code (1 for an exception) if not."""
    if not script.is_file():
        errors.print(f"[bold red]error:[/] no such script: {script}", highlight=False)
        return 2
    try:
        from .tracer import trace
    except ImportError as exc:  # torch missing
        errors.print(f"[bold red]error:[/] tracing needs PyTorch: {exc}", highlight=False)
        return 2
    code = 0
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(script)] + argv
    sys.path.insert(0, str(script.resolve().parent))
    t = trace()
    try:
        # with --json the script's own prints go to stderr, so stdout is only the JSON
        quiet = contextlib.redirect_stdout(sys.stderr) if as_json else contextlib.nullcontext()
        with quiet, t:
            runpy.run_path(str(script), run_name="__main__")
    except SystemExit as exc:
        c = exc.code
        code = c if isinstance(c, int) else (0 if c is None else 1)
        if not isinstance(c, int) and c is not None:
            errors.print(str(c), highlight=False)
    except BaseException:  # noqa: BLE001 - the script's own failure, reported like Python does
        traceback.print_exc()
        code = 1
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    if as_json:
        print(json.dumps(t.to_json(all=all, timings=timings), indent=2))
    else:
        from .report import to_text
        console.print(to_text(t, all=all), highlight=False, markup=False)
    if html is not None:
        from .report import write_html
        write_html(t, html, all=all)
        if not as_json:
            console.print(f"report written to {html}", highlight=False)
    return code
