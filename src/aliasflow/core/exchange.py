"""Import without copies: NumPy arrays, DLPack, the buffer protocol (views export DLPack
themselves: :meth:`TensorView.__dlpack__`).

An imported array becomes a view over a :class:`Storage` spanning exactly the bytes the
array can touch, at the array's real address, owned by the array (which keeps the memory
alive). Nothing is registered globally: two arrays over one buffer, imported separately and
in any order, alias because their address ranges intersect, and every analysis finds that
exactly. Importing costs O(ndim), never O(size).

Elements of an imported view are counted in cells of the largest size dividing the
itemsize and every byte stride: the array's own dtype in the usual case, smaller units for
arrays whose strides are not multiples of their itemsize (fields of packed records,
``as_strided`` byte windows).
"""
from __future__ import annotations

import itertools

import numpy as np

from .errors import AliasflowError
from .storage import Storage, array_address, base_most, extent_storage, unit_dtype
from .view import Tensor, TensorView, _build

_DLPACK_CPU = 1
_numbers = itertools.count()


def _as_ndarray(obj, who: str) -> np.ndarray:
    if isinstance(obj, np.ndarray):
        return obj
    if isinstance(obj, (TensorView, Tensor)):
        raise AliasflowError(f"{who}: {type(obj).__name__} {obj.name!r} is already aliasflow "
                             f"memory; use it directly")
    if not (hasattr(obj, "__array_interface__") or hasattr(obj, "__array_struct__")
            or has_buffer(obj)):
        raise AliasflowError(f"{who}: needs an array (an ndarray, an object with "
                             f"__array_interface__ or the buffer protocol), got "
                             f"{type(obj).__name__}")
    try:
        return np.asarray(obj, copy=False)  # refuses instead of copying
    except (ValueError, TypeError, BufferError) as exc:
        raise AliasflowError(f"{who}: {type(obj).__name__} cannot be viewed without a "
                             f"copy: {exc}") from None


def has_buffer(obj) -> bool:
    """Whether ``obj`` exports the buffer protocol."""
    try:
        memoryview(obj).release()
    except TypeError:
        return False
    return True


