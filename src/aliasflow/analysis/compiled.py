"""The compiled dependency walk (``aliasflow.analysis._walker``) and its glue.

:func:`~aliasflow.analysis.dependencies.ordering_edges` is the readable reference; the
compiled walk (``_native_src/walk.hpp``) follows it step for step and gives the same edges in
the same order (tests compare them on random programs). It returns edges as integer arrays;
:class:`Edges` turns them into :class:`~aliasflow.Dependency` records only when asked.

It tests fewer pairs than the reference, never with another outcome: column boxes (rows as
long as the strides of each memory group's first accesses, ``_native_src/index.hpp``) leave
out pairs that share no cell, and a write of at most ``COVERS_LIMIT`` cells judges what it
leaves of a record by its cells instead of asking ``solver.covers``. A larger write asks
``solver.covers``' rules in compiled code (``solver/_native_src/radix.hpp``), and Python
only where enumerating the record's cells is the rule that answers.

``AF_PURE=1`` selects the reference (as for the solver); so does a build without the
extension.
"""
from __future__ import annotations

import numpy as np

from .. import solver
from ..solver.native import load
from ..core.view import TensorView
from .lower import element_cells, lower
from .schedule import OpViews

KINDS = ("RAW", "WAR", "WAW")
_KIND_BIT = {"RAW": 1, "WAR": 2, "WAW": 4}


#: The compiled walker in use, or None (the Python reference). Tests swap it.
walker = load(__package__ + "._walker")


class Edges:
    """Edges found by the compiled walk: ``data`` is an ``(n, 2)`` read-only int32 array of
    ``(src row, dst row * 4 + kind)`` over the rows of the walk's access table; op ``k``'s
    rows are ``op_rows[k]:op_rows[k + 1]``, and ``view_of(row)`` gives a row's view. An
    edge's ops are its rows' ops, so they take no room of their own (eight bytes an edge).
    """

    __slots__ = ("data", "op_rows", "view_of", "snapshot")

    def __init__(self, data: np.ndarray, op_rows: np.ndarray, view_of, snapshot=None):
        self.data = data
        self.op_rows = op_rows
        self.view_of = view_of
        self.snapshot = snapshot  # the ops' views as walked (OpViews), if known

    def __len__(self) -> int:
        return len(self.data)

    def rows(self) -> tuple[np.ndarray, np.ndarray]:
        """``(src rows, dst rows)`` of the edges."""
        return self.data[:, 0], self.data[:, 1] >> 2

    def kinds(self) -> np.ndarray:
        """Each edge's kind: 0 RAW, 1 WAR, 2 WAW (``KINDS``)."""
        return self.data[:, 1] & 3

    def ops(self) -> tuple[np.ndarray, np.ndarray]:
        """``(src ops, dst ops)`` of the edges: program positions, int64."""
        starts = self.op_rows
        row_op = np.repeat(np.arange(len(starts) - 1, dtype=np.int64), np.diff(starts))
        src, dst = self.rows()
        return row_op[src], row_op[dst]

    def dependencies(self, names, make) -> list:
        """The edges as records: ``make(src, dst, kind, implicit, src_view, dst_view)``."""
        view_of = self.view_of
        src_ops, dst_ops = self.ops()
        src_rows, dst_rows = self.rows()
        out = []
        for s, t, k, rs, rt in zip(src_ops.tolist(), dst_ops.tolist(), self.kinds().tolist(),
                                   src_rows.tolist(), dst_rows.tolist()):
            vi, vj = view_of(rs), view_of(rt)
            out.append(make(names[s], names[t], KINDS[k], vi is not vj and vi != vj, vi, vj))
        return out


def compiled_edges(ops: list, progress, retire: bool, prune, covers_limit: int, window: int,
                   progress_step: int):
    """The compiled walk over ``ops``: :class:`Edges`, or None when there is no compiled
    walker (then the caller runs the reference)."""
    w = walker
    if w is None:
        return None
    params = (bool(retire), sum(_KIND_BIT[k] for k in set(prune or ())), int(covers_limit),
              int(window), int(progress_step))
    ops = tuple(ops)  # one tuple for the walk and the snapshot (tuple() of it is itself)
    got = w.walk_ops(ops, TensorView, element_cells, solver.intersects, solver.covers,
                     progress, params)
    if got is not None:
        raw, row_entries, entry_views, views, starts, op_rows = got
        entry_of = np.frombuffer(row_entries, np.int32)
        snapshot = OpViews(ops, views, np.frombuffer(starts, np.int32))
        return Edges(np.frombuffer(raw, np.int32).reshape(-1, 2),
                     np.frombuffer(op_rows, np.int32), lambda row: entry_views[entry_of[row]],
                     snapshot)
    # views reinterpreting memory, or values beyond the fast path: lower in Python
    table = lower(ops)
    try:
        c = table.columns()
    except OverflowError:  # cells beyond int64: the reference's big integers
        return None
    big = 2 ** 62
    if any(len(c[k]) and (c[k].max() > big or c[k].min() < -big)
           for k in ("low", "high", "offset", "shape", "stride")):
        return None
    columns = tuple(np.ascontiguousarray(c[k], np.int64).tobytes() for k in (
        "op", "mode", "group", "low", "high", "dense", "offset", "dims_start", "shape",
        "stride"))
    raw = w.walk_table(len(ops), len(table.units), columns, solver.intersects, solver.covers,
                       progress, params)
    rows = table.rows
    return Edges(np.frombuffer(raw, np.int32).reshape(-1, 2),
                 np.asarray(table.op_starts, np.int64), lambda r: rows[r][7])
