"""Random NumPy operations over overlapping views of one buffer, and their copy semantics.

Shared by the NumPy tracer's differential tests (``tests/interop/numpy_trace``). A *case* is
a buffer, a namespace of operands (views of the buffer: steps, negative steps, transposes,
``as_strided`` layouts, ``.view(dtype)`` reinterpretations, byte-swapped and unaligned
views, plus index arrays and masks), and one statement using them. The oracle,
:func:`copy_semantics`, is independent of aliasflow: the same statement run by NumPy on
fresh contiguous copies of every operand, its results written back at the written views'
places in a copy of the buffer.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DTYPES = [np.dtype(x) for x in ("i1", "u1", "i2", "i4", "i8", "f4", "f8", ">i4", ">f8", "<i2",
                                "c8")]
PAD = 512   # bytes of padding on both sides: a write outside the buffer shows there


def address(x) -> int:
    return x.__array_interface__["data"][0]


def fresh_buffer(rng, nbytes):
    """A buffer of ``nbytes`` inside padding, its address at a phase (mod 64) the seed
    chooses (NumPy's kernels depend on alignment, so a case is the same case each run);
    bytes 1..63 keep every float finite and non-NaN in any byte order."""
    whole = np.zeros(nbytes + 2 * PAD + 64, np.uint8)
    phase = int(rng.integers(0, 8)) * 8
    start = PAD + (phase - address(whole) - PAD) % 64
    buf = whole[start:start + nbytes]
    buf[:] = rng.integers(1, 64, nbytes, dtype=np.uint8)
    return buf


def repeats(v) -> bool:
    """Does the view map two indices to one byte (by enumeration)?"""
    if v.size <= 1:
        return False
    starts = np.zeros((), np.int64)
    for n, s in zip(v.shape, v.strides):
        starts = np.add.outer(starts, np.arange(n) * s)
    b = np.unique(np.add.outer(starts.ravel(), np.arange(v.itemsize)).ravel())
    return b.size != v.size * v.itemsize


def random_view(rng, buf, shape=None, dtype=None, aligned=None, ndim=None):
    """A view of ``buf`` (no index repeated) with a random layout, or None."""
    n = buf.nbytes
    dtype = np.dtype(dtype) if dtype is not None else DTYPES[rng.integers(len(DTYPES))]
    isz = dtype.itemsize
    aligned = rng.random() < 0.8 if aligned is None else aligned
    if shape is None:
        ndim = int(rng.integers(1, 4)) if ndim is None else ndim
        shape = tuple(int(rng.integers(1, 5)) for _ in range(ndim))
    for _ in range(100):
        strides = []
        for size in shape:
            s = int(rng.integers(-6, 7)) * isz if aligned else \
                int(rng.integers(-3 * isz, 3 * isz + 1))
            strides.append(s if s or size <= 1 else isz)
        lo = sum(min(0, s * (m - 1)) for s, m in zip(strides, shape))
        hi = sum(max(0, s * (m - 1)) for s, m in zip(strides, shape)) + isz
        if hi - lo > n:
            continue
        first, last = -lo, n - hi
        unit = isz if aligned else 1
        choices = range(first + (-first) % unit, last + 1, unit)
        if not len(choices):
            continue
        off = int(choices[rng.integers(len(choices))])
        v = np.ndarray(shape, dtype, buffer=buf, offset=off, strides=tuple(strides))
        if not repeats(v):
            return v
    return None


def shifted_view(rng, buf, d, shape):
    """A view of ``shape`` with ``d``'s dtype, walking ``d``'s memory order (its flattened
    elements when ``d`` is one-dimensional) from a few elements before or after ``d``'s
    first one: the shifts programs write (``a[1:] = a[:-1]``, ``np.place(a, m, a[:-1])``)."""
    if d.ndim != 1 or d.shape[0] < 1:
        return None
    step = d.strides[0] or d.itemsize
    start = address(d) - address(buf) + int(rng.choice([-2, -1, 1, 2])) * step
    n = int(np.prod(shape))
    ends = [start, start + step * (n - 1)] if n else [start]
    if min(ends) < 0 or max(ends) + d.itemsize > buf.nbytes:
        return None
    flat = np.ndarray((n,), d.dtype, buffer=buf, offset=start, strides=(step,))
    return flat.reshape(shape) if shape != (n,) else flat


def relayout(v, buf, other):
    """The view of ``other`` laid out as ``v`` is in ``buf``."""
    return np.ndarray(v.shape, v.dtype, buffer=other, offset=address(v) - address(buf),
                      strides=v.strides)


def _copy(x):
    if isinstance(x, np.ndarray):
        return np.array(x, copy=True)
    if isinstance(x, (list, tuple)):
        return type(x)(_copy(y) for y in x)
    return x


def copy_semantics(code, namespace, written, buf):
    """The buffer after running ``code`` (plain NumPy) on copies of every operand, the
    written operands' results put back where they are in ``buf``; None if NumPy refuses it
    on copies."""
    copies = {k: _copy(v) for k, v in namespace.items()}
    expected = buf.copy()
    with np.errstate(all="ignore"):
        try:
            exec(code, {"np": np}, copies)
        except Exception:  # noqa: BLE001 - the statement is invalid for these operands
            return None
    for name in written:
        relayout(namespace[name], buf, expected)[...] = copies[name]
    return expected


def written_bytes(namespace, written, buf):
    mask = np.zeros(buf.nbytes, bool)
    for name in written:
        v = namespace[name]
        starts = np.zeros((), np.int64) + address(v) - address(buf)
        for m, s in zip(v.shape, v.strides):
            starts = np.add.outer(starts, np.arange(m) * s)
        mask[np.add.outer(starts.ravel(), np.arange(v.itemsize)).ravel()] = True
    return mask


def differ(actual, expected, namespace, written, buf, exact) -> bool:
    """Do the written views differ (exactly, or for arithmetic beyond 64 units in the last
    place of the largest value), or did anything outside them change?"""
    if not np.array_equal(actual[~written_bytes(namespace, written, buf)],
                          expected[~written_bytes(namespace, written, buf)]):
        return True
    for name in written:
        v = namespace[name]
        a, e = relayout(v, buf, actual), relayout(v, buf, expected)
        if v.dtype.kind in "fc":
            a = a.astype(a.dtype.newbyteorder("="))
            e = e.astype(e.dtype.newbyteorder("="))
            parts = [(a.real, e.real), (a.imag, e.imag)] if v.dtype.kind == "c" else [(a, e)]
            for ap, ep in parts:
                ok = (ap == ep) | (np.isnan(ap) & np.isnan(ep))
                if not exact:
                    scale = max(np.max(np.abs(ep[np.isfinite(ep)]), initial=0),
                                np.max(np.abs(ap[np.isfinite(ap)]), initial=0))
                    with np.errstate(all="ignore"):
                        ok |= np.abs(ap - ep) <= 64 * np.finfo(ap.dtype).eps * scale
                if not ok.all():
                    return True
        elif not np.array_equal(a.view(np.uint8) if a.dtype.kind == "V" else a,
                                e.view(np.uint8) if e.dtype.kind == "V" else e):
            return True
    return False


@dataclass(frozen=True)
class Family:
    """An operation under test: ``code`` (one statement over named operands), ``make(rng)``
    -> ``(buffer, namespace, written names)`` or None, ``exact`` (copies compare bit for
    bit), ``guarded`` (NumPy protects this operation against overlap, so no hazard either)."""
    name: str
    code: str
    make: object
    exact: bool = True
    guarded: bool = False


def _same_or_other(rng, d):
    return d.dtype if rng.random() < 0.6 else None


def _source(rng, buf, d, shape):
    """Half the time a shifted view of ``d``'s own memory, else any view of the buffer."""
    if rng.random() < 0.5:
        s = shifted_view(rng, buf, d, shape)
        if s is not None:
            return s
    return random_view(rng, buf, shape=shape, dtype=_same_or_other(rng, d))


def _pair(nbytes=96, **kw):
    def make(rng):
        buf = fresh_buffer(rng, nbytes)
        d = random_view(rng, buf, **kw)
        if d is None:
            return None
        s = _source(rng, buf, d, d.shape)
        return None if s is None else (buf, {"d": d, "s": s}, ["d"])
    return make


def _row(rng):
    buf = fresh_buffer(rng, 160)
    d = random_view(rng, buf, ndim=2)
    if d is None:
        return None
    s = random_view(rng, buf, shape=(d.shape[1],), dtype=_same_or_other(rng, d))
    return None if s is None else (buf, {"d": d, "s": s, "i": int(rng.integers(d.shape[0]))},
                                   ["d"])


def _fancy(rng):
    buf = fresh_buffer(rng, 128)
    d = random_view(rng, buf, ndim=1)
    if d is None:
        return None
    k = int(rng.integers(1, d.shape[0] + 1))
    idx = rng.integers(0, d.shape[0], k) if rng.random() < 0.3 else \
        rng.choice(d.shape[0], k, replace=False)
    s = random_view(rng, buf, shape=(k,), dtype=_same_or_other(rng, d))
    return None if s is None else (buf, {"d": d, "s": s, "idx": idx}, ["d"])


def _masked(nbytes=128, scalar=False):
    def make(rng):
        buf = fresh_buffer(rng, nbytes)
        d = random_view(rng, buf)
        if d is None:
            return None
        m = rng.random(d.shape) < 0.6
        k = int(m.sum())
        if not k:
            return None
        s = random_view(rng, buf, shape=(), dtype=_same_or_other(rng, d)) if scalar else \
            _source(rng, buf, d, (k,))
        return None if s is None else (buf, {"d": d, "s": s, "m": m}, ["d"])
    return make


def _flat(index):
    def make(rng):
        buf = fresh_buffer(rng, 96)
        d = random_view(rng, buf)
        if d is None:
            return None
        n = d.size
        if index:
            k = int(rng.integers(1, n + 1))
            key = rng.choice(n, k, replace=False)
        else:
            a = int(rng.integers(0, n))
            key = slice(a, int(rng.integers(a + 1, n + 1)))
            k = key.stop - key.start
        s = _source(rng, buf, d, (k,))
        return None if s is None else (buf, {"d": d, "s": s, "k": key}, ["d"])
    return make


def _set_flat(rng):
    buf = fresh_buffer(rng, 96)
    d = random_view(rng, buf)
    if d is None:
        return None
    s = random_view(rng, buf, shape=(d.size,), dtype=_same_or_other(rng, d))
    return None if s is None else (buf, {"d": d, "s": s}, ["d"])


def _complex_part(rng):
    buf = fresh_buffer(rng, 128)
    d = random_view(rng, buf, dtype="c8", aligned=True)
    if d is None:
        return None
    s = random_view(rng, buf, shape=d.shape, dtype="f4")
    return None if s is None else (buf, {"d": d, "s": s}, ["d"])


def _setfield(rng):
    buf = fresh_buffer(rng, 128)
    d = random_view(rng, buf, dtype="i8", aligned=True)
    if d is None:
        return None
    s = random_view(rng, buf, shape=d.shape, dtype="i4")
    return None if s is None else (buf, {"d": d, "s": s, "off": int(rng.integers(2)) * 4},
                                   ["d"])


def _scatter(kind):
    def make(rng):
        buf = fresh_buffer(rng, 128)
        d = random_view(rng, buf)
        if d is None:
            return None
        ns = {"d": d}
        if kind == "put":
            k = int(rng.integers(1, d.size + 1))
            ns["idx"] = rng.integers(0, d.size, k) if rng.random() < 0.3 else \
                rng.choice(d.size, k, replace=False)
            shape = (k,)
        elif kind == "diag":
            if d.ndim != 2:
                return None
            shape = (int(rng.integers(1, 5)),)
        else:
            ns["m"] = rng.random(d.shape) < 0.6
            shape = d.shape if kind == "putmask" and rng.random() < 0.5 else \
                (int(rng.integers(1, 6)),)
            if kind == "place" and not ns["m"].any():
                return None
        s = _source(rng, buf, d, shape)
        if s is None:
            return None
        ns["s"] = s
        return buf, ns, ["d"]
    return make


def _place_shifted(rng):
    """np.place reads its values in order while writing the selected places: a source that
    is the target shifted by an element or two reads what it already wrote."""
    buf = fresh_buffer(rng, 128)
    d = random_view(rng, buf, ndim=1)
    if d is None:
        return None
    m = rng.random(d.shape) < 0.8
    k = int(m.sum())
    s = shifted_view(rng, buf, d, (k,)) if k else None
    return None if s is None else (buf, {"d": d, "s": s, "m": m}, ["d"])


def _unary_strided(dtypes, out_dtype=None):
    """A one-input ufunc from a strided input into a strided output (NumPy 2.4.6's kernel
    bugs: ``np.negative`` of 4- and 8-byte types, ``np.isfinite`` into booleans)."""
    def make(rng):
        dt = np.dtype(dtypes[rng.integers(len(dtypes))])
        n = int(rng.integers(8, 40))
        si, so = int(rng.integers(1, 9)), int(rng.integers(1, 4))
        if rng.random() < 0.3:
            si = -si
        buf = fresh_buffer(rng, n * 9 * dt.itemsize + 64)
        x = np.ndarray((n,), dt, buffer=buf, offset=0 if si > 0 else (n - 1) * -si *
                       dt.itemsize, strides=(si * dt.itemsize,))
        od = np.dtype(out_dtype or dt)
        out_base = n * 8 * dt.itemsize + 8
        span = (n - 1) * so * od.itemsize + od.itemsize
        if out_base + span > buf.nbytes:
            return None
        d = np.ndarray((n,), od, buffer=buf, offset=out_base, strides=(so * od.itemsize,))
        return buf, {"d": d, "x0": x}, ["d"]
    return make


def _concat(stack):
    def make(rng):
        buf = fresh_buffer(rng, 128)
        d = random_view(rng, buf, ndim=2 if stack else 1)
        if d is None or d.shape[0] < 2:
            return None
        if stack:
            parts = [random_view(rng, buf, shape=d.shape[1:], dtype=_same_or_other(rng, d))
                     for _ in range(d.shape[0])]
        else:
            c = int(rng.integers(1, d.shape[0]))
            parts = [random_view(rng, buf, shape=(c,), dtype=_same_or_other(rng, d)),
                     random_view(rng, buf, shape=(d.shape[0] - c,),
                                 dtype=_same_or_other(rng, d))]
        if any(p is None for p in parts):
            return None
        return buf, {"d": d, "parts": parts}, ["d"]
    return make


def _choose(rng):
    buf = fresh_buffer(rng, 160)
    d = random_view(rng, buf, ndim=1, dtype="i8")
    if d is None:
        return None
    n = d.shape[0]
    c0, c1 = (random_view(rng, buf, shape=(n,), dtype="i8") for _ in range(2))
    if c0 is None or c1 is None:
        return None
    return buf, {"d": d, "c0": c0, "c1": c1, "i": rng.integers(0, 2, n),
                 "mode": ["raise", "wrap", "clip"][rng.integers(3)]}, ["d"]


def _gather(kind):
    def make(rng):
        buf = fresh_buffer(rng, 128)
        s = random_view(rng, buf, ndim=1)
        if s is None:
            return None
        ns = {"s": s}
        if kind == "take":
            k = int(rng.integers(1, 5))
            ns["idx"] = rng.integers(0, s.shape[0], k)
            ns["mode"] = ["raise", "wrap", "clip"][rng.integers(3)]
        else:
            ns["c"] = rng.random(s.shape[0]) < 0.6
            k = int(ns["c"].sum())
            if not k:
                return None
        d = random_view(rng, buf, shape=(k,), dtype=s.dtype)
        if d is None:
            return None
        ns["d"] = d
        return buf, ns, ["d"]
    return make


def _ufunc(nin, where=False, nbytes=128, length=None):
    def make(rng):
        buf = fresh_buffer(rng, nbytes)
        d = random_view(rng, buf, shape=None if length is None else
                        (int(rng.integers(length // 2, length)),))
        if d is None:
            return None
        ins = [random_view(rng, buf, shape=d.shape, dtype=_same_or_other(rng, d))
               for _ in range(nin)]
        if any(x is None for x in ins):
            return None
        ns = {"d": d, **{f"x{j}": x for j, x in enumerate(ins)}}
        if where:
            ns["m"] = rng.random(d.shape) < 0.5
        return buf, ns, ["d"]
    return make


def _reduce(rng):
    buf = fresh_buffer(rng, 128)
    s = random_view(rng, buf, ndim=2)
    if s is None:
        return None
    ax = int(rng.integers(2))
    d = random_view(rng, buf, shape=(s.shape[1 - ax],), dtype=_same_or_other(rng, s))
    return None if d is None else (buf, {"d": d, "s": s, "ax": ax}, ["d"])


def _cumulative(rng):
    buf = fresh_buffer(rng, 128)
    s = random_view(rng, buf, ndim=1)
    if s is None:
        return None
    d = random_view(rng, buf, shape=s.shape, dtype=_same_or_other(rng, s))
    return None if d is None else (buf, {"d": d, "s": s}, ["d"])


def _product(rng):
    buf = fresh_buffer(rng, 256)
    dt = ["f8", "i8", "i4"][rng.integers(3)]
    m, k, n = (int(rng.integers(1, 4)) for _ in range(3))
    x = random_view(rng, buf, shape=(m, k), dtype=dt)
    y = random_view(rng, buf, shape=(k, n), dtype=dt)
    d = random_view(rng, buf, shape=(m, n), dtype=dt, aligned=True)
    if x is None or y is None or d is None:
        return None
    return buf, {"d": d, "x": x, "y": y}, ["d"]


def _at(rng):
    buf = fresh_buffer(rng, 128)
    d = random_view(rng, buf, ndim=1)
    if d is None:
        return None
    k = int(rng.integers(1, 6))
    s = random_view(rng, buf, shape=(k,), dtype=d.dtype)
    return None if s is None else (buf, {"d": d, "s": s,
                                         "idx": rng.integers(0, d.shape[0], k)}, ["d"])


def _aug_item(rng):
    case = _row(rng)
    return case


FAMILIES = [
    Family("setitem", "d[...] = s", _pair()),
    Family("setitem-1d", "d[...] = s", _pair(ndim=1)),
    Family("setitem-row", "d[i] = s", _row),
    Family("setitem-fancy", "d[idx] = s", _fancy),
    Family("setitem-mask", "d[m] = s", _masked()),
    Family("setitem-mask-0d", "d[m] = s", _masked(scalar=True)),
    Family("flat-slice", "d.flat[k] = s", _flat(index=False)),
    Family("flat-index", "d.flat[k] = s", _flat(index=True)),
    Family("set-flat", "d.flat = s", _set_flat),
    Family("set-real", "d.real = s", _complex_part),
    Family("set-imag", "d.imag = s", _complex_part),
    Family("setfield", "d.setfield(s, np.int32, off)", _setfield),
    Family("copyto", "np.copyto(d, s, casting='unsafe')", _pair()),
    Family("copyto-where", "np.copyto(d, s, casting='unsafe', where=s.real > 30)", _pair()),
    Family("put", "np.put(d, idx, s)", _scatter("put")),
    Family("place", "np.place(d, m, s)", _scatter("place")),
    Family("putmask", "np.putmask(d, m, s)", _scatter("putmask")),
    Family("fill_diagonal", "np.fill_diagonal(d, s)", _scatter("diag")),
    Family("concatenate", "np.concatenate(parts, out=d, casting='unsafe')", _concat(False)),
    Family("stack", "np.stack(parts, out=d, casting='unsafe')", _concat(True)),
    Family("choose", "np.choose(i, [c0, c1], out=d, mode=mode)", _choose),
    Family("take", "np.take(s, idx, out=d, mode=mode)", _gather("take")),
    Family("compress", "np.compress(c, s, out=d)", _gather("compress")),
    Family("negative", "np.negative(x0, out=d)", _ufunc(1), exact=False, guarded=True),
    Family("negative-long", "np.negative(x0, out=d)", _ufunc(1, nbytes=512, length=40),
           exact=False, guarded=True),
    Family("add", "np.add(x0, x1, out=d)", _ufunc(2), exact=False, guarded=True),
    Family("add-where", "np.add(x0, x1, out=d, where=m)", _ufunc(2, where=True), exact=False),
    Family("sqrt", "np.sqrt(x0, out=d)", _ufunc(1), exact=False, guarded=True),
    Family("isfinite", "np.isfinite(x0, out=d)", _unary_strided(["f4", "f8"], "?"),
           guarded=True),
    Family("negative-strided", "np.negative(x0, out=d)", _unary_strided(["f4", "i4", "f8",
                                                                          "i8", "i2"]),
           guarded=True),
    Family("place-shifted", "np.place(d, m, s)", _place_shifted),
    Family("aug-add", "d += x0", _ufunc(1), exact=False, guarded=True),
    Family("aug-row", "d[i] -= s", _row, exact=False, guarded=True),
    Family("aug-fancy", "d[idx] += s", _fancy, exact=False),
    Family("sum", "np.sum(s, axis=ax, out=d)", _reduce, exact=False),
    Family("max", "np.max(s, axis=ax, out=d)", _reduce),
    Family("min", "np.min(s, axis=ax, out=d)", _reduce),
    Family("cumsum", "np.cumsum(s, out=d)", _cumulative, exact=False),
    Family("accumulate", "np.multiply.accumulate(s, out=d)", _cumulative, exact=False),
    Family("add-at", "np.add.at(d, idx, s)", _at, exact=False),
    Family("matmul", "np.matmul(x, y, out=d)", _product, exact=False),
    Family("einsum", "np.einsum('ij,jk->ik', x, y, out=d)", _product, exact=False),
]
