"""The ``aliasflow`` command line: demo, analyze, run, flow, races, show."""
from __future__ import annotations

import json
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Optional

import numpy as np
import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from . import render, solver
from .analysis.dependencies import analyze, analyze_dependencies
from .analysis.flow import value_flow
from .analysis.races import find_races
from .analysis.schedule import DependencyGraph
from .core.errors import AliasflowError, ExecutionError
from .core.program import Program
from .execution.checks import check_all
from .execution.runner import run as run_ops
from .seeds import ERRATUM, complex_example, simple_example

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Find the hidden data flow between operations on aliasing tensor views.")
# Piped output gets room for the tables instead of the 80-column default.
console = Console(width=None if sys.stdout.isatty() else 120)
errors = Console(stderr=True, width=None if sys.stderr.isatty() else 120)
PROGRESS_MIN_OPS = 2000  # below this, work is instant and a bar is noise
MAX_TABLE_ROWS = 200  # longer tables are cut (a terminal is no place for 100,000 rows)


@contextmanager
def _clean_errors():
    """Bad input and failed ops end the command with one line on stderr and exit code 1."""
    try:
        yield
    except (ValueError, ExecutionError, OSError, MemoryError) as exc:  # AliasflowError too
        errors.print(f"[bold red]error:[/] {escape(_text(exc))}".replace("\n", "\n  "),
                     highlight=False, soft_wrap=True)
        raise typer.Exit(1)
    except KeyboardInterrupt:
        errors.print("[bold red]interrupted[/]")
        raise typer.Exit(130)
    except (typer.Exit, typer.Abort, SystemExit):
        raise
    except Exception as exc:  # a bug of ours: still one line, never a traceback
        errors.print(f"[bold red]internal error:[/] {escape(type(exc).__name__)}: "
                     f"{escape(_text(exc))} (please report this)", highlight=False,
                     soft_wrap=True)
        raise typer.Exit(2)


def _text(exc: BaseException) -> str:
    """The message, printable whatever it holds (lone surrogates are shown escaped)."""
    text = str(exc) or type(exc).__name__
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


MAX_WORK_HELP = ("Bound the exact overlap solver's work per question (isl operations, e.g. "
                 "100000); undecided pairs count as overlapping and are reported.")


@contextmanager
def _budget(max_work: Optional[int]):
    """Run the block under a work budget, then say on stderr what it left undecided."""
    if max_work is None:
        yield
        return
    with solver.work_budget(max_work, warn=False) as budget:
        yield
    if budget.undecided:
        errors.print(f"warning: {len(budget.undecided)} overlap question(s) not decided within "
                     f"--max-work {max_work}; treated as overlapping (extra edges, none "
                     f"missing)", markup=False, highlight=False, soft_wrap=True)


def _load(path: Path) -> Program:
    from .io import load_program
    return load_program(path)


@contextmanager
def _progress(label: str, total: int, minimum: int = 0, always: bool = False):
    """A progress bar for long work (many ops, or ``always``), else nothing."""
    if total < (minimum or PROGRESS_MIN_OPS) and not always:
        yield None
        return
    with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=errors, transient=True) as bar:
        task = bar.add_task(label, total=total)
        yield lambda n: bar.advance(task, n)


def _summary(graph, seconds: float) -> str:
    kinds = graph.kinds()
    length, path = graph.critical_path()
    shown = " -> ".join(path) if len(path) <= 8 else " -> ".join(path[:4] + ["..."] + path[-3:])
    return (f"{len(graph.ops)} ops, {len(graph.dependencies)} edges "
            f"(RAW {kinds['RAW']}, WAR {kinds['WAR']}, WAW {kinds['WAW']}), "
            f"{len(graph.levels())} levels, critical path {int(length)} ops: {shown}; "
            f"analysed in {seconds * 1e3:.1f} ms")


