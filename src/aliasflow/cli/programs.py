"""Commands on program files: demo, analyze, run, plan, flow, races, show, mge."""
from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Optional

import numpy as np
import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from .. import render, solver
from ..analysis.dependencies import analyze, analyze_dependencies
from ..analysis.flow import value_flow
from ..analysis.races import find_races
from ..analysis.schedule import DependencyGraph
from ..core.errors import AliasflowError, ExecutionError
from ..core.program import Program
from ..execution.runner import run as run_ops
from ..reporting import Report
from ..reporting.programs import dependency_item, op_lines
from ..seeds import ERRATUM, complex_example, simple_example
from .app import (FORMAT, IGNORE, JSON, SELECT, TIMINGS, VERBOSE, Format, app, cli_errors,
                  emit, fail_on_option, settings, stderr, stdout)

PROGRESS_MIN_OPS = 2000  # below this, work is instant and a bar is noise
MAX_TABLE_ROWS = 200  # longer tables are cut (a terminal is no place for 100,000 rows)
FILE = typer.Argument(..., metavar="FILE", help="Program file (JSON).", show_default=False)
MAX_WORK = typer.Option(None, "--max-work", min=1,
                        help="Bound the exact overlap solver's work per question (isl "
                             "operations, e.g. 100000); undecided pairs count as "
                             "overlapping and are reported.")


@contextmanager
def _budget(max_work: Optional[int]):
    """Run the block under a work budget, then say on stderr what it left undecided."""
    if max_work is None:
        yield
        return
    with solver.work_budget(max_work, warn=False) as budget:
        yield
    if budget.undecided:
        stderr().print(f"warning: {len(budget.undecided)} overlap question(s) not decided "
                       f"within --max-work {max_work}; treated as overlapping (extra edges, "
                       f"none missing)", soft_wrap=True)


def _load(path: Path) -> Program:
    from ..io import load_program
    return load_program(path)


@contextmanager
def _progress(label: str, total: int, minimum: int = 0, always: bool = False):
    """A progress bar on stderr for long work (many ops, or ``always``), else nothing."""
    if total < (minimum or PROGRESS_MIN_OPS) and not always:
        yield None
        return
    with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=stderr(), transient=True) as bar:
        task = bar.add_task(label, total=total)
        yield lambda n: bar.advance(task, n)


def _summary(graph) -> str:
    kinds = graph.kinds()
    length, path = graph.critical_path()
    shown = " -> ".join(path) if len(path) <= 8 else " -> ".join(path[:4] + ["..."] + path[-3:])
    return (f"{len(graph.ops)} ops, {len(graph.dependencies)} edges "
            f"(RAW {kinds['RAW']}, WAR {kinds['WAR']}, WAW {kinds['WAW']}), "
            f"{len(graph.levels())} levels, critical path {int(length)} ops: {shown}")


def _example_json(title: str, program: Program) -> dict:
    graph = analyze(program.ops, complete=True)
    flows = {op.name: [{"view": f.view, "from": f.writer, "elements": f.elements.tolist()}
                       for f in value_flow(program.ops, op)] for op in program.ops}
    return {"title": title, "footprints": {v.name: v.footprint().tolist()
                                           for v in program.views.values()},
            "conflicts": graph.to_json(elements=True), "value_flow": flows}


def _show_example(console, title: str, program: Program) -> None:
    console.rule(Text(title, style="bold"))
    for name in program.tensors:
        console.print(render.grid(program, name, console.width))
    console.print(render.footprint_table(program))
    graph = analyze(program.ops, complete=True)
    console.print(render.dependency_table(graph, "Conflicts (every conflicting access pair)"))
    console.print(render.levels_text(graph))  # same closure as the ordering edges: same levels
    for op in program.ops:
        flows = value_flow(program.ops, op)
        if flows:
            console.print(render.flow_table(flows, f"Value flow into {op.name}"))


