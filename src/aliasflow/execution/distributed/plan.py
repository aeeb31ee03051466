"""The functionalized program: storages cut into blocks, each op one pure task on block versions.

Memory is cut into blocks of ``block_bytes`` bytes (the last may be shorter): one sequence of
blocks per *memory*, the storages whose address ranges connect, counted in bytes from its
lowest address (views of any dtype over it meet exactly where their bytes do). Version 0 of a
block is its content before the run; an op that writes a block makes the next version.
A task reads the current version of every block one of its views touches: the blocks its
inputs touch, and the blocks its outputs touch but do not cover whole (read-modify-write: the
bytes it does not write must come from the old version). Blocks an output covers whole are
written without being read. The only edges left between tasks are read-after-write ones, carried
by the versions; write-after-read and write-after-write disappear because versions are
immutable. The price: two ops writing disjoint parts of one block are serialised.

The plan is plain records (no engine in sight); :mod:`.execute` runs a task on bytes, the
backends turn the records into Dask graphs or Ray tasks.

>>> import aliasflow as af
>>> A = af.Tensor("A", (4, 4), dtype="float32")
>>> ops = [af.FillOperation("fill", 1.0).set_outputs(A[:2]),
...        af.TransformOperation("copy").set_inputs(A[:, 0]).set_outputs(A[3])]
>>> p = plan(ops, block_bytes=16)
>>> [(t.op_name, t.reads, t.writes) for t in p.tasks]
[('fill', (), ((0, 0, 1), (0, 1, 1))), ('copy', ((0, 0, 1), (0, 1, 1), (0, 2, 0), (0, 3, 0)), ((0, 3, 1),))]
>>> p.tasks[1].rmw, p.figures.tasks, p.figures.blocks
((), 2, 4)
"""
from __future__ import annotations

import gc
import re
from dataclasses import dataclass, field

import numpy as np

from ...core.errors import AliasflowError
from ...core.program import as_records
from ...core.record import Access, OpRecord
from ...core.storage import memory_groups
from ...core.view import TensorView, describe
from .blocks import Footprint

BlockVersion = tuple  # (storage index, block index, version); version 0 = before the run

_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "kib": 2**10, "mib": 2**20,
          "gib": 2**30}


def parse_bytes(value) -> int:
    """A positive byte count from an int or a string such as ``"64KiB"``, ``"16MiB"``, ``"4096"``.

    >>> parse_bytes("16MiB"), parse_bytes("64 KiB"), parse_bytes(7), parse_bytes("1.5KiB")
    (16777216, 65536, 7, 1536)
    """
    if isinstance(value, (bool, np.bool_)):
        raise AliasflowError(f"block_bytes must be a positive int or a size like '16MiB', "
                             f"got {value!r}")
    if isinstance(value, (int, np.integer)):
        n = int(value)
    elif isinstance(value, str):
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", value)
        unit = m.group(2).lower() if m else None
        if m is None or unit not in _UNITS:
            raise AliasflowError(f"block_bytes {value!r} is not a size like 4096, '64KiB', "
                                 f"'16MiB' (units B, KB, MB, GB, KiB, MiB, GiB)")
        n = float(m.group(1)) * _UNITS[unit]
        if n != int(n):
            raise AliasflowError(f"block_bytes {value!r} is not a whole number of bytes")
        n = int(n)
    else:
        raise AliasflowError(f"block_bytes must be a positive int or a size like '16MiB', "
                             f"got {value!r}")
    if n < 1:
        raise AliasflowError(f"block_bytes must be at least 1 byte, got {value!r}")
    return n


# ---- the one adapter between aliasflow's view model and bytes ---------------------------------
def memory_of(ops):
    """Connected memory of every storage the ops' views address: ``id(storage) -> (group, base,
    end)`` and the storages of each group. Storages whose address ranges intersect (two
    imports of one buffer, a reinterpreting tensor over another's bytes) are one memory."""
    storages = {id(v.storage): v.storage for op in ops for v in op.input_views + op.output_views}
    groups = memory_groups(storages.values())
    members: dict[int, list] = {}
    for key, st in storages.items():
        members.setdefault(groups[key][0], []).append(st)
    return groups, members


def byte_layout(view: TensorView, base: int):
    """``(offset, shape, stride)`` in bytes from address ``base``, the element's bytes as a
    last dim."""
    return (view.storage.address - base + view.byte_offset, tuple(view.shape) +
            (view.dtype.itemsize,), tuple(view.byte_strides) + (1,))


@dataclass(frozen=True)
class StorageInfo:
    """One memory: the storages whose address ranges connect, from ``base`` for ``nbytes``."""
    index: int
    name: str           # the storages' names, joined with "+"
    base: int           # address of byte 0
    nbytes: int
    nblocks: int


