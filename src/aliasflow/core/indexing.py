"""NumPy basic indexing and no-copy reshape, on ``(offset, shape, stride)`` triples."""
from __future__ import annotations

from math import prod


from .errors import AliasflowError
from .values import is_int as _is_int
from .values import INT64

_I64_MIN, _I64_MAX = INT64


def row_major_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major strides in elements: ``(3, 4, 5) -> (20, 5, 1)``."""
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


def _slice_text(s: slice) -> str:
    parts = ["" if s.start is None else str(s.start), "" if s.stop is None else str(s.stop)]
    if s.step is not None:
        parts.append(str(s.step))
    return ":".join(parts)


def _index_text(item) -> str:
    if item is Ellipsis:
        return "..."
    if item is None:
        return "None"
    if isinstance(item, slice):
        return _slice_text(item)
    return str(int(item))


def fast_index(offset: int, vshape: tuple, vstride: tuple, index, max_stride: int = _I64_MAX):
    """:func:`apply_index` on a view with these fields, for the common index: plain ints and
    slices of plain ints (or None) within 64 bits, ``None`` and one ``...``, every int in
    range, no step making a stride larger than ``max_stride`` in magnitude. Returns
    ``(offset, shape, stride)`` as :func:`apply_index` does (its ``text`` is what
    ``_index_text`` makes of each item), or None for any other index (valid or not), which
    then takes the general path and its checks and messages.
    """
    items = index if type(index) is tuple else (index,)
    ndim = len(vshape)
    dim = 0
    shape, stride = [], []
    ellipsis = False
    for item in items:
        kind = type(item)
        if kind is int:
            if dim == ndim or not _I64_MIN <= item <= _I64_MAX:
                return None
            n = vshape[dim]
            i = item + n if item < 0 else item
            if not 0 <= i < n:
                return None
            offset += i * vstride[dim]
            dim += 1
        elif kind is slice:
            start, stop, step = item.start, item.stop, item.step
            if dim == ndim or not (
                    (start is None or type(start) is int and _I64_MIN <= start <= _I64_MAX)
                    and (stop is None or type(stop) is int and _I64_MIN <= stop <= _I64_MAX)
                    and (step is None or type(step) is int and step != 0
                         and _I64_MIN <= step <= _I64_MAX)):
                return None
            begin, end, by = item.indices(vshape[dim])
            length = len(range(begin, end, by))
            s = vstride[dim]
            if length:
                offset += begin * s
            if by != 1 and by != -1 and not -max_stride <= s * by <= max_stride:
                return None  # the general path refuses it, naming the stride
            shape.append(length)
            stride.append(s * by)
            dim += 1
        elif item is None:
            shape.append(1)
            stride.append(0)
        elif item is Ellipsis and not ellipsis:
            ellipsis = True
            at = next(k for k, x in enumerate(items) if x is Ellipsis)
            rest = sum(1 for x in items[at + 1:] if x is not None)
            fill = ndim - dim - rest
            if fill < 0:
                return None
            shape.extend(vshape[dim:dim + fill])
            stride.extend(vstride[dim:dim + fill])
            dim += fill
        else:
            return None
    if dim < ndim:
        shape.extend(vshape[dim:])
        stride.extend(vstride[dim:])
    return offset, shape, stride


def apply_index(view, index):
    """Apply a NumPy basic index (ints, slices, ``...``, ``None``) to ``view``.

    Returns ``(offset, shape, stride, text)`` where ``text`` renders the index for names.
    """
    items = index if isinstance(index, tuple) else (index,)
    for item in items:
        if not (item is None or item is Ellipsis or isinstance(item, slice) or _is_int(item)):
            raise AliasflowError(
                f"view {view.name!r}: unsupported index {item!r} (only ints, slices, ... and "
                f"None make views; arrays and booleans would copy)")
        if isinstance(item, slice):
            for part in (item.start, item.stop, item.step):
                if part is not None and not _is_int(part):
                    raise AliasflowError(f"view {view.name!r}: slice {item!r} has a non-int bound")
            if item.step == 0:
                raise AliasflowError(f"view {view.name!r}: slice step cannot be zero")
    if sum(item is Ellipsis for item in items) > 1:
        raise AliasflowError(f"view {view.name!r}: an index can only have one '...'")
    real = sum(1 for item in items if item is not None and item is not Ellipsis)
    if real > view.ndim:
        raise AliasflowError(f"view {view.name!r}: too many indices ({real}) for "
                             f"{view.ndim} dims")
    fill = (slice(None),) * (view.ndim - real)
    if Ellipsis in items:
        at = next(i for i, item in enumerate(items) if item is Ellipsis)
        expanded = items[:at] + fill + items[at + 1:]
    else:
        expanded = items + fill

    offset, shape, stride, dim = view.offset, [], [], 0
    for item in expanded:
        if item is None:
            shape.append(1)
            stride.append(0)
            continue
        n, s = view.shape[dim], view.stride[dim]
        if isinstance(item, slice):
            start, stop, step = item.indices(n)
            length = len(range(start, stop, step))
            if length:
                offset += start * s
            shape.append(length)
            stride.append(s * step)
        else:
            i = int(item) + (n if item < 0 else 0)
            if not 0 <= i < n:
                raise AliasflowError(f"view {view.name!r}: index {int(item)} out of range for "
                                     f"axis {dim} of size {n}")
            offset += i * s
        dim += 1
    return offset, shape, stride, ", ".join(_index_text(item) for item in items)


def nocopy_reshape(view, shape):
    """New ``(shape, stride)`` for ``view`` reshaped without copying (NumPy's rule).

    Follows ``_attempt_nocopy_reshape`` in NumPy: runs of old axes that are contiguous with
    each other can be split or merged; anything else would need a copy and is refused.
    """
    shape = list(shape)
    plain, unknown = True, 0
    for d in shape:
        if type(d) is not int:
            if not _is_int(d):
                raise AliasflowError(f"view {view.name!r}: bad size {d!r} in reshape "
                                     f"{tuple(shape)}")
            plain = False
        if d < -1:
            raise AliasflowError(f"view {view.name!r}: bad size {d!r} in reshape {tuple(shape)}")
        if d == -1:
            unknown += 1
    if unknown > 1:
        raise AliasflowError(f"view {view.name!r}: reshape {tuple(shape)} has more than one -1")
    size = prod(view.shape)
    if unknown:
        known = prod(d for d in shape if d != -1)
        if known == 0 or size % known:
            raise AliasflowError(f"view {view.name!r}: cannot reshape size {size} "
                                 f"into {tuple(shape)}")
        shape[shape.index(-1)] = size // known
    if not plain:
        shape = [int(d) for d in shape]
    if prod(shape) != size:
        raise AliasflowError(f"view {view.name!r}: cannot reshape size {size} "
                             f"(shape {view.shape}) into {tuple(shape)}")
    if size == 0:
        return tuple(shape), row_major_strides(tuple(shape))

    old_dims, old_strides = [], []
    for n, s in zip(view.shape, view.stride):
        if n != 1:
            old_dims.append(n)
            old_strides.append(s)
    nd, no = len(shape), len(old_dims)
    new_strides = [0] * nd
    oi, oj, ni, nj = 0, 1, 0, 1
    while ni < nd and oi < no:
        np_, op = shape[ni], old_dims[oi]
        while np_ != op:
            if np_ < op:
                np_ *= shape[nj]
                nj += 1
            else:
                op *= old_dims[oj]
                oj += 1
        for ok in range(oi, oj - 1):
            if old_strides[ok] != old_dims[ok + 1] * old_strides[ok + 1]:
                raise AliasflowError(
                    f"view {view.name!r}: reshape {view.shape} -> {tuple(shape)} needs a copy "
                    f"(stride {view.stride} is not contiguous across the merged axes)")
        new_strides[nj - 1] = old_strides[oj - 1]
        for nk in range(nj - 1, ni, -1):
            new_strides[nk - 1] = new_strides[nk] * shape[nk]
        ni, nj = nj, nj + 1
        oi, oj = oj, oj + 1
    last = new_strides[ni - 1] if ni >= 1 else 1
    for nk in range(ni, nd):
        new_strides[nk] = last
    return tuple(shape), tuple(new_strides)
