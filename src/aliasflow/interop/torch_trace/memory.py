"""Storages seen by a trace, by address range and lifetime, and tensor references into them.

A torch storage is known by its ``StorageImpl`` (``torch._C._storage_address(t)``). The tracer
holds a C++ *weak* reference to each one (``StorageWeakRef``): its bytes are freed as usual
(allocator reuse is not changed) but the ``StorageImpl`` object itself is not, so its address
cannot name a different storage while the trace lives. A storage whose data pointer or size
changes (``resize_``, an ``out=`` argument grown by the op) starts a new generation. Every
generation is a :class:`StorageGen`: one aliasflow storage at its real address range.

Memory the trace keeps (``values=True``): the bytes of each generation the trace did not
create, copied once when the trace first sees it (``snapshot``); the bytes an op that leaves
its output unspecified (``empty``) produced, copied once when it is made; and at the end, for
every generation still alive, a CRC-32 of its bytes (and a copy when it is at most
:data:`FINAL_COPY_LIMIT` bytes, to say which bytes differ). So peak memory grows with the
bytes a trace first touches, never with the number of writes.
"""
from __future__ import annotations

import zlib
from math import prod

import numpy as np

FINAL_COPY_LIMIT = 1 << 16


NO_ALIASES: frozenset = frozenset()   # one shared empty set (most generations alias nothing)


class StorageGen:
    """One lifetime of one address range: ``address``, ``nbytes``, who made it, its bytes
    when the trace first saw it (``snapshot``, for replay) and a CRC-32 at the end."""

    __slots__ = ("id", "address", "nbytes", "end", "creator", "first_op", "snapshot",
                 "_final_crc",
                 "final_bytes", "weak", "alive_at_end", "region", "region_start", "aliases",
                 "group", "dirty", "device")

    def __init__(self, id_: int, address: int, nbytes: int, creator, weak, device="cpu",
                 first_op=None):
        self.id = id_
        self.address = address
        self.nbytes = nbytes
        self.end = address + nbytes
        self.creator = creator        # index of the op that allocated it, None if it existed
        self.first_op = first_op      # index of the first op that touched it
        self.snapshot = None          # its bytes at first sight (None: created): bytes on the
        #                               CPU, else an UntypedStorage copy
        self._final_crc = None        # CRC-32 of its bytes at the end of the trace (if alive;
        #                               for a small storage, from final_bytes when first asked)
        self.final_bytes = None       # a copy of them (bytes), for small storages
        self.weak = weak              # the StorageImpl's address, held by a weak reference
        self.alive_at_end = False
        self.region = None            # the aliasflow tensor holding this address range
        self.region_start = 0
        self.aliases = NO_ALIASES     # ids of older generations alive and overlapping it
        self.group = id_              # generations sharing memory while alive share a group
        self.dirty = False            # written by an op other than its creator
        self.device = device

    @property
    def final_crc(self):
        """CRC-32 of its bytes at the end of the trace (None: not alive then, or not kept)."""
        if self._final_crc is None and self.final_bytes is not None:
            self._final_crc = zlib.crc32(self.final_bytes)
        return self._final_crc

    @final_crc.setter
    def final_crc(self, value):
        self._final_crc = value

    def reuses(self, older: "StorageGen") -> bool:
        """Does this generation occupy memory ``older`` had before it was freed? A storage
        the trace saw allocated never overlaps a live one; one it first saw as an argument
        (``from_numpy``, ``from_blob``) may, and then it aliases it instead."""
        return older is not self and older.id not in self.aliases

    @property
    def name(self) -> str:
        return f"s{self.id}"

    def __repr__(self) -> str:
        made = "existing" if self.creator is None else f"made by op {self.creator}"
        return f"StorageGen({self.name}, 0x{self.address:x}+{self.nbytes}, {made})"


_NUMPY: dict = {}


def numpy_dtype(dtype) -> np.dtype:
    """The NumPy dtype a view of torch ``dtype`` elements carries: the same type where NumPy
    has it, else an unsigned integer of the same size (``bfloat16`` -> ``uint16``); the torch
    dtype itself stays with the tracer."""
    got = _NUMPY.get(dtype)
    if got is None:
        name = str(dtype).replace("torch.", "")
        try:
            got = np.dtype(name)
            if got.itemsize != dtype.itemsize:
                raise TypeError(name)
        except TypeError:
            got = np.dtype(f"u{dtype.itemsize}") if dtype.itemsize in (1, 2, 4, 8) else \
                np.dtype(f"V{dtype.itemsize}")
        _NUMPY[dtype] = got
    return got


