"""The one rule for storing values in a dtype: a value that does not fit is refused.

Every path that puts numbers into a tensor uses these functions: ``Tensor(..., data=...)``
(lists and arrays alike), ``FillOperation`` values, and program files (``init`` data, fill
values, ``"arange"`` and ``"ones"``). The rule, for the numeric dtypes (bool, ints, unsigned
ints, floats, complex):

- **bool**: only ``True``/``False`` or a number equal to 0 or 1 (``NaN`` is refused).
- **int and uint dtypes**: only values equal to an integer in the dtype's range: ``3`` and
  ``3.0`` fit ``int8``, ``3.5``, ``NaN``, ``inf``, ``300`` (``int8``) and ``2**64``
  (``uint64``) do not. Nothing wraps and nothing is truncated.
- **float dtypes**: any real number is rounded to the nearest value of the dtype (so ``0.1``
  and ``np.float64(0.1)`` both fit ``float32``, and tiny values may round to 0), but a finite
  value whose rounding overflows to infinity is refused (``1e39`` into ``float32``, ``70000``
  into ``float16``). ``NaN`` and the infinities fit every float dtype.
- **complex dtypes**: the real and imaginary parts each follow the float rule. A complex value
  with a non-zero imaginary part does not fit a real dtype.
- Strings, bytes, dates and Python objects that are not numbers are refused for numeric dtypes.

Whether a value is a Python scalar, a NumPy scalar, or an element of a list or of a NumPy
array of any dtype makes no difference. A refusal raises :class:`AliasflowError` naming the
destination (tensor or op), the first offending value and the dtype. Non-numeric dtypes
(structured, strings, dates) are left to NumPy's own conversion.

Examples
--------
>>> import numpy as np
>>> bool(fit_scalar(0.1, np.dtype("float32"), "op 'f'")
...      == fit_scalar(np.float64(0.1), np.dtype("float32"), "op 'f'"))
True
>>> fit_scalar(300, np.dtype("int8"), "tensor 'A'")
Traceback (most recent call last):
...
aliasflow.core.errors.AliasflowError: tensor 'A': value 300 does not fit dtype int8 (-128..127)
"""
from __future__ import annotations

import numbers

import numpy as np

from .errors import AliasflowError

NUMERIC_KINDS = "biufc"
MAX_DIMS = 64  # NumPy's limit on the number of dimensions of an array
MAX_BYTES = 2**63 - 1  # what a byte count or offset can be on a 64-bit machine


INT64 = (-(2**63), 2**63 - 1)


def is_int(x) -> bool:
    """A Python or NumPy integer, not a bool."""
    return type(x) is int or (isinstance(x, (int, np.integer))
                              and not isinstance(x, (bool, np.bool_)))


def check_shape(owner: str, shape) -> tuple[int, ...]:
    """``shape`` as a tuple of non-negative ints (an int is a 1-d shape), or
    :class:`AliasflowError` naming ``owner``."""
    if type(shape) is tuple and len(shape) <= MAX_DIMS:
        # the common case, a tuple of plain ints in range, is returned as it is (the general
        # path below would build an equal tuple)
        for d in shape:
            if type(d) is not int or not 0 <= d <= INT64[1]:
                break
        else:
            return shape
    if is_int(shape):
        shape = (shape,)
    try:
        dims = tuple(shape)
    except TypeError:
        raise AliasflowError(f"{owner}: shape must be a tuple of ints, got {shape!r}") from None
    check_ints(dims, owner)
    for d in dims:
        if not is_int(d):
            raise AliasflowError(f"{owner}: shape must be a tuple of ints, got {shape!r}")
        if d < 0:
            raise AliasflowError(f"{owner}: negative size {int(d)} in shape {dims}")
    if len(dims) > MAX_DIMS:
        raise AliasflowError(f"{owner}: {len(dims)} dims; NumPy supports at most {MAX_DIMS}")
    return tuple(int(d) for d in dims)


def check_name(name, what: str) -> str:
    """``name`` when it is a non-empty string, else :class:`AliasflowError` (``what``: "tensor",
    "view", "op")."""
    if not isinstance(name, str) or not name:
        raise AliasflowError(f"{what} name must be a non-empty string, got {show_value(name)}")
    return name


def check_ints(values, what: str) -> None:
    """Refuse any int in ``values`` (ints, slices, nested tuples) outside 64 bits: no shape,
    offset, stride or index can be that large, and such ints cannot even be printed."""
    stack = [values]
    while stack:
        v = stack.pop()
        if isinstance(v, (tuple, list)):
            stack.extend(v)
        elif isinstance(v, slice):
            stack.extend((v.start, v.stop, v.step))
        elif isinstance(v, int) and not INT64[0] <= v <= INT64[1]:
            raise AliasflowError(f"{what}: {show_value(v)} does not fit in 64 bits")