def _show_example(title: str, program: Program) -> None:
    console.rule(f"[bold]{title}")
    for name in program.tensors:
        console.print(render.grid(program, name))
    console.print(render.footprint_table(program))
    graph = analyze(program.ops, complete=True)
    console.print(render.dependency_table(graph, "Conflicts (every conflicting access pair)"))
    console.print(render.levels_text(graph))  # same closure as the ordering edges: same levels
    for op in program.ops:
        flows = value_flow(program.ops, op)
        if flows:
            console.print(render.flow_table(flows, f"Value flow into {op.name}"))


@app.command()
def demo() -> None:
    """Analyse the seed article's two examples: storage grids, footprints, dependencies."""
    with _clean_errors():
        _show_example("Seed simple example", simple_example())
        program = complex_example()
        _show_example("Seed complex example", program)
        console.print("[bold]Seed-compatible analyze_dependencies:[/]",
                      analyze_dependencies(program.ops))
        console.print(f"[bold]Note on the seed's prose:[/] {ERRATUM}")
        try:
            run_ops(program.ops)
        except ExecutionError as exc:
            console.print(f"[bold]Executing the complex example[/] stops as it should: {exc}",
                          highlight=False)


@app.command("analyze")
def analyze_cmd(
    file: Path = typer.Argument(..., help="Program file (JSON)."),
    as_json: bool = typer.Option(False, "--json", help="Print the graph as JSON."),
    dot: Optional[Path] = typer.Option(None, "--dot", help="Write the graph as Graphviz DOT."),
    complete: bool = typer.Option(False, "--complete",
                                  help="Every conflicting pair (quadratic; small programs)."),
    elements: bool = typer.Option(False, "--elements", help="Include shared elements in JSON."),
    max_work: Optional[int] = typer.Option(None, "--max-work", min=1, help=MAX_WORK_HELP),
) -> None:
    """Dependencies between the ops of FILE: table, levels and summary."""
    with _clean_errors():
        program = _load(file)
        start = time.perf_counter()
        with _budget(max_work), _progress("analysing", len(program.ops)) as progress:
            graph = analyze(program.ops, complete=complete, progress=progress)
        seconds = time.perf_counter() - start
        if dot is not None:
            dot.write_text(graph.to_dot())
        if as_json:
            out = graph.to_json(elements=elements)
            out["shared_memory"] = render.shared_memory(program)
            out["analysis_seconds"] = seconds
            sys.stdout.write(json.dumps(out, indent=2) + "\n")
            return
        shared = render.shared_memory_table(program)
        if shared is not None:
            console.print(shared)
        if len(graph.dependencies) <= MAX_TABLE_ROWS:
            console.print(render.dependency_table(graph))
            console.print(render.levels_text(graph))
        console.print(_summary(graph, seconds), highlight=False, markup=False)
        if dot is not None:
            console.print(f"wrote {dot}", markup=False)


@app.command("run")
def run_cmd(
    file: Path = typer.Argument(..., help="Program file (JSON)."),
    workers: int = typer.Option(1, "--workers", "-w", min=1, help="Threads (1: program order)."),
    save: Optional[Path] = typer.Option(None, "--save", help="Save tensors and results (.npz)."),
    max_work: Optional[int] = typer.Option(None, "--max-work", min=1, help=MAX_WORK_HELP),
    backend: Optional[str] = typer.Option(
        None, "--backend", help="dask|ray|local: run as tasks on storage blocks."),
    address: Optional[str] = typer.Option(
        None, "--address", help="Cluster to use (default: start 2 workers on loopback)."),
    block_bytes: Optional[str] = typer.Option(
        None, "--block-bytes", help="Block size for --backend, e.g. 64KiB (default 16MiB)."),
) -> None:
    """Execute FILE and print the final tensors and the results of ops without outputs."""
    with _clean_errors():
        if save is not None:  # before running, so a bad path wastes no work
            _check_save_path(save)
        program = _load(file)
        if backend is not None or block_bytes is not None or address is not None:
            from .execution.distributed.connect import open_backend
            from .execution.distributed.engine import run as run_blocks
            from .execution.distributed.plan import parse_bytes
            size = parse_bytes(block_bytes or "16MiB")  # refused before a cluster starts
            check_all(program.ops)  # so is a program that cannot run
            with open_backend(backend or "local", address) as engine:
                start = time.perf_counter()
                with _budget(max_work), _progress(f"running on {backend or 'local'}",
                                                  len(program.ops), always=True) as progress:
                    run_blocks(program.ops, engine, size, progress)
                seconds = time.perf_counter() - start
        else:
            start = time.perf_counter()
            with _budget(max_work), _progress("running", len(program.ops)) as progress:
                run_ops(program.ops, workers=workers, progress=progress)
            seconds = time.perf_counter() - start
        arrays = {f"tensor:{name}": t.data for name, t in program.tensors.items()}
        arrays.update({f"result:{op.name}": np.asarray(op.result) for op in program.ops
                       if op.result is not None})
        for name, array in arrays.items():
            console.print(render.array_text(name, array), highlight=False)
        how = f"on {backend or 'local'} in blocks" if backend or block_bytes or address \
            else f"with {workers} worker(s)"
        console.print(f"ran {len(program.ops)} ops {how} in {seconds * 1e3:.1f} ms",
                      markup=False)
        if save is not None:
            target = save if save.suffix == ".npz" else save.with_name(save.name + ".npz")
            with open(target, "wb") as f:  # np.savez adds ".npz" to names without it
                np.savez(f, **arrays)
            console.print(f"wrote {target}", markup=False)


