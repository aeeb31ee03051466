"""Writes to data-dependent elements (``index_put_``, ``masked_fill_``, ``scatter_``, ...).

The indices or masks are known when the op is called, so the tracer replays the op's
indexing on a probe of counters laid out like the target: each element's count is how many
times the op writes it. The written elements become exact accesses: one dense piece per run
of consecutive elements, up to :data:`RUN_LIMIT` pieces; beyond that the whole target view is
recorded as a *may-write* (every element it could write), and the exact element set is kept
on the record (``TraceOp.exact_writes``) for findings. Elements written more than once by an
op that writes them different values (``index_put_`` without ``accumulate``, ``scatter_``
with a source, ``index_copy_``) are a self-overlapping write.
"""
from __future__ import annotations

import numpy as np
import torch

from .memory import Ref, element_starts

RUN_LIMIT = 256

# op base name -> (also reads the written elements, writes differing values)
KINDS = {
    "index_put_": None, "_index_put_impl_": None,  # decided by ``accumulate``
    "masked_fill_": (False, False), "masked_scatter_": (False, True),
    "scatter_": None, "scatter_add_": (True, False), "scatter_reduce_": (True, False),
    "index_copy_": (False, True), "index_fill_": (False, False), "index_add_": (True, False),
    "index_reduce_": (True, False), "put_": None,
}


def _bound(spec, args, kwargs) -> dict:
    out = {}
    for a in spec.args:
        if a.position < len(args):
            out[a.name] = args[a.position]
        elif a.name in kwargs:
            out[a.name] = kwargs[a.name]
    return out


def _counts(spec, b: dict, target: torch.Tensor):
    """Times each element index of ``target`` is written, or None if unknown."""
    base = spec.base
    probe = torch.zeros(target.shape, dtype=torch.int64)
    one = torch.ones((), dtype=torch.int64)
    if base in ("index_put_", "_index_put_impl_"):
        idx = [None if i is None else i for i in b["indices"]]
        probe.index_put_(idx, one, accumulate=True)
    elif base in ("masked_fill_", "masked_scatter_"):
        probe.masked_fill_(b["mask"].expand(target.shape) if b["mask"].dim() else b["mask"], 1)
    elif base in ("scatter_", "scatter_add_", "scatter_reduce_"):
        index = b["index"]
        probe.scatter_add_(b["dim"], index, torch.ones(index.shape, dtype=torch.int64))
    elif base in ("index_copy_", "index_add_", "index_reduce_", "index_fill_"):
        dim, index = b["dim"], b["index"]
        shape = list(target.shape)
        if shape:
            shape[dim] = index.numel()
        probe.index_add_(dim, index.reshape(-1), torch.ones(shape, dtype=torch.int64))
    elif base == "put_":
        flat = probe.reshape(-1)
        index = b["index"].reshape(-1) % max(flat.numel(), 1)
        flat.index_add_(0, index, torch.ones(index.shape, dtype=torch.int64))
        probe = flat.reshape(target.shape)
    else:
        return None
    return probe.reshape(-1).numpy()


def written_elements(spec, args, kwargs, target, ref_before):
    """``(reads_too, addresses, repeats)`` for a data-dependent write, or None if unknown.

    ``addresses``: sorted distinct start addresses of the written elements; ``repeats``:
    ``{address: times}`` for elements written more than once with possibly different values.
    """
    b = _bound(spec, args, kwargs)
    kind = KINDS.get(spec.base)
    if spec.base in ("index_put_", "_index_put_impl_"):
        values = b.get("values")
        acc = bool(b.get("accumulate", False))
        kind = (acc, not acc and values is not None and values.numel() > 1)
    elif spec.base == "scatter_":
        reduce = b.get("reduce")
        kind = (reduce is not None, reduce is None and "src" in b)
    elif spec.base == "put_":
        acc = bool(b.get("accumulate", False))
        kind = (acc, not acc)
    if kind is None or target.is_conj() or target.is_neg():
        return None
    try:
        counts = _counts(spec, b, target)
    except Exception:  # noqa: BLE001 - PyTorch will raise the user's error itself
        return None
    if counts is None:
        return None
    starts = element_starts(ref_before)
    hit = counts > 0
    addresses, inverse = np.unique(starts[hit], return_inverse=True)
    times = np.bincount(inverse, weights=counts[hit]).astype(np.int64) if addresses.size \
        else np.zeros(0, np.int64)
    repeats = {}
    if kind[1]:
        many = times > 1
        repeats = dict(zip(addresses[many].tolist(), times[many].tolist()))
    return kind[0], addresses, repeats


def _runs(addresses: np.ndarray, itemsize: int):
    """Runs of consecutive elements: ``[(first address, length)]``."""
    if addresses.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(addresses) != itemsize) + 1
    firsts = np.concatenate(([0], breaks))
    lengths = np.diff(np.concatenate((firsts, [addresses.size])))
    return list(zip(addresses[firsts].tolist(), lengths.tolist()))


def record(raw, label: str, ref: Ref, exact) -> None:
    """Add the accesses of a data-dependent write of ``ref`` to ``raw``."""
    reads_too, addresses, repeats = exact
    raw.exact[label] = addresses
    if repeats:
        raw.repeats[label] = repeats
    runs = _runs(addresses, ref.itemsize)
    if len(runs) > RUN_LIMIT or (ref.gen.address - ref.start) % ref.itemsize:
        pieces = [(ref, True)]
    else:
        pieces = [(Ref(ref.gen, (a - ref.gen.address) // ref.itemsize, (n,), (1,), ref.dtype,
                       ref.itemsize, parent=ref), False) for a, n in runs]
    for piece, may in pieces:
        if reads_too:
            raw.accesses.append((label, "R", piece, may))
        raw.accesses.append((label, "W", piece, may))
