"""The runtime under aliasflow.mge: settings, the recording, and the two lower layers.

- :class:`Tensor` is the Python tensor (what a variable refers to; ``id(a)`` tells whether it
  changed). It holds exactly one reference: its current implementation.
- :class:`Impl` is the C++ tensor: shape, stride and offset (in elements) on one storage.
- :class:`Storage` is a block of memory (address + nbytes). Its ``refcount`` counts the
  implementations using it; when the last one dies the storage is released.

Every memory access is an aliasflow op appended to the recording (:func:`recorded_ops`), so
``af.analyze(recorded_ops())`` shows which ops depend on which, implicit edges included.
"""
from __future__ import annotations

import itertools
import weakref
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ...core.errors import AliasflowError, ExecutionError
from ...core.interpret import execute
from ...core.record import OpRecord
from ...core.exchange import from_numpy
from ...core.view import TensorView

DEVICE = "xpux:0"
VERSIONS = ("1.8", "1.9")
SEMANTICS = ("megengine", "alias")


class _State:
    version = "1.9"
    semantics = "megengine"
    ops: list[OpRecord] = []
    op_ids = itertools.count(1)
    impl_ids = itertools.count(1)
    storage_ids = itertools.count(1)


class config:
    """Set the MegEngine version (``"1.9"`` default, or ``"1.8"``) and the semantics.

    ``semantics="megengine"`` (default): in-place ops and ``a[idx] = v`` give the tensor a new
    implementation on a new storage (copy-on-write), so other tensors sharing the old storage
    never see the write. ``semantics="alias"``: they write through the shared storage, as NumPy
    and PyTorch do. The version decides whether ``a[idx]``, ``reshape`` and ``transpose``
    share the storage (1.9) or copy the needed part (1.8), in both semantics.

    Call it to change the settings; use it as a context manager to restore them on exit.
    ``config()`` with no arguments reports the current settings.
    """

    def __init__(self, version: str | None = None, semantics: str | None = None):
        if version is not None and version not in VERSIONS:
            raise AliasflowError(f"mge.config: version must be one of {VERSIONS}, "
                                 f"got {version!r}")
        if semantics is not None and semantics not in SEMANTICS:
            raise AliasflowError(f"mge.config: semantics must be one of {SEMANTICS}, "
                                 f"got {semantics!r}")
        self._saved = (_State.version, _State.semantics)
        if version is not None:
            _State.version = version
        if semantics is not None:
            _State.semantics = semantics
        self.version, self.semantics = _State.version, _State.semantics

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _State.version, _State.semantics = self._saved
        return False

    def __repr__(self) -> str:
        return f"mge.config(version={self.version!r}, semantics={self.semantics!r})"


def recorded_ops() -> list[OpRecord]:
    """The op records of every front-end action so far, in program order."""
    return list(_State.ops)


def reset() -> None:
    """Forget the recording (the memory it kept alive can then be freed). Names keep counting,
    so ops recorded later never clash with earlier ones."""
    _State.ops.clear()


def _op_name(kind: str) -> str:
    return f"{kind}_{next(_State.op_ids)}"


def _execute(op) -> list:
    """Run one op (a record, or a builder's record), record it, and return its values."""
    rec = op if isinstance(op, OpRecord) else op.record()
    try:
        values = execute(rec)
    except AliasflowError:
        raise
    except (ValueError, TypeError, ArithmeticError, ExecutionError) as exc:
        raise AliasflowError(f"mge: op {rec.name!r} failed: {exc}") from exc
    _State.ops.append(rec)
    return values


# ---- the two lower layers --------------------------------------------------------------------
class Storage:
    """A block of memory: ``address``, ``nbytes``; ``refcount`` implementations use it."""

    def __init__(self, count: int, dtype: np.dtype):
        self.uid = next(_State.storage_ids)
        self.name = f"S{self.uid}"
        self.dtype = np.dtype(dtype)
        self.array = np.empty(max(count, 1), self.dtype)  # one element at least: a real address
        self.address = self.array.ctypes.data
        self.nbytes = count * self.dtype.itemsize
        self.refcount = 0
        self.released = False
        # aliasflow's view of the whole block, at its real address; every implementation's
        # view is a window on the same aliasflow tensor
        self.view = from_numpy(self.array, self.name)

    def _ref(self) -> None:
        if self.released:
            raise AliasflowError(f"storage {self.name} was released and cannot be used again")
        self.refcount += 1

    def _unref(self) -> None:
        self.refcount -= 1
        if self.refcount == 0:
            # Released: no implementation can reach it any more. The recording (if any) still
            # holds the memory, so its address is not reused while ops refer to it.
            self.released = True
            self.array = self.view = None

    def __repr__(self) -> str:
        state = "released" if self.released else f"refcount={self.refcount}"
        return f"Storage({self.name}, address={self.address:#x}, nbytes={self.nbytes}, {state})"


