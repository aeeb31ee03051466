"""Writes to data-dependent elements (``index_put_``, ``masked_fill_``, ``scatter_``, ...).

The indices or masks are known when the op is called, so the tracer replays the op's
indexing on a probe of counters laid out like the target: each element's count is how many
times the op writes it. The written elements become exact accesses: one dense piece per run
of consecutive elements, up to :data:`RUN_LIMIT` pieces; beyond that the whole target view is
recorded as a *may-write* (every element it could write), with the exact element set kept
for findings.

Repeated indices: an element written more than once by one op with different values ends up
with whichever write lands last, an order no PyTorch op promises; :func:`duplicates` finds
them from the op's own indices and values (``index_put``/``index_put_`` without
``accumulate``, ``scatter``/``scatter_`` with a source tensor, ``index_copy``/
``index_copy_``, ``put``/``put_``), for the in-place and the out-of-place forms alike.
"""
from __future__ import annotations

import ast

import numpy as np
import torch

RUN_LIMIT = 256

# op base name (in-place form) -> (also reads the written elements, writes differing values)
KINDS = {
    "index_put_": None, "_index_put_impl_": None,  # decided by ``accumulate``
    "masked_fill_": (False, False), "masked_scatter_": (False, True),
    "scatter_": None, "scatter_add_": (True, False), "scatter_reduce_": (True, False),
    "index_copy_": (False, True), "index_fill_": (False, False), "index_add_": (True, False),
    "index_reduce_": (True, False), "put_": None,
}


def bound(spec, args, kwargs) -> dict:
    """The op's arguments by schema name."""
    out = {}
    for a in spec.args:
        if a.position < len(args):
            out[a.name] = args[a.position]
        elif a.name in kwargs:
            out[a.name] = kwargs[a.name]
    return out


def _counts(base: str, b: dict, target: torch.Tensor):
    """Times each element index of ``target`` is written, or None if unknown."""
    probe = torch.zeros(target.shape, dtype=torch.int64)
    one = torch.ones((), dtype=torch.int64)
    if base in ("index_put_", "_index_put_impl_"):
        probe.index_put_(list(b["indices"]), one, accumulate=True)
    elif base in ("masked_fill_", "masked_scatter_"):
        mask = b["mask"]
        probe.masked_fill_(mask.expand(target.shape) if mask.dim() else mask, 1)
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


def _kind(base: str, b: dict):
    kind = KINDS.get(base)
    if base in ("index_put_", "_index_put_impl_"):
        values = b.get("values")
        acc = bool(b.get("accumulate", False))
        kind = (acc, not acc and values is not None and values.numel() > 1)
    elif base == "scatter_":
        reduce = b.get("reduce")
        kind = (reduce is not None, reduce is None and "src" in b)
    elif base == "put_":
        acc = bool(b.get("accumulate", False))
        kind = (acc, not acc)
    return kind


def written_elements(spec, b: dict, target: torch.Tensor, starts: np.ndarray):
    """``(reads_too, addresses)`` for an in-place data-dependent write of ``target`` (whose
    element start addresses, in index order, are ``starts``), or None if unknown.
    ``addresses``: sorted distinct start addresses of the written elements."""
    kind = _kind(spec.base, b)
    if kind is None or target.is_conj() or target.is_neg():
        return None
    try:
        counts = _counts(spec.base, b, target)
    except Exception:  # noqa: BLE001 - PyTorch will raise the user's error itself
        return None
    if counts is None:
        return None
    return kind[0], np.unique(starts[counts > 0])


def starts(ptr: int, shape, stride, itemsize: int) -> np.ndarray:
    """Start address of every element index of a tensor (index order, with repeats)."""
    addr = np.full((), ptr, dtype=np.int64)
    for n, s in zip(shape, stride):
        addr = np.add.outer(addr, np.arange(n, dtype=np.int64) * (s * itemsize))
    return addr.reshape(-1)


def runs(addresses: np.ndarray, itemsize: int):
    """Runs of consecutive elements: ``[(first address, length)]``."""
    if addresses.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(addresses) != itemsize) + 1
    firsts = np.concatenate(([0], breaks))
    lengths = np.diff(np.concatenate((firsts, [addresses.size])))
    return list(zip(addresses[firsts].tolist(), lengths.tolist()))