@dataclass(frozen=True)
class Task:
    index: int                  # position of the op in program order
    op_name: str
    record: OpRecord            # the op over descriptions of its views (no memory: small)
    memories: tuple             # the memory index of each access's view, in access order
    reads: tuple                # BlockVersions read, sorted
    writes: tuple               # BlockVersions made, sorted
    rmw: tuple                  # the writes whose old version is read (not covered whole)
    input_bytes: int            # distinct bytes the input views touch, summed over views


@dataclass(frozen=True)
class Figures:
    tasks: int
    storages: int
    blocks: int                 # blocks in all storages
    blocks_touched: int         # blocks some task reads or writes
    reads_per_task: float
    writes_per_task: float
    max_blocks_per_task: int
    rmw_writes: int
    bytes_loaded: int           # version-0 blocks read by some task
    bytes_read: int             # block bytes handed to tasks
    bytes_written: int          # block bytes tasks return
    # bytes_read / bytes the input views touch (distinct per view, summed over views): what
    # blocking and read-modify-write cost over reading exactly the views
    read_amplification: float
    critical_path: int          # tasks on the longest read-after-write chain

    def rows(self) -> list[tuple[str, str]]:
        return [("tasks", f"{self.tasks}"), ("storages", f"{self.storages}"),
                ("blocks", f"{self.blocks} ({self.blocks_touched} touched)"),
                ("blocks read per task", f"{self.reads_per_task:.2f}"),
                ("blocks written per task", f"{self.writes_per_task:.2f}"),
                ("most blocks in one task", f"{self.max_blocks_per_task}"),
                ("read-modify-write block writes", f"{self.rmw_writes}"),
                ("bytes loaded", _size(self.bytes_loaded)),
                ("bytes read by tasks", _size(self.bytes_read)),
                ("bytes written by tasks", _size(self.bytes_written)),
                ("read amplification", f"{self.read_amplification:.2f}"),
                ("critical path (tasks)", f"{self.critical_path}")]


def _size(n: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.2f} {unit} ({n} B)"
    return f"{n} B"


@dataclass
class Plan:
    """Tasks in program order over versioned blocks (see the module doc)."""
    block_bytes: int
    storages: tuple             # StorageInfo
    tasks: tuple                # Task
    final: tuple                # last BlockVersion of every block some task writes
    figures: Figures
    ops: list = field(repr=False)          # the op records themselves, by task index
    memory: list = field(repr=False)       # the Storage objects of each memory, by index

    def block_range(self, s: int, b: int) -> tuple[int, int]:
        """Byte range ``[lo, hi)`` of block ``b`` of storage ``s``."""
        lo = b * self.block_bytes
        return lo, min(lo + self.block_bytes, self.storages[s].nbytes)

    def home(self, s: int, b: int, n: int) -> int:
        """Which of ``n`` workers block ``b`` of memory ``s`` lives on: each memory's blocks
        spread evenly in order, so block k of two same-sized memories (a source and its
        destination) share a home and a task writing one finds the other local."""
        return b * n // self.storages[s].nblocks

    def state_before(self, k: int) -> tuple:
        """The last version, before task ``k``, of every block tasks before ``k`` write."""
        last = {}
        for t in self.tasks[:k]:
            for s, b, v in t.writes:
                last[s, b] = v
        return tuple((s, b, v) for (s, b), v in sorted(last.items()))

    def truncated(self, k: int) -> "Plan":
        """The plan of the first ``k`` tasks."""
        return Plan(self.block_bytes, self.storages, self.tasks[:k], self.state_before(k),
                    figures(self.block_bytes, self.storages, self.tasks[:k]), self.ops[:k],
                    self.memory)


def plan(ops, block_bytes="16MiB") -> Plan:
    """Functionalize ``ops`` over blocks of ``block_bytes`` (int, or a size like ``"64KiB"``).

    Exact: a task reads a block only if one of its views touches one of the block's bytes, and
    a write is read-modify-write unless one output view covers the whole block. (Several
    outputs that only together cover a block count as a partial write: correct, one extra read.)
    """
    ops = as_records(ops)
    B = parse_bytes(block_bytes)
    # The plan makes millions of small tuples and no cycles: the cyclic collector's passes
    # over them would cost a third of the time.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _plan(ops, B)
    finally:
        if collecting:
            gc.enable()