def from_numpy(array, name: str | None = None) -> TensorView:
    """A view of an array's memory, without a copy: any strides (negative, zero,
    non-contiguous), any ``.base`` chain, any fixed-size dtype.

    Read-only arrays give read-only views (writing through them is refused before anything
    runs). Arrays that share memory alias exactly, however they were imported.

    Examples
    --------
    >>> import numpy as np, aliasflow as af
    >>> buf = np.arange(12.0)
    >>> rows = af.from_numpy(buf.reshape(3, 4)[:, ::2], "rows")
    >>> tail = af.from_numpy(buf[5:], "tail")
    >>> af.check_memory_overlap(rows, tail), af.overlap(rows, tail).count
    (True, 3)
    >>> bytes_ = af.from_numpy(buf.view(np.int8)[8:9], "byte8")   # a byte of element 1
    >>> af.check_memory_overlap(bytes_, af.from_numpy(buf[1:2]))
    True
    """
    if name is None:
        arr = array if type(array) is np.ndarray else _as_ndarray(array, "from_numpy")
        dtype = arr.dtype
        if dtype.hasobject or dtype.itemsize == 0:
            raise AliasflowError(f"from_numpy: dtype {dtype} has no fixed-size elements")
        name = f"array{next(_numbers)}"
    else:
        who = f"from_numpy({name!r})"
        arr = _as_ndarray(array, who)
        if not isinstance(name, str) or not name:
            raise AliasflowError(f"from_numpy: name must be a non-empty string, got {name!r}")
        dtype = arr.dtype
        if dtype.hasobject or dtype.itemsize == 0:
            raise AliasflowError(f"{who}: dtype {dtype} has no fixed-size elements")
    # The common case in one pass: a non-empty array whose strides are whole elements. The
    # storage spans exactly the bytes the array can touch, so the view (element 0 at
    # -low, extent from the storage's first element to its last) is in bounds as made.
    address = array_address(arr)
    isz = dtype.itemsize
    shape, strides = arr.shape, arr.strides
    low = high = 0
    whole = dtype.subdtype is None
    for n, s in zip(shape, strides):
        if n > 1:
            if s % isz:
                whole = False
            elif s < 0:
                low += s * (n - 1)
            else:
                high += s * (n - 1)
        elif n == 0:
            whole = False
            break
    if whole:
        storage = Storage(address + low, high - low + isz, owner=arr, name=name,
                          readonly=not arr.flags.writeable, _root_of=base_most(arr))
        last = (high - low) // isz
        tensor = Tensor._over(name, storage, dtype, (last + 1,))
        stride = tuple([s // isz if n > 1 else 0 for n, s in zip(shape, strides)])
        return _build(TensorView, name, tensor, -low // isz, shape, stride, dtype, (0, last))
    storage, start, unit = extent_storage(arr, name, base_most(arr))
    tensor = Tensor.on(storage, dtype if unit == dtype.itemsize else unit_dtype(unit),
                       (storage.nbytes // unit,), name)
    stride = tuple(s // unit if n > 1 else 0 for n, s in zip(arr.shape, arr.strides))
    return TensorView(name, tensor, start // unit, arr.shape, stride, dtype)


def from_dlpack(obj, name: str | None = None) -> TensorView:
    """A view of anything that exports DLPack (PyTorch, NumPy, JAX, ...), without a copy.

    Versioned capsules, byte offsets and strides are understood (NumPy's importer reads the
    capsule); the producer stays alive as long as the view. Only memory the host can read
    is imported (what NumPy's importer takes: CPU, and CUDA/ROCm host or managed memory);
    a producer on another device is refused naming it. Read-only exports give read-only
    views.

    Examples
    --------
    >>> import numpy as np, aliasflow as af
    >>> a = np.zeros(6, np.float32)
    >>> v = af.from_dlpack(a[1:4])
    >>> v.numpy()[:] = 7
    >>> a.tolist()
    [0.0, 7.0, 7.0, 7.0, 0.0, 0.0]
    """
    if not hasattr(obj, "__dlpack__"):
        raise AliasflowError(f"from_dlpack: {type(obj).__name__} does not export DLPack "
                             f"(no __dlpack__ method)")
    _refuse_lazy_bits(obj)
    try:
        arr = np.from_dlpack(obj)  # refuses memory the host cannot read
    except Exception as exc:  # noqa: BLE001 - a producer's own failure, whatever its type
        # the producer's device, asked only now (PyTorch's __dlpack_device__ costs 1.8 us,
        # as much as the import), names the usual reason
        _refuse_other_devices(obj)
        raise AliasflowError(f"from_dlpack: {type(obj).__name__} cannot be imported: "
                             f"{exc or type(exc).__name__}") from None
    if not isinstance(arr, np.ndarray):  # pragma: no cover - NumPy always gives one
        raise AliasflowError(f"from_dlpack: {type(obj).__name__} gave no array")
    return from_numpy(arr, name)


def _refuse_lazy_bits(obj) -> None:
    """Refuse a PyTorch tensor whose negative or conjugate bit is set: its memory holds
    values that PyTorch negates or conjugates when read (``z.conj()``, ``z.conj().imag``),
    and DLPack has no field for that, so the capsule's bytes alone would read wrong (PyTorch
    refuses to export a conjugate tensor but exports a negative one as its raw memory)."""
    for bit, what, fix in _LAZY_BITS:
        try:
            set_ = getattr(obj, bit)() is True
        except Exception:  # noqa: BLE001 - no such method (not PyTorch): nothing to refuse
            continue
        if set_:
            raise AliasflowError(f"from_dlpack: {type(obj).__name__} has its {what} bit set "
                                 f"(as z.conj() and z.conj().imag make): its memory holds "
                                 f"the values before that {what} step, which DLPack cannot "
                                 f"express; import x.{fix}() instead (a copy)")


_LAZY_BITS = (("is_neg", "negation", "resolve_neg"), ("is_conj", "conjugation", "resolve_conj"))


def _refuse_other_devices(obj) -> None:
    device = getattr(obj, "__dlpack_device__", None)
    if device is None:
        return
    try:
        kind = int(device()[0])
    except Exception as exc:  # noqa: BLE001 - a producer's own failure, reported as such
        raise AliasflowError(f"from_dlpack: {type(obj).__name__}.__dlpack_device__() "
                             f"failed: {exc}") from None
    if kind != _DLPACK_CPU:
        raise AliasflowError(f"from_dlpack: {type(obj).__name__} lives on DLPack device "
                             f"type {kind}; only host (CPU, type 1) memory can be imported")
