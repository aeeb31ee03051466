"""The ``aliasflow`` command group: one-line errors, exit codes, terminals and the options
every reporting command shares.

Exit codes (the table in docs/cli.md): 0 clean; 1 findings at or above ``--fail-on``;
2 usage or input errors (and a bug of ours); for ``trace``, the program's own non-zero exit
status when it failed; 130 interrupted.
"""
from __future__ import annotations

import sys
import traceback
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.text import Text
from typer.core import TyperGroup

from .._version import __version__
from ..core.errors import AliasflowError, ExecutionError
from ..reporting import Policy, Report, UsageError
from ..reporting.config import load_config
from ..reporting.policy import parse_fail_on, parse_names
from ..reporting.report import dumps

try:  # typer >= 0.20 carries its own copy of click
    from typer._click import exceptions as click_exceptions
except ImportError:  # pragma: no cover - older typer
    from click import exceptions as click_exceptions

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130
_state = {"verbose": False}


def stdout() -> Console:
    """The console for reports: the real terminal's width, or ``COLUMNS``, or 80 (pipes);
    no markup, emoji codes or highlighting is ever read from what it prints."""
    return Console(markup=False, emoji=False, highlight=False)


def stderr() -> Console:
    return Console(stderr=True, markup=False, emoji=False, highlight=False)


def error_line(message: str, label: str = "error") -> None:
    """``error: message`` as one line on stderr (the message's own line breaks kept, each
    following line indented, for a file with several problems)."""
    text = Text(f"{label}:", style="bold red")
    text.append(" " + _printable(message).replace("\n", "\n  "))
    stderr().print(text, soft_wrap=True)


def _printable(text: str) -> str:
    """The message, printable whatever it holds (lone surrogates are shown escaped)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _text(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


@contextmanager
def cli_errors():
    """Bad input and failed ops end the command with one line on stderr and exit code 2;
    a bug of ours too (with its traceback under ``--verbose``)."""
    try:
        yield
    except (typer.Exit, typer.Abort, SystemExit, click_exceptions.ClickException):
        raise
    except (ValueError, ExecutionError, OSError, MemoryError) as exc:  # AliasflowError too
        error_line(_text(exc))
        raise typer.Exit(EXIT_ERROR)
    except KeyboardInterrupt:
        error_line("interrupted", "aborted")
        raise typer.Exit(EXIT_INTERRUPTED)
    except Exception as exc:  # a bug of ours: still one line, the traceback on request
        if _state["verbose"]:
            traceback.print_exc()
        error_line(f"{type(exc).__name__}: {_text(exc)} (please report this; --verbose "
                   f"shows where)", "internal error")
        raise typer.Exit(EXIT_ERROR)


class AliasflowGroup(TyperGroup):
    """Typer's group, with usage errors as one line (``error: ...``; the usage and a hint
    under ``--verbose``) and the exit code returned by every path."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True,
             **extra):
        argv = list(sys.argv[1:] if args is None else args)
        before = argv[:argv.index("--")] if "--" in argv else argv
        _state["verbose"] = "--verbose" in before or "-v" in before
        try:
            code = super().main(args=argv, prog_name=prog_name, complete_var=complete_var,
                                standalone_mode=False, **extra)
        except click_exceptions.NoArgsIsHelpError as exc:
            sys.stdout.write(exc.ctx.get_help() + "\n")
            code = EXIT_ERROR
        except click_exceptions.UsageError as exc:
            if _state["verbose"] and exc.ctx is not None:
                sys.stderr.write(exc.ctx.get_usage() + "\n")
            hint = ""
            if exc.ctx is not None and not _state["verbose"]:
                hint = f" (see '{exc.ctx.command_path} --help')"
            error_line(exc.format_message() + hint)
            code = EXIT_ERROR
        except click_exceptions.ClickException as exc:
            error_line(exc.format_message())
            code = exc.exit_code
        except (typer.Abort, KeyboardInterrupt):
            error_line("interrupted", "aborted")
            code = EXIT_INTERRUPTED
        except Exception as exc:  # noqa: BLE001 - never a traceback unless asked for
            if _state["verbose"]:
                traceback.print_exc()
            error_line(f"{type(exc).__name__}: {_text(exc)} (please report this)",
                       "internal error")
            code = EXIT_ERROR
        code = 0 if code is None else code
        if standalone_mode:
            sys.exit(code)
        return code