def _plan(ops, B: int) -> Plan:
    groups, members = memory_of(ops)
    index: dict[int, int] = {}          # group -> memory index, in order of first use
    storages: list[StorageInfo] = []
    memory = []
    version: dict[tuple[int, int], int] = {}
    tasks = []

    def storage_index(view):
        g, base = groups[id(view.storage)]
        s = index.get(g)
        if s is None:
            s = index[g] = len(storages)
            parts = sorted(members[g], key=lambda st: (st.address, st.name))
            nbytes = max(st.end for st in parts) - base
            names = "+".join(dict.fromkeys(st.name for st in parts))
            storages.append(StorageInfo(s, names, base, nbytes, -(-nbytes // B)))
            memory.append(tuple(parts))
        return s

    views: dict[int, tuple] = {}    # id(view) -> (view, memory, blocks, whole blocks, bytes)
    layouts: dict[tuple, tuple] = {}  # (storage, byte layout) -> (blocks, whole blocks, bytes)

    def access(view):
        """The view's memory, the blocks it touches and those it covers whole (memoised:
        traces use the same views and windows over and over)."""
        hit = views.get(id(view))
        if hit is not None and hit[0] is view:
            return hit[1:]
        s = storage_index(view)
        layout = byte_layout(view, storages[s].base)
        found = layouts.get((s, layout))
        if found is None:
            fp = Footprint(*layout)
            nbytes = storages[s].nbytes
            touched = tuple((s, b) for b in fp.blocks(B, nbytes))
            whole = frozenset((s, b) for s, b in touched if fp.covers(b, B, nbytes))
            size = fp.count if not fp.fallback else view.size * view.dtype.itemsize
            found = layouts[s, layout] = (touched, whole, size)
        out = (s,) + found
        views[id(view)] = (view,) + out
        return out

    for k, op in enumerate(ops):
        read: set = set()
        input_bytes = 0
        for v in op.input_views:
            _, touched, _, size = access(v)
            read.update(touched)
            input_bytes += size
        written: dict[tuple[int, int], bool] = {}   # block -> covered whole by one output
        for v in op.output_views:
            _, touched, whole, _ = access(v)
            for sb in touched:
                if not written.get(sb):
                    written[sb] = sb in whole
        described = describe([a.view for a in op.accesses])
        record = OpRecord._trusted(op.name, op.prim, tuple(
            Access(a.slot, a.mode, d) for a, d in zip(op.accesses, described)), op.params,
            op.n_values)
        memories = tuple(access(a.view)[0] for a in op.accesses)
        rmw_blocks = [sb for sb, whole in written.items() if not whole]
        read.update(rmw_blocks)
        reads = tuple(sorted((s, b, version.get((s, b), 0)) for s, b in read))
        writes, rmw = [], []
        for (s, b) in sorted(written):
            v = version[s, b] = version.get((s, b), 0) + 1
            writes.append((s, b, v))
            if not written[s, b]:
                rmw.append((s, b, v))
        tasks.append(Task(k, op.name, record, memories, reads, tuple(writes), tuple(rmw),
                          input_bytes))

    storages_t = tuple(storages)
    final = tuple((s, b, v) for (s, b), v in sorted(version.items()))
    return Plan(B, storages_t, tuple(tasks), final,
                figures(B, storages_t, tasks), ops, memory)


def figures(B, storages, tasks) -> Figures:
    """The figures of ``tasks`` (a plan's, or a prefix of them)."""
    def nb(s, b):
        return min(B, storages[s].nbytes - b * B)

    producer, depth, loaded = {}, {}, set()   # depth: tasks on the longest chain ending here
    for t in tasks:
        depth[t.index] = 1 + max((depth[producer[r]] for r in t.reads if r in producer),
                                 default=0)
        producer.update((w, t.index) for w in t.writes)
        loaded.update((s, b) for s, b, v in t.reads if v == 0)

    n = len(tasks)
    bytes_read = sum(nb(s, b) for t in tasks for s, b, _ in t.reads)
    need = sum(t.input_bytes for t in tasks)
    touched = {(s, b) for t in tasks for s, b, _ in t.reads + t.writes}
    return Figures(
        tasks=n, storages=len(storages), blocks=sum(s.nblocks for s in storages),
        blocks_touched=len(touched),
        reads_per_task=sum(len(t.reads) for t in tasks) / n if n else 0.0,
        writes_per_task=sum(len(t.writes) for t in tasks) / n if n else 0.0,
        max_blocks_per_task=max((len({(s, b) for s, b, _ in t.reads + t.writes})
                                 for t in tasks), default=0),
        rmw_writes=sum(len(t.rmw) for t in tasks),
        bytes_loaded=sum(nb(s, b) for s, b in loaded),
        bytes_read=bytes_read,
        bytes_written=sum(nb(s, b) for t in tasks for s, b, _ in t.writes),
        read_amplification=bytes_read / need if need else (float("inf") if bytes_read else 1.0),
        critical_path=max(depth.values(), default=0))