class Impl:
    """The C++ tensor: ``shape``, ``stride`` and ``offset`` (elements) on a :class:`Storage`.

    Creating one takes a reference on the storage; its death gives it back.
    """

    def __init__(self, storage: Storage, shape, stride, offset: int):
        self.uid = next(_State.impl_ids)
        self.storage = storage
        self.shape = tuple(int(n) for n in shape)
        self.stride = tuple(int(s) for s in stride)
        self.offset = int(offset)
        storage._ref()
        weakref.finalize(self, storage._unref)
        self.view = TensorView(f"{storage.name}.v{self.uid}", storage.view.tensor, self.offset,
                               self.shape, self.stride)

    @property
    def dtype(self) -> np.dtype:
        return self.storage.dtype

    def ndarray(self) -> np.ndarray:
        """An ndarray over this implementation's memory (no copy, no record)."""
        isz = self.dtype.itemsize
        return np.ndarray(self.shape, self.dtype, buffer=self.storage.array,
                          offset=self.offset * isz, strides=tuple(s * isz for s in self.stride))

    @classmethod
    def over(cls, storage: Storage, array: np.ndarray) -> "Impl":
        """The implementation addressing ``array``, a NumPy view of ``storage``'s memory."""
        isz = storage.dtype.itemsize
        start = array.__array_interface__["data"][0] - storage.address
        return cls(storage, array.shape, tuple(s // isz for s in array.strides), start // isz)

    @classmethod
    def fresh(cls, shape, dtype) -> "Impl":
        """A contiguous implementation on a new storage."""
        count = int(np.prod(shape, dtype=np.int64))
        storage = Storage(count, dtype)
        arr = np.ndarray(tuple(shape), storage.dtype, buffer=storage.array)
        return cls.over(storage, arr)


# ---- what mge.layers reports -----------------------------------------------------------------
@dataclass(frozen=True)
class StorageInfo:
    """The storage layer: ``uid`` (``id``), ``address``, ``nbytes``, ``refcount`` (how many
    implementations use it), ``released``; ``handle`` is the live object, whose refcount
    keeps changing after the snapshot."""
    uid: int
    name: str
    address: int
    nbytes: int
    refcount: int
    released: bool
    handle: "Storage" = field(compare=False, repr=False)

    @property
    def id(self) -> int:
        return self.uid

    @property
    def ptr(self) -> int:
        """The seed's word for ``address``."""
        return self.address

    @property
    def length(self) -> int:
        """The seed's word for ``nbytes``."""
        return self.nbytes


@dataclass(frozen=True)
class ImplInfo:
    """The C++ tensor layer: ``uid`` (``id``), ``shape``, ``stride`` and ``offset`` (in
    elements), ``dtype`` and its ``storage``."""
    uid: int
    shape: tuple
    stride: tuple
    offset: int
    dtype: str
    storage: StorageInfo

    @property
    def id(self) -> int:
        return self.uid


class Layers(NamedTuple):
    """A snapshot of a tensor's three layers (see :func:`~aliasflow.mge.layers`); unpacks as
    ``python_id, impl, storage``."""
    python_id: int
    impl: ImplInfo
    storage: StorageInfo

    @property
    def python(self) -> int:
        """The seed's "Python Tensor" layer: its ``id``."""
        return self.python_id

    @property
    def cpp(self) -> ImplInfo:
        """The seed's "C++ Tensor" layer (same as ``impl``)."""
        return self.impl


def storage_info(storage: Storage) -> StorageInfo:
    return StorageInfo(storage.uid, storage.name, storage.address, storage.nbytes,
                       storage.refcount, storage.released, storage)
