"""The compiled dependency walk (``aliasflow.analysis._walker``) and its glue.

:func:`~aliasflow.analysis.dependencies.ordering_edges` is the readable reference; the
compiled walk (``_native_src/walk.hpp``) follows it step for step and gives the same edges in
the same order (tests compare them on random programs). It returns edges as integer arrays;
:class:`Edges` turns them into :class:`~aliasflow.Dependency` records only when asked.

It takes the access table's integer arrays and nothing else (one lowering, in Python, feeds
both walks). It tests fewer pairs than the reference, never with another outcome: column boxes (rows as
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

    __slots__ = ("data", "op_rows", "view_of")

    def __init__(self, data: np.ndarray, op_rows: np.ndarray, view_of):
        self.data = data
        self.op_rows = op_rows
        self.view_of = view_of

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


def compiled_edges(table, progress, retire: bool, prune, covers_limit: int, window: int,
                   progress_step: int):
    """The compiled walk over an access table (:func:`.lower.lower`): :class:`Edges`, or None
    when there is no compiled walker or the table's cells do not fit in 64 bits (then the
    caller runs the reference)."""
    w = walker
    if w is None:
        return None
    columns = (table.op_starts, table.modes, table.entries, table.groups, table.offsets,
               table.dims_start, table.shape, table.stride)
    if any(c.dtype != np.int64 for c in columns[4:]):
        return None  # cells beyond int64: the reference's big integers
    big = 2 ** 62
    if any(len(c) and (c.max() > big or c.min() < -big) for c in columns[4:]):
        return None
    params = (bool(retire), sum(_KIND_BIT[k] for k in set(prune or ())), int(covers_limit),
              int(window), int(progress_step))
    raw = w.walk_table(table.n_ops, len(table.units),
                       *(np.ascontiguousarray(c, np.int64) for c in columns),
                       solver.intersects, solver.covers, progress, params)
    views, entries = table.views, table.entries
    return Edges(np.frombuffer(raw, np.int32).reshape(-1, 2), table.op_starts,
                 lambda row: views[entries[row]])