class Ref:
    """A tensor as the trace saw it: its storage generation ``gen`` and ``view``, an
    aliasflow :class:`~aliasflow.TensorView` of its elements over the generation's bytes (the
    offset and strides in bytes, the dtype :func:`numpy_dtype` of ``dtype``), plus what a
    view does not say: the torch ``dtype``, the conj/neg bits (replay restores them), the
    argument it is a piece of (``parent``), and when its tensor object was made (``born``).
    Holds no torch memory. A tensor without memory (meta, fake) has ``gen`` None and a view
    over a virtual range no memory occupies."""

    __slots__ = ("gen", "view", "dtype", "conj", "neg", "parent", "born", "_key")

    def __init__(self, gen, view, dtype, conj=False, neg=False, parent=None, born=-1):
        self.gen = gen
        self.view = view
        self.dtype = dtype
        self.conj = conj
        self.neg = neg
        self.parent = parent   # the argument's view, when this is a piece of what it wrote
        self.born = born       # index of the op that made this tensor object (-1: before)
        self._key = None

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def sizes(self) -> tuple:
        return self.view.shape

    @property
    def strides(self) -> tuple:
        """In elements."""
        k = self.itemsize
        return tuple(s // k for s in self.view.stride)

    @property
    def offset(self) -> int:
        """In elements, from the start of the storage."""
        return self.view.offset // self.itemsize

    @property
    def start(self) -> int:
        """Address of element ``(0, ..., 0)``."""
        return self.view.tensor.storage.address + self.view.offset

    @property
    def numel(self) -> int:
        return prod(self.view.shape)

    def byte_layout(self):
        """``(start address, shape, stride)`` in bytes, canonical: size-1 dims dropped and
        dims that continue each other merged, the element's bytes as the last dim. Two refs
        with equal layouts and dtypes touch the same bytes in the same order."""
        if self._key is None:
            k = self.itemsize
            if 0 in self.sizes or self.gen is None:
                self._key = (0, (0,), (1,))
                return self._key
            dims = [(n, s) for n, s in zip(self.view.shape, self.view.stride) if n != 1]
            dims.append((k, 1))
            merged = [dims[0]]
            for n, s in dims[1:]:
                pn, ps = merged[-1]
                if ps == s * n:
                    merged[-1] = (pn * n, s)
                else:
                    merged.append((n, s))
            self._key = (self.start, tuple(n for n, _ in merged), tuple(s for _, s in merged))
        return self._key

    def same_elements(self, other: "Ref") -> bool:
        """The very same elements in the same order, read as the same dtype."""
        return self.dtype == other.dtype and self.byte_layout() == other.byte_layout()

    @property
    def through(self) -> "Ref":
        """The view the program passed (the whole argument for a data-dependent piece)."""
        return self.parent or self

    def describe(self) -> str:
        dt = str(self.dtype).replace("torch.", "")
        where = self.gen.name if self.gen is not None else "no memory"
        return (f"{where}[{dt} {tuple(self.sizes)} stride {self.strides} "
                f"offset {self.offset}]")

    def __repr__(self) -> str:
        return f"Ref({self.describe()})"


def canonical(shape, strides) -> tuple:
    """``(shape, strides)`` without size-1 dims (their strides never matter); ``((0,), ())``
    for an empty view."""
    if 0 in shape:
        return (0,), ()
    return (tuple(n for n in shape if n != 1),
            tuple(s for n, s in zip(shape, strides) if n != 1))


def same_layout(a, b) -> bool:
    """Two access tuples of the tracer: the same elements in the same order, same dtype."""
    return a[3] is b[3] and a[4] == b[4] and a[7] == b[7] and \
        canonical(a[5], a[6]) == canonical(b[5], b[6])


_internal_cache: dict = {}


def may_overlap_internally(sizes, strides) -> bool:
    """False when the dims provably never map two indices to one element (each stride, in
    increasing order, steps past everything the smaller ones reach); True means "check"."""
    key = (sizes, strides)
    got = _internal_cache.get(key)
    if got is not None:
        return got
    dims = sorted((abs(s), n) for n, s in zip(sizes, strides) if n > 1)
    reach = 0
    got = False
    for s, n in dims:
        if s <= reach:
            got = True
            break
        reach += s * (n - 1)
    if len(_internal_cache) < 65536:
        _internal_cache[key] = got
    return got