@app.command(short_help="The seed article's two examples, analysed.")
def demo(fmt: Optional[Format] = FORMAT, as_json: bool = JSON, verbose: bool = VERBOSE
         ) -> None:
    """Analyse the seed article's two examples: storage grids, footprints, dependencies."""
    with cli_errors():
        fmt_name, _ = settings(fmt, as_json)
        simple, complex_ = simple_example(), complex_example()
        if fmt_name != "text":
            data = {"examples": [_example_json("Seed simple example", simple),
                                 _example_json("Seed complex example", complex_)],
                    "analyze_dependencies": analyze_dependencies(complex_.ops),
                    "erratum": ERRATUM, "complex_example_run": _run_complex(complex_)}
            raise typer.Exit(emit(Report("demo", [], data=data, findings=False), fmt_name))
        console = stdout()
        _show_example(console, "Seed simple example", simple)
        _show_example(console, "Seed complex example", complex_)
        console.print(Text("Seed-compatible analyze_dependencies: ", style="bold")
                      + Text(str(analyze_dependencies(complex_.ops))))
        console.print(Text("Note on the seed's prose: ", style="bold") + Text(ERRATUM))
        console.print(Text("Executing the complex example", style="bold")
                      + Text(f" stops as it should: {_run_complex(complex_)}"))


def _run_complex(program: Program) -> str:
    try:
        run_ops(program.ops)
        return "ran"
    except ExecutionError as exc:
        return str(exc)


@app.command("analyze", short_help="Dependencies between the ops of a program file.")
def analyze_cmd(
    file: Path = FILE,
    fmt: Optional[Format] = FORMAT, as_json: bool = JSON,
    dot: Optional[Path] = typer.Option(None, "--dot", help="Write the graph as Graphviz DOT."),
    complete: bool = typer.Option(False, "--complete",
                                  help="Every conflicting pair (quadratic; small programs)."),
    elements: bool = typer.Option(False, "--elements", help="Include shared elements in JSON."),
    select: Optional[list[str]] = SELECT, ignore: Optional[list[str]] = IGNORE,
    fail_on: Optional[str] = fail_on_option("hazard"),
    timings: bool = TIMINGS, max_work: Optional[int] = MAX_WORK, verbose: bool = VERBOSE,
) -> None:
    """Dependencies between the ops of FILE: table, levels and summary. Its findings are
    the implicit dependencies (severity order, kind RAW, WAR or WAW): with --fail-on order,
    any hidden data flow exits 1."""
    with cli_errors():
        fmt_name, policy = settings(fmt, as_json, select, ignore, fail_on)
        program = _load(file)
        start = time.perf_counter()
        with _budget(max_work):
            with _progress("analysing", len(program.ops)) as progress:
                graph = analyze(program.ops, complete=complete, progress=progress)
            seconds = time.perf_counter() - start
            implicit = [d for d in graph.dependencies if d.implicit]
            lines = op_lines(file) if implicit and fmt_name != "text" else {}
            # the text shows the graph, so its findings are not counted (counting is work)
            items = [dependency_item(d, "order", file, lines, counted=fmt_name != "text")
                     for d in implicit]
        if dot is not None:
            dot.write_text(graph.to_dot())
        data = {}
        if fmt_name == "json":
            data = graph.to_json(elements=elements)
            data["shared_memory"] = render.shared_memory(program)
        report = Report("analyze", items, policy, data,
                        {"analysis": seconds} if timings else None)

        def text(console):
            shared = render.shared_memory_table(program)
            if shared is not None:
                console.print(shared)
            if len(graph.dependencies) <= MAX_TABLE_ROWS:
                console.print(render.dependency_table(graph))
                console.print(render.levels_text(graph))
            console.print(f"{_summary(graph)}; analysed in {seconds * 1e3:.1f} ms",
                          soft_wrap=True)
            if report.reported or report.suppressed:
                console.print(report.summary(), soft_wrap=True)
            if dot is not None:
                console.print(f"wrote {dot}")
        raise typer.Exit(emit(report, fmt_name, text))


