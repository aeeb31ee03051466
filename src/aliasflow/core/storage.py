"""Storages: byte ranges of memory, identified by address, never by Python object.

A :class:`Storage` is ``nbytes`` bytes starting at ``address``. Two storages alias exactly
when their ranges intersect, whichever objects describe them: two NumPy arrays over one
buffer, imported separately, are two storages over the same addresses, and every analysis
groups accesses by connected address ranges (see :func:`memory_groups`).

- Memory aliasflow allocates lives at its real NumPy buffer address.
- Imported memory (NumPy, DLPack) lives where it is; the storage's ``owner`` keeps it alive
  for as long as the storage (and so every view of it) is alive.
- Virtual storages (analysis only) get addresses at or above ``2**64``, where no real memory
  can be, so they never collide with anything.
- A storage made from an address alone (``Storage(address, nbytes)``) describes memory
  someone else owns (a traced program's buffers): it can be analysed, not read or written.

``root`` is the allocation a storage is part of (TensorFlow's ``root_buffer()``); a storage
that is an allocation of its own is its own root.
"""
from __future__ import annotations

import itertools
import threading
from math import gcd

import numpy as np

from ..solver.native import load
from .errors import AliasflowError

VIRTUAL_BASE = 1 << 64  # real addresses are below; virtual storages are laid out from here
_VIRTUAL_ALIGN = 64
_virtual_lock = threading.Lock()
_virtual_next = VIRTUAL_BASE
_names = itertools.count()


