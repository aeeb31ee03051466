"""Confirm a suspected op: run it again on copies of its arguments and compare.

An op is suspected when one of its written arguments shares memory with another of its
arguments (outside the elementwise exemption), or writes through a view that may map two
indices to one element. The tracer then, before the op runs, copies every tensor argument
into memory of its own (each read argument once, each written argument separately, with the
same offset and strides, so the kernel takes the same path), lets the op run on the
program's tensors as usual, runs it once more on the copies, and compares each written
argument with its copy element by element (bit for bit: NaNs with one bit pattern are equal,
0.0 and -0.0 are not), then each new result with the copies' (an op that writes an argument
it reads can compute its result from what it wrote). A written argument that overlaps itself
is copied densely, so the copy holds the value each of its indices would get under copy
semantics.

The re-run happens inside the dispatch mode (nothing it does is traced), with autograd below
it, and never for ops that draw random numbers. It changes nothing the program can see: the
copies are new memory, freed at once.
"""
from __future__ import annotations

import torch

from ..findings.model import Outcome
from .datadep import bits


def _span_copy(t: torch.Tensor) -> torch.Tensor:
    """A copy of ``t`` in memory of its own, with the same offset within it and the same
    strides (the bytes between its elements copied too)."""
    if t.numel() == 0:
        return t.clone()
    lo = hi = 0
    for n, s in zip(t.shape, t.stride()):
        if s < 0:
            lo += s * (n - 1)
        else:
            hi += s * (n - 1)
    span = hi - lo + 1
    raw = torch.empty(0, dtype=t.dtype).set_(t.untyped_storage(), t.storage_offset() + lo,
                                              (span,), (1,))
    base = raw.clone()
    out = base.as_strided(t.shape, t.stride(), -lo)
    if t.is_conj():
        torch._C._set_conj(out, True)
    if t.is_neg():
        torch._C._set_neg(out, True)
    return out


def copy_arguments(args, kwargs, written: dict):
    """``(args, kwargs, pairs)``: the call's arguments with every tensor replaced by a copy.
    ``written`` maps the written places (``(position or keyword, list index or -1)``) to
    their labels; each written place gets a copy of its own (dense, if its view overlaps
    itself), every other tensor one copy per object. ``pairs`` holds ``(label, original,
    copy, overlapping)`` per written place, in argument order."""
    from .memory import may_overlap_internally
    shared: dict[int, torch.Tensor] = {}
    pairs = []

    def one(t, key):
        if not isinstance(t, torch.Tensor):
            return t
        label = written.get(key)
        if label is not None:
            overlapping = may_overlap_internally(tuple(t.shape), t.stride())
            if overlapping:
                c = t.clone(memory_format=torch.contiguous_format)
            else:
                c = _span_copy(t)
            pairs.append((label, t, c, overlapping))
            return c
        c = shared.get(id(t))
        if c is None:
            c = shared[id(t)] = _span_copy(t)
        return c

    def walk(x, place):
        if isinstance(x, (list, tuple)):
            return type(x)(one(y, (place, k)) for k, y in enumerate(x))
        return one(x, (place, -1))
    new_args = tuple(walk(a, k) for k, a in enumerate(args))
    new_kwargs = {k: walk(v, k) for k, v in kwargs.items()}
    return new_args, new_kwargs, pairs


def _physical(t: torch.Tensor) -> torch.Tensor:
    """Storage element of each index of ``t`` (flattened in index order)."""
    phys = torch.full((), t.storage_offset(), dtype=torch.int64)
    for n, s in zip(t.shape, t.stride()):
        phys = phys.unsqueeze(-1) + torch.arange(n, dtype=torch.int64) * s
    return phys.reshape(-1)


def _conflicts(t: torch.Tensor, expected: torch.Tensor) -> int:
    """Elements ``t`` reaches through several indices whose copy-semantics values differ."""
    phys = _physical(t)
    order = torch.argsort(phys, stable=True)
    p, v = phys[order], bits(expected).reshape(-1)[order]
    same = p[1:] == p[:-1]
    return int(torch.unique(p[1:][same & (v[1:] != v[:-1])]).numel())


def compare(label: str, got: torch.Tensor, expected: torch.Tensor,
            overlapping: bool = False) -> Outcome:
    """Element-by-element comparison of a written argument with its copy."""
    if got.shape != expected.shape:
        return Outcome(label, max(got.numel(), expected.numel()), None)
    if got.numel() == 0:
        return Outcome(label, 0, None)
    differ = bits(got) != bits(expected)
    n = int(differ.sum())
    conflicts = _conflicts(got, expected) if overlapping else 0
    if not n:
        return Outcome(label, 0, None, conflicts)
    index = tuple(int(i) for i in torch.nonzero(differ)[0].tolist())
    return Outcome(label, n, (index, got[index].item(), expected[index].item()), conflicts)


def _nth(out, j: int):
    """The ``j``-th tensor an op returned (``j`` -1: the only one), or None."""
    got = out if j < 0 else (out[j] if isinstance(out, (list, tuple)) and j < len(out)
                             else None)
    return got if isinstance(got, torch.Tensor) else None


def rerun(func, args, kwargs, written: dict):
    """Copy the arguments now (before the real op runs); return ``finish(out, fresh)``: call
    it after the real op ran, with what it returned and ``fresh``, the ``(position, label)``
    of its new results (position -1 for the only one); it runs the op on the copies and
    returns an :class:`Outcome` per written place, then one per fresh result (an op that
    writes an argument it also reads can return a result computed from what it wrote:
    ``batch_norm`` with the running statistics over its weight and bias), or None if the run
    on copies raised (the op needs its aliasing to run at all)."""
    cargs, ckwargs, pairs = copy_arguments(args, kwargs, written)

    def finish(out=None, fresh=()):
        try:
            again = func(*cargs, **ckwargs)
        except Exception:  # noqa: BLE001
            return None
        outcomes = [compare(label, orig, copy, overlapping)
                    for label, orig, copy, overlapping in pairs]
        for j, label in fresh:
            got, expected = _nth(out, j), _nth(again, j)
            if got is not None and expected is not None and got.layout == torch.strided \
                    and expected.layout == torch.strided:
                outcomes.append(compare(label, got, expected))
        return tuple(outcomes)
    return finish