def _array_json(array: np.ndarray):
    """An array as nested lists; non-finite floats as the strings "nan", "inf", "-inf"
    (JSON has no such numbers), complex numbers as [real, imag]."""
    a = np.asarray(array)
    if a.dtype.kind == "c":
        return _array_json(np.stack([a.real, a.imag], axis=-1))
    if a.dtype.kind == "f" and not np.isfinite(a).all():
        out = a.astype(object)
        out[np.isnan(a)] = "nan"
        out[np.isposinf(a)] = "inf"
        out[np.isneginf(a)] = "-inf"
        finite = np.isfinite(a)
        out[finite] = a[finite].tolist() if a.ndim else float(a)
        return out.tolist()
    return a.tolist()


@app.command("run", short_help="Execute a program file; print its tensors.")
def run_cmd(
    file: Path = FILE,
    workers: int = typer.Option(1, "--workers", "-w", min=1, help="Threads (1: program order)."),
    save: Optional[Path] = typer.Option(None, "--save", help="Save tensors and results (.npz)."),
    max_work: Optional[int] = MAX_WORK,
    backend: Optional[str] = typer.Option(
        None, "--backend", help="dask|ray|local: run as tasks on storage blocks."),
    address: Optional[str] = typer.Option(
        None, "--address", help="Cluster to use (default: start 2 workers on loopback)."),
    block_bytes: Optional[str] = typer.Option(
        None, "--block-bytes", help="Block size for --backend, e.g. 64KiB (default 16MiB)."),
    fmt: Optional[Format] = FORMAT, as_json: bool = JSON, timings: bool = TIMINGS,
    verbose: bool = VERBOSE,
) -> None:
    """Execute FILE and print the final tensors and the results of ops without outputs."""
    with cli_errors():
        fmt_name, _ = settings(fmt, as_json)
        if save is not None:  # before running, so a bad path wastes no work
            _check_save_path(save)
        program = _load(file)
        if backend is not None or block_bytes is not None or address is not None:
            from ..execution.distributed.connect import open_backend
            from ..execution.distributed.plan import parse_bytes
            from ..execution.interpreter import check_all
            size = parse_bytes(block_bytes or "16MiB")  # refused before a cluster starts
            check_all(program.records)  # so is a program that cannot run
            with open_backend(backend or "local", address) as engine:
                start = time.perf_counter()
                with _budget(max_work), _progress(f"running on {backend or 'local'}",
                                                  len(program.ops), always=True) as progress:
                    results = run_ops(program.records, backend=engine, block_bytes=size,
                                      progress=progress)
                seconds = time.perf_counter() - start
        else:
            start = time.perf_counter()
            with _budget(max_work), _progress("running", len(program.ops)) as progress:
                results = run_ops(program.records, workers=workers, progress=progress)
            seconds = time.perf_counter() - start
        arrays = {f"tensor:{name}": t.data for name, t in program.tensors.items()}
        arrays.update({f"result:{value.op}" if value.index == 0 else
                       f"result:{value.op}#{value.index}": np.asarray(array)
                       for value, array in results.items()})
        if save is not None:
            target = save if save.suffix == ".npz" else save.with_name(save.name + ".npz")
            with open(target, "wb") as f:  # np.savez adds ".npz" to names without it
                np.savez(f, **arrays)
        how = f"on {backend or 'local'} in blocks" if backend or block_bytes or address \
            else f"with {workers} worker(s)"
        if fmt_name != "text":
            data = {"ops": len(program.ops),
                    "arrays": {name: {"shape": list(a.shape), "dtype": str(a.dtype),
                                      "data": _array_json(a)} for name, a in arrays.items()}}
            raise typer.Exit(emit(Report("run", [], data=data, findings=False,
                                         timings={"run": seconds} if timings else None),
                                  fmt_name))
        console = stdout()
        for name, array in arrays.items():
            console.print(render.array_text(name, array))
        console.print(f"ran {len(program.ops)} ops {how} in {seconds * 1e3:.1f} ms")
        if save is not None:
            console.print(f"wrote {target}")


def _check_save_path(save: Path) -> None:
    target = save if save.suffix == ".npz" else save.with_name(save.name + ".npz")
    for path in {save, target}:
        if path.is_dir():
            raise AliasflowError(f"--save {save}: {path} is a directory; give a file name "
                                 f"such as {path / 'out.npz'}")
    parent = target.parent
    if not parent.is_dir():
        raise AliasflowError(f"--save {save}: directory {parent} does not exist")


