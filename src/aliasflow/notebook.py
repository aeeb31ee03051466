"""Jupyter and IPython: ``%load_ext aliasflow``, then a cell starting with ``%%aliasflow``
runs under the PyTorch tracer and shows its findings as a table.

``%%aliasflow [-o NAME] [--select NAMES] [--ignore NAMES] [--fail-on SEVERITY]``: ``-o``
keeps the trace in the variable NAME; ``--select``/``--ignore`` choose the findings shown
(kind or severity names, comma-separated); ``--fail-on`` makes the cell raise
:class:`FindingsError` after showing them when one is at or above that severity (so a
notebook run in CI stops there). A trace (``af.trace()``) shows the same table by itself.
"""
from __future__ import annotations

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
        calls = len(getattr(self.trace, "raw", ()))
        return items_table(self.report.reported,
                           f"aliasflow: {calls} calls traced; {self.report.summary()}")

    def __repr__(self) -> str:
        return "\n".join(self.report.text_lines() + [self.report.summary()])


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
    """Run ``cell`` in ``shell`` under the PyTorch tracer; return a :class:`TraceView`."""
    from .interop.tracers import torch_tracer
    from .reporting import Policy
    from .reporting.policy import NEVER, parse_fail_on, parse_names
    from .reporting.traces import trace_report
    args = args or _options(line)
    policy = Policy(select=parse_names(args.select, "--select") if args.select else None,
                    ignore=parse_names(args.ignore, "--ignore"),
                    fail_on=parse_fail_on(args.fail_on) if args.fail_on else NEVER)
    t = torch_tracer()()
    with t:
        result = shell.run_cell(cell)
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
