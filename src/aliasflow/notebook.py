"""Jupyter and IPython: ``%load_ext aliasflow``, then a cell starting with ``%%aliasflow``
runs under the tracer ``aliasflow trace`` uses (NumPy, and PyTorch once the cell or the
notebook imported torch) and shows its findings as a table.

``%%aliasflow [-o NAME] [--select NAMES] [--ignore NAMES] [--fail-on SEVERITY]``: ``-o``
keeps the trace in the variable NAME; ``--select``/``--ignore`` choose the findings shown
(kind or severity names, comma-separated); ``--fail-on`` makes the cell raise
:class:`FindingsError` after showing them when one is at or above that severity (so a
notebook run in CI stops there). A trace (``af.trace()``) shows the same table by itself.

A cell is never imported, so the NumPy tracer cannot rewrite it at import as it does a
script: for the duration of the cell, an IPython AST transformer applies the same rewrite
(subscript and augmented assignments, calls that may write) to the cell's own code. Code
the cell calls from modules imported earlier is watched as under ``af.trace()``: calls of
NumPy functions through the ``numpy`` module only.
"""
from __future__ import annotations

import ast
import linecache
import shlex

from .core.errors import AliasflowError
from .reporting.policy import UsageError as UsageErrorOfOurs


class FindingsError(AliasflowError):
    """A ``%%aliasflow --fail-on`` cell had findings at or above the threshold."""


class TraceView:
    """What ``%%aliasflow`` returns: the report, as HTML in Jupyter and as text elsewhere."""

    def __init__(self, report, trace):
        self.report = report
        self.trace = trace

    def _repr_html_(self) -> str:
        from .reporting.html import items_table
        return items_table(self.report.reported,
                           f"aliasflow: {traced_what(self.trace)}; {self.report.summary()}")

    def __repr__(self) -> str:
        return "\n".join(self.report.text_lines() + [self.report.summary()])


def traced_what(trace) -> str:
    """``"12 NumPy operations, 3 aten calls traced"`` (a side with nothing: left out)."""
    numpy = getattr(trace, "numpy", None)
    torch = getattr(trace, "torch", None) if numpy is not None else trace
    parts = []
    if numpy is not None and (len(numpy) or torch is None):
        parts.append(f"{len(numpy)} NumPy operations")
    if torch is not None:
        parts.append(f"{len(getattr(torch, 'raw', ()))} aten calls")
    return ", ".join(parts) + " traced"


class _CellRewriter(ast.NodeTransformer):
    """An IPython AST transformer that rewrites the one cell it was made for (the first
    module it sees: cells the cell itself runs come later and are left alone)."""

    def __init__(self, shell, cell: str, trace):
        self.shell, self.cell, self.trace = shell, cell, trace
        self.done = False

    def visit(self, node):
        if self.done or not isinstance(node, ast.Module):
            return node
        self.done = True
        source, path = self._source()
        return self.trace.rewrite_cell(node, source, path)

    def _source(self):
        """The text IPython parsed (the cell after its input transformations: a magic line
        is a call) and the file name it compiles the cell under (what tracebacks and our
        lines show), as ``run_cell`` computes them."""
        transformed = self.shell.transform_cell(self.cell)
        try:
            path = self.shell.compile.get_code_name(self.cell, transformed,
                                                    self.shell.execution_count)
        except Exception:  # noqa: BLE001 - another compiler: lines still right, name not
            return transformed, "<cell>"
        cached = linecache.cache.get(path)
        if cached and "".join(cached[2]) != transformed:
            transformed = "".join(cached[2])
        return transformed, path


def _forget_temporaries(namespace) -> None:
    """Names the rewrite binds at module level (``@aliasflow_t0``, not identifiers) that a
    store raising midway left behind: the namespace is the untraced cell's."""
    for name in [k for k in namespace if isinstance(k, str) and k.startswith("@aliasflow")]:
        del namespace[name]


def _options(line: str):
    import argparse
    parser = argparse.ArgumentParser(prog="%%aliasflow", add_help=False, exit_on_error=False)
    parser.add_argument("-o", dest="output", default=None)
    parser.add_argument("--select", action="append", default=[])
    parser.add_argument("--ignore", action="append", default=[])
    parser.add_argument("--fail-on", dest="fail_on", default=None)
    try:
        args, rest = parser.parse_known_args(shlex.split(line))
    except (argparse.ArgumentError, ValueError) as exc:
        raise AliasflowError(f"%%aliasflow: {exc}") from None
    if rest:
        raise AliasflowError(f"%%aliasflow: unknown arguments {' '.join(rest)!r} (known: "
                             f"-o NAME, --select, --ignore, --fail-on)")
    return args


def aliasflow_cell(shell, line: str, cell: str, args=None):
    """Run ``cell`` in ``shell`` under the NumPy and PyTorch tracers, the cell's own code
    rewritten for the NumPy tracer meanwhile; return a :class:`TraceView`."""
    from .interop.tracers import numpy_tracer
    from .reporting import Policy
    from .reporting.policy import NEVER, parse_fail_on, parse_names
    from .reporting.traces import trace_report
    args = args or _options(line)
    policy = Policy(select=parse_names(args.select, "--select") if args.select else None,
                    ignore=parse_names(args.ignore, "--ignore"),
                    fail_on=parse_fail_on(args.fail_on) if args.fail_on else NEVER)
    t = numpy_tracer()(lazy_torch=True)
    rewriter = _CellRewriter(shell, cell, t)
    outer = getattr(shell.displayhook, "exec_result", None)   # the %%aliasflow cell's
    with t, t.watching():
        shell.ast_transformers.append(rewriter)
        try:
            result = shell.run_cell(cell)
        finally:
            if rewriter in shell.ast_transformers:   # IPython drops one that raised
                shell.ast_transformers.remove(rewriter)
            _forget_temporaries(shell.user_ns)
            if outer is not None:
                shell.displayhook.exec_result = outer
    error = result.error_before_exec or result.error_in_exec
    if error is not None and outer is not None and outer.error_in_exec is None:
        # the cell failed (its traceback is shown already): so does the %%aliasflow cell,
        # as the cell without the magic would (a kernel replies "error", a notebook run
        # stops there)
        outer.error_in_exec = error
    if args.output:
        shell.user_ns[args.output] = t
    report = trace_report(t, policy, command="%%aliasflow")
    view = TraceView(report, t)
    if report.failing and result.success:
        from IPython.display import display
        display(view)
        raise FindingsError(f"{len(report.failing)} finding(s) at or above --fail-on "
                            f"{policy.fail_on}")
    return view


def load_ipython_extension(ipython) -> None:
    """``%load_ext aliasflow``: registers the ``%%aliasflow`` cell magic."""
    from IPython.core.error import UsageError

    from .interop.tracers import TracerUnavailable

    def magic(line, cell):
        try:
            args = _options(line)   # bad options: IPython's one-line usage error
        except AliasflowError as exc:
            raise UsageError(str(exc)) from None
        try:
            return aliasflow_cell(ipython, line, cell, args)
        except (TracerUnavailable, UsageErrorOfOurs) as exc:
            raise UsageError(f"%%aliasflow: {exc}") from None
    magic.__doc__ = __doc__
    ipython.register_magic_function(magic, magic_kind="cell", magic_name="aliasflow")
