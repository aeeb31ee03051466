"""Value flow: for each element an op reads, the op that last wrote it before.

Exact by shadow memory: every storage an op reads gets an int array of last-writer op
numbers (-1: initial contents), updated with NumPy through a strided view of the shadow laid
out like each written view. Cost: one shadow element per storage element (8 bytes each) and
one NumPy pass over every write's elements and every read's footprint, so it is meant for
programs whose tensors fit in memory, not for traces of 10^12-element views.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..core.errors import AliasflowError
from ..core.program import check_ops
from .overlap import storage_key


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


SHADOW_LIMIT = 1 << 28  # elements: 2 GiB of int64 shadow


def _shadow(tensor) -> np.ndarray:
    n = tensor.get_storage_size()
    if n > SHADOW_LIMIT:
        raise AliasflowError(f"value flow through tensor {tensor.name!r} needs a shadow of "
                             f"{n} elements (more than {SHADOW_LIMIT}); it is meant for "
                             f"tensors that fit in memory")
    return np.full(n, -1, np.int64)


def _shadow_view(shadow: np.ndarray, view) -> np.ndarray:
    isz = shadow.itemsize
    return np.ndarray(view.shape, shadow.dtype, buffer=shadow, offset=view.offset * isz,
                      strides=tuple(s * isz for s in view.stride))


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
    contents first of all), with the count and sorted storage elements it provides.

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
    ops = check_ops(ops)
    names = [o.name for o in ops]
    stop = len(ops)
    if op is not None:
        target = getattr(op, "name", op)
        if target not in names:
            raise AliasflowError(f"no op named {target!r}; ops are {', '.join(names)}")
        stop = names.index(target) + 1
    # Only storages that some op up to `stop` reads need shadows.
    read = {storage_key(v) for o in ops[:stop] for v in o.input_views}
    shadows: dict[int, np.ndarray] = {}
    flows: dict[str, list[Flow]] = {}
    for j, o in enumerate(ops[:stop]):
        mine = []
        for v in o.input_views:
            shadow = shadows.get(storage_key(v))
            footprint = v.footprint()
            writers = (np.full(footprint.shape, -1, np.int64) if shadow is None
                       else shadow[footprint])
            for w in np.unique(writers):
                elements = footprint[writers == w]
                mine.append(Flow(o.name, v.name, None if w < 0 else names[w],
                                 int(elements.size), elements))
        flows[o.name] = mine
        for v in o.output_views:
            key = storage_key(v)
            if key in read and v.size:
                shadow = shadows.get(key)
                if shadow is None:
                    shadow = shadows[key] = _shadow(v.tensor)
                _shadow_view(shadow, v)[...] = j
    return flows[names[stop - 1]] if op is not None else flows
