"""Rich renderings shared by the CLI: storage grids, footprints, dependency and flow tables."""
from __future__ import annotations

import numpy as np
from rich.console import Group
from rich.table import Table
from rich.text import Text

from .analysis.overlap import check_memory_overlap
from .core.program import Program
from .core.storage import memory_groups
from .solver import TooLargeError, UndecidedError

MARKS = "abcdefghijklmnopqrstuvwxyz"
STYLES = ["bold red", "bold green", "bold blue", "bold magenta", "bold cyan", "bold yellow"]
MAX_GRID = 1024  # storages larger than this are summarised, not drawn


def _cells(*values) -> list[Text]:
    """Table cells as plain Text: names may hold anything, Rich markup included."""
    return [Text(str(v)) for v in values]


def grid(program: Program, tensor_name: str, width: int | None = None) -> Group | Text:
    """The tensor's storage as a grid of element numbers, each marked by the views covering
    it. A grid wider than ``width`` columns of text is folded: its columns are drawn in
    consecutive blocks, each headed by the element columns it holds."""
    tensor = program.tensors[tensor_name]
    views = [v for v in program.views.values() if v.tensor is tensor and v.size]
    n = tensor.get_storage_size()
    if n > MAX_GRID:
        return Text(f"{tensor_name}: {n} elements (too many to draw)")
    cols = tensor.shape[-1] if len(tensor.shape) >= 1 and tensor.shape[-1] else 1
    rows = max(1, -(-n // cols))
    marks = [[] for _ in range(n)]
    for k, v in enumerate(views):
        for e in v.footprint().tolist():
            marks[e].append(k)
    cells = []
    for e in range(n):
        cell = Text(str(e), style="dim" if not marks[e] else "")
        if marks[e]:
            cell.append(" ")
            for k in marks[e]:
                cell.append(MARKS[k % 26], style=STYLES[k % len(STYLES)])
        cells.append(cell)
    legend = ", ".join(f"{MARKS[k % 26]}={v.name}" for k, v in enumerate(views))
    parts = [Text(f"{tensor_name} {tensor.shape} {tensor.dtype} storage, "
                  f"marks: {legend or 'no views'}", style="bold")]
    blocks = _fold(cells, cols, width)
    for first, last in blocks:
        if len(blocks) > 1:
            parts.append(Text(f"columns {first}-{last - 1} of {cols} (folded to fit "
                              f"{width} characters)", style="italic"))
        table = Table(show_header=False, show_lines=True)
        for _ in range(first, last):
            table.add_column(justify="center", min_width=GRID_CELL)
        for r in range(rows):
            row = [cells[e] for e in range(r * cols + first, min(n, r * cols + last))]
            if row:
                table.add_row(*row)
        parts.append(table)
    return Group(*parts)


GRID_CELL = 4  # narrowest grid cell, in characters


def _fold(cells, cols: int, width: int | None) -> list[tuple[int, int]]:
    """Column ranges ``[first, last)`` whose tables fit in ``width`` characters (a cell is
    its widest text plus a space each side and a border; one column per block at least)."""
    if width is None:
        return [(0, cols)]
    need = [GRID_CELL] * cols
    for e, cell in enumerate(cells):
        c = e % cols
        need[c] = max(need[c], cell.cell_len)
    blocks, first, used = [], 0, 1
    for c in range(cols):
        w = need[c] + 3
        if c > first and used + w > width:
            blocks.append((first, c))
            first, used = c, 1
        used += w
    blocks.append((first, cols))
    return blocks


def footprint_table(program: Program) -> Table:
    table = Table(title=Text("Views and footprints"), title_justify="left")
    for col in ("view", "tensor", "offset", "shape", "stride", "footprint"):
        table.add_column(col)
    for v in program.views.values():
        fp = v.footprint() if v.size <= 64 else None
        shown = " ".join(map(str, fp.tolist())) if fp is not None else f"{v.size} indices"
        table.add_row(*_cells(v.name, v.tensor.name, v.offset, v.shape, v.stride, shown))
    return table


def dependency_table(graph, title: str = "Dependencies", elements: bool = True,
                     max_elements: int = 16) -> Table:
    table = Table(title=Text(title), title_justify="left")
    for col in ("from", "to", "kind", "how"):
        table.add_column(col, no_wrap=True)
    table.add_column("through")
    if elements:
        table.add_column("elements", min_width=len("elements"))
    for d in graph.dependencies:
        row = [d.src, d.dst, d.kind, "implicit" if d.implicit else "explicit",
               f"{d.src_view} / {d.dst_view}" if d.implicit else d.src_view]
        if elements:
            try:
                n = d.count
                shown = d.overlap.elements(limit=max_elements).tolist() \
                    if n <= max_elements else None
                row.append(" ".join(map(str, shown)) if shown is not None else f"{n} elements")
            except (TooLargeError, UndecidedError):  # too many to count, or undecided
                row.append("(too many to count)")
        table.add_row(*_cells(*row))
    if not graph.dependencies:
        table.add_row("-", "-", "-", "-", "-", *(["-"] if elements else []))
    return table


def levels_text(graph) -> Text:
    text = Text("Parallel levels: ", style="bold")
    text.append("  ".join(f"[{', '.join(level)}]" for level in graph.levels()))
    return text


def flow_table(flows, title: str, max_elements: int = 16) -> Table:
    table = Table(title=Text(title), title_justify="left")
    for col in ("reads", "from", "count", "elements"):
        table.add_column(col)
    for f in flows:
        shown = (" ".join(map(str, f.elements.tolist())) if f.count <= max_elements
                 else f"{f.count} elements")
        table.add_row(*_cells(f.view, f.writer or "(initial contents)", f.count, shown))
    return table


def array_text(name: str, array: np.ndarray) -> Text:
    with np.printoptions(threshold=200, edgeitems=3, linewidth=100):
        return Text(f"{name} {array.shape} {array.dtype}:\n{array}")


def shared_memory(program: Program) -> list[dict]:
    """Tensors whose storages share memory, and the views of different tensors that meet.

    One entry per memory group holding more than one tensor: ``tensors`` (name, byte
    offset from the group's first byte, bytes) and ``meets`` (pairs of view names, exact).
    """
    tensors = list(program.tensors.values())
    groups = memory_groups(t.storage for t in tensors)
    members: dict[int, list] = {}
    for t in tensors:
        members.setdefault(groups[id(t.storage)][0], []).append(t)
    out = []
    for g, ts in members.items():
        if len(ts) < 2:
            continue
        base = groups[id(ts[0].storage)][1]
        ids = {id(t) for t in ts}
        views = [v for v in program.views.values() if id(v.tensor) in ids and v.size]
        meets = [(a.name, b.name) for k, a in enumerate(views) for b in views[k + 1:]
                 if a.tensor is not b.tensor and check_memory_overlap(a, b)]
        out.append({"tensors": [(t.name, t.storage.address - base, t.storage.nbytes)
                                for t in ts], "meets": meets})
    return out


def shared_memory_table(program: Program, max_pairs: int = 12) -> Table | None:
    """:func:`shared_memory` as a table, or None when no two tensors share memory."""
    shared = shared_memory(program)
    if not shared:
        return None
    table = Table(title=Text("Tensors sharing memory"), title_justify="left")
    table.add_column("tensors (byte offset, bytes)")
    table.add_column("views that meet")
    for entry in shared:
        names = ", ".join(f"{n} (+{off}, {nb})" for n, off, nb in entry["tensors"])
        pairs = [f"{a} / {b}" for a, b in entry["meets"]]
        if len(pairs) > max_pairs:
            pairs = pairs[:max_pairs] + [f"... {len(entry['meets']) - max_pairs} more"]
        table.add_row(Text(names), Text("; ".join(pairs) or "(none of their views meet)"))
    return table