def compiled_core() -> str:
    """Which compiled modules are in use: ``"built"`` (all three), ``"not built"`` (none:
    pure Python, slower), ``"off (AF_PURE)"`` or the list of the missing ones."""
    from ..solver.native import load, pure_requested
    if pure_requested():
        return "off (AF_PURE)"
    names = ["aliasflow.solver._native", "aliasflow.analysis._walker",
             "aliasflow.execution._ready"]
    missing = [n for n in names if load(n) is None]
    if not missing:
        return "built"
    if len(missing) == len(names):
        return "not built: pure Python, slower (see benchmarks/RESULTS.md)"
    return "partly built, missing " + ", ".join(missing)


def _show_version(value: bool) -> None:
    if value:
        sys.stdout.write(f"aliasflow {__version__} (compiled core: {compiled_core()})\n")
        raise typer.Exit()


app = typer.Typer(cls=AliasflowGroup, no_args_is_help=True, rich_markup_mode=None,
                  pretty_exceptions_enable=False, add_completion=True,
                  context_settings={"help_option_names": ["-h", "--help"]},
                  help="Find the hidden data flow between operations on aliasing tensor "
                       "views. Exit codes: 0 clean, 1 findings at or above --fail-on, "
                       "2 usage or input error; trace: the program's own status when it "
                       "fails.")


@app.callback()
def _root(version: bool = typer.Option(False, "--version", is_eager=True,
                                       callback=_show_version, help="Print the version."),
          verbose: bool = typer.Option(False, "--verbose", "-v",
                                       help="Details with errors (usage, tracebacks).")
          ) -> None:
    """Find the hidden data flow between operations on aliasing tensor views."""


# ---- options shared by the reporting commands ------------------------------------------

class Format(str, Enum):
    text = "text"
    json = "json"
    sarif = "sarif"
    github = "github"


FORMAT = typer.Option(None, "--format", case_sensitive=False,
                      help="Output: text (default), json, sarif (SARIF 2.1.0) or github "
                           "(workflow annotations).")
JSON = typer.Option(False, "--json", help="Same as --format json.")
SELECT = typer.Option(None, "--select", metavar="NAMES",
                      help="Report only these kinds or severities (comma-separated or "
                           "repeated).")
IGNORE = typer.Option(None, "--ignore", metavar="NAMES",
                      help="Never report these kinds or severities.")
TIMINGS = typer.Option(False, "--timings", help="Add timings to the JSON (then two runs "
                                                "differ).")
VERBOSE = typer.Option(False, "--verbose", "-v", help="Details with errors.")
FAIL_ON_HELP = ("Exit 1 when a finding of this severity or a more serious one is reported: "
                "wrong, race, hazard, stale-view, order, or none (default: {}).")


def fail_on_option(default: str):
    return typer.Option(None, "--fail-on", metavar="SEVERITY",
                        help=FAIL_ON_HELP.format(default))


def settings(fmt: Optional[Format], as_json: bool, select=None, ignore=None,
             fail_on: Optional[str] = None, default_fail_on: str = "hazard"
             ) -> tuple[str, Policy]:
    """The output format and the policy: options given here, else ``[tool.aliasflow]``,
    else the defaults. A bad option or setting raises :class:`UsageError`."""
    config = load_config()
    if as_json and fmt is not None and fmt != Format.json:
        raise UsageError(f"--json and --format {fmt.value} disagree; give one")
    chosen = "json" if as_json else (fmt.value if fmt is not None else
                                     (config.format or "text"))
    policy = Policy(
        select=parse_names(select, "--select") if select else config.select,
        ignore=(parse_names(ignore, "--ignore") if ignore else config.ignore) or frozenset(),
        fail_on=parse_fail_on(fail_on) if fail_on is not None else
        (config.fail_on or default_fail_on))
    return chosen, policy


def emit(report: Report, fmt: str, text=None) -> int:
    """Print ``report`` in ``fmt`` (``text``: call ``text(console)``, default: one line per
    finding and a summary) and return the exit code its findings give."""
    if fmt == "json":
        sys.stdout.write(report.json_text())
    elif fmt == "sarif":
        from ..reporting.sarif import to_sarif
        sys.stdout.write(dumps(to_sarif(report)))
    elif fmt == "github":
        for line in report.github_lines():
            sys.stdout.write(line + "\n")
    else:
        console = stdout()
        if text is not None:
            text(console)
        else:
            for line in report.text_lines(console.width if console.is_terminal else None):
                console.print(line, soft_wrap=True)
            console.print(report.summary(), soft_wrap=True)
    sys.stdout.flush()
    return EXIT_FINDINGS if report.failing else EXIT_CLEAN

