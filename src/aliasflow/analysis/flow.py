"""Value flow: for each element an op reads, the op that last wrote it before.

Exact by shadow memory: every memory group an op reads gets an int array of last-writer op
numbers (-1: initial contents), one per cell, updated with NumPy through a strided view of
the shadow laid out like each written view. Cost: one shadow element per cell (8 bytes each) and
one NumPy pass over every write's elements and every read's footprint, so it is meant for
programs whose tensors fit in memory, not for traces of 10^12-element views.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..core.errors import AliasflowError
from ..core.program import as_records
from .. import solver
from .lower import GROUP, HIGH, LAYOUT, MODE, READ, VIEW, lower


@dataclass(frozen=True)
class Flow:
    """Elements of ``view`` that op ``op`` reads and that ``writer`` wrote last.

    ``writer`` is None for elements still holding the tensor's initial contents.
    """

    op: str
    view: str
    writer: str | None
    count: int
    elements: np.ndarray = field(repr=False, compare=False)


SHADOW_LIMIT = 1 << 28  # cells: 2 GiB of int64 shadow


def _shadow(n: int, view) -> np.ndarray:
    if n > SHADOW_LIMIT:
        raise AliasflowError(f"value flow through tensor {view.tensor.name!r} needs a shadow of "
                             f"{n} elements (more than {SHADOW_LIMIT}); it is meant for "
                             f"tensors that fit in memory")
    return np.full(n, -1, np.int64)


def _shadow_view(shadow: np.ndarray, layout) -> np.ndarray:
    offset, shape, stride = layout
    isz = shadow.itemsize
    return np.ndarray(shape, shadow.dtype, buffer=shadow, offset=offset * isz,
                      strides=tuple(s * isz for s in stride))


def value_flow(ops, op=None) -> dict[str, list[Flow]] | list[Flow]:
    """Where the data each op reads comes from.

    Parameters
    ----------
    ops : iterable of Operation, in program order
    op : str or Operation, optional
        Only this op's flows (a list); otherwise a dict from every op name to its flows.

    Returns
    -------
    For each input view of an op, one :class:`Flow` per writer (earliest writer first, initial
    contents first of all), with the count and sorted storage elements (of the view's
    tensor) it provides. Memory is tracked by address, so writes through any tensor or dtype
    over the same bytes count.

    Examples
    --------
    >>> import aliasflow as af
    >>> A = af.Tensor("A", (4,))
    >>> w1 = af.FillOperation("w1").set_outputs(A[:3])
    >>> w2 = af.FillOperation("w2", 2.0).set_outputs(A[1:])
    >>> r = af.TransformOperation("r").set_inputs(A.view())
    >>> [(f.writer, f.elements.tolist()) for f in af.value_flow([w1, w2, r], "r")]
    [('w1', [0]), ('w2', [1, 2, 3])]
    """
    ops = as_records(ops)
    names = [o.name for o in ops]
    stop = len(ops)
    if op is not None:
        target = getattr(op, "name", op)
        if target not in names:
            raise AliasflowError(f"no op named {target!r}; ops are {', '.join(names)}")
        stop = names.index(target) + 1
    table = lower(ops[:stop])
    rows = table.rows()
    # Only groups that some op reads need shadows, as long as the highest cell touched.
    size: dict[int, int] = {}
    for r in rows:
        size[r[GROUP]] = max(size.get(r[GROUP], 0), r[HIGH] + 1)
    read = {r[GROUP] for r in rows if r[MODE] == READ}
    shadows: dict[int, np.ndarray] = {}
    flows: dict[str, list[Flow]] = {}
    for j, o in enumerate(ops[:stop]):
        mine = []
        mine_rows = rows[table.op_starts[j]:table.op_starts[j + 1]]
        by_view = {id(r[VIEW]): r for r in mine_rows if r[MODE] == READ}
        for v in o.input_views:
            r = by_view.get(id(v))
            if r is None:  # an empty view reads nothing
                continue
            shadow = shadows.get(r[GROUP])
            cells = solver.footprint(r[LAYOUT])
            writers = (np.full(cells.shape, -1, np.int64) if shadow is None
                       else shadow[cells])
            for w in np.unique(writers):
                elements = _elements(table, r, cells[writers == w])
                mine.append(Flow(o.name, v.name, None if w < 0 else names[w],
                                 int(elements.size), elements))
        flows[o.name] = mine
        for r in mine_rows:
            if r[MODE] == READ or r[GROUP] not in read:
                continue
            shadow = shadows.get(r[GROUP])
            if shadow is None:
                shadow = shadows[r[GROUP]] = _shadow(size[r[GROUP]], r[VIEW])
            _shadow_view(shadow, r[LAYOUT])[...] = j
    return flows[names[stop - 1]] if op is not None else flows


def _elements(table, row, cells: np.ndarray) -> np.ndarray:
    """Cells of a row's group as elements of the row's view's tensor."""
    tensor = row[VIEW].tensor
    unit, isz = table.units[row[GROUP]], tensor.dtype.itemsize
    delta = table.bases[row[GROUP]] - tensor.storage.address
    if unit == isz:
        return cells + delta // isz
    return np.unique((cells * unit + delta) // isz)