def _check_save_path(save: Path) -> None:
    target = save if save.suffix == ".npz" else save.with_name(save.name + ".npz")
    for path in {save, target}:
        if path.is_dir():
            raise AliasflowError(f"--save {save}: {path} is a directory; give a file name "
                                 f"such as {path / 'out.npz'}")
    parent = target.parent
    if not parent.is_dir():
        raise AliasflowError(f"--save {save}: directory {parent} does not exist")


@app.command("plan")
def plan_cmd(file: Path = typer.Argument(..., help="Program file (JSON)."),
             block_bytes: str = typer.Option("16MiB", "--block-bytes",
                                             help="Block size, e.g. 4096, 64KiB, 16MiB."),
             as_json: bool = typer.Option(False, "--json", help="Print the figures as JSON.")
             ) -> None:
    """FILE as pure tasks on storage blocks: tasks, blocks, bytes moved, read amplification."""
    from dataclasses import asdict

    from .execution.distributed.plan import plan as make_plan
    with _clean_errors():
        program = _load(file)
        start = time.perf_counter()
        p = make_plan(program.ops, block_bytes)
        seconds = time.perf_counter() - start
        if as_json:
            out = dict(asdict(p.figures), block_bytes=p.block_bytes, plan_seconds=seconds)
            sys.stdout.write(json.dumps(out, indent=2) + "\n")
            return
        for name, value in [("block size", f"{p.block_bytes} B")] + p.figures.rows():
            console.print(f"{name:>32}  {value}", highlight=False)
        console.print(f"planned in {seconds * 1e3:.1f} ms", highlight=False)


@app.command()
def flow(file: Path = typer.Argument(..., help="Program file (JSON)."),
         op: str = typer.Argument(..., help="Name of the op whose inputs to trace.")) -> None:
    """Where the data OP reads comes from: the last writer of each element."""
    with _clean_errors():
        program = _load(file)
        flows = value_flow(program.ops, program.op(op).name)
        console.print(render.flow_table(flows, f"Value flow into {op}"))


def _pairs(items: list[str], sep: str, what: str) -> list[tuple[str, str]]:
    out = []
    for item in items:
        left, found, right = item.partition(sep)
        if not found or not left or not right:
            raise AliasflowError(f"{what} must look like A{sep}B, got {item!r}")
        out.append((left, right))
    return out