# ---- repeated indices with differing values ------------------------------------------------
_BITS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def bits(t: torch.Tensor) -> torch.Tensor:
    """``t``'s values as integers of its element size (NaNs with one bit pattern compare
    equal, -0.0 and 0.0 do not)."""
    t = t.resolve_conj().resolve_neg()
    if t.is_complex():
        t = torch.view_as_real(t)
    if t.dtype == torch.bool:
        return t.to(torch.uint8)
    return t.view(_BITS[t.element_size()])


def _targets(base: str, b: dict, shape):
    """``(flat target element per write, value per write)`` for a non-accumulating indexed
    write, or None where every write carries one value (or the form accumulates)."""
    base = base.rstrip("_")
    ids = torch.arange(int(np.prod(shape, dtype=np.int64)), dtype=torch.int64).reshape(shape)
    if base in ("index_put", "_index_put_impl"):
        if b.get("accumulate", False):
            return None
        lin = torch.ops.aten.index.Tensor(ids, list(b["indices"]))
        return lin, b["values"].expand(lin.shape)
    if base == "scatter":
        src = b.get("src")
        if b.get("reduce") is not None or not isinstance(src, torch.Tensor):
            return None
        index = b["index"]
        lin = ids.gather(b["dim"], index)
        vals = src[tuple(slice(0, n) for n in index.shape)] if index.dim() else src
        return lin, vals
    if base == "index_copy":
        index = b["index"].reshape(-1)
        return ids.index_select(b["dim"], index), b["source"]
    if base == "put":
        if b.get("accumulate", False):
            return None
        n = max(ids.numel(), 1)
        return b["index"].reshape(-1) % n, b["source"].reshape(-1)
    return None


def _read_modify_write(spec, b: dict) -> bool:
    """Is this non-accumulating ``index_put_`` the store of the user's ``x[idx] += v`` (or
    ``x[idx] = x[idx] + v``)? Python runs that as a gather, the operator, then one store:
    an element indexed twice gets ``x[i] + v`` once, not twice, whatever the values."""
    if spec.base not in ("index_put_", "_index_put_impl_") or b.get("accumulate", False):
        return False
    from ..findings.source import OPERATOR_SYMBOLS, assignment
    from .frames import USER_CODE, is_user_code, user_site
    site = user_site(0, USER_CODE, is_user_code)
    if site is None:
        return False
    statement = assignment(site[0].co_filename, site[1])
    if statement is None or not statement.subscript:
        return False
    if statement.op is not None:
        return statement.op in _NOT_IDEMPOTENT
    try:   # x[idx] = x[idx] + v, spelled out
        node = ast.parse(statement.value, mode="eval").body
    except SyntaxError:
        return False
    return isinstance(node, ast.BinOp) and \
        OPERATOR_SYMBOLS.get(type(node.op)) in _NOT_IDEMPOTENT and \
        ast.get_source_segment(statement.value, node.left) == statement.target


# operators whose repeat changes the result (x | v | v is x | v: nothing is lost)
_NOT_IDEMPOTENT = frozenset({"+", "-", "*", "/", "//", "%", "**", "<<", ">>", "^", "@"})


def duplicates(spec, b: dict, shape):
    """Elements written more than once with differing values by one indexed write (or at
    all, by the store of an augmented assignment ``x[idx] += v``: every repeat is an update
    lost): ``(flat element indices, {flat index: [values written there]} for the first
    few)``, or None when there are none (or the op is not such a write)."""
    got = _targets(spec.base, b, tuple(shape))
    if got is None:
        return None
    lin, vals = got
    lin = lin.reshape(-1)
    if lin.numel() < 2:
        return None
    vals = vals.expand(lin.shape) if vals.dim() == 0 else vals.reshape(-1)
    order = torch.argsort(lin, stable=True)
    lin_s, val_s = lin[order], bits(vals)[order]
    same_target = lin_s[1:] == lin_s[:-1]
    if not bool(same_target.any()):
        return None
    differ = same_target & (val_s[1:] != val_s[:-1])
    if not bool(differ.any()):
        if not _read_modify_write(spec, b):
            return None
        differ = same_target
    flat = torch.unique(lin_s[1:][differ])
    examples = {}
    for e in flat[:4].tolist():
        examples[e] = vals[lin == e].tolist()
    return flat.numpy(), examples