def _reserve(nbytes: int) -> int:
    """A fresh virtual address range of ``nbytes`` (a gap after it, so neighbours never meet)."""
    global _virtual_next
    with _virtual_lock:
        address = _virtual_next
        _virtual_next += (nbytes // _VIRTUAL_ALIGN + 2) * _VIRTUAL_ALIGN
    return address


class _RawBytes:
    """Exposes ``nbytes`` bytes at ``address`` to NumPy and keeps ``owner`` alive.

    ``np.asarray(_RawBytes(...))`` is a uint8 array over the memory whose ``base`` is this
    object, so any array derived from it keeps the owner (and so the memory) alive.
    """

    def __init__(self, address: int, nbytes: int, readonly: bool, owner):
        self.owner = owner
        self.__array_interface__ = {"data": (address, readonly), "shape": (nbytes,),
                                    "typestr": "|u1", "version": 3}


class Storage:
    """A byte range of memory: ``address``, ``nbytes``, an ``owner`` keeping it alive.

    Parameters
    ----------
    address : int
        First byte. Real memory is below ``2**64``.
    nbytes : int
        Length in bytes (may be 0).
    owner : object, optional
        What keeps the memory alive. With ``owner=None`` the storage only describes memory
        (for analysis); its bytes cannot be read or written through aliasflow.
    name : str, optional
        A label for messages and tables (not part of identity).
    readonly : bool
        Writes through views of a read-only storage are refused before anything runs.
    root : Storage, optional
        The allocation this storage is part of; itself when omitted.

    Examples
    --------
    >>> a = Storage(0x1000, 64, name="a")
    >>> b = Storage(0x1030, 64, name="b")
    >>> a.overlaps(b), a.end
    (True, 4160)
    >>> a.has_memory
    False
    """

    __slots__ = ("address", "nbytes", "owner", "name", "readonly", "_root", "_root_of",
                 "_bytes", "virtual", "__weakref__")

    def __init__(self, address: int, nbytes: int, *, owner=None, name: str | None = None,
                 readonly: bool = False, root: "Storage | None" = None, _bytes=None,
                 _virtual: bool = False, _root_of=None):
        if not (type(address) is int and type(nbytes) is int and address >= 0
                and nbytes >= 0):  # plain non-negative ints need no conversion
            for what, value in (("address", address), ("nbytes", nbytes)):
                if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                    raise AliasflowError(f"storage {name!r}: {what} must be an int, got "
                                         f"{value!r}")
                if value < 0:
                    raise AliasflowError(f"storage {name!r}: negative {what} {int(value)}")
            address, nbytes = int(address), int(nbytes)
        if root is not None and not isinstance(root, Storage):
            raise AliasflowError(f"storage {name!r}: root must be a Storage, got {root!r}")
        self.address = address
        self.nbytes = nbytes
        self.owner = owner
        self.name = name if name is not None else f"storage{next(_names)}"
        self.readonly = bool(readonly)
        self._root = root
        # an imported array's root is the storage of its base-most ndarray (``_root_of``),
        # made when first asked for: most imports never need it
        self._root_of = _root_of if root is None else None
        self.virtual = _virtual
        if _bytes is None and owner is not None and not _virtual and \
                address + nbytes > VIRTUAL_BASE:
            raise AliasflowError(f"storage {self.name!r}: address {address:#x} + "
                                 f"{nbytes} bytes is not real memory")
        # memory someone owns (``owner``) gets its uint8 array over the bytes when first
        # used (see bytes): making it costs more than the rest of an import
        self._bytes = _bytes

    # ---- makers -----------------------------------------------------------------------------
    @classmethod
    def allocate(cls, nbytes: int, name: str | None = None) -> "Storage":
        """Fresh zeroed memory of ``nbytes`` bytes (a NumPy buffer)."""
        buf = np.zeros(nbytes, np.uint8)
        return cls(buf.__array_interface__["data"][0], nbytes, owner=buf, name=name, _bytes=buf)

    @classmethod
    def reserve(cls, nbytes: int, name: str | None = None) -> "Storage":
        """A virtual storage: an address range no real memory occupies, with no bytes."""
        return cls(_reserve(nbytes), nbytes, name=name, _virtual=True)

    @classmethod
    def of_contiguous(cls, array: np.ndarray, name: str | None = None) -> "Storage":
        """The storage of a C-contiguous array's bytes (the array keeps the memory alive)."""
        flat = array.reshape(-1).view(np.uint8)
        return cls(array.__array_interface__["data"][0], array.nbytes, owner=array, name=name,
                   readonly=not array.flags.writeable, _bytes=flat)

    def __deepcopy__(self, memo):
        """Fresh memory holding a copy of the bytes (a new virtual range for a virtual
        storage; a description of memory is copied as the same description). Storages that
        overlapped without being one object no longer do after a deep copy."""
        if self.virtual:
            return Storage.reserve(self.nbytes, self.name)
        if not self.has_memory:
            return Storage(self.address, self.nbytes, name=self.name, readonly=self.readonly)
        new = Storage.allocate(self.nbytes, self.name)
        new.bytes[...] = self.bytes
        new.readonly = self.readonly
        if self.readonly:
            new.bytes.flags.writeable = False
        return new

    def slice(self, start: int, nbytes: int, name: str | None = None) -> "Storage":
        """The bytes ``[start, start + nbytes)`` of this storage as a storage of their own,
        sharing the memory (a sub-buffer: its root is this storage's root)."""
        if not (0 <= start and 0 <= nbytes and start + nbytes <= self.nbytes):
            raise AliasflowError(f"storage {self.name!r}: bytes [{start}, {start + nbytes}) "
                                 f"are outside its {self.nbytes} bytes")
        part = None if self._bytes is None else self._bytes[start:start + nbytes]
        # (a part of memory whose array is not made yet makes its own when first used)
        return Storage(self.address + start, nbytes, owner=self.owner, name=name,
                       readonly=self.readonly, root=self.root, _bytes=part,
                       _virtual=self.virtual)

    # ---- properties -------------------------------------------------------------------------
    @property
    def end(self) -> int:
        """One past the last byte."""
        return self.address + self.nbytes

    @property
    def root(self) -> "Storage":
        """The allocation this storage is part of (itself when it is one)."""
        if self._root is None and self._root_of is not None:
            self._root = array_storage(self._root_of)
            self._root_of = None
        return self if self._root is None else self._root

    @property
    def has_memory(self) -> bool:
        """True when aliasflow can read (and, unless read-only, write) the bytes."""
        return self._bytes is not None or (self.owner is not None and not self.virtual)

    @property
    def bytes(self) -> np.ndarray:
        """The memory as a flat uint8 array (read-only for read-only storages)."""
        if self._bytes is None and self.owner is not None and not self.virtual:
            self._bytes = np.asarray(_RawBytes(self.address, self.nbytes, self.readonly,
                                               self.owner))
        if self._bytes is None:
            why = "virtual (analysis only)" if self.virtual else "a description of memory " \
                "aliasflow does not own (analysis only)"
            raise AliasflowError(f"storage {self.name!r} is {why}; it has no bytes to read "
                                 f"or write")
        return self._bytes

    def overlaps(self, other: "Storage") -> bool:
        """Do the two byte ranges intersect?"""
        return self.address < other.end and other.address < self.end

    def __repr__(self) -> str:
        kind = " virtual" if self.virtual else (" read-only" if self.readonly else "")
        return f"Storage({self.name!r}, address={self.address:#x}, nbytes={self.nbytes}{kind})"


def memory_groups(storages) -> dict[int, tuple[int, int]]:
    """Connected memory: ``id(storage) -> (group number, group base address)``.

    Storages whose byte ranges intersect (directly or through others) form one group;
    accesses in different groups can never alias. Empty storages join the group of the
    range they sit in, if any.

    Examples
    --------
    >>> a, b, c = Storage(0, 10), Storage(8, 10), Storage(100, 4)
    >>> g = memory_groups([a, b, c])
    >>> g[id(a)] == g[id(b)], g[id(a)] == g[id(c)]
    (True, False)
    """
    unique = {id(s): s for s in storages}
    order = sorted(unique.values(), key=lambda s: (s.address, -s.nbytes))
    groups: dict[int, tuple[int, int]] = {}
    number, base, end = -1, None, None
    for s in order:
        if base is None or s.address >= end:
            number, base, end = number + 1, s.address, s.end
        else:
            end = max(end, s.end)
        groups[id(s)] = (number, base)
    return groups


def unit_dtype(nbytes: int) -> np.dtype:
    """An element type of ``nbytes`` bytes: unsigned ints for 1, 2, 4, 8, else raw bytes."""
    return np.dtype({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}.get(nbytes,
                                                                             f"V{nbytes}"))


def common_unit(*sizes: int) -> int:
    """The largest cell size dividing every byte quantity given (at least 1)."""
    g = 0
    for s in sizes:
        g = gcd(g, s)
    return g or 1


# ---- the storage of an ndarray's bytes (imports, and an imported array's root) ------------------
_data_address = getattr(load("aliasflow.solver._native"), "data_address", None)


def array_address(array: np.ndarray) -> int:
    """The address of ``array``'s first element. Asked of its buffer in compiled code when
    that is built (0.1 us): ``__array_interface__`` builds a dict for it (1-2 us, a third of
    importing an array)."""
    if _data_address is not None:
        address = _data_address(array)
        if address is not None:
            return address
    return array.__array_interface__["data"][0]


def base_most(array: np.ndarray) -> np.ndarray | None:
    """The allocation an array is part of: its base-most ndarray, when it has one."""
    base = array
    while isinstance(base.base, np.ndarray):
        base = base.base
    return None if base is array else base


def array_storage(array: np.ndarray) -> Storage:
    """The storage of the bytes ``array`` can touch (what an imported array's root is)."""
    return extent_storage(array, None, None)[0]


def extent_storage(array: np.ndarray, name, root_of):
    """``(storage, byte offset of element 0, unit)`` for the bytes ``array`` can touch;
    the storage's root is that of ``root_of`` (an ndarray, worked out when first asked)."""
    address = array_address(array)
    isz = array.itemsize
    low = high = 0
    unit = isz
    for n, s in zip(array.shape, array.strides):
        if n == 0:
            return Storage(address, 0, owner=array, name=name, _root_of=root_of,
                           readonly=not array.flags.writeable), 0, isz
        if n > 1:
            unit = gcd(unit, s)
            if s < 0:
                low += s * (n - 1)
            else:
                high += s * (n - 1)
    storage = Storage(address + low, high - low + isz, owner=array, name=name,
                      readonly=not array.flags.writeable, _root_of=root_of)
    return storage, -low, unit