@app.command("plan", short_help="A program as tasks on storage blocks.")
def plan_cmd(file: Path = FILE,
             block_bytes: str = typer.Option("16MiB", "--block-bytes",
                                             help="Block size, e.g. 4096, 64KiB, 16MiB."),
             fmt: Optional[Format] = FORMAT, as_json: bool = JSON, timings: bool = TIMINGS,
             verbose: bool = VERBOSE) -> None:
    """FILE as pure tasks on storage blocks: tasks, blocks, bytes moved, read amplification."""
    from dataclasses import asdict

    from ..execution.distributed.plan import plan as make_plan
    with cli_errors():
        fmt_name, _ = settings(fmt, as_json)
        program = _load(file)
        start = time.perf_counter()
        p = make_plan(program.ops, block_bytes)
        seconds = time.perf_counter() - start
        if fmt_name != "text":
            data = dict(asdict(p.figures), block_bytes=p.block_bytes)
            raise typer.Exit(emit(Report("plan", [], data=data, findings=False,
                                         timings={"plan": seconds} if timings else None),
                                  fmt_name))
        console = stdout()
        for name, value in [("block size", f"{p.block_bytes} B")] + p.figures.rows():
            console.print(f"{name:>32}  {value}")
        console.print(f"planned in {seconds * 1e3:.1f} ms")


@app.command(short_help="Where the data an op reads comes from.")
def flow(file: Path = FILE,
         op: str = typer.Argument(..., metavar="OP", help="Name of the op whose inputs to trace."),
         fmt: Optional[Format] = FORMAT, as_json: bool = JSON, verbose: bool = VERBOSE
         ) -> None:
    """Where the data OP reads comes from: the last writer of each element."""
    with cli_errors():
        fmt_name, _ = settings(fmt, as_json)
        program = _load(file)
        flows = value_flow(program.ops, program.op(op).name)
        if fmt_name != "text":
            data = {"op": op, "flows": [{"view": f.view, "from": f.writer, "count": f.count,
                                         "elements": f.elements.tolist()} for f in flows]}
            raise typer.Exit(emit(Report("flow", [], data=data, findings=False), fmt_name))
        stdout().print(render.flow_table(flows, f"Value flow into {op}"))


def _pairs(items: list[str], sep: str, what: str) -> list[tuple[str, str]]:
    out = []
    for item in items:
        left, found, right = item.partition(sep)
        if not found or not left or not right:
            raise AliasflowError(f"{what} must look like A{sep}B, got {item!r}")
        out.append((left, right))
    return out


@app.command(short_help="Conflicts that stream ordering leaves unordered.")
def races(file: Path = FILE,
          stream: list[str] = typer.Option([], "--stream", "-s", metavar="OP=STREAM",
                                            help="Run OP on STREAM (repeatable)."),
          edge: list[str] = typer.Option([], "--edge", "-e", metavar="A:B",
                                         help="Op A happens before op B (repeatable)."),
          fmt: Optional[Format] = FORMAT, as_json: bool = JSON,
          select: Optional[list[str]] = SELECT, ignore: Optional[list[str]] = IGNORE,
          fail_on: Optional[str] = fail_on_option("race"),
          elements: bool = typer.Option(False, "--elements",
                                        help="Include shared elements in JSON."),
          timings: bool = TIMINGS, max_work: Optional[int] = MAX_WORK,
          verbose: bool = VERBOSE) -> None:
    """Conflicts that an intended ordering leaves unordered. Ops on one stream run in
    program order; ops on no stream are on streams of their own. Each race is a finding
    (severity race): any race exits 1."""
    with cli_errors():
        fmt_name, policy = settings(fmt, as_json, select, ignore, fail_on, "race")
        program = _load(file)
        streams = dict(_pairs(stream, "=", "--stream"))
        edges = _pairs(edge, ":", "--edge")
        start = time.perf_counter()
        # quadratic at worst: a bar from a few hundred ops on
        with _budget(max_work):
            with _progress("checking races", len(program.ops), minimum=200) as progress:
                found = find_races(program.ops, streams=streams, edges=edges,
                                   progress=progress)
            seconds = time.perf_counter() - start
            lines = op_lines(file) if found and fmt_name != "text" else {}
            items = [dependency_item(d, "race", file, lines, elements and fmt_name == "json",
                                     counted=fmt_name != "text") for d in found]
        by_item = {id(i): d for i, d in zip(items, found)}
        report = Report("races", items, policy, {},
                        {"races": seconds} if timings else None)

        def text(console):
            shown = [by_item[id(i)] for i in report.reported]
            if shown:
                cut = shown[:MAX_TABLE_ROWS]
                graph = DependencyGraph([o.name for o in program.ops], cut)
                title = f"{len(shown)} races" + (f" (the first {len(cut)} shown)"
                                                 if len(cut) < len(shown) else "")
                console.print(render.dependency_table(graph, title))
                console.print(report.summary(), soft_wrap=True)
            elif found:
                console.print(f"no races reported ({report.summary()})", soft_wrap=True)
            else:
                console.print("no races: every conflicting pair is ordered")
        raise typer.Exit(emit(report, fmt_name, text))