@app.command()
def races(file: Path = typer.Argument(..., help="Program file (JSON)."),
          stream: list[str] = typer.Option([], "--stream", "-s",
                                            help="OP=STREAM: run OP on STREAM (repeatable)."),
          edge: list[str] = typer.Option([], "--edge", "-e",
                                         help="A:B: op A happens before op B (repeatable)."),
          max_work: Optional[int] = typer.Option(None, "--max-work", min=1, help=MAX_WORK_HELP),
          ) -> None:
    """Conflicts that an intended ordering leaves unordered (ops on one stream run in program
    order; ops on no stream are on streams of their own)."""
    with _clean_errors():
        program = _load(file)
        streams = dict(_pairs(stream, "=", "--stream"))
        # quadratic at worst: a bar from a few hundred ops on
        with _budget(max_work), \
                _progress("checking races", len(program.ops), minimum=200) as progress:
            found = find_races(program.ops, streams=streams,
                               edges=_pairs(edge, ":", "--edge"), progress=progress)
        if found:
            shown = found[:MAX_TABLE_ROWS]
            graph = DependencyGraph([op.name for op in program.ops], shown)
            title = f"{len(found)} races" + (f" (the first {len(shown)} shown)"
                                             if len(shown) < len(found) else "")
            console.print(render.dependency_table(graph, title))
            raise typer.Exit(1)
        console.print("no races: every conflicting pair is ordered", markup=False)


@app.command()
def show(file: Path = typer.Argument(..., help="Program file (JSON).")) -> None:
    """Draw every storage of FILE with its views' elements marked, and the footprints."""
    with _clean_errors():
        program = _load(file)
        for name in program.tensors:
            console.print(render.grid(program, name))
        console.print(render.footprint_table(program))
        shared = render.shared_memory_table(program)
        if shared is not None:
            console.print(shared)


@app.command("mge")
def mge_cmd() -> None:
    """Seed 001 (MegEngine): each row of its table run and observed through mge.layers, then
    its four exercises, in MegEngine (copy-on-write) and alias (NumPy/PyTorch) semantics."""
    from rich.table import Table

    from .frontends.mge import seed

    with _clean_errors():
        for semantics in ("megengine", "alias"):
            console.rule(f"[bold]Seed 001 table, semantics={semantics}")
            table = Table("statement", "version", "Python Tensor", "C++ Tensor", "Storage",
                          "seed's table")
            for row in seed.ROWS:
                seen = seed.observe(row, semantics)
                agrees = "agrees" if seen.kinds() == row.seed else "differs: " + "; ".join(
                    row.seed)
                table.add_row(row.statement, row.version, seen.python, seen.impl, seen.storage,
                              agrees)
            console.print(table)
        for semantics in ("megengine", "alias"):
            console.rule(f"[bold]Seed 001 exercises, semantics={semantics}")
            table = Table("exercise", "prints", "seed's answer", "conflicts with the print (af.analyze)")
            for i in range(len(seed.EXERCISES)):
                res = seed.run_exercise(i, semantics)
                edges = ", ".join(f"{src} {kind} {'implicit' if imp else 'explicit'}"
                                  for src, kind, imp in res.edges)
                table.add_row(res.code, res.printed, str(res.seed_answer), edges)
            console.print(table)


@app.command("trace", context_settings={"allow_interspersed_args": False,
                                        "ignore_unknown_options": True})
def trace_cmd(script: Path = typer.Argument(..., help="Python script to run under the tracer."),
              args: list[str] = typer.Argument(None, help="The script's own arguments."),
              as_json: bool = typer.Option(False, "--json", help="Print findings as JSON."),
              html: Optional[Path] = typer.Option(None, "--html",
                                                  help="Write a self-contained HTML report."),
              all_: bool = typer.Option(False, "--all",
                                        help="Also list order facts (implicit flows between "
                                             "ops) and memory reuse."),
              timings: bool = typer.Option(False, "--timings",
                                           help="Add timings to the JSON."),
              ) -> None:
    """Run SCRIPT under the PyTorch tracer (as ``python -m cProfile`` does) and print the
    findings grouped by source line, most serious first. Options go before SCRIPT; what
    follows it is the script's argv. Exit code: 0 when the script ran, else the script's."""
    from .interop.torch_trace.cli import run_script
    code = run_script(script, list(args or []), as_json, html, console, errors, all_, timings)
    raise typer.Exit(code)


def main() -> None:  # pragma: no cover - console entry point
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
