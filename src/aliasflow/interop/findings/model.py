"""What a tracer tells the findings classifier, and what a finding is.

A tracer (PyTorch's, NumPy's) produces op records (``af.OpRecord``: accesses as
``Access(slot, mode, view)`` over byte views at real addresses) and, per record, an
:class:`OpInfo`: the facts findings need that analyses do not (where the op came from, how
its arguments look to the user, what re-running it on copies showed). The classifier
(:func:`aliasflow.interop.findings.classify`) turns both into :class:`Finding` objects.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping, NamedTuple

SEVERITIES = ("wrong", "hazard", "stale-view", "order")
NO_EXACT: Mapping = MappingProxyType({})
RANK = {s: k for k, s in enumerate(SEVERITIES)}
KINDS = ("in-op-overlap", "self-overlap-write", "duplicate-index", "RAW", "WAW", "WAR")

HINTS = {
    ("wrong", "in-op-overlap"):
        "the op read memory it was writing; clone() the argument it reads (or write into a "
        "fresh tensor and copy it back)",
    ("hazard", "in-op-overlap"):
        "the op reads memory it writes; the result depends on the kernel's order (this run "
        "agreed with copy semantics, or PyTorch refused it): clone() the argument it reads",
    ("wrong", "self-overlap-write"):
        "several indices of the written view are one element; write into a view without "
        "repeats (contiguous() or clone() first) or reduce explicitly",
    ("hazard", "self-overlap-write"):
        "several indices of the written view are one element and the kernel's order decides "
        "which write stays; write into a view without repeats",
    ("wrong", "duplicate-index"):
        "an element indexed twice keeps one of its writes, whichever lands last (x[idx] += v "
        "adds v once per distinct index); make the indices unique or use the accumulating "
        "form (index_put_(..., accumulate=True), scatter_add_, index_add_)",
    ("hazard", "duplicate-index"):
        "repeated indices: the kernel's order decides which value stays; make the indices "
        "unique or use the accumulating form",
    ("stale-view", "RAW"):
        "this view was made before the write and sees its new values; if the old values "
        "were meant, take a clone() before the write",
    ("order", "RAW"): "the read depends on the earlier write through another view; keep "
                      "their order when reordering or parallelising",
    ("order", "WAR"): "the write clobbers what the earlier op read through another view; keep "
                      "their order when reordering or parallelising",
    ("order", "WAW"): "both ops write the same memory through different views; the later "
                      "one wins; keep their order",
}

# The same advice in NumPy's words (a finding's ``framework`` picks the table).
NUMPY_HINTS = {
    ("wrong", "in-op-overlap"): "the operation reads memory it also writes, and NumPy does "
    "not copy it first here: pass a copy of the source (`.copy()`), or write into a fresh "
    "array and assign that",
    ("wrong", "self-overlap-write"): "the destination maps several indices to one element "
    "(an as_strided window): write through a view without repeated elements",
    ("wrong", "duplicate-index"): "repeated indices write different values and NumPy does "
    "not say which one lands: make the indices unique, or reduce the values first "
    "(np.add.at / np.maximum.at accumulate repeats)",
    ("wrong", "kernel"): "NumPy computes this layout wrongly without any overlap: give it "
    "contiguous operands (np.ascontiguousarray) or compute into a fresh array and copy back",
    ("hazard", "in-op-overlap"): "the result depends on the order NumPy's loop visits "
    "memory (it agreed with copy semantics here by chance): pass a copy of the source",
    ("hazard", "self-overlap-write"): "the destination maps several indices to one element: "
    "the result depends on NumPy's loop order",
    ("hazard", "duplicate-index"): "`a[i] op= v` with repeated indices applies each repeat "
    "once, not once per occurrence: use the ufunc's .at (np.add.at(a, i, v)) to accumulate",
    ("stale-view", "RAW"): "this view was made before its memory was written through "
    "another view, so it reads the new values: take a copy (`.copy()`) when the old ones "
    "are meant",
    ("order", "RAW"): HINTS[("order", "RAW")],
    ("order", "WAR"): HINTS[("order", "WAR")],
    ("order", "WAW"): HINTS[("order", "WAW")],
}
HINTS_OF = {"torch": HINTS, "numpy": NUMPY_HINTS}
# an in-op overlap between written arguments only (a parameter listed twice in an optimizer,
# ``out=(t, t)``): no clone of an input helps
# a tensor autograd saved for backward, overwritten before backward read it through another
# tensor over its memory (``.data``, a NumPy view), which autograd's version check cannot see
SAVED_OVERWRITTEN = ("autograd saved this tensor for the backward pass, and it was overwritten "
                     "before backward read it, through a tensor autograd does not track "
                     "(`.data`, a NumPy view), so the gradient uses the new values: write "
                     "into a clone(), or do the update after backward()")
WRITTEN_TWICE = ("two written arguments share memory (one tensor passed twice?); pass each "
                 "tensor once, or write into separate tensors and combine them explicitly")


@dataclass(frozen=True, slots=True)
class Frame:
    """A source location: ``path`` (relative to the working directory when under it),
    ``line``, ``function``."""
    path: str
    line: int
    function: str = ""

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True, slots=True)
class Outcome:
    """The producer's re-run of one op on copies of its arguments, for one written argument
    (``label``): ``differs`` elements of that argument's view came out differently from copy
    semantics, the first being ``example = (index, got, expected)`` (index in the view's own
    coordinates); ``conflicts``: elements the view reaches through several indices that copy
    semantics would give different values (whichever write lands last wins)."""
    label: str
    differs: int
    example: tuple | None = None
    conflicts: int = 0


class Slot(NamedTuple):
    """One tensor argument as the op saw it (the ``slot`` of its record's accesses).

    ``mode``: "R", "W", "RW" or None (its data is not touched); ``view``: an aliasflow
    :class:`~aliasflow.TensorView` of its elements at their real address (offset and strides
    in bytes of the memory, the element dtype; None without memory, as meta or fake tensors,
    or without elements); ``dtype``: the element type's name as the framework spells it
    (``bfloat16``); ``storage``: an id of the memory's lifetime (two slots with different ids
    over one address are different lifetimes); ``memory``: an id shared by the lifetimes
    that alias while alive (two wrappers of one buffer); ``name``: how the user knows it
    (None if the producer cannot tell); ``born``: index of the op that made this view
    object (-1: before the trace; None: not needed); ``fresh``: this op allocated the memory.
    ``shape``, ``strides`` (in elements), ``itemsize`` and ``start`` (address of element 0)
    read the view.
    """
    label: str
    mode: str | None
    view: object
    dtype: str
    storage: int | None
    memory: int | None = None
    name: str | None = None
    born: int | None = None
    fresh: bool = False

    @property
    def itemsize(self) -> int:
        return self.view.dtype.itemsize if self.view is not None else 0

    @property
    def shape(self) -> tuple:
        return self.view.shape if self.view is not None else ()

    @property
    def strides(self) -> tuple:
        if self.view is None:
            return ()
        k = self.view.dtype.itemsize
        return tuple(s // k for s in self.view.stride)

    @property
    def start(self) -> int:
        return self.view.tensor.storage.address + self.view.offset if self.view is not None \
            else 0


class OpInfo(NamedTuple):
    """What a tracer knows about one op record beyond its accesses.

    ``name``: the record's name; ``label``: what the op is (``"aten.add_.Tensor"``,
    ``"numpy: a[1] = ..."``); ``index``: position in the trace; ``where``: the user's line
    (:class:`Frame`); ``context``: where it ran from when that differs (a backward op's
    ``loss.backward()`` line); ``source``: the text of the user's line; ``error``: the
    exception text if the framework refused the op (it then touched no memory);
    ``untracked``: why the producer could not record it; ``slots``; ``exempt``: pairs
    ``(written slot, read slot)`` an overlap of which is harmless (an elementwise op whose
    argument is the written view itself); ``outcomes``: the re-run on copies (None: not
    run); ``duplicates``: ``(label, differing elements, (index, got, values written), indices
    of the differing elements)`` for repeated indices written with different values; ``exact``: for a slot recorded as its
    whole view but written only in part, the start addresses of the elements written;
    ``uniform``: the op writes one value to every element (a repeated element cannot
    differ); ``stream``; ``forward``: for an op the autograd engine ran, the index of the
    forward op whose autograd node ran it (None otherwise, or when unknown); ``publishes``:
    its writes replace a buffer's contents for every view of it to read (a collective
    such as ``all_reduce``: DDP's gradients and ZeRO's parameters are views of the buffers
    it is given), so a view made before them is not stale; ``engine``: the autograd engine
    ran it for a backward node (``AccumulateGrad`` detaching a new ``.grad``, ...).
    """
    name: str
    label: str
    index: int
    where: Frame | None = None
    context: Frame | None = None
    source: str = ""
    error: str | None = None
    untracked: str | None = None
    slots: tuple = ()
    exempt: frozenset = frozenset()
    outcomes: tuple | None = None
    duplicates: tuple | None = None
    exact: Mapping = NO_EXACT
    uniform: bool = False
    stream: str = "default"
    forward: int | None = None
    publishes: bool = False
    engine: bool = False

    @property
    def failed(self) -> bool:
        return self.error is not None

    @property
    def line(self) -> str:
        return str(self.where) if self.where is not None else "?"


@dataclass(eq=False)
class Finding:
    """One finding (a group of repeats of it): ``severity`` (``wrong``, ``hazard``,
    ``stale-view``, ``order``), ``kind`` (the mechanism: ``in-op-overlap``,
    ``self-overlap-write``, ``duplicate-index``, ``RAW``/``WAR``/``WAW``), ``ops`` (the
    :class:`OpInfo` of its ops, program order), ``lines`` (their user lines), ``names`` (the
    tensors involved, as the user knows them), ``count`` (elements involved), ``occurrences``
    (repeats grouped into this one: steps of a loop), ``hint``; for ``wrong``: ``differs``
    (elements whose value differs from copy semantics) and ``example`` (index, got,
    expected). ``slots`` are the views involved (the first is the written one);
    ``elements()`` gives the element indices from its storage's start (a NumPy order fact,
    or a NumPy finding on an unaligned layout, carries no slots and cannot). ``framework``
    (``torch``, ``numpy``) picks the words of the hint; ``numpy``: the NumPy version, on a
    ``kernel`` finding (NumPy's loop is wrong for a layout without any overlap)."""
    severity: str
    kind: str
    ops: list
    count: int
    slots: list
    differs: int | None = None
    example: tuple | None = None
    occurrences: int = 1
    reuse: bool = False
    note: str = ""
    names: list = field(default_factory=list)
    framework: str = "torch"
    numpy: str | None = None
    _addresses: object = field(default=None, repr=False)
    repeats: list = field(default_factory=list, repr=False)
    written_only: bool = False   # an in-op overlap whose slots are all written
    # a stale view autograd saved for backward (see classify): the forward op's slot that
    # holds it, which names it as the user knows it
    saved: object = None

    @property
    def hint(self) -> str:
        if self.written_only and self.kind == "in-op-overlap":
            return WRITTEN_TWICE
        if self.saved is not None:
            return SAVED_OVERWRITTEN
        return HINTS_OF[self.framework].get((self.severity, self.kind), "")

    @property
    def lines(self) -> list[str]:
        """The ops' user lines; for a stale view the read first (where the stale values are
        used), then the write; for a saved tensor overwritten before backward, the write
        first (the backward op's line is its forward op's)."""
        ops = self.ops[::-1] if self.severity == "stale-view" and self.saved is None \
            else self.ops
        out = []
        for op in ops:
            if op.line not in out:
                out.append(op.line)
        return out

    @property
    def source(self) -> str:
        """The text of the line the finding is placed at (its first line)."""
        first = self.lines[0] if self.lines else None
        return next((op.source for op in self.ops if op.line == first), "") or ""

    @property
    def contexts(self) -> list[str]:
        return [str(op.context) for op in self.ops if op.context is not None]

    def addresses(self):
        """Start addresses of the elements involved (in the first slot's dtype), sorted."""
        if callable(self._addresses):
            self._addresses = self._addresses()
        return self._addresses

    def elements(self) -> list[int]:
        """The elements involved, as indices of elements of the first slot's dtype from the
        start of its memory (the storage form), sorted."""
        if not self.slots:
            raise ValueError(f"{self.describe()}: this finding does not carry its views "
                             f"(a NumPy order fact, or a NumPy finding on an unaligned "
                             f"layout, counts its elements but does not list them)")
        s = self.slots[0]
        base = s.view.storage.address if s.view is not None else 0
        return ((self.addresses() - base) // s.itemsize).tolist()

    def describe(self) -> str:
        names = ", ".join(op.name for op in self.ops)
        extra = " (memory reuse)" if self.reuse else ""
        return f"{self.severity} {self.kind}{extra}: {names}: {self.count} element(s)"

    def to_json(self, elements: bool = False) -> dict:
        """The finding as plain data (the fields of ``--json``)."""
        from .render import finding_json
        return finding_json(self, self.names, elements)

    def __repr__(self) -> str:
        return f"Finding({self.describe()})"

    def _repr_html_(self) -> str:
        from ...reporting.html import finding_html   # Jupyter only: the report layer draws it
        return finding_html(self)


def slot_name(s: Slot) -> str:
    """The slot's user name, or its storage form ``s18[int64 (2, 15) stride (16, 1) +0]``."""
    if s.name:
        return s.name
    return storage_form(s)


def storage_form(s: Slot) -> str:
    """``s18[int64 (2, 14) stride (15, 1) offset 1]``: the memory's id, dtype, shape,
    strides and offset in elements."""
    where = f"s{s.storage}" if s.storage is not None else "no memory"
    if s.view is None:
        return f"{where}[{s.dtype}]"
    offset = s.view.offset // s.itemsize
    return f"{where}[{s.dtype} {tuple(s.shape)} stride {s.strides} offset {offset}]"
