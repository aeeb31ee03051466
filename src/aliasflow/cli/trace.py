"""``aliasflow trace [-m] TARGET [ARGS...]``: run a program under the NumPy tracer (its own
code rewritten at import) and, once it imports torch, the PyTorch tracer, and report the
findings of both."""
from __future__ import annotations

import textwrap
import time
from pathlib import Path
from typing import Optional

import typer

from ..core.errors import AliasflowError
from ..interop.script import check_target, run_target
from ..interop.tracers import numpy_tracer
from ..reporting import Report
from ..reporting.traces import trace_report
from .app import (EXIT_CLEAN, FORMAT, IGNORE, JSON, SELECT, TIMINGS, VERBOSE,
                  Format, app, cli_errors, emit, error_line, fail_on_option, settings)

@app.command("trace", short_help="Run a Python program under the NumPy and PyTorch tracers.",
             context_settings={"allow_interspersed_args": False,
                                        "ignore_unknown_options": True})
def trace_cmd(target: str = typer.Argument(..., metavar="SCRIPT",
                                           help="Python script to run (a module with -m)."),
              args: Optional[list[str]] = typer.Argument(None, metavar="ARGS",
                                                         help="The program's own arguments."),
              module: bool = typer.Option(False, "-m", help="SCRIPT is a module, run as "
                                                            "python -m runs it."),
              fmt: Optional[Format] = FORMAT, as_json: bool = JSON,
              html: Optional[Path] = typer.Option(None, "--html",
                                                  help="Write a self-contained HTML report."),
              select: Optional[list[str]] = SELECT, ignore: Optional[list[str]] = IGNORE,
              fail_on: Optional[str] = fail_on_option("hazard"),
              reuse: bool = typer.Option(False, "--reuse",
                                         help="Also list conflicts across memory reuse."),
              all_: bool = typer.Option(False, "--all",
                                        help="Also list order facts: implicit flows between "
                                             "ops through different views."),
              include: Optional[list[str]] = typer.Option(
                  None, "--include", metavar="PACKAGE",
                  help="Also rewrite and watch this installed package's NumPy code "
                       "(repeatable)."),
              timings: bool = TIMINGS, verbose: bool = VERBOSE) -> None:
    """Run SCRIPT under the NumPy tracer (and the PyTorch tracer once it imports torch), as
    python does, and report the findings, most serious first. Options go before SCRIPT;
    what follows it is the program's argv. Exit code: the program's when it fails, else 1
    for findings at or above --fail-on, else 0."""
    with cli_errors():
        fmt_name, policy = settings(fmt, as_json, select, ignore, fail_on)
        check_target(target, module)
        if html is not None:
            # where the user meant: the program may change directory while it runs
            html = html.absolute()
            if not html.parent.is_dir():
                raise AliasflowError(f"--html {html}: directory {html.parent} does not exist")
        t = numpy_tracer()(lazy_torch=True, include=tuple(include or ()))
        start = time.perf_counter()
        status = run_target(target, list(args or []), t, module=module,
                            stdout_to_stderr=fmt_name != "text")
        ran = time.perf_counter() - start
        report = trace_report(t, policy, reuse, status=status, all=all_)
        from ..interop.numpy_trace.report import to_json as numpy_json
        report.data["numpy"] = numpy_json(t.numpy)
        if timings:
            report.timings = {"run": ran, "findings": time.perf_counter() - start - ran}
        text = None
        if fmt_name == "text":
            text = lambda console: _text(console, t, report, reuse)  # noqa: E731
        code = emit(report, fmt_name, text)
        if html is not None:
            from ..viz.report import write_html
            write_html(t, html, all=all_)     # NumPy's findings and PyTorch's on one page
            if fmt_name == "text":
                error_line(f"report written to {html}", "note")
        raise typer.Exit(status if status != EXIT_CLEAN else code)


def _text(console, t, report: Report, reuse: bool) -> None:
    data = report.data
    if not t.uses_arrays():
        console.print("aliasflow: the program used neither NumPy nor PyTorch: nothing to "
                      "trace", soft_wrap=True)
        return
    from ..interop.numpy_trace.report import watch_lines
    if t.torch is not None:
        console.print(f"{data['aten_calls']} aten calls, {data['storages']} storages",
                      soft_wrap=True)
    rec = t.numpy.recorder
    if t.torch is None or rec.count() or rec.errors or rec.untracked_ops:
        # a PyTorch program that made no NumPy operation hears nothing of the NumPy tracer
        for line in watch_lines(t.numpy):
            if console.is_terminal and len(line) > console.width:  # prose: wrapped, indented
                line = textwrap.fill(line, width=max(console.width, 40), subsequent_indent="  ",
                                     break_on_hyphens=False)
            console.print(line, soft_wrap=True)
    for line in report.text_lines(console.width if console.is_terminal else None):
        console.print(line, soft_wrap=True)
    for op in data["failed"]:
        console.print(f"failed: {op['op']} at {op['line']}: {op['error']}", soft_wrap=True)
    for op in data["untracked"]:
        console.print(f"not recorded (its tensors are not plain strided memory): "
                      f"{op['op']} at {op['line']}: {op['why']}", soft_wrap=True)
    if reuse:
        for f in t.reuse():
            console.print(f"memory reuse: {f.describe()} at {' -> '.join(f.lines)}",
                          soft_wrap=True)
    console.print(report.summary(), soft_wrap=True)