@app.command(short_help="Storages drawn with every view's elements marked.")
def show(file: Path = FILE, fmt: Optional[Format] = FORMAT, as_json: bool = JSON,
         verbose: bool = VERBOSE) -> None:
    """Draw every storage of FILE with its views' elements marked, and the footprints."""
    with cli_errors():
        fmt_name, _ = settings(fmt, as_json)
        program = _load(file)
        if fmt_name != "text":
            data = {"tensors": [{"name": t.name, "shape": list(t.shape), "dtype": str(t.dtype)}
                                for t in program.tensors.values()],
                    "views": [{"name": v.name, "tensor": v.tensor.name, "offset": v.offset,
                               "shape": list(v.shape), "stride": list(v.stride),
                               "footprint": v.footprint().tolist() if v.size <= 4096 else None,
                               "size": int(v.size)} for v in program.views.values()],
                    "shared_memory": render.shared_memory(program)}
            raise typer.Exit(emit(Report("show", [], data=data, findings=False), fmt_name))
        console = stdout()
        for name in program.tensors:
            console.print(render.grid(program, name, console.width))
        console.print(render.footprint_table(program))
        shared = render.shared_memory_table(program)
        if shared is not None:
            console.print(shared)


@app.command("mge", short_help="Seed 001 (MegEngine) rows and exercises.")
def mge_cmd(verbose: bool = VERBOSE) -> None:
    """Seed 001 (MegEngine): each row of its table run and observed through mge.layers, then
    its four exercises, in MegEngine (copy-on-write) and alias (NumPy/PyTorch) semantics."""
    from rich.table import Table

    from ..frontends.mge import seed

    with cli_errors():
        console = stdout()
        for semantics in ("megengine", "alias"):
            console.rule(Text(f"Seed 001 table, semantics={semantics}", style="bold"))
            table = Table("statement", "version", "Python Tensor", "C++ Tensor", "Storage",
                          "seed's table")
            for row in seed.ROWS:
                seen = seed.observe(row, semantics)
                agrees = "agrees" if seen.kinds() == row.seed else "differs: " + "; ".join(
                    row.seed)
                table.add_row(*map(Text, (row.statement, row.version, seen.python, seen.impl,
                                          seen.storage, agrees)))
            console.print(table)
        for semantics in ("megengine", "alias"):
            console.rule(Text(f"Seed 001 exercises, semantics={semantics}", style="bold"))
            table = Table("exercise", "prints", "seed's answer",
                          "conflicts with the print (af.analyze)")
            for i in range(len(seed.EXERCISES)):
                res = seed.run_exercise(i, semantics)
                edges = ", ".join(f"{src} {kind} {'implicit' if imp else 'explicit'}"
                                  for src, kind, imp in res.edges)
                table.add_row(*map(Text, (res.code, res.printed, str(res.seed_answer), edges)))
            console.print(table)