def show_value(value, limit: int = 40) -> str:
    """A short text for ``value`` that never fails (even for a 5,000-digit integer)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**30:
        digits = value.bit_length() * 3010 // 10000 + 1  # about log10(2) per bit
        return f"{'-' if value < 0 else ''}an integer of about {digits} digits"
    try:
        text = repr(value.item() if isinstance(value, np.generic) else value)
    except Exception:  # a value that cannot even be shown
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _range(dtype: np.dtype) -> str:
    if dtype.kind == "b":
        return "False, True"
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return f"{info.min}..{info.max}"
    return f"finite values up to {float(np.finfo(dtype).max):.6g} in magnitude"


def _refuse(what: str, value, dtype: np.dtype, why: str = ""):
    raise AliasflowError(f"{what}: value {show_value(value)} does not fit dtype {dtype} "
                         f"({why or _range(dtype)})")


def _real_fits(x, dtype: np.dtype, what: str, original) -> None:
    """Check one real number (Python int or float, or NumPy real scalar) against ``dtype``."""
    kind = dtype.kind
    if kind == "b":
        if not (x == 0 or x == 1):
            _refuse(what, original, dtype)
        return
    if kind in "iu":
        if isinstance(x, (float, np.floating)):
            if not np.isfinite(x) or x != np.floor(x):
                _refuse(what, original, dtype, "not an integer")
            x = int(x)
        info = np.iinfo(dtype)
        if not info.min <= int(x) <= info.max:
            _refuse(what, original, dtype)
        return
    # float (or one part of a complex): round to nearest, but never overflow to infinity
    target = np.dtype(f"f{dtype.itemsize // 2}") if kind == "c" else dtype
    if isinstance(x, int):
        try:
            x = float(x)
        except OverflowError:
            _refuse(what, original, dtype)
    if not np.isfinite(x):
        return
    with np.errstate(over="ignore"):
        if not np.isfinite(np.asarray(x).astype(target)):
            _refuse(what, original, dtype)


def fit_scalar(value, dtype, what: str):
    """``value`` as a NumPy scalar of ``dtype``, or :class:`AliasflowError` if it does not fit.

    ``what`` names the destination in the message (``"tensor 'A'"``, ``"op 'f'"``).
    """
    dtype = np.dtype(dtype)
    if dtype.kind not in NUMERIC_KINDS:
        try:
            return np.asarray(value, dtype=dtype)[()]
        except (TypeError, ValueError, OverflowError) as exc:
            raise AliasflowError(f"{what}: value {show_value(value)} cannot be stored as "
                                 f"{dtype}: {exc}") from None
    if isinstance(value, (bool, np.bool_)):
        value_real = bool(value)
        _real_fits(value_real, dtype, what, value)
        return np.asarray(value_real).astype(dtype)[()]
    if isinstance(value, (numbers.Complex, np.number)) and not isinstance(
            value, (numbers.Real, np.integer, np.floating)):  # complex
        z = complex(value)
        if dtype.kind != "c":
            if z.imag != 0:
                _refuse(what, value, dtype, "a complex value with an imaginary part")
            _real_fits(z.real, dtype, what, value)
            return np.asarray(z.real).astype(dtype)[()]
        _real_fits(z.real, dtype, what, value)
        _real_fits(z.imag, dtype, what, value)
        return np.asarray(z).astype(dtype)[()]
    if isinstance(value, (int, np.integer)):
        _real_fits(int(value), dtype, what, value)
        if dtype.kind in "fc":
            return np.asarray(float(int(value))).astype(dtype)[()]
        return np.asarray(int(value)).astype(dtype)[()]
    if isinstance(value, (float, np.floating)):
        _real_fits(value, dtype, what, value)
        with np.errstate(all="ignore"):
            return np.asarray(value).astype(dtype)[()]
    if isinstance(value, numbers.Real):  # Fraction, Decimal-like registered reals
        try:
            as_float = float(value)
        except (OverflowError, ValueError):
            _refuse(what, value, dtype)
        if dtype.kind in "iu":
            if as_float != int(value) or int(value) != value:
                _refuse(what, value, dtype, "not an integer")
            return fit_scalar(int(value), dtype, what)
        return fit_scalar(as_float, dtype, what)
    raise AliasflowError(f"{what}: value {show_value(value)} is not a number, so it does not "
                         f"fit dtype {dtype}")


def _first_bad(src: np.ndarray, bad: np.ndarray, what: str, dtype: np.dtype, why: str = ""):
    if bad.any():
        where = np.unravel_index(int(np.flatnonzero(bad.reshape(-1))[0]), src.shape)
        item = src[where]
        at = f" at index {tuple(int(i) for i in where)}" if src.ndim else ""
        _refuse(f"{what}{at}", item, dtype, why)


def fit_array(data, dtype, what: str) -> np.ndarray:
    """``data`` (a list, nested lists, scalar or array of any dtype) converted to a new
    C-contiguous array of ``dtype``; :class:`AliasflowError` names the first value that does
    not fit (see the module docstring)."""
    dtype = np.dtype(dtype)
    if dtype.kind not in NUMERIC_KINDS:
        try:
            return np.array(data, dtype=dtype, order="C", copy=True)
        except (TypeError, ValueError, OverflowError) as exc:
            raise AliasflowError(f"{what}: data cannot be read as {dtype}: {exc}") from None
    try:
        src = np.asarray(data)
    except (TypeError, ValueError, OverflowError) as exc:  # ragged lists and the like
        raise AliasflowError(f"{what}: data cannot be read as {dtype}: {exc}") from None
    if dtype.kind in "iu" and src.dtype.kind == "f" and not isinstance(data, np.ndarray):
        # nested lists mixing int64 and uint64 rows promote to float64, which rounds big
        # ints: judge the Python values themselves
        src = np.asarray(data, dtype=object)
    if src.dtype.kind == "O":  # Python ints too big for int64/uint64, mixed objects
        flat = [fit_scalar(x, dtype, what) for x in src.reshape(-1).tolist()]
        return np.array(flat, dtype=dtype).reshape(src.shape)
    if src.dtype.kind not in NUMERIC_KINDS:
        raise AliasflowError(f"{what}: data of dtype {src.dtype} (not numbers) does not fit "
                             f"dtype {dtype}")
    kind = dtype.kind
    with np.errstate(all="ignore"):
        if src.dtype.kind == "c" and kind != "c":
            _first_bad(src, src.imag != 0, what, dtype, "a complex value with an imaginary part")
            src_real = src.real
        else:
            src_real = src
        if kind == "b":
            _first_bad(src, ~((src_real == 0) | (src_real == 1)), what, dtype)
        elif kind in "iu":
            info = np.iinfo(dtype)
            if src_real.dtype.kind == "f":
                _first_bad(src, ~np.isfinite(src_real) | (src_real != np.floor(src_real)),
                           what, dtype, "not an integer")
                # powers of two are exact in every float dtype (or inf, still a sound bound)
                bound = 2.0 ** (info.bits - (kind == "i"))
                low = -bound if kind == "i" else 0.0
                _first_bad(src, (src_real < low) | (src_real >= bound), what, dtype)
            elif src_real.dtype.kind in "iub" and src_real.size:
                values = src_real.reshape(-1)
                if int(values.min()) < info.min or int(values.max()) > info.max:
                    for k, x in enumerate(values.tolist()):  # rare: find the first one
                        if not info.min <= x <= info.max:
                            bad = np.zeros(values.shape, bool)
                            bad[k] = True
                            _first_bad(src, bad.reshape(src.shape), what, dtype)
        else:  # float or complex target: overflow to infinity is the only refusal
            cast = src.astype(dtype)
            if kind == "c" and src.dtype.kind == "c":
                grew = (np.isinf(cast.real) & np.isfinite(src.real)) | \
                       (np.isinf(cast.imag) & np.isfinite(src.imag))
            else:
                finite_src = np.isfinite(src_real) if src_real.dtype.kind in "fc" else True
                grew = np.isinf(cast.real if kind == "c" else cast) & finite_src
            _first_bad(src, np.asarray(grew), what, dtype)
            return np.array(cast, order="C", copy=True)
        return np.array(src_real.astype(dtype), order="C", copy=True)


def check_dtype(dtype, what: str) -> np.dtype:
    """``dtype`` as a NumPy dtype with fixed-size elements, or :class:`AliasflowError`."""
    try:
        dtype = np.dtype(dtype)
    except (TypeError, ValueError) as exc:
        raise AliasflowError(f"{what}: unknown dtype {dtype!r}") from exc
    if dtype.hasobject or dtype.itemsize == 0:
        raise AliasflowError(f"{what}: dtype {dtype} has no fixed-size elements")
    if dtype.subdtype is not None:  # ('f4', (2,)): NumPy would add axes to the storage
        raise AliasflowError(f"{what}: dtype {dtype} is a subarray dtype; use the base dtype "
                             f"{dtype.subdtype[0]} with the extra axes {dtype.subdtype[1]} in "
                             f"the shape")
    return dtype


def check_nbytes(shape: tuple, dtype: np.dtype, what: str, limit: int = MAX_BYTES) -> int:
    """The byte size of a ``shape``/``dtype`` storage, or :class:`AliasflowError` when NumPy
    could not allocate it (more than 64 dims, or more bytes than ``limit``, counting empty
    dims as 1 as NumPy does)."""
    if len(shape) > MAX_DIMS:
        raise AliasflowError(f"{what}: {len(shape)} dims; NumPy supports at most {MAX_DIMS}")
    nbytes = dtype.itemsize
    for n in shape:
        nbytes *= max(n, 1)
        if nbytes > limit:
            break
    if nbytes > limit:
        size = dtype.itemsize
        for n in shape:
            size *= n
        counted = "" if size else " (NumPy counts empty dims as 1)"
        raise AliasflowError(f"{what}: shape {show_value(shape, 80)} of {dtype} needs "
                             f"{show_value(size if size else _nonzero_bytes(shape, dtype))} "
                             f"bytes{counted}, more than the {limit} a storage may have")
    size = dtype.itemsize
    for n in shape:
        size *= n
    return size


def _nonzero_bytes(shape, dtype) -> int:
    size = dtype.itemsize
    for n in shape:
        size *= max(n, 1)
    return size
